// ptx_sm80.cuh: the PTX instructions of the Ampere-era stages (sm_80 and later), each wrapped once
// in a small inline function named after it. Architecture primitives only: tiling, pipelines and
// epilogues stay in the stage files (kernels/NN_*.cu), which include this header by name (NVRTC
// gets -I kernels/include). Shared-memory operands are 32-bit shared-window addresses
// (__cvta_generic_to_shared).
// The 16-bit element type of the Tensor Core stages: raw fp16 or bf16 bits (NVRTC from PyPI has
// no cuda_fp16.h or cuda_bf16.h, so conversions are PTX). -DELEM_BF16=1 (the registry's bf16
// build) selects bf16 for pack2, to_float and mma_m16n8k16; otherwise fp16.
#ifndef ROOFLINE_PTX_SM80_CUH
#define ROOFLINE_PTX_SM80_CUH

#ifndef ELEM_BF16
#define ELEM_BF16 0
#endif

// (an fp32 build of a stage that also builds 16-bit types, -DELEM_FP32=1, takes elem.cuh's float
// elem_t and uses only the loads below)
#if !defined(ELEM_FP32) || !ELEM_FP32
typedef unsigned short elem_t;  // fp16 or bf16 bits
#endif

// ---- special registers ----

// mov %laneid: the lane index (volatile: read afresh where used, never kept live in a register).
__device__ __forceinline__ int lane_id() {
    int l;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
    return l;
}

// ---- conversions ----

// cvt.rn.f16x2.f32: two floats rounded to fp16 and packed, `hi` in the upper half.
__device__ __forceinline__ unsigned int cvt_rn_f16x2_f32(float hi, float lo) {
    unsigned int r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
// cvt.rn.bf16x2.f32: two floats rounded to bf16 and packed, `hi` in the upper half.
__device__ __forceinline__ unsigned int cvt_rn_bf16x2_f32(float hi, float lo) {
    unsigned int r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
// cvt.f32.f16: fp16 bits to float.
__device__ __forceinline__ float cvt_f32_f16(unsigned short x) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
    return f;
}

// Two floats -> one packed pair of elements, `lo` in the low half (the lower column index).
__device__ __forceinline__ unsigned int pack2(float lo, float hi) {
#if ELEM_BF16
    return cvt_rn_bf16x2_f32(hi, lo);
#else
    return cvt_rn_f16x2_f32(hi, lo);
#endif
}
// One element to float (bf16 is the upper half of a float: a shift, no instruction).
__device__ __forceinline__ float to_float(unsigned short x) {
#if ELEM_BF16
    return __uint_as_float(static_cast<unsigned int>(x) << 16);
#else
    return cvt_f32_f16(x);
#endif
}

// ---- special functions ----

// ex2.approx.ftz.f32: 2^x on the MUFU unit (one instruction; exp2f adds range fix-ups around
// it). 2^-inf = +0, subnormal results flush to zero: what a softmax needs.
__device__ __forceinline__ float ex2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// ---- shared-memory stores (addresses the compiler does not see as pointers) ----

// st.shared.u32: one 32-bit word.
__device__ __forceinline__ void st_shared_u32(unsigned int addr, unsigned int v) {
    asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
// st.shared.v4.u32: four 32-bit words, 16 bytes (addr 16-byte aligned).
__device__ __forceinline__ void st_shared_v4_u32(unsigned int addr, unsigned int x, unsigned int y,
                                                 unsigned int z, unsigned int w) {
    asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};" ::"r"(addr), "r"(x), "r"(y), "r"(z),
                 "r"(w)
                 : "memory");
}

// ---- global loads of a stream read once ----

// ld.global.nc.L1::no_allocate.v4.u32: 16 read-only bytes that L1 does not keep (a stream read
// once). Not volatile: a pure read of data the kernel never writes, so the compiler may issue
// many of them before the first use.
__device__ __forceinline__ uint4 ld_nc_na_v4(const void* p) {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
}

// The same with .L2::256B: L2 fetches the whole 256-byte block around the address from HBM (a
// prefetch hint for the neighbouring sectors a stream reads next).
__device__ __forceinline__ uint4 ld_nc_na_l2_256b_v4(const void* p) {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
}

// prefetch.global.L2: bring the line holding the address into L2; no register, no wait.
__device__ __forceinline__ void prefetch_l2(const void* p) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

// ---- cp.async: global -> shared without passing through registers ----

// cp.async.cg 16 bytes, bypassing L1; src_bytes < 16 zero-fills the rest (0: reads nothing).
__device__ __forceinline__ void cp_async16(unsigned int dst, const void* src,
                                           unsigned int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
                 "r"(src_bytes)
                 : "memory");
}
// cp.async.ca 4 bytes, through L1 (.cg takes 16 bytes only); src_bytes 0 writes a zero.
__device__ __forceinline__ void cp_async4(unsigned int dst, const void* src,
                                          unsigned int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src),
                 "r"(src_bytes)
                 : "memory");
}
// cp.async.commit_group: this thread's cp.asyncs issued since the last commit form one group.
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;" ::: "memory");
}
// cp.async.wait_group N: wait until at most N of this thread's groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// ---- ldmatrix: 8x8 matrices of 16-bit elements from shared memory, one row address per lane ----

// ldmatrix.x4: four 8x8 matrices (lanes 8i..8i+7 address matrix i's rows) into r[0..3].
__device__ __forceinline__ void ldmatrix_x4(unsigned int (&r)[4], unsigned int smem_addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr)
                 : "memory");
}
// ldmatrix.x4.trans: the same, each matrix transposed on the way.
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned int (&r)[4], unsigned int smem_addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr)
                 : "memory");
}

// ---- mma.sync ----

#if ELEM_BF16
#define ROOFLINE_MMA_M16N8K16 "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#else
#define ROOFLINE_MMA_M16N8K16 "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
#endif

// mma.sync m16n8k16 (.row.col, f32 accumulate): D = A * B + D for one 16x8x16 tile of a warp;
// fragment layouts as in the PTX ISA. Not volatile: a pure function of its registers, so the
// compiler may interleave it with the loads of the next fragments.
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const unsigned int (&a)[4],
                                             unsigned int b0, unsigned int b1) {
    asm(ROOFLINE_MMA_M16N8K16 " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

#endif  // ROOFLINE_PTX_SM80_CUH
