// gemm/gemv_unpack.cuh: 16 bytes of a decode stage's load (51, 52, 54, 56) as floats: all of
// them, or one element known at compile time. 16-bit types convert as elem.cuh does.
#pragma once

#include "elem.cuh"  // elem_t (fp32, fp16 or bf16 bits), ELEM_FP32, ELEM_BF16

// 16 bytes -> 16 / sizeof(elem_t) floats.
__device__ __forceinline__ void unpack16(const uint4& v, float* f) {
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#if ELEM_FP32
        f[i] = __uint_as_float(w[i]);
#elif ELEM_BF16
        f[2 * i] = __uint_as_float(w[i] << 16);
        f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
#else
        f[2 * i] = __nv_half2float(static_cast<unsigned short>(w[i] & 0xffffu));
        f[2 * i + 1] = __nv_half2float(static_cast<unsigned short>(w[i] >> 16));
#endif
    }
}

// Element i (0 <= i < 16 / sizeof(elem_t), known at compile time once unrolled) of 16 bytes, as
// a float.
__device__ __forceinline__ float element(const uint4& v, int i) {
    const int word = i / (16 / sizeof(elem_t) / 4);
    const unsigned w = word == 0 ? v.x : word == 1 ? v.y : word == 2 ? v.z : v.w;
#if ELEM_FP32
    return __uint_as_float(w);
#elif ELEM_BF16
    return __uint_as_float(i % 2 ? w & 0xffff0000u : w << 16);
#else
    return __nv_half2float(static_cast<unsigned short>(i % 2 ? w >> 16 : w & 0xffffu));
#endif
}
