// gemm/fp8_scales.cuh: an FP8 GEMM's scales finer than one per tensor, applied to a consumer
// warpgroup's m64nNk32 accumulators (d[i] at row 16w + g + 8 ((i >> 1) & 1) and column
// 8 (i >> 2) + 2t + (i & 1) of its 64-row block; lane = 4g + t of warp w):
//   * per row of A and per column of B (scale_a[M], scale_b[N]): once, before the epilogue;
//   * DeepGEMM's blocks: per row of A and 128-wide group of K (scale_a[M][KB]) and per 128 x 128
//     block of B (scale_b[ceil(N / 128)][KB]), KB = ceil(K / 128): each k-block's Tensor Core
//     sum is added into the FP32 accumulator under its two scales (the promotion's step).
// Rows past M and columns past N read the last row's and column's scales (their results are
// never stored), so no read leaves the arrays.
#pragma once

// d *= scale_a[row] * scale_b[col] over a warpgroup's 64 x (nacc / 2 * 4 / 8 * 8) block at
// (row0, col0).
template <int nacc>
__device__ __forceinline__ void scale_rows_cols(float (&d)[nacc], const float* __restrict__ sa,
                                                const float* __restrict__ sb, int M, int N,
                                                int row0, int col0) {
    const int lane = threadIdx.x % 32, w = (threadIdx.x / 32) % 4;
    const int g = lane / 4, t = lane % 4;
    const float s_lo = __ldg(sa + min(row0 + 16 * w + g, M - 1));
    const float s_hi = __ldg(sa + min(row0 + 16 * w + g + 8, M - 1));
#pragma unroll
    for (int j = 0; j < nacc / 4; ++j) {
        const int col = col0 + 8 * j + 2 * t;
        const float b0 = __ldg(sb + min(col, N - 1)), b1 = __ldg(sb + min(col + 1, N - 1));
        d[4 * j] *= s_lo * b0;
        d[4 * j + 1] *= s_lo * b1;
        d[4 * j + 2] *= s_hi * b0;
        d[4 * j + 3] *= s_hi * b1;
    }
}

// acc += d * scale_a[row][kb] * scale_b[nblock][kb] for k-block kb of kblocks, then (zero) d = 0:
// the promotion of one k-block's sum under DeepGEMM's block scales (the tile's 128 columns lie in
// block nblock of B). A set that the next WGMMA overwrites (scale_d = 0) needs no zeroing.
template <int nacc, bool zero = true>
__device__ __forceinline__ void promote_block_scaled(float (&acc)[nacc], float (&d)[nacc],
                                                     const float* __restrict__ sa,
                                                     const float* __restrict__ sb, int M,
                                                     int kblocks, int row0, int nblock, int kb) {
    const int lane = threadIdx.x % 32, w = (threadIdx.x / 32) % 4, g = lane / 4;
    const float b = __ldg(sb + static_cast<size_t>(nblock) * kblocks + kb);
    const int lo = min(row0 + 16 * w + g, M - 1), hi = min(row0 + 16 * w + g + 8, M - 1);
    const float s_lo = __ldg(sa + static_cast<size_t>(lo) * kblocks + kb) * b;
    const float s_hi = __ldg(sa + static_cast<size_t>(hi) * kblocks + kb) * b;
#pragma unroll
    for (int i = 0; i < nacc; ++i) {
        acc[i] = fmaf(d[i], ((i >> 1) & 1) ? s_hi : s_lo, acc[i]);
        if (zero) d[i] = 0.0f;
    }
}
