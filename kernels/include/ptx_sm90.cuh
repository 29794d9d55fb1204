// ptx_sm90.cuh: every PTX wrapper of the Hopper stages at once. Each operation has a header of
// its own, in the manner of CuTe's arch layer (one file per operation and architecture, each
// wrapper named after the instruction it wraps): sm90/ holds the Hopper instructions (wgmma and
// setmaxnreg need the sm_90a target), sm70/ those the Hopper stages use that older targets have
// too. Stage files include the headers of what they use; this one is for user stages and probes
// that want them all (NVRTC gets -I kernels/include). Shared-memory operands (tiles, mbarriers)
// are 32-bit shared-window addresses (__cvta_generic_to_shared). -DELEM_BF16=1 selects the bf16
// forms of the wgmma instructions; otherwise fp16.
#ifndef ROOFLINE_PTX_SM90_CUH
#define ROOFLINE_PTX_SM90_CUH

#include "sm70/flags.cuh"          // ld.acquire / st.release at gpu scope: flags between blocks
#include "sm70/named_barrier.cuh"  // bar.sync / bar.arrive with an id and a thread count
#include "sm90/cluster.cuh"        // mapa, arrivals on a peer's mbarrier, the cluster barrier
#include "sm90/fence.cuh"          // fence.proxy.async
#include "sm90/mbarrier.cuh"       // mbarrier init, arrive (expect_tx), try_wait.parity
#include "sm90/red.cuh"            // red.global.add.v4.f32
#include "sm90/setmaxnreg.cuh"     // setmaxnreg.dec / .inc
#include "sm90/stmatrix.cuh"       // stmatrix.x4
#include "sm90/tma.cuh"            // TmaMap, cp.async.bulk.tensor loads and stores, bulk groups
#include "sm90/wgmma.cuh"          // wgmma.mma_async shapes, fence, commit, wait
#include "sm90/wgmma_desc.cuh"     // wgmma's shared-memory matrix descriptors

// ---- WGMMA with A MN-major (imm-trans-a = 1), B K-major: the swapped product ----

// C^T = B^T A^T for a skinny C (stage 31): the instruction's A is 64 columns of the contract's
// B (row-major K x N, so N-major in shared memory: smem_desc_mn_sw128, imm-trans-a = 1) and its
// B is N rows of the contract's A (M x K row-major, so K-major: smem_desc_k_sw128,
// imm-trans-b = 0). D (64 x N) = A (64 x 16) * B (16 x N) + (scale_d ? D : 0); d as in
// wgmma_m64n128k16, with D's rows along the contract's N and its columns along M.

#if ELEM_BF16
#define ROOFLINE_WGMMA_AT_M64N8K16 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16"
#else
#define ROOFLINE_WGMMA_AT_M64N8K16 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16"
#endif
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

#if ELEM_BF16
#define ROOFLINE_WGMMA_AT_M64N16K16 "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16"
#else
#define ROOFLINE_WGMMA_AT_M64N16K16 "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16"
#endif
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

#if ELEM_BF16
#define ROOFLINE_WGMMA_AT_M64N32K16 "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16"
#else
#define ROOFLINE_WGMMA_AT_M64N32K16 "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16"
#endif
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

#if ELEM_BF16
#define ROOFLINE_WGMMA_AT_M64N64K16 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"
#else
#define ROOFLINE_WGMMA_AT_M64N64K16 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"
#endif
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

#if ELEM_BF16
#define ROOFLINE_WGMMA_AT_M64N128K16 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"
#else
#define ROOFLINE_WGMMA_AT_M64N128K16 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"
#endif
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

#if ELEM_BF16
#define ROOFLINE_WGMMA_AT_M64N256K16 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"
#else
#define ROOFLINE_WGMMA_AT_M64N256K16 "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"
#endif
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


#endif  // ROOFLINE_PTX_SM90_CUH
