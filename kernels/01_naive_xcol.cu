// Stage 01: naive GEMM. One thread per element of C; threadIdx.x walks the columns of C.
// Block 16x16: a warp is 2 rows x 16 columns, so its 32 B loads are 16 consecutive floats
// (coalesced) and its A loads are 2 addresses (a broadcast). Per FMA a thread loads one float
// of A and one of B: 2 FLOPs per 8 bytes, 0.25 FLOP/byte by load instruction.
extern "C" __global__ void gemm_naive_xcol(int M, int N, int K, float alpha,
                                           const float* __restrict__ A,
                                           const float* __restrict__ B, float beta,
                                           float* __restrict__ C) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;  // the grid rounds up: edge blocks stick out of C

    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(A[(size_t)row * K + k], B[(size_t)k * N + col], acc);

    const size_t idx = (size_t)row * N + col;
    // beta == 0 must not read C: BLAS semantics, and C may hold garbage (or NaN poison)
    C[idx] = beta == 0.0f ? alpha * acc : fmaf(alpha, acc, beta * C[idx]);
}
