// The element type of stages built for fp32, fp16 and bf16 from one source (-DELEM_FP32=1,
// -DELEM_BF16=1, else fp16) and its conversions to and from fp32. NVRTC from PyPI ships no
// cuda_fp16.h: 16-bit values travel as their bits, fp16 converts through libdevice
// (__nv_half2float: HADD2.F32; __nv_float2half_rn: F2FP.F16), bf16 by shifts.
#pragma once
#ifndef ELEM_FP32
#define ELEM_FP32 0
#endif
#ifndef ELEM_BF16
#define ELEM_BF16 0
#endif

#if ELEM_FP32
typedef float elem_t;
#else
typedef unsigned short elem_t;  // fp16 or bf16 bits
#endif
extern "C" __device__ float __nv_half2float(unsigned short);     // libdevice: HADD2.F32
extern "C" __device__ unsigned short __nv_float2half_rn(float);  // libdevice: F2FP.F16

// one element to fp32
__device__ __forceinline__ float elem_to_float(elem_t x) {
#if ELEM_FP32
    return x;
#elif ELEM_BF16
    return __uint_as_float(static_cast<unsigned>(x) << 16);
#else
    return __nv_half2float(x);
#endif
}

// fp32 to one element, rounded to nearest even (a NaN stays a NaN)
__device__ __forceinline__ elem_t elem_from_float(float v) {
#if ELEM_FP32
    return v;
#elif ELEM_BF16
    const unsigned u = __float_as_uint(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<elem_t>((u >> 16) | 0x40u);
    return static_cast<elem_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
#else
    return __nv_float2half_rn(v);
#endif
}
