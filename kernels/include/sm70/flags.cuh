// sm70/flags.cuh: flags and counters between blocks of one grid, and between warps of one block:
// loads with acquire or relaxed order, a store with release, an acquire-release add and a fence
// (the sm_70 memory model).
#pragma once

// ld.acquire.gpu.global.u32: a flag another block sets; what that block wrote before setting it
// (with release) is visible to this thread's later accesses.
__device__ __forceinline__ unsigned int ld_acquire_gpu(const unsigned int* p) {
    unsigned int v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
// st.release.gpu.global.u32: set a flag for other blocks; this thread's prior accesses (and those
// it has synchronised with, e.g. through bar.sync) are visible to whoever acquires the value.
__device__ __forceinline__ void st_release_gpu(unsigned int* p, unsigned int v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// ld.relaxed.gpu.global.u32: a counter read without ordering (a poll; an acquire follows).
__device__ __forceinline__ unsigned int ld_relaxed_gpu(const unsigned int* p) {
    unsigned int v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
// fence.acq_rel.gpu: after relaxed polls that saw a release, what the releasing blocks wrote
// before it is visible to this thread's later accesses.
__device__ __forceinline__ void fence_acq_rel_gpu() {
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
}
// atom.acq_rel.gpu.global.add.u32: count into a counter, returning the count before. Release:
// this thread's prior accesses (and those it synchronised with through bar.sync) are visible to
// whoever acquires the count; acquire: so are those of every earlier release of the counter.
__device__ __forceinline__ unsigned int atom_add_acq_rel_gpu(unsigned int* p, unsigned int v) {
    unsigned int old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
}
// ld.acquire.cta.shared.u32: a flag another warp of the block sets (with release); what that
// warp wrote before setting it is visible to this thread's later accesses.
__device__ __forceinline__ unsigned int ld_acquire_cta_shared(const unsigned int* p) {
    unsigned int v;
    asm volatile("ld.acquire.cta.shared.u32 %0, [%1];"
                 : "=r"(v)
                 : "r"(static_cast<unsigned int>(__cvta_generic_to_shared(p)))
                 : "memory");
    return v;
}
// st.release.cta.shared.u32: set a flag for the block's other warps, after this thread's prior
// accesses (and those it has synchronised with).
__device__ __forceinline__ void st_release_cta_shared(unsigned int* p, unsigned int v) {
    asm volatile("st.release.cta.shared.u32 [%0], %1;" ::"r"(static_cast<unsigned int>(__cvta_generic_to_shared(p))),
                 "r"(v)
                 : "memory");
}
