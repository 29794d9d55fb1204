// gemm/wgmma_pipeline.cuh: the ring of the warp-specialized persistent WGMMA stages (26-30), as
// its producer and consumers step through it. A block tile is bm x bn, a K slice bk deep; the
// ring holds `stages` slots of one slice each (A: bm x bk K-major, 128-byte swizzled rows; B:
// bn / 64 boxes of bk rows x 64 columns, read N-major), 1024-byte aligned from `base`. Slot s
// has a full barrier at full0 + 8s (the producer's arrival and the TMA bytes) and an empty one at
// empty0 + 8s (the consumers' releases). One K-slice counter `it`, the same in every role and
// running on across tiles, names the slot (it % stages) and its use (it / stages).
#pragma once

#include "gemm/cluster_multicast.cuh"  // load_b_share, release_slot (the stages call it too)
#include "sm90/mbarrier.cuh"    // mbar_wait, mbar_arrive_expect_tx
#include "sm90/tma.cuh"         // TmaMap, tma_load_2d
#include "sm90/wgmma.cuh"       // wgmma_fence, wgmma_m64nNk16, wgmma_commit
#include "sm90/wgmma_desc.cuh"  // smem_desc_k_sw128, smem_desc_mn_sw128

// The producer's K slice `it` (K tile kt of the tile at (m0, n0)), issued by its one thread:
// wait until the consumers have released the slot's previous use, announce `bytes`, then load
// the slice's A box (unless load_a is false: this block's rows lie past M) and this block's B
// boxes: all of them alone; in a cluster of cluster_m blocks, rank r's share (boxes r,
// r + cluster_m, ...: with three boxes a tile of 192 columns, one block takes two), multicast to
// the same offset (and barrier) in every block of the cluster.
template <int bm, int bn, int bk, int stages, int cluster_m>
__device__ __forceinline__ void load_slice(unsigned int it, unsigned int base, unsigned int full0,
                                           unsigned int empty0, const TmaMap* tma_a,
                                           const TmaMap* tma_b, int kt, int m0, int n0, int rank,
                                           bool load_a, unsigned int bytes) {
    constexpr int a_bytes = bm * bk * 2, stage_bytes = a_bytes + bn * bk * 2;
    constexpr int box_cols = 64, box_bytes = bk * 128;  // a B box: bk rows of 128 bytes
    const unsigned int s = it % stages;
    // use n >= 1 of slot s: wait until the consumers (of every block it goes to) released n - 1
    if (it >= stages) mbar_wait(empty0 + 8 * s, ((it / stages) - 1) & 1);
    const unsigned int sa = base + s * stage_bytes, bar = full0 + 8 * s;
    mbar_arrive_expect_tx(bar, bytes);
    if (load_a) tma_load_2d(sa, tma_a, bar, kt * bk, m0);
    // box j: columns n0 + 64 j .., rows kt * bk ..
    load_b_share<bn / box_cols, box_bytes, cluster_m>(sa + a_bytes, tma_b, bar, n0, kt * bk,
                                                      box_cols, 0, rank);
}

// Consumer warpgroup c's K slice `it`: wait until the slice has landed (full phase it / stages),
// then issue its bk / 16 WGMMAs m64n(bn)k16 on rows 64c .. 64c+63 of A (+32 bytes per k16
// inside the swizzled rows) and B (+16 rows per k16; imm_trans_b 1: B N-major) as one group.
// accumulate false (a tile's first slice) runs the first WGMMA with scale-d 0, which clears the
// accumulators.
template <int bm, int bn, int bk, int stages, int imm_trans_b>
__device__ __forceinline__ void mma_slice(float (&d)[bn / 2], unsigned int it, unsigned int base,
                                          unsigned int full0, int c, bool accumulate) {
    constexpr int a_bytes = bm * bk * 2, stage_bytes = a_bytes + bn * bk * 2;
    constexpr int box_bytes = bk * 128;  // LBO of the N-major B operand: box to box along N
    const unsigned int s = it % stages;
    mbar_wait(full0 + 8 * s, (it / stages) & 1);  // use it / stages has landed
    const unsigned int sa = base + s * stage_bytes + c * (64 * bk * 2);
    const unsigned int sb = base + s * stage_bytes + a_bytes;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < bk / 16; ++kk)  // A: +32 bytes inside its rows; B: +16 rows
        wgmma_m64nNk16<bn, imm_trans_b>(d, smem_desc_k_sw128(sa + 32 * kk),
                                        smem_desc_mn_sw128(sb + 16 * 128 * kk, box_bytes),
                                        accumulate || kk != 0);
    wgmma_commit();
}
