// Stage 06: 2D block tiling. A 128 x 128 block tile computed by 256 threads, each owning a
// TM x TN = 8 x 8 tile of C (stage 03's thread tile, now fed from shared memory). Per k a
// thread copies TM A floats and TN B floats from shared memory into registers and does TM*TN
// FMAs on them: 2*64 / (4*16) = 2 FLOP/byte from shared memory (stage 05: 0.44). From global
// memory the block loads BM + BN floats per k for BM*BN FMAs: 2*128*128 / (4*256) = 32 FLOP/byte.
// The cost: 64 accumulators + 16 operands per thread, and each thread loads several floats of
// each tile (BM*BK / NUM_THREADS of A, BK*BN / NUM_THREADS of B).
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
static_assert((BM * BK) % NUM_THREADS == 0, "every thread loads the same number of A floats");
static_assert((BK * BN) % NUM_THREADS == 0, "every thread loads the same number of B floats");
static_assert(TM * TN <= 128, "the accumulator tile must leave registers for operands and addresses");

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
gemm_blocktile_2d(int M, int N, int K, float alpha, const float* __restrict__ A,
                  const float* __restrict__ B, float beta, float* __restrict__ C) {
    __shared__ float As[BM * BK];  // row-major BM x BK, as in A
    __shared__ float Bs[BK * BN];  // row-major BK x BN, as in B

    const int tid = threadIdx.x;
    const int threadCol = tid % (BN / TN);  // consecutive threads -> neighbouring column strips
    const int threadRow = tid / (BN / TN);
    const int cRow = blockIdx.y * BM;  // blockIdx.y -> row tile, blockIdx.x -> column tile
    const int cCol = blockIdx.x * BN;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float regM[TM], regN[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
        // Guarded loads, zero outside the matrix: tiles need not divide M, N or K.
#pragma unroll
        for (int e = tid; e < BM * BK; e += NUM_THREADS) {
            const int r = cRow + e / BK, k = k0 + e % BK;
            As[e] = (r < M && k < K) ? A[(size_t)r * K + k] : 0.0f;
        }
#pragma unroll
        for (int e = tid; e < BK * BN; e += NUM_THREADS) {  // along a row of B: coalesced
            const int k = k0 + e / BN, c = cCol + e % BN;
            Bs[e] = (k < K && c < N) ? B[(size_t)k * N + c] : 0.0f;
        }
        __syncthreads();  // the tiles are complete before anyone reads them

#pragma unroll
        for (int dot = 0; dot < BK; ++dot) {
            // TM + TN shared loads into registers, then TM*TN FMAs from registers only
#pragma unroll
            for (int i = 0; i < TM; ++i) regM[i] = As[(threadRow * TM + i) * BK + dot];
#pragma unroll
            for (int j = 0; j < TN; ++j) regN[j] = Bs[dot * BN + threadCol * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(regM[i], regN[j], acc[i][j]);
        }
        __syncthreads();  // everyone is done reading before the next tile overwrites them
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = cRow + threadRow * TM + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = cCol + threadCol * TN + j;
            if (row < M && col < N) {  // the grid rounds up: edge blocks stick out of C
                const size_t idx = (size_t)row * N + col;
                // beta == 0 must not read C: BLAS semantics, and C may hold NaN poison
                C[idx] = beta == 0.0f ? alpha * acc[i][j] : fmaf(alpha, acc[i][j], beta * C[idx]);
            }
        }
    }
}
