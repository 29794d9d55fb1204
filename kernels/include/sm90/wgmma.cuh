// sm90/wgmma.cuh: warpgroup MMA (wgmma.mma_async, sm_90a): its fence, commit and wait, and the
// m64nNk16 shapes the stages use, f32 accumulate, with A from shared memory (a descriptor,
// sm90/wgmma_desc.cuh; K-major, or MN-major for the swapped product) or from registers.
// -DELEM_BF16=1 selects the bf16 forms; otherwise fp16.
#pragma once

#include "wgmma_operands.cuh"  // the accumulators' operand lists

#ifndef ELEM_BF16
#define ELEM_BF16 0
#endif

// wgmma.fence: the warpgroup's accumulator registers (and shared operands) are ready for wgmma.
__device__ __forceinline__ void wgmma_fence() {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
// wgmma.commit_group: the wgmmas issued since the last commit form one group.
__device__ __forceinline__ void wgmma_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
// wgmma.wait_group N: wait until at most N of the warpgroup's groups are still in flight.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

#if ELEM_BF16
#define ROOFLINE_WGMMA_M64N64K16 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"
#define ROOFLINE_WGMMA_M64N128K16 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"
#define ROOFLINE_WGMMA_M64N176K16 "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16"
#define ROOFLINE_WGMMA_M64N192K16 "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16"
#define ROOFLINE_WGMMA_M64N256K16 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"
#else
#define ROOFLINE_WGMMA_M64N64K16 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"
#define ROOFLINE_WGMMA_M64N128K16 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"
#define ROOFLINE_WGMMA_M64N176K16 "wgmma.mma_async.sync.aligned.m64n176k16.f32.f16.f16"
#define ROOFLINE_WGMMA_M64N192K16 "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16"
#define ROOFLINE_WGMMA_M64N256K16 "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"
#endif

// wgmma.mma_async m64n64k16 (f32 accumulate), A and B from shared-memory descriptors: as
// wgmma_m64n128k16 with 64 columns (32 accumulators a thread): the narrowest block tile, for
// shapes of few rows whose 128-column tiles leave most SMs idle (one 64-column B box).
template <int imm_trans_b = 0>
__device__ __forceinline__ void wgmma_m64n64k16(float (&d)[32], unsigned long long desc_a,
                                                unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %34, 0;\n"
        ROOFLINE_WGMMA_M64N64K16 " {"
        ROOFLINE_WG_REGS_32
        "}, %32, %33, p, 1, 1, 0, %35;\n"
        "}\n"
        : ROOFLINE_WG_ACC_32
        : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(imm_trans_b));
}

// wgmma.mma_async m64n128k16 (f32 accumulate), A and B from shared-memory descriptors:
// D (64 x 128) = A (64 x 16) * B (16 x 128) + (scale_d ? D : 0), issued by a whole warpgroup.
// d[i] of a thread (warp w of the warpgroup, lane = 4g + t) holds D[16w + g + 8*((i>>1)&1)]
// [8*(i>>2) + 2t + (i&1)]: the m16n8 accumulator layout, repeated over N in steps of 8.
// A is K-major (imm-trans-a 0); imm_trans_b is imm-trans-b: 0 for B K-major (desc_b from
// smem_desc_k_sw128), 1 for B N-major, i.e. k rows of contiguous n (smem_desc_mn_sw128).
template <int imm_trans_b = 0>
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], unsigned long long desc_a,
                                                 unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        ROOFLINE_WGMMA_M64N128K16 " {"
        ROOFLINE_WG_REGS_64
        "}, %64, %65, p, 1, 1, 0, %67;\n"
        "}\n"
        : ROOFLINE_WG_ACC_64
        : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(imm_trans_b));
}

