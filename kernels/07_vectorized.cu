// Stage 07: vectorized memory access. Stage 06's tiling and arithmetic intensity (2 FLOP/byte
// from shared memory, 32 FLOP/byte from global memory for 128 x 128 x 8 tiles with 8 x 8 per
// thread), but every memory instruction moves 16 bytes instead of 4:
//   - global loads of A and B are float4 (LDG.128): a quarter of the load instructions;
//   - A is stored transposed in shared memory (As[k][m]), so a thread's TM A operands for one k
//     are contiguous and, like its TN B operands, come in TM/4 + TN/4 LDS.128 instead of TM + TN
//     LDS.32: the shared-memory instruction count per FMA drops 4x;
//   - C is written (and, for beta != 0, read) with float4.
// A float4 global load needs the whole 4-float chunk inside the matrix and a 16-byte aligned
// address: a row of A starts 16-byte aligned only if K % 4 == 0, a row of B only if N % 4 == 0.
// The block decides once (uniformly, no divergence) whether its tiles are interior and the
// strides allow it, takes the float4 path if so and a scalar guarded path otherwise.
#ifndef BM
#error "BM (rows of the C tile) must be given as -DBM=..."
#endif
#ifndef BN
#error "BN (columns of the C tile) must be given as -DBN=..."
#endif
#ifndef BK
#error "BK (depth of one K step) must be given as -DBK=..."
#endif
#ifndef TM
#error "TM (rows of C per thread) must be given as -DTM=..."
#endif
#ifndef TN
#error "TN (columns of C per thread) must be given as -DTN=..."
#endif
#ifndef NUM_THREADS
#error "NUM_THREADS (blockDim.x) must be given as -DNUM_THREADS=..."
#endif
static_assert(BM % TM == 0 && BN % TN == 0, "thread tiles must tile the block tile");
static_assert(NUM_THREADS == (BM / TM) * (BN / TN), "one thread per TM x TN tile of C");
static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "whole warps, at most 1024 threads");
static_assert(TM % 4 == 0 && TN % 4 == 0, "operands and C rows are read and written as float4");
static_assert(BK % 4 == 0 && BN % 4 == 0, "tiles are loaded as float4 chunks along K (A) and N (B)");
static_assert((BM * BK / 4) % NUM_THREADS == 0, "every thread loads the same number of A float4s");
static_assert((BK * BN / 4) % NUM_THREADS == 0, "every thread loads the same number of B float4s");
static_assert(TM * TN <= 128, "the accumulator tile must leave registers for operands and addresses");

#include "gemm/simt_epilogue.cuh"  // aligned16, store_warp_tile (the float4 epilogue)

