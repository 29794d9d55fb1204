// sm90/griddepcontrol.cuh: programmatic dependent launch (sm_90). A kernel launched with the
// programmatic stream serialization attribute may start while the kernel before it on the stream
// still runs; these two instructions are how the pair hands over.
#pragma once

// griddepcontrol.wait: block this thread until every prerequisite grid has completed and its
// memory operations are visible. Reads of what the previous kernel wrote go after it. Without a
// programmatic dependency it returns at once.
__device__ __forceinline__ void griddepcontrol_wait() {
    asm volatile("griddepcontrol.wait;" ::: "memory");
}

// griddepcontrol.launch_dependents: this block no longer holds back the dependent grid's launch;
// the dependent starts once every block has signalled or exited. It orders nothing in memory:
// the dependent still waits (griddepcontrol_wait) for this grid's writes.
__device__ __forceinline__ void griddepcontrol_launch_dependents() {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

// Loads of what the previous grid wrote, for after griddepcontrol_wait(). __ldg is not enough:
// it promises data the kernel's whole lifetime leaves unchanged, and the compiler is free to
// move such a load above the wait (it did: stage 56's first loads of A ran before the wait).
// These are volatile, so they stay after it, and .cg: from L2, never from a line L1 kept.
__device__ __forceinline__ uint4 ld_after_wait_v4(const void* p) {
    uint4 v;
    asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

__device__ __forceinline__ unsigned short ld_after_wait_u16(const void* p) {
    unsigned short v;
    asm volatile("ld.global.cg.u16 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ float ld_after_wait_f32(const void* p) {
    float v;
    asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
    return v;
}
