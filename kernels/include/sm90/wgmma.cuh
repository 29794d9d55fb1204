// sm90/wgmma.cuh: warpgroup MMA (wgmma.mma_async, sm_90a): its fence, commit and wait, and the
// m64nNk16 shapes the stages use, f32 accumulate, with A from shared memory (a descriptor,
// sm90/wgmma_desc.cuh; K-major, or MN-major for the swapped product) or from registers.
// -DELEM_BF16=1 selects the bf16 forms; otherwise fp16.
#pragma once

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
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, %32, %33, p, 1, 1, 0, %35;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
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
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1, 0, %67;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
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
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87"
        "}, %88, %89, p, 1, 1, 0, %91;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
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
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
        "}, %96, %97, p, 1, 1, 0, %99;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
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
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, %131;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
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
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
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
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
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
        "%0, %1, %2, %3"
        "}, %4, %5, p, 1, 1, 1, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
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
        "%0, %1, %2, %3, %4, %5, %6, %7"
        "}, %8, %9, p, 1, 1, 1, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
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
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
        "}, %16, %17, p, 1, 1, 1, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
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
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, %32, %33, p, 1, 1, 1, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
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
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1, 1, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
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
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 1, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
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