constexpr int A_ROUNDS = BM * BK / 4 / NUM_THREADS;  // float4 loads of A per thread per tile
constexpr int B_ROUNDS = BK * BN / 4 / NUM_THREADS;  // float4 loads of B per thread per tile

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
gemm_vectorized(int M, int N, int K, float alpha, const float* __restrict__ A,
                const float* __restrict__ B, float beta, float* __restrict__ C) {
    __shared__ __align__(16) float As[BK * BM];  // transposed: As[k * BM + m] = A[m][k]
    __shared__ __align__(16) float Bs[BK * BN];  // row-major BK x BN, as in B

    const int tid = threadIdx.x;
    const int threadCol = tid % (BN / TN);
    const int threadRow = tid / (BN / TN);
    const int cRow = blockIdx.y * BM;  // blockIdx.y -> row tile, blockIdx.x -> column tile
    const int cCol = blockIdx.x * BN;

    // Decided once per block, identical for all its threads: no divergence in the loads.
    const bool vecA = cRow + BM <= M && (K & 3) == 0 && aligned16(A);
    const bool vecB = cCol + BN <= N && (N & 3) == 0 && aligned16(B);

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool fullK = k0 + BK <= K;  // only the last K tile can be partial
#pragma unroll
        for (int rnd = 0; rnd < A_ROUNDS; ++rnd) {
            const int f = tid + rnd * NUM_THREADS;
            const int m = f / (BK / 4), kq = (f % (BK / 4)) * 4;  // row m, floats kq..kq+3 of the tile
            float4 v;
            if (vecA && fullK) {
                v = *reinterpret_cast<const float4*>(A + (size_t)(cRow + m) * K + k0 + kq);
            } else {  // edge tile: scalar loads, zero outside the matrix
                const int r = cRow + m, k = k0 + kq;
                const float* p = A + (size_t)r * K + k;
                v.x = (r < M && k + 0 < K) ? p[0] : 0.0f;
                v.y = (r < M && k + 1 < K) ? p[1] : 0.0f;
                v.z = (r < M && k + 2 < K) ? p[2] : 0.0f;
                v.w = (r < M && k + 3 < K) ? p[3] : 0.0f;
            }
            As[(kq + 0) * BM + m] = v.x;  // transpose on the way in: four 4-byte stores
            As[(kq + 1) * BM + m] = v.y;
            As[(kq + 2) * BM + m] = v.z;
            As[(kq + 3) * BM + m] = v.w;
        }
#pragma unroll
        for (int rnd = 0; rnd < B_ROUNDS; ++rnd) {
            const int f = tid + rnd * NUM_THREADS;
            const int k = f / (BN / 4), n = (f % (BN / 4)) * 4;  // a warp reads 512 contiguous bytes
            float4 v;
            if (vecB && fullK) {
                v = *reinterpret_cast<const float4*>(B + (size_t)(k0 + k) * N + cCol + n);
            } else {
                const int kk = k0 + k, c = cCol + n;
                const float* p = B + (size_t)kk * N + c;
                v.x = (kk < K && c + 0 < N) ? p[0] : 0.0f;
                v.y = (kk < K && c + 1 < N) ? p[1] : 0.0f;
                v.z = (kk < K && c + 2 < N) ? p[2] : 0.0f;
                v.w = (kk < K && c + 3 < N) ? p[3] : 0.0f;
            }
            *reinterpret_cast<float4*>(&Bs[k * BN + n]) = v;  // one STS.128
        }
        __syncthreads();  // the tiles are complete before anyone reads them

#pragma unroll
        for (int dot = 0; dot < BK; ++dot) {
            float regM[TM], regN[TN];
#pragma unroll
            for (int i = 0; i < TM; i += 4)  // TM/4 LDS.128: A is transposed, so m is contiguous
                *reinterpret_cast<float4*>(&regM[i]) =
                    *reinterpret_cast<const float4*>(&As[dot * BM + threadRow * TM + i]);
#pragma unroll
            for (int j = 0; j < TN; j += 4)
                *reinterpret_cast<float4*>(&regN[j]) =
                    *reinterpret_cast<const float4*>(&Bs[dot * BN + threadCol * TN + j]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(regM[i], regN[j], acc[i][j]);
        }
        __syncthreads();  // everyone is done reading before the next tile overwrites them
    }

    // Epilogue. beta == 0 must not read C: BLAS semantics, and C may hold NaN poison.
    const bool vecC = cRow + BM <= M && cCol + BN <= N && (N & 3) == 0 && aligned16(C);
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = cRow + threadRow * TM + i;
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            const int col = cCol + threadCol * TN + j;
            float* p = C + (size_t)row * N + col;
            if (vecC) {  // interior tile, aligned rows: one 16-byte store
                float4 out;
                out.x = alpha * acc[i][j + 0];
                out.y = alpha * acc[i][j + 1];
                out.z = alpha * acc[i][j + 2];
                out.w = alpha * acc[i][j + 3];
                if (beta != 0.0f) {
                    const float4 old = *reinterpret_cast<const float4*>(p);
                    out.x = fmaf(beta, old.x, out.x);
                    out.y = fmaf(beta, old.y, out.y);
                    out.z = fmaf(beta, old.z, out.z);
                    out.w = fmaf(beta, old.w, out.w);
                }
                *reinterpret_cast<float4*>(p) = out;
            } else if (row < M) {  // edge tile: element by element, inside C only
#pragma unroll
                for (int jj = 0; jj < 4; ++jj) {
                    if (col + jj < N)
                        p[jj] = beta == 0.0f ? alpha * acc[i][j + jj]
                                             : fmaf(beta, p[jj], alpha * acc[i][j + jj]);
                }
            }
        }
    }
}
