// gemm/tma_epilogue.cuh: the TMA-store epilogue of the persistent WGMMA stages (26-29): a
// consumer warpgroup's 64 x bn block of C converted to 16 bits, staged in shared memory in the
// 128-byte swizzle, and handed to the TMA store engine 64 columns at a time: full-line global
// writes, clipped to M x N by the copy engine, that drain while the next tile's main loop runs.
#pragma once

#include "ptx_sm80.cuh"           // elem_t, pack2, to_float, st_shared_u32
#include "sm70/named_barrier.cuh"  // bar_sync
#include "sm90/fence.cuh"          // fence_proxy_async
#include "sm90/tma.cuh"            // TmaMap, tma_store_2d, bulk groups

// C = alpha * D (+ beta * C) for a warpgroup's 64 x bn block at (row0, col0), through two
// staging buffers of 8 KiB at bufs (64 rows x one 128-byte row of 16-bit C). Chunk q of d
// (accumulators 32q .. 32q+31, columns 64q .. 64q+63) goes to buffer (stores & 1): row r at
// r * 128 bytes, its 16-byte piece jj (columns 8jj .. 8jj+7) at piece jj ^ (r % 8), the 128-byte
// swizzle that TMA applies by address bits (the buffers are 1024-byte aligned). r % 8 is g for
// every row a thread holds, so a warp's 32 four-byte stores land in 32 different banks. A buffer
// is reused only after cp.async.bulk.wait_group.read 1 (the store before the last has read it).
// `stores` counts the store groups this warpgroup committed (uniform over it; the same in every
// thread), across tiles; bar_id is its named barrier, leader the thread that issues its stores.
template <int bn>
__device__ __forceinline__ void store_tile_tma(const float (&d)[bn / 2], const TmaMap* map,
                                               const elem_t* C, int M, int N, int row0, int col0,
                                               float alpha, float beta, unsigned int bufs,
                                               int bar_id, bool leader, unsigned int& stores) {
    if (row0 >= M) return;  // this warpgroup's rows are all outside C (uniform over it)
    const int lane = threadIdx.x % 32, w = (threadIdx.x / 32) % 4;
    const int g = lane / 4, t = lane % 4;
    constexpr int cols = 64, chunk_bytes = 64 * cols * 2;  // a staged chunk: 8 KiB
#pragma unroll
    for (int q = 0; q < bn / cols; ++q) {
        const int c0 = col0 + cols * q;
        if (c0 >= N) break;  // this and later chunks are outside C (uniform)
        const unsigned int buf = bufs + (stores & 1u) * chunk_bytes;
        // the group committed two chunks ago read this buffer: it must have finished
        if (leader) bulk_wait_read<1>();
        bar_sync(bar_id, 128);
#pragma unroll
        for (int jj = 0; jj < cols / 8; ++jj) {
            const int j = (cols / 8) * q + jj;  // 8-column group of the accumulator layout
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = 16 * w + g + 8 * h;
                float v0 = alpha * d[4 * j + 2 * h], v1 = alpha * d[4 * j + 2 * h + 1];
                if (beta != 0.0f) {  // beta == 0: C is never read
                    const int row = row0 + r, col = c0 + 8 * jj + 2 * t;
                    if (row < M && col < N) {  // N is even: col + 1 < N too
                        // ld.global.cg (L2): not the read-only path, C is written in this kernel
                        const unsigned int old = __ldcg(reinterpret_cast<const unsigned int*>(
                            C + static_cast<size_t>(row) * N + col));
                        v0 = fmaf(beta, to_float(static_cast<elem_t>(old & 0xffffu)), v0);
                        v1 = fmaf(beta, to_float(static_cast<elem_t>(old >> 16)), v1);
                    }
                }
                st_shared_u32(buf + r * 128 + ((jj ^ g) << 4) + 4 * t, pack2(v0, v1));
            }
        }
        fence_proxy_async();  // each writer: its stores visible to the copy engine ...
        bar_sync(bar_id, 128);  // ... all writers done before the leader hands the chunk over
        if (leader) {
            tma_store_2d(map, buf, c0, row0);
            bulk_commit();
        }
        ++stores;
    }
}
