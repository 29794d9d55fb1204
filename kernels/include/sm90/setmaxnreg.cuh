// sm90/setmaxnreg.cuh: a warpgroup's register budget moved at run time (setmaxnreg, sm_90a):
// producer warpgroups give registers back, consumer warpgroups take them.
#pragma once

// setmaxnreg.dec: this warpgroup gives registers back, down to N per thread.
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
// setmaxnreg.inc: this warpgroup takes registers, up to N per thread.
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}
