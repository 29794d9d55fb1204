// Stage 04: shared-memory block tiling. A block of BM x BN threads (one per element of C) walks
// K in steps of BK: each thread copies one float of the A tile and one of the B tile from global
// memory into shared memory, the block waits, then every thread runs BK FMAs out of shared
// memory. Each float fetched from global memory now serves a whole row or column of the tile:
// by load instruction from global memory, per k the block loads BM + BN floats for BM*BN FMAs,
// 2*32*32 / (4*64) = 8 FLOP/byte (32x the naive 0.25). From shared memory each FMA still reads
// one A and one B float: 0.25 FLOP/byte, which the next stages raise with register tiles.
#ifndef BM
#error "BM (rows of the C tile, = blockDim.y) must be given as -DBM=..."
#endif
#ifndef BN
#error "BN (columns of the C tile, = blockDim.x) must be given as -DBN=..."
#endif
#ifndef BK
#error "BK (depth of one K step) must be given as -DBK=..."
#endif
static_assert(BK == BN, "each thread loads one A element: the A tile (BM x BK) needs BK == blockDim.x");
static_assert(BK == BM, "each thread loads one B element: the B tile (BK x BN) needs BK == blockDim.y");
static_assert(BM * BN <= 1024, "one thread per C element: at most 1024 threads per block");

extern "C" __global__ void gemm_smem_tile(int M, int N, int K, float alpha,
                                          const float* __restrict__ A,
                                          const float* __restrict__ B, float beta,
                                          float* __restrict__ C) {
    __shared__ float As[BM][BK];  // row-major like A: a warp (one ty) reads one As word: broadcast
    __shared__ float Bs[BK][BN];  // a warp reads 32 consecutive Bs words: 32 banks, no conflict

    const int tx = threadIdx.x;  // column inside the tile; also the k of the A element it loads
    const int ty = threadIdx.y;  // row inside the tile; also the k of the B element it loads
    const int row = blockIdx.y * BM + ty;
    const int col = blockIdx.x * BN + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        // Threads outside C still load and reach the barriers: edge tiles are zero-filled so
        // the inner loop needs no bounds checks (zeros add nothing to the sums).
        const int ka = k0 + tx, kb = k0 + ty;
        As[ty][tx] = (row < M && ka < K) ? A[(size_t)row * K + ka] : 0.0f;
        Bs[ty][tx] = (kb < K && col < N) ? B[(size_t)kb * N + col] : 0.0f;
        __syncthreads();  // the tile is complete before anyone reads it
#pragma unroll
        for (int k = 0; k < BK; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
        __syncthreads();  // everyone is done reading before the next tile overwrites it
    }

    if (row < M && col < N) {
        const size_t idx = (size_t)row * N + col;
        // beta == 0 must not read C: BLAS semantics, and C may hold garbage (or NaN poison)
        C[idx] = beta == 0.0f ? alpha * acc : fmaf(alpha, acc, beta * C[idx]);
    }
}