// wgmma.mma_async m64n176k16 (f32 accumulate), A and B from shared-memory descriptors: as
// wgmma_m64n128k16 with 176 columns (88 accumulators a thread; FlashAttention-3's key tile for
// head dim 128, non-causal).
template <int imm_trans_b = 0>
__device__ __forceinline__ void wgmma_m64n176k16(float (&d)[88], unsigned long long desc_a,
                                                 unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %90, 0;\n"
        ROOFLINE_WGMMA_M64N176K16 " {"
        ROOFLINE_WG_REGS_88
        "}, %88, %89, p, 1, 1, 0, %91;\n"
        "}\n"
        : ROOFLINE_WG_ACC_88
        : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(imm_trans_b));
}

// wgmma.mma_async m64n192k16 (f32 accumulate), A and B from shared-memory descriptors: as
// wgmma_m64n128k16 with 192 columns (96 accumulators a thread): a tile width between 128 and
// 256, for shapes whose tile count at 128 or 256 leaves SMs idle (three 64-column B boxes).
template <int imm_trans_b = 0>
__device__ __forceinline__ void wgmma_m64n192k16(float (&d)[96], unsigned long long desc_a,
                                                 unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %98, 0;\n"
        ROOFLINE_WGMMA_M64N192K16 " {"
        ROOFLINE_WG_REGS_96
        "}, %96, %97, p, 1, 1, 0, %99;\n"
        "}\n"
        : ROOFLINE_WG_ACC_96
        : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(imm_trans_b));
}

// wgmma.mma_async m64n256k16 (f32 accumulate), A and B from shared-memory descriptors:
// D (64 x 256) = A (64 x 16) * B (16 x 256) + (scale_d ? D : 0), issued by a whole warpgroup.
// d[i] of a thread (warp w of the warpgroup, lane = 4g + t) holds D[16w + g + 8*((i>>1)&1)]
// [8*(i>>2) + 2t + (i&1)]: the m16n8 accumulator layout, repeated over N in steps of 8.
// A is K-major (imm-trans-a 0); imm_trans_b is imm-trans-b: 0 for B K-major (desc_b from
// smem_desc_k_sw128), 1 for B N-major, i.e. k rows of contiguous n (smem_desc_mn_sw128).
template <int imm_trans_b = 0>
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], unsigned long long desc_a,
                                                 unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        ROOFLINE_WGMMA_M64N256K16 " {"
        ROOFLINE_WG_REGS_128
        "}, %128, %129, p, 1, 1, 0, %131;\n"
        "}\n"
        : ROOFLINE_WG_ACC_128
        : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(imm_trans_b));
}

// wgmma m64nNk16 for a block tile N = 64, 128, 192 or 256 columns wide (a stage's BN): the
// shapes above, so one stage source builds any of these tile widths; d holds N / 2 accumulators.
template <int N, int imm_trans_b>
__device__ __forceinline__ void wgmma_m64nNk16(float (&d)[N / 2], unsigned long long desc_a,
                                               unsigned long long desc_b, int scale_d) {
    static_assert(N == 64 || N == 128 || N == 192 || N == 256,
                  "wgmma_m64nNk16 wraps the n64, n128, n192 and n256 shapes");
    if constexpr (N == 64)
        wgmma_m64n64k16<imm_trans_b>(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 128)
        wgmma_m64n128k16<imm_trans_b>(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 192)
        wgmma_m64n192k16<imm_trans_b>(d, desc_a, desc_b, scale_d);
    else
        wgmma_m64n256k16<imm_trans_b>(d, desc_a, desc_b, scale_d);
}

