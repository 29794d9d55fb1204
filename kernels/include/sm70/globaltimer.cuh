// sm70/globaltimer.cuh: the GPU's nanosecond clock, one for every SM (clock64 counts an SM's own
// cycles), so stamps taken by blocks on different SMs order on one axis. How often it ticks is
// the part's (about a microsecond on some, tens of nanoseconds on others): readers of stamps
// take the resolution from the stamps themselves.
#pragma once

// mov.u64 %globaltimer: the time in nanoseconds (volatile: never moved past the code it stamps).
__device__ __forceinline__ unsigned long long globaltimer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
    return t;
}
