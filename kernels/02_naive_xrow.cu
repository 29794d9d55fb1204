// Stage 02: the naive GEMM with the mapping turned: threadIdx.x walks the rows of C.
// Same arithmetic and the same 0.25 FLOP/byte by load instruction as stage 01, but a warp's
// 32 A addresses are now K*4 bytes apart: one load instruction touches 32 sectors instead of 2,
// and B becomes a broadcast. Only the memory system sees the difference.
extern "C" __global__ void gemm_naive_xrow(int M, int N, int K, float alpha,
                                           const float* __restrict__ A,
                                           const float* __restrict__ B, float beta,
                                           float* __restrict__ C) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;  // the grid rounds up: edge blocks stick out of C

    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(A[(size_t)row * K + k], B[(size_t)k * N + col], acc);

    const size_t idx = (size_t)row * N + col;
    C[idx] = beta == 0.0f ? alpha * acc : fmaf(alpha, acc, beta * C[idx]);  // beta 0: C unread
}
