// A naive BF16 GEMM for the checks' own tests: one thread per C element, FP32 accumulation.
// SKIP_K >= 0 leaves out that one k index (a kernel with an off-by-one in its K loop), which
// the BF16 bound must catch at K = 16,384 (1/sqrt(K) = 0.8% relative error against 0.1-0.2% of
// output rounding). CORRUPT_AFTER_FIRST = 1 writes a wrong C[0] from the second launch on: right
// the first time, wrong when timed, which only a check of a timed launch sees.
// B_NK = 1 reads B as its N x K transpose (a stage with b_layout "nk": the runner transposes the
// contract's B inside each timed launch and charges it to the stage).
// NVRTC from PyPI ships no cuda_bf16.h: BF16 values travel as their 16 bits.
typedef unsigned short bf16_bits;
__device__ __forceinline__ float bf16_to_float(bf16_bits x) { return __uint_as_float((unsigned)x << 16); }
__device__ __forceinline__ bf16_bits float_to_bf16(float f) {  // round to nearest even
    const unsigned u = __float_as_uint(f);
    return (bf16_bits)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
#ifndef SKIP_K
#define SKIP_K -1
#endif
#ifndef CORRUPT_AFTER_FIRST
#define CORRUPT_AFTER_FIRST 0
#endif
#ifndef B_NK
#define B_NK 0
#endif

__device__ int launches_seen;

extern "C" __global__ void naive_bf16(int M, int N, int K, float alpha,
                                      const bf16_bits* A, const bf16_bits* B,
                                      float beta, bf16_bits* C) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    const int skip = SKIP_K >= 0 ? SKIP_K : (SKIP_K == -2 ? K / 2 : -1);
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        if (k == skip) continue;
        const long long b_at = B_NK ? (long long)col * K + k : (long long)k * N + col;
        acc += bf16_to_float(A[(long long)row * K + k]) * bf16_to_float(B[b_at]);
    }
    float out = alpha * acc;
    if (beta != 0.0f) out += beta * bf16_to_float(C[(long long)row * N + col]);
    if (CORRUPT_AFTER_FIRST && row == 0 && col == 0) {
        if (atomicAdd(&launches_seen, 1) > 0) out += 1000.0f;
    }
    C[(long long)row * N + col] = float_to_bf16(out);
}
