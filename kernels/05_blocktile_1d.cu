// Stage 05: 1D block tiling. The block tile is BM x BN as in stage 04, but each thread now
// computes TM results stacked in one column of C. Per k a thread reads one B float from shared
// memory into a register and reuses it for TM FMAs against TM A floats: TM FMAs per TM + 1
// shared loads, 2*TM / (4*(TM + 1)) = 0.44 FLOP/byte for TM = 8 (stage 04: 0.25). From global
// memory the block loads BM + BN floats per k for BM*BN FMAs: 2*64*64 / (4*128) = 16 FLOP/byte.
// Fewer threads (BM*BN/TM) do more work each, and TM accumulators live in registers.
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
#ifndef NUM_THREADS
#error "NUM_THREADS (blockDim.x) must be given as -DNUM_THREADS=..."
#endif
static_assert(BM % TM == 0, "a column of TM results per thread must tile BM");
static_assert(NUM_THREADS == BM * BN / TM, "one thread per TM x 1 strip of the C tile");
static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "whole warps, at most 1024 threads");
static_assert(BN % 32 == 0, "a warp must lie in one row of strips: B reads conflict-free, A broadcast");
static_assert((BM * BK) % NUM_THREADS == 0, "every thread loads the same number of A floats");
static_assert((BK * BN) % NUM_THREADS == 0, "every thread loads the same number of B floats");

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
gemm_blocktile_1d(int M, int N, int K, float alpha, const float* __restrict__ A,
                  const float* __restrict__ B, float beta, float* __restrict__ C) {
    __shared__ float As[BM * BK];  // row-major BM x BK
    __shared__ float Bs[BK * BN];  // row-major BK x BN

    const int tid = threadIdx.x;
    const int threadCol = tid % BN;  // consecutive threads -> consecutive columns (Bs conflict-free)
    const int threadRow = tid / BN;  // this thread owns rows threadRow*TM .. threadRow*TM + TM-1
    const int cRow = blockIdx.y * BM;  // blockIdx.y -> row tile, blockIdx.x -> column tile
    const int cCol = blockIdx.x * BN;

    float acc[TM];
#pragma unroll
    for (int i = 0; i < TM; ++i) acc[i] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        // Guarded loads, zero outside the matrix: tiles need not divide M, N or K.
#pragma unroll
        for (int e = tid; e < BM * BK; e += NUM_THREADS) {  // consecutive threads -> along a row of A
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
            const float b = Bs[dot * BN + threadCol];  // one shared load, reused TM times
#pragma unroll
            for (int i = 0; i < TM; ++i) acc[i] = fmaf(As[(threadRow * TM + i) * BK + dot], b, acc[i]);
        }
        __syncthreads();  // everyone is done reading before the next tile overwrites them
    }

    const int col = cCol + threadCol;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = cRow + threadRow * TM + i;
        if (row < M && col < N) {  // the grid rounds up: edge blocks stick out of C
            const size_t idx = (size_t)row * N + col;
            // beta == 0 must not read C: BLAS semantics, and C may hold garbage (or NaN poison)
            C[idx] = beta == 0.0f ? alpha * acc[i] : fmaf(alpha, acc[i], beta * C[idx]);
        }
    }
}
