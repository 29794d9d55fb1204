// sm90/tma.cuh: the tensor memory accelerator (cp.async.bulk.tensor, sm_90): the tensor map type,
// box loads into shared memory counted on an mbarrier (multicast to a cluster too), box stores
// from shared memory and their bulk groups. Shared operands are 32-bit shared-window addresses.
#pragma once

// A CUtensorMap, encoded on the host (rooflinecli/gpu/tma.py, cuTensorMapEncodeTiled) and passed
// by value as a __grid_constant__ kernel parameter: NVRTC cannot include <cuda.h>, so the
// 128-byte, 64-byte-aligned type is declared here.
struct __align__(64) TmaMap {
    unsigned long long opaque[16];
};

// prefetch.tensormap: bring a tensor map (a __grid_constant__ parameter) into the cache.
__device__ __forceinline__ void prefetch_tensormap(const TmaMap* map) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(map))
                 : "memory");
}
// cp.async.bulk.tensor.2d load: the box of the map at (c0 = innermost coordinate, c1 = row) into
// shared memory at dst, laid out (swizzled) as the map says; completion is counted in bytes on
// the mbarrier at bar.
__device__ __forceinline__ void tma_load_2d(unsigned int dst, const TmaMap* map, unsigned int bar,
                                            int c0, int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar)
        : "memory");
}
// cp.async.bulk.tensor.3d load: the box of a 3-D map at (c0 = innermost, c1, c2) into shared
// memory at dst; elements outside the tensor arrive as zeros (counted in the bytes all the same).
__device__ __forceinline__ void tma_load_3d(unsigned int dst, const TmaMap* map, unsigned int bar,
                                            int c0, int c1, int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
        : "memory");
}
// cp.async.bulk.tensor.2d load .multicast::cluster: the same box written at dst's offset into
// every block of the cluster in `mask`, each block's mbarrier at bar's offset told its bytes.
__device__ __forceinline__ void tma_load_2d_multicast(unsigned int dst, const TmaMap* map,
                                                      unsigned int bar, int c0, int c1,
                                                      unsigned short mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
        : "memory");
}
// cp.async.bulk.prefetch.tensor.2d.L2: bring the box of the map at (c0, c1) into L2, with no
// shared memory, no barrier and nothing to wait for (a later load of the box hits L2).
__device__ __forceinline__ void tma_prefetch_2d_l2(const TmaMap* map, int c0, int c1) {
    asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];" ::"l"(
                     reinterpret_cast<unsigned long long>(map)),
                 "r"(c0), "r"(c1)
                 : "memory");
}
// cp.async.bulk.tensor.2d store: a box of shared memory at src (laid out as the map says) to the
// tensor at (c0, c1); elements outside the tensor are not written. Completion: bulk groups.
__device__ __forceinline__ void tma_store_2d(const TmaMap* map, unsigned int src, int c0, int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
            reinterpret_cast<unsigned long long>(map)),
        "r"(c0), "r"(c1), "r"(src)
        : "memory");
}
// cp.async.bulk.tensor.3d store: a box of shared memory at src to a 3-D map at (c0, c1, c2);
// elements outside the tensor are not written. Completion: bulk groups.
__device__ __forceinline__ void tma_store_3d(const TmaMap* map, unsigned int src, int c0, int c1,
                                             int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3}], [%4];" ::"l"(
            reinterpret_cast<unsigned long long>(map)),
        "r"(c0), "r"(c1), "r"(c2), "r"(src)
        : "memory");
}
// cp.async.bulk.commit_group: this thread's bulk stores issued since the last commit form a group.
__device__ __forceinline__ void bulk_commit() {
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// cp.async.bulk.wait_group.read N: at most N of this thread's groups may still be reading their
// shared-memory source (the others' sources may be overwritten).
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
// cp.async.bulk.wait_group N: at most N of this thread's groups are still incomplete (writes done).
template <int N>
__device__ __forceinline__ void bulk_wait() {
    asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}
