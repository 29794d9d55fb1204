// sm90/wgmma_fp8.cuh: warpgroup MMA on 8-bit floating-point inputs (wgmma.mma_async ...k32
// .f32.e4m3.e4m3, sm_90a), f32 accumulator registers, A and B K-major from shared-memory
// descriptors (sm90/wgmma_desc.cuh: a 128-byte swizzle row is 128 elements of K). -DFP8_E5M2=1
// selects the e5m2 forms; otherwise e4m3. Fence, commit and wait are sm90/wgmma.cuh's.
// The Tensor Cores' FP8 path adds its products into the accumulator with fewer than FP32's 24
// significand bits (the FP32 registers are not a full-precision sum): a kernel that wants FP32
// sums over long K adds partial results into a second accumulator on the CUDA cores.
#pragma once

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
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1;\n"
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
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1;\n"
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
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
        "}, %80, %81, p, 1, 1;\n"
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
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
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
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
        "}, %96, %97, p, 1, 1;\n"
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
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111"
        "}, %112, %113, p, 1, 1;\n"
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
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111])
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
        "%0, %1, %2, %3"
        "}, %4, %5, p, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
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
        "%0, %1, %2, %3, %4, %5, %6, %7"
        "}, %8, %9, p, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
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
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
        "}, %16, %17, p, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
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
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, %32, %33, p, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
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
