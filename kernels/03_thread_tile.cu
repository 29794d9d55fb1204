// Stage 03: thread tile. Each thread computes a TM x TN tile of C instead of one element.
// Per k it loads TM floats of A and TN of B into registers and does TM*TN FMAs on them:
// 4x4 -> 8 loads feed 16 FMAs, 1 FLOP/byte (4x the naive 0.25); 8x8 -> 16 feed 64, 2 FLOP/byte.
// The price is registers: TM*TN accumulators plus TM + TN operands per thread.
#ifndef TM
#error "TM (rows of C per thread) must be given as -DTM=..."
#endif
#ifndef TN
#error "TN (columns of C per thread) must be given as -DTN=..."
#endif
static_assert(TM >= 1 && TN >= 1, "a thread computes at least one element of C");
static_assert(TM * TN <= 256, "the accumulator tile must fit in registers (255 per thread)");

extern "C" __global__ void gemm_thread_tile(int M, int N, int K, float alpha,
                                            const float* __restrict__ A,
                                            const float* __restrict__ B, float beta,
                                            float* __restrict__ C) {
    // threadIdx.x -> columns: neighbouring threads' B addresses are TN*4 bytes apart
    const int row0 = (blockIdx.y * blockDim.y + threadIdx.y) * TM;
    const int col0 = (blockIdx.x * blockDim.x + threadIdx.x) * TN;
    if (row0 >= M || col0 >= N) return;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    for (int k = 0; k < K; ++k) {
        float a[TM], b[TN];
#pragma unroll
        for (int i = 0; i < TM; ++i)  // rows past M read 0: tiles need not divide M
            a[i] = row0 + i < M ? A[(size_t)(row0 + i) * K + k] : 0.0f;
#pragma unroll
        for (int j = 0; j < TN; ++j)
            b[j] = col0 + j < N ? B[(size_t)k * N + col0 + j] : 0.0f;
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            if (row0 + i < M && col0 + j < N) {
                const size_t idx = (size_t)(row0 + i) * N + col0 + j;
                C[idx] = beta == 0.0f ? alpha * acc[i][j] : fmaf(alpha, acc[i][j], beta * C[idx]);
            }
        }
    }
}
