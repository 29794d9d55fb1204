// sm70/named_barrier.cuh: named barriers (bar.sync / bar.arrive with an id and a thread count):
// some warps of a block meet, or count towards a meeting, without stopping the others.
#pragma once

// bar.sync with an id: `threads` threads (a multiple of 32) meet at named barrier `id` (0 is
// __syncthreads).
__device__ __forceinline__ void bar_sync(int id, int threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
// bar.arrive with an id: this warp counts towards named barrier `id` (of `threads` threads) and
// goes on without waiting; the warps that bar.sync on it wait for these arrivals too.
__device__ __forceinline__ void bar_arrive(int id, int threads) {
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
