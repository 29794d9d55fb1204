// gemm/wgmma_store.cuh: the register epilogue of the WGMMA stages (24, 25, 26, 32): a consumer
// warpgroup's accumulators in the wgmma m64nN layout written to C (16-bit), bounds-checked, with
// alpha (stage 32: alpha x scale_a x scale_b) and beta.
#pragma once

#include "ptx_sm80.cuh"  // elem_t, pack2, to_float

// C = alpha * D + beta * C for the 64 x (2 * NACC / 8 * 8) block a warpgroup holds, rows from
// row0 and columns from col0; pairs (2t, 2t+1) go out as one 32-bit store when N is even.
template <int NACC>
__device__ __forceinline__ void store_block(const float (&d)[NACC], elem_t* __restrict__ C, int M,
                                            int N, int row0, int col0, float alpha, float beta) {
    const int lane = threadIdx.x % 32, w = (threadIdx.x / 32) % 4;
    const int g = lane / 4, t = lane % 4;
    const bool pairs = N % 2 == 0;
#pragma unroll
    for (int j = 0; j < NACC / 4; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = row0 + 16 * w + g + 8 * h, col = col0 + 8 * j + 2 * t;
            if (row >= M || col >= N) continue;
            const size_t idx = static_cast<size_t>(row) * N + col;
            float v0 = alpha * d[4 * j + 2 * h], v1 = alpha * d[4 * j + 2 * h + 1];
            if (pairs) {
                if (beta != 0.0f) {  // beta == 0: C is never read
                    const unsigned old = *reinterpret_cast<const unsigned*>(C + idx);
                    v0 = fmaf(beta, to_float(static_cast<elem_t>(old & 0xffffu)), v0);
                    v1 = fmaf(beta, to_float(static_cast<elem_t>(old >> 16)), v1);
                }
                *reinterpret_cast<unsigned*>(C + idx) = pack2(v0, v1);
            } else {
                if (beta != 0.0f) v0 = fmaf(beta, to_float(C[idx]), v0);
                C[idx] = static_cast<elem_t>(pack2(v0, 0.0f) & 0xffffu);
                if (col + 1 < N) {
                    if (beta != 0.0f) v1 = fmaf(beta, to_float(C[idx + 1]), v1);
                    C[idx + 1] = static_cast<elem_t>(pack2(v1, 0.0f) & 0xffffu);
                }
            }
        }
    }
}
