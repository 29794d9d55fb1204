// sm90/wgmma_fp8.cuh: warpgroup MMA on 8-bit floating-point inputs (wgmma.mma_async ...k32
// .f32.e4m3.e4m3, sm_90a), f32 accumulator registers, A and B K-major from shared-memory
// descriptors (sm90/wgmma_desc.cuh: a 128-byte swizzle row is 128 elements of K). -DFP8_E5M2=1
// selects the e5m2 forms; otherwise e4m3. Fence, commit and wait are sm90/wgmma.cuh's.
// The Tensor Cores' FP8 path adds its products into the accumulator with fewer than FP32's 24
// significand bits (the FP32 registers are not a full-precision sum): a kernel that wants FP32
// sums over long K adds partial results into a second accumulator on the CUDA cores.
#pragma once

#include "wgmma_operands.cuh"  // the accumulators' operand lists

#ifndef FP8_E5M2
#define FP8_E5M2 0
#endif

#if FP8_E5M2
#define ROOFLINE_WGMMA_FP8_M64N8K32 "wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e5m2"
#define ROOFLINE_WGMMA_FP8_M64N16K32 "wgmma.mma_async.sync.aligned.m64n16k32.f32.e5m2.e5m2"
#define ROOFLINE_WGMMA_FP8_M64N32K32 "wgmma.mma_async.sync.aligned.m64n32k32.f32.e5m2.e5m2"
#define ROOFLINE_WGMMA_FP8_M64N64K32 "wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e5m2"
#define ROOFLINE_WGMMA_FP8_M64N128K32 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e5m2.e5m2"
#define ROOFLINE_WGMMA_FP8_M64N160K32 "wgmma.mma_async.sync.aligned.m64n160k32.f32.e5m2.e5m2"
#define ROOFLINE_WGMMA_FP8_M64N192K32 "wgmma.mma_async.sync.aligned.m64n192k32.f32.e5m2.e5m2"
#define ROOFLINE_WGMMA_FP8_M64N224K32 "wgmma.mma_async.sync.aligned.m64n224k32.f32.e5m2.e5m2"
#define ROOFLINE_WGMMA_FP8_M64N256K32 "wgmma.mma_async.sync.aligned.m64n256k32.f32.e5m2.e5m2"
#else
#define ROOFLINE_WGMMA_FP8_M64N8K32 "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3"
#define ROOFLINE_WGMMA_FP8_M64N16K32 "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3"
#define ROOFLINE_WGMMA_FP8_M64N32K32 "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3"
#define ROOFLINE_WGMMA_FP8_M64N64K32 "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3"
#define ROOFLINE_WGMMA_FP8_M64N128K32 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"
#define ROOFLINE_WGMMA_FP8_M64N160K32 "wgmma.mma_async.sync.aligned.m64n160k32.f32.e4m3.e4m3"
#define ROOFLINE_WGMMA_FP8_M64N192K32 "wgmma.mma_async.sync.aligned.m64n192k32.f32.e4m3.e4m3"
#define ROOFLINE_WGMMA_FP8_M64N224K32 "wgmma.mma_async.sync.aligned.m64n224k32.f32.e4m3.e4m3"
#define ROOFLINE_WGMMA_FP8_M64N256K32 "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3"
#endif

