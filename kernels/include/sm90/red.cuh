// sm90/red.cuh: vector reductions into global memory (red.global.add.v4.f32 and .v2.f32, sm_90).
#pragma once

// red.global.add.v4.f32 (sm_90): four floats added to 16 bytes of global memory by one reduction
// in L2, where scalar RED.ADD.F32 takes four; relaxed, gpu scope. `p` 16-byte aligned.
__device__ __forceinline__ void red_add_v4_f32(float* p, float a, float b, float c, float d) {
    asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(a), "f"(b), "f"(c),
                 "f"(d)
                 : "memory");
}

// red.global.add.v2.f32 (sm_90): two floats added to 8 bytes of global memory by one reduction.
// `p` 8-byte aligned.
__device__ __forceinline__ void red_add_v2_f32(float* p, float a, float b) {
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(a), "f"(b) : "memory");
}
