// gemm/cluster_multicast.cuh: a ring slot shared by the blocks of a 1-D cluster along M (the
// 16-bit stages 27-30 and the FP8 stage 32): the blocks compute consecutive row tiles of one
// column of C, so they need the same B slice; each loads its share of it and the TMA multicasts
// the share into the same offset of every block's shared memory, counted on every block's full
// barrier at the same offset. A slot so filled is written by every block's producer, so it goes
// back to all of them: each empty barrier counts the releases of every block's consumers.
#pragma once

#include "sm90/cluster.cuh"   // mbar_arrive_cluster
#include "sm90/mbarrier.cuh"  // mbar_arrive
#include "sm90/tma.cuh"       // TmaMap, tma_load_2d, tma_load_2d_multicast

// One K slice's B as `boxes` TMA boxes: box j at dst + j * box_bytes in shared memory and at
// tensor coordinates (c0 + j * dc0, c1 + j * dc1). Alone (cluster_m 1) this block loads them all;
// in a cluster of cluster_m blocks rank r loads boxes r, r + cluster_m, ... (its share: of a
// 192-column tile's three 64-column boxes rank 0 takes two, of a 64-column tile's one box rank
// 0 takes it) and multicasts each to every block (mask: all cluster_m ranks), the bytes told to
// each block's barrier at bar's offset. Stage 27 splits B's N-major 64-column boxes (dc0 = 64 along N); the
// FP8 stage splits its one K-major box of bn rows into cluster_m boxes of bn / cluster_m rows
// (dc1 = bn / cluster_m along N): K-major 128-byte swizzled rows are contiguous, so the halves
// side by side are the whole box and the WGMMA descriptors do not change.
template <int boxes, int box_bytes, int cluster_m>
__device__ __forceinline__ void load_b_share(unsigned int dst, const TmaMap* map, unsigned int bar,
                                             int c0, int c1, int dc0, int dc1, int rank) {
#pragma unroll
    for (int j = rank; j < boxes; j += cluster_m) {
        if (cluster_m == 1) {
            tma_load_2d(dst + j * box_bytes, map, bar, c0 + j * dc0, c1 + j * dc1);
        } else {
            tma_load_2d_multicast(dst + j * box_bytes, map, bar, c0 + j * dc0, c1 + j * dc1,
                                  (1u << cluster_m) - 1);
        }
    }
}

// A slot the consumers of every block of a cluster read goes back to every producer that writes
// it: lane r of a releasing warp arrives on block r's empty barrier (alone: lane 0 on its own).
// Every warp of a consumer warpgroup releases, or (per_warpgroup) only its warp 0: a WGMMA is
// one operation of the whole warpgroup, so once warp 0's wgmma.wait_group has seen it complete
// its shared-memory reads are over for all four warps (CUTLASS's TMA pipeline counts one
// arrival per consumer warpgroup and destination block). An empty barrier so released is
// initialised to (releasing warps per block) x cluster_m arrivals.
template <int cluster_m, bool per_warpgroup>
__device__ __forceinline__ void release_slot(unsigned int empty_bar) {
    const int lane = threadIdx.x % 32;
    if (per_warpgroup && (threadIdx.x / 32) % 4 != 0) return;
    if (cluster_m == 1) {
        if (lane == 0) mbar_arrive(empty_bar);
    } else if (lane < cluster_m) {
        mbar_arrive_cluster(empty_bar, lane);
    }
}