// wgmma.mma_async m64n64k16 (f32 accumulate) with A from registers (the register-A form) and B
// from a shared-memory descriptor: D (64 x 64) = A (64 x 16) * B (16 x 64) + (scale_d ? D : 0).
// a[0..3] of a thread (warp w, lane = 4g + t) hold A's pairs at rows 16w + g (a[0], a[2]) and
// 16w + g + 8 (a[1], a[3]), columns 2t, 2t+1 (a[0], a[1]) and 2t+8, 2t+9 (a[2], a[3]): the
// mma.sync m16n8k16 A fragment, which is also where an m64nNk16 accumulator's columns 16k ..
// 16k+15 lie (d[8k .. 8k+7] packed in pairs), so a product can feed the next wgmma unmoved.
// d as in wgmma_m64n128k16; imm_trans_b: 0 for B K-major, 1 for B N-major (smem_desc_mn_sw128).
template <int imm_trans_b = 1>
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[32], const unsigned int (&a)[4],
                                                 unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %37, 0;\n"
        ROOFLINE_WGMMA_M64N64K16 " {"
        ROOFLINE_WG_REGS_32
        "}, {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n"
        "}\n"
        : ROOFLINE_WG_ACC_32
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d), "n"(imm_trans_b));
}

// wgmma.mma_async m64n128k16 (f32 accumulate) with A from registers (the register-A form) and B
// from a shared-memory descriptor: D (64 x 128) = A (64 x 16) * B (16 x 128) + (scale_d ? D : 0).
// a[0..3] of a thread (warp w, lane = 4g + t) hold A's pairs at rows 16w + g (a[0], a[2]) and
// 16w + g + 8 (a[1], a[3]), columns 2t, 2t+1 (a[0], a[1]) and 2t+8, 2t+9 (a[2], a[3]): the
// mma.sync m16n8k16 A fragment, which is also where an m64nNk16 accumulator's columns 16k ..
// 16k+15 lie (d[8k .. 8k+7] packed in pairs), so a product can feed the next wgmma unmoved.
// d as in wgmma_m64n128k16; imm_trans_b: 0 for B K-major, 1 for B N-major (smem_desc_mn_sw128).
template <int imm_trans_b = 1>
__device__ __forceinline__ void wgmma_m64n128k16_rs(float (&d)[64], const unsigned int (&a)[4],
                                                 unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %69, 0;\n"
        ROOFLINE_WGMMA_M64N128K16 " {"
        ROOFLINE_WG_REGS_64
        "}, {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n"
        "}\n"
        : ROOFLINE_WG_ACC_64
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d), "n"(imm_trans_b));
}

// ---- A MN-major (imm-trans-a = 1), B K-major: the swapped product of stage 31 ----
// C^T = B^T A^T for a skinny C: the instruction's A is 64 columns of the contract's row-major
// K x N B (N-major in shared memory: smem_desc_mn_sw128) and its B is N rows of the contract's
// M x K A (K-major: smem_desc_k_sw128). D (64 x N) = A (64 x 16) * B (16 x N) + (scale_d ? D : 0);
// d as in wgmma_m64n128k16, D's rows along the contract's N and its columns along M.
#if ELEM_BF16
#define ROOFLINE_WGMMA_AT_M64N8K16 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16"
#define ROOFLINE_WGMMA_AT_M64N16K16 "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16"
#define ROOFLINE_WGMMA_AT_M64N32K16 "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16"
#define ROOFLINE_WGMMA_AT_M64N64K16 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"
#define ROOFLINE_WGMMA_AT_M64N128K16 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"
#define ROOFLINE_WGMMA_AT_M64N256K16 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"
#else
#define ROOFLINE_WGMMA_AT_M64N8K16 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16"
#define ROOFLINE_WGMMA_AT_M64N16K16 "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16"
#define ROOFLINE_WGMMA_AT_M64N32K16 "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16"
#define ROOFLINE_WGMMA_AT_M64N64K16 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"
#define ROOFLINE_WGMMA_AT_M64N128K16 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"
#define ROOFLINE_WGMMA_AT_M64N256K16 "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"
#endif