// wgmma.mma_async m64n128k32 with 8-bit inputs (f32 accumulator registers), A and B from
// shared-memory descriptors, both K-major (8-bit wgmma has no transposed forms): D (64 x 128) =
// A (64 x 32) * B (32 x 128) + (scale_d ? D : 0). The accumulator layout is that of
// wgmma_m64n128k16 (sm90/wgmma.cuh): d[i] holds D[16w + g + 8*((i>>1)&1)][8*(i>>2) + 2t + (i&1)].
__device__ __forceinline__ void wgmma_fp8_m64n128k32(float (&d)[64], unsigned long long desc_a,
                                                    unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        ROOFLINE_WGMMA_FP8_M64N128K32 " {"
        ROOFLINE_WG_REGS_64
        "}, %64, %65, p, 1, 1;\n"
        "}\n"
        : ROOFLINE_WG_ACC_64
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// wgmma.mma_async m64n256k32 with 8-bit inputs (f32 accumulator registers), A and B from
// shared-memory descriptors, both K-major (8-bit wgmma has no transposed forms): D (64 x 256) =
// A (64 x 32) * B (32 x 256) + (scale_d ? D : 0). The accumulator layout is that of
// wgmma_m64n256k16 (sm90/wgmma.cuh): d[i] holds D[16w + g + 8*((i>>1)&1)][8*(i>>2) + 2t + (i&1)].
__device__ __forceinline__ void wgmma_fp8_m64n256k32(float (&d)[128], unsigned long long desc_a,
                                                    unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        ROOFLINE_WGMMA_FP8_M64N256K32 " {"
        ROOFLINE_WG_REGS_128
        "}, %128, %129, p, 1, 1;\n"
        "}\n"
        : ROOFLINE_WG_ACC_128
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// wgmma.mma_async m64n160k32 with 8-bit inputs: the tile widths between 128 and 256 that
// fill the SMs where 128 or 256 leaves a last wave short (DeepGEMM enumerates BLOCK_N in steps
// of 16). Layout and operands as wgmma_fp8_m64n128k32's. m64n160k32: 80 accumulators a thread.
__device__ __forceinline__ void wgmma_fp8_m64n160k32(float (&d)[80], unsigned long long desc_a,
                                                    unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %82, 0;\n"
        ROOFLINE_WGMMA_FP8_M64N160K32 " {"
        ROOFLINE_WG_REGS_80
        "}, %80, %81, p, 1, 1;\n"
        "}\n"
        : ROOFLINE_WG_ACC_80
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// m64n192k32: 96 accumulators a thread.
__device__ __forceinline__ void wgmma_fp8_m64n192k32(float (&d)[96], unsigned long long desc_a,
                                                    unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %98, 0;\n"
        ROOFLINE_WGMMA_FP8_M64N192K32 " {"
        ROOFLINE_WG_REGS_96
        "}, %96, %97, p, 1, 1;\n"
        "}\n"
        : ROOFLINE_WG_ACC_96
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// m64n224k32: 112 accumulators a thread.
__device__ __forceinline__ void wgmma_fp8_m64n224k32(float (&d)[112], unsigned long long desc_a,
                                                    unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %114, 0;\n"
        ROOFLINE_WGMMA_FP8_M64N224K32 " {"
        ROOFLINE_WG_REGS_112
        "}, %112, %113, p, 1, 1;\n"
        "}\n"
        : ROOFLINE_WG_ACC_112
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// wgmma.mma_async m64nNk32 with 8-bit inputs for N = 8, 16, 32 and 64: the narrow shapes of the
// swapped product (stage 34), where N is the batch (rows of activations) and the instruction's
// 64 rows are 64 rows of the weights. Layout and operands as wgmma_fp8_m64n128k32's. m64n8k32:
// the batch of one to eight rows (4 accumulators a thread).
__device__ __forceinline__ void wgmma_fp8_m64n8k32(float (&d)[4], unsigned long long desc_a,
                                                   unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %6, 0;\n"
        ROOFLINE_WGMMA_FP8_M64N8K32 " {"
        ROOFLINE_WG_REGS_4
        "}, %4, %5, p, 1, 1;\n"
        "}\n"
        : ROOFLINE_WG_ACC_4
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// m64n16k32: 16 rows of the batch (8 accumulators a thread).
__device__ __forceinline__ void wgmma_fp8_m64n16k32(float (&d)[8], unsigned long long desc_a,
                                                    unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %10, 0;\n"
        ROOFLINE_WGMMA_FP8_M64N16K32 " {"
        ROOFLINE_WG_REGS_8
        "}, %8, %9, p, 1, 1;\n"
        "}\n"
        : ROOFLINE_WG_ACC_8
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// m64n32k32: 32 rows of the batch (16 accumulators a thread).
__device__ __forceinline__ void wgmma_fp8_m64n32k32(float (&d)[16], unsigned long long desc_a,
                                                    unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %18, 0;\n"
        ROOFLINE_WGMMA_FP8_M64N32K32 " {"
        ROOFLINE_WG_REGS_16
        "}, %16, %17, p, 1, 1;\n"
        "}\n"
        : ROOFLINE_WG_ACC_16
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// m64n64k32: 64 rows of the batch (32 accumulators a thread).
__device__ __forceinline__ void wgmma_fp8_m64n64k32(float (&d)[32], unsigned long long desc_a,
                                                    unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %34, 0;\n"
        ROOFLINE_WGMMA_FP8_M64N64K32 " {"
        ROOFLINE_WG_REGS_32
        "}, %32, %33, p, 1, 1;\n"
        "}\n"
        : ROOFLINE_WG_ACC_32
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// m64nNk32 for N = 8 .. 256 (a stage's batch tile or tile width): one source builds any of these.
template <int N>
__device__ __forceinline__ void wgmma_fp8_m64nNk32(float (&d)[N / 2], unsigned long long desc_a,
                                                   unsigned long long desc_b, int scale_d) {
    static_assert(N == 8 || N == 16 || N == 32 || N == 64 || N == 128 || N == 160 || N == 192 ||
                      N == 224 || N == 256,
                  "wgmma_fp8_m64nNk32 wraps n8, n16, n32, n64, n128, n160, n192, n224 and n256");
    if constexpr (N == 8)
        wgmma_fp8_m64n8k32(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 16)
        wgmma_fp8_m64n16k32(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 32)
        wgmma_fp8_m64n32k32(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 64)
        wgmma_fp8_m64n64k32(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 128)
        wgmma_fp8_m64n128k32(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 160)
        wgmma_fp8_m64n160k32(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 192)
        wgmma_fp8_m64n192k32(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 224)
        wgmma_fp8_m64n224k32(d, desc_a, desc_b, scale_d);
    else
        wgmma_fp8_m64n256k32(d, desc_a, desc_b, scale_d);
}
