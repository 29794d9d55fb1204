// sm70/ld_global_cg.cuh: ld.global.cg as volatile asm with a memory clobber: a load from L2 (never
// from a line L1 kept) that the compiler keeps in program order with the asm around it. For data
// another grid wrote: after griddepcontrol.wait (stage 56's A) an __ldg is not enough, since it
// promises data unchanged for the kernel's whole life and may be hoisted above the wait (it was:
// stage 56's first loads of A ran before the wait).
#pragma once

// ld.global.cg.v4.u32: 16 bytes.
__device__ __forceinline__ uint4 ld_global_cg_v4(const void* p) {
    uint4 v;
    asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

// ld.global.cg.u16: one 16-bit element (fp16 or bf16 bits).
__device__ __forceinline__ unsigned short ld_global_cg_u16(const void* p) {
    unsigned short v;
    asm volatile("ld.global.cg.u16 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
    return v;
}

// ld.global.cg.f32: one float.
__device__ __forceinline__ float ld_global_cg_f32(const void* p) {
    float v;
    asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
    return v;
}
