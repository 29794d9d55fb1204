// Stage 50: naive decode GEMM. A decoding LLM multiplies a few rows of activations (M = batch,
// 1..64) by every weight matrix, so each weight is read once per token and C = A B is bound by
// reading B (K x N) from HBM, not by FLOPs: the left of the ridge.
// Stage 01's kernel, one thread per element of C, fitted to that shape: a block is one row of C
// and NUM_THREADS neighbouring columns, so a warp's B loads are 32 consecutive elements of one
// row of B (coalesced) and its A load is one address (a broadcast). Each thread walks all of
// K: at 1 x 4096 x 4096 the grid is only 4096 / 128 = 32 blocks, 4 warps each, one scalar load
// of B per warp per k. Far too few bytes in flight to stream HBM (stage 52 is the fix), and M
// rows of C read B M times (through L2, if it still holds it).
// fp16/bf16 elements are raw 16-bit patterns (NVRTC from PyPI has no cuda_fp16.h): fp16 -> fp32
// through libdevice's __nv_half2float (one HADD2.F32), bf16 -> fp32 by a shift; FFMA in fp32.
#ifndef NUM_THREADS
#error "NUM_THREADS (columns of C per block) must be given as -DNUM_THREADS=..."
#endif
#include "elem.cuh"  // elem_t (fp32, fp16 or bf16 bits), elem_to_float, elem_from_float

static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "whole warps, at most 1024 threads");


extern "C" __global__ void __launch_bounds__(NUM_THREADS)
gemv_naive(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
           const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C) {
    const int n = blockIdx.x * NUM_THREADS + threadIdx.x;  // threadIdx.x -> column: coalesced B
    const int m = blockIdx.y;                              // one row of C per block row
    if (m >= M || n >= N) return;  // the grid rounds N up: the last block sticks out of C

    const elem_t* a = A + static_cast<size_t>(m) * K;
    const elem_t* b = B + n;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(elem_to_float(a[k]), elem_to_float(b[static_cast<size_t>(k) * N]), acc);

    const size_t idx = static_cast<size_t>(m) * N + n;
    float v = alpha * acc;
    if (beta != 0.0f) v = fmaf(beta, elem_to_float(C[idx]), v);  // beta == 0: C is never read
    C[idx] = elem_from_float(v);
}