// wgmma.mma_async m64n8k16, A (64 x 16) MN-major and B (16 x 8) K-major, both from descriptors.
__device__ __forceinline__ void wgmma_at_m64n8k16(float (&d)[4], unsigned long long desc_a,
                                                 unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %6, 0;\n"
        ROOFLINE_WGMMA_AT_M64N8K16 " {"
        ROOFLINE_WG_REGS_4
        "}, %4, %5, p, 1, 1, 1, 0;\n"
        "}\n"
        : ROOFLINE_WG_ACC_4
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// wgmma.mma_async m64n16k16, A (64 x 16) MN-major and B (16 x 16) K-major, both from descriptors.
__device__ __forceinline__ void wgmma_at_m64n16k16(float (&d)[8], unsigned long long desc_a,
                                                 unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %10, 0;\n"
        ROOFLINE_WGMMA_AT_M64N16K16 " {"
        ROOFLINE_WG_REGS_8
        "}, %8, %9, p, 1, 1, 1, 0;\n"
        "}\n"
        : ROOFLINE_WG_ACC_8
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// wgmma.mma_async m64n32k16, A (64 x 16) MN-major and B (16 x 32) K-major, both from descriptors.
__device__ __forceinline__ void wgmma_at_m64n32k16(float (&d)[16], unsigned long long desc_a,
                                                 unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %18, 0;\n"
        ROOFLINE_WGMMA_AT_M64N32K16 " {"
        ROOFLINE_WG_REGS_16
        "}, %16, %17, p, 1, 1, 1, 0;\n"
        "}\n"
        : ROOFLINE_WG_ACC_16
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// wgmma.mma_async m64n64k16, A (64 x 16) MN-major and B (16 x 64) K-major, both from descriptors.
__device__ __forceinline__ void wgmma_at_m64n64k16(float (&d)[32], unsigned long long desc_a,
                                                 unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %34, 0;\n"
        ROOFLINE_WGMMA_AT_M64N64K16 " {"
        ROOFLINE_WG_REGS_32
        "}, %32, %33, p, 1, 1, 1, 0;\n"
        "}\n"
        : ROOFLINE_WG_ACC_32
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// wgmma.mma_async m64n128k16, A (64 x 16) MN-major and B (16 x 128) K-major, both from descriptors.
__device__ __forceinline__ void wgmma_at_m64n128k16(float (&d)[64], unsigned long long desc_a,
                                                 unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        ROOFLINE_WGMMA_AT_M64N128K16 " {"
        ROOFLINE_WG_REGS_64
        "}, %64, %65, p, 1, 1, 1, 0;\n"
        "}\n"
        : ROOFLINE_WG_ACC_64
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// wgmma.mma_async m64n256k16, A (64 x 16) MN-major and B (16 x 256) K-major, both from descriptors.
__device__ __forceinline__ void wgmma_at_m64n256k16(float (&d)[128], unsigned long long desc_a,
                                                 unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        ROOFLINE_WGMMA_AT_M64N256K16 " {"
        ROOFLINE_WG_REGS_128
        "}, %128, %129, p, 1, 1, 1, 0;\n"
        "}\n"
        : ROOFLINE_WG_ACC_128
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// The swapped product for a tile N = 8 .. 256 rows of the contract's A wide (a stage's BM).
template <int N>
__device__ __forceinline__ void wgmma_at_m64nNk16(float (&d)[N / 2], unsigned long long desc_a,
                                                  unsigned long long desc_b, int scale_d) {
    static_assert(N == 8 || N == 16 || N == 32 || N == 64 || N == 128 || N == 256,
                  "wgmma_at_m64nNk16 wraps n8, n16, n32, n64, n128 and n256");
    if constexpr (N == 8)
        wgmma_at_m64n8k16(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 16)
        wgmma_at_m64n16k16(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 32)
        wgmma_at_m64n32k16(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 64)
        wgmma_at_m64n64k16(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 128)
        wgmma_at_m64n128k16(d, desc_a, desc_b, scale_d);
    else
        wgmma_at_m64n256k16(d, desc_a, desc_b, scale_d);
}
