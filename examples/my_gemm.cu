// A user stage: a shared-memory tiled FP32 GEMM with a 4x4 register tile per thread.
// It honours the contract of every stage (row-major A MxK, B KxN, C MxN; beta == 0 never
// reads C), so `roofline run gemm --extra-stage examples/my_gemm.toml` can verify and time it
// beside the built-in stages. The block (BN/TN x BM/TM = 16 x 16 threads) computes a BM x BN
// = 64 x 64 tile of C; per K step of BK it stages a BM x BK tile of A and a BK x BN tile of B in
// shared memory, and each thread reads TM + TN = 8 floats from it for TM * TN = 16 FMAs.
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

#define NUM_THREADS ((BM / TM) * (BN / TN))
static_assert(BM % TM == 0 && BN % TN == 0, "the thread grid must cover the tile exactly");
static_assert(NUM_THREADS <= 1024, "at most 1024 threads per block");

extern "C" __global__ void my_gemm(int M, int N, int K, float alpha,
                                   const float* __restrict__ A,
                                   const float* __restrict__ B, float beta,
                                   float* __restrict__ C) {
    // As keeps A's row-major layout: a warp (2 values of ty) reads 2 words per k: broadcast.
    // Bs: a warp's 16 lanes of one ty read 16 consecutive words: no bank conflict.
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];

    const int tx = threadIdx.x;  // column group: columns tx, tx + BN/TN, ... of the tile
    const int ty = threadIdx.y;  // row group: rows ty, ty + BM/TM, ... of the tile
    const int tid = ty * (BN / TN) + tx;
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        // Edge tiles are zero-filled, so the inner loop needs no bounds checks (zeros add
        // nothing); every thread reaches both barriers whatever its position.
        for (int e = tid; e < BM * BK; e += NUM_THREADS) {
            const int r = e / BK, c = e % BK;  // consecutive threads walk a row of A: coalesced
            const int gr = row0 + r, gc = k0 + c;
            As[r][c] = (gr < M && gc < K) ? A[(size_t)gr * K + gc] : 0.0f;
        }
        for (int e = tid; e < BK * BN; e += NUM_THREADS) {
            const int r = e / BN, c = e % BN;  // consecutive threads walk a row of B: coalesced
            const int gr = k0 + r, gc = col0 + c;
            Bs[r][c] = (gr < K && gc < N) ? B[(size_t)gr * N + gc] : 0.0f;
        }
        __syncthreads();  // both tiles are complete before anyone reads them

#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[ty + i * (BM / TM)][k];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx + j * (BN / TN)];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();  // everyone is done reading before the next tiles overwrite them
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + ty + i * (BM / TM);
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = col0 + tx + j * (BN / TN);
            if (row < M && col < N) {
                const size_t idx = (size_t)row * N + col;
                // beta == 0 must not read C: BLAS semantics, and C may hold NaN poison
                C[idx] = beta == 0.0f ? alpha * acc[i][j] : fmaf(alpha, acc[i][j], beta * C[idx]);
            }
        }
    }
}
