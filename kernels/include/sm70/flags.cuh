// sm70/flags.cuh: flags in global memory between blocks of one grid: a load with acquire and a
// store with release at gpu scope (sm_70 memory model).
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
