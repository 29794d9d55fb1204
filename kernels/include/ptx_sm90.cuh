// ptx_sm90.cuh: the PTX instructions of the Hopper stages (sm_90; wgmma and setmaxnreg need the
// sm_90a target), each wrapped once in a small inline function named after it. Architecture
// primitives only: tiling, pipelines and epilogues stay in the stage files (kernels/NN_*.cu),
// which include this header by name (NVRTC gets -I kernels/include). Shared-memory operands
// (tiles, mbarriers) are 32-bit shared-window addresses (__cvta_generic_to_shared).
// -DELEM_BF16=1 selects the bf16 forms of the wgmma instructions; otherwise fp16.
#ifndef ROOFLINE_PTX_SM90_CUH
#define ROOFLINE_PTX_SM90_CUH

#ifndef ELEM_BF16
#define ELEM_BF16 0
#endif

// A CUtensorMap, encoded on the host (rooflinecli/gpu/tma.py, cuTensorMapEncodeTiled) and passed
// by value as a __grid_constant__ kernel parameter: NVRTC cannot include <cuda.h>, so the
// 128-byte, 64-byte-aligned type is declared here.
struct __align__(64) TmaMap {
    unsigned long long opaque[16];
};

// ---- mbarriers (shared::cta addresses of 8-byte barrier objects) ----

// mbarrier.init: a barrier that completes a phase after `count` arrivals (and the bytes expected).
__device__ __forceinline__ void mbar_init(unsigned int bar, unsigned int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// fence.mbarrier_init: barrier initialisations visible to the async proxy (TMA) and the cluster.
__device__ __forceinline__ void fence_mbarrier_init() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// mbarrier.arrive.expect_tx: one arrival that also announces `bytes` of TMA transactions the
// current phase must wait for.
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned int bar, unsigned int bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
                 : "memory");
}
// mbarrier.arrive: one arrival (release: this thread's prior accesses are done).
__device__ __forceinline__ void mbar_arrive(unsigned int bar) {
    asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}" ::"r"(bar)
                 : "memory");
}
// mbarrier.try_wait.parity: 1 once the phase with this parity has completed (acquire), else 0
// after a bounded wait.
__device__ __forceinline__ unsigned int mbar_try_wait(unsigned int bar, unsigned int parity) {
    unsigned int done;
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    return done;
}
// Wait until the phase with this parity has completed (acquire: e.g. the TMA's bytes are visible).
__device__ __forceinline__ void mbar_wait(unsigned int bar, unsigned int parity) {
    while (!mbar_try_wait(bar, parity)) {
    }
}

// ---- clusters ----

// mapa.shared::cluster: the address of the same shared-memory offset in block `rank` of the cluster.
__device__ __forceinline__ unsigned int mapa(unsigned int addr, unsigned int rank) {
    unsigned int remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
    return remote;
}
// mbarrier.arrive.shared::cluster: one arrival on the mbarrier at the same offset in block `rank`.
__device__ __forceinline__ void mbar_arrive_cluster(unsigned int bar, unsigned int rank) {
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(mapa(bar, rank)) : "memory");
}
// barrier.cluster.arrive.release: this thread arrives at the cluster barrier (its writes released).
__device__ __forceinline__ void cluster_arrive() {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
// barrier.cluster.wait.acquire: wait for every thread of the cluster to arrive (acquire theirs).
__device__ __forceinline__ void cluster_wait() {
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// Every thread of every block in the cluster meets here.
__device__ __forceinline__ void cluster_sync() {
    cluster_arrive();
    cluster_wait();
}

// ---- block-level synchronisation and fences ----

// bar.sync with an id: `threads` threads (a multiple of 32) meet at named barrier `id` (0 is
// __syncthreads).
__device__ __forceinline__ void bar_sync(int id, int threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
// bar.arrive with an id: this warp counts towards named barrier `id` (of `threads` threads) and
// goes on without waiting; the warps that bar.sync on it wait for these arrivals too.
__device__ __forceinline__ void bar_arrive(int id, int threads) {
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
// fence.proxy.async.shared::cta: this thread's ordinary shared-memory writes become visible to
// the async proxy (TMA stores, wgmma operand reads).
__device__ __forceinline__ void fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
// stmatrix.sync.aligned.m8n8.x4.shared.b16: a warp stores four 8 x 8 matrices of 16-bit
// elements. Register i of lane l holds row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 of matrix
// i (the accumulator fragment of mma and wgmma, packed to 16 bits); lane l gives the shared
// address of row l % 8 of matrix l / 8 (16 bytes, 16-byte aligned).
__device__ __forceinline__ void stmatrix_x4(unsigned int addr, unsigned int r0, unsigned int r1,
                                            unsigned int r2, unsigned int r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr),
                 "r"(r0), "r"(r1), "r"(r2), "r"(r3)
                 : "memory");
}
// ---- flags in global memory, between blocks of one grid ----

// ld.acquire.gpu.global.u32: a flag another block sets; what that block wrote before setting it
// (with release) is visible to this thread's later accesses.
__device__ __forceinline__ unsigned int ld_acquire_gpu(const unsigned int* p) {
    unsigned int v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
// st.release.gpu.global.u32: set a flag for other blocks; this thread's prior accesses (and those
// it has synchronised with, e.g. through bar.sync) are visible to whoever acquires the value.
__device__ __forceinline__ void st_release_gpu(unsigned int* p, unsigned int v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// red.global.add.v4.f32 (sm_90): four floats added to 16 bytes of global memory by one reduction
// in L2, where scalar RED.ADD.F32 takes four; relaxed, gpu scope. `p` 16-byte aligned.
__device__ __forceinline__ void red_add_v4_f32(float* p, float a, float b, float c, float d) {
    asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(a), "f"(b), "f"(c),
                 "f"(d)
                 : "memory");
}
// setmaxnreg.dec: this warpgroup gives registers back, down to N per thread.
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
// setmaxnreg.inc: this warpgroup takes registers, up to N per thread.
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

// ---- TMA (cp.async.bulk.tensor) ----

// prefetch.tensormap: bring a tensor map (a __grid_constant__ parameter) into the cache.
__device__ __forceinline__ void prefetch_tensormap(const TmaMap* map) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(map))
                 : "memory");
}
// cp.async.bulk.tensor.2d load: the box of the map at (c0 = innermost coordinate, c1 = row) into
// shared memory at dst, laid out (swizzled) as the map says; completion is counted in bytes on
// the mbarrier at bar.
__device__ __forceinline__ void tma_load_2d(unsigned int dst, const TmaMap* map, unsigned int bar,
                                            int c0, int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar)
        : "memory");
}
// cp.async.bulk.tensor.3d load: the box of a 3-D map at (c0 = innermost, c1, c2) into shared
// memory at dst; elements outside the tensor arrive as zeros (counted in the bytes all the same).
__device__ __forceinline__ void tma_load_3d(unsigned int dst, const TmaMap* map, unsigned int bar,
                                            int c0, int c1, int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
        : "memory");
}
// cp.async.bulk.tensor.2d load .multicast::cluster: the same box written at dst's offset into
// every block of the cluster in `mask`, each block's mbarrier at bar's offset told its bytes.
__device__ __forceinline__ void tma_load_2d_multicast(unsigned int dst, const TmaMap* map,
                                                      unsigned int bar, int c0, int c1,
                                                      unsigned short mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
        : "memory");
}
// cp.async.bulk.tensor.2d store: a box of shared memory at src (laid out as the map says) to the
// tensor at (c0, c1); elements outside the tensor are not written. Completion: bulk groups.
__device__ __forceinline__ void tma_store_2d(const TmaMap* map, unsigned int src, int c0, int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
            reinterpret_cast<unsigned long long>(map)),
        "r"(c0), "r"(c1), "r"(src)
        : "memory");
}
// cp.async.bulk.tensor.3d store: a box of shared memory at src to a 3-D map at (c0, c1, c2);
// elements outside the tensor are not written. Completion: bulk groups.
__device__ __forceinline__ void tma_store_3d(const TmaMap* map, unsigned int src, int c0, int c1,
                                             int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3}], [%4];" ::"l"(
            reinterpret_cast<unsigned long long>(map)),
        "r"(c0), "r"(c1), "r"(c2), "r"(src)
        : "memory");
}
// cp.async.bulk.commit_group: this thread's bulk stores issued since the last commit form a group.
__device__ __forceinline__ void bulk_commit() {
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// cp.async.bulk.wait_group.read N: at most N of this thread's groups may still be reading their
// shared-memory source (the others' sources may be overwritten).
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
// cp.async.bulk.wait_group N: at most N of this thread's groups are still incomplete (writes done).
template <int N>
__device__ __forceinline__ void bulk_wait() {
    asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

// ---- WGMMA ----

// The shared-memory matrix descriptor of wgmma (PTX ISA "Matrix Descriptor Format"): start
// address, leading- and stride-dimension byte offsets (each in 16-byte units), base offset 0 (the
// tile aligned to its swizzle pattern) and the swizzle mode.
enum class WgmmaSwizzle : unsigned int { none = 0, b128 = 1, b64 = 2, b32 = 3 };
__device__ __forceinline__ unsigned long long smem_desc(unsigned int addr, unsigned int lbo_bytes,
                                                        unsigned int sbo_bytes,
                                                        WgmmaSwizzle swizzle) {
    return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) |
           (static_cast<unsigned long long>(lbo_bytes >> 4) << 16) |
           (static_cast<unsigned long long>(sbo_bytes >> 4) << 32) |
           (static_cast<unsigned long long>(swizzle) << 62);
}
// The descriptor of a K-major tile with 128-byte rows (64 16-bit elements), 128-byte swizzled,
// 8-row groups 1024 bytes apart, the tile 1024-byte aligned: the layout TMA writes with
// CU_TENSOR_MAP_SWIZZLE_128B. The leading byte offset is unused for swizzled K-major (16 bytes).
__device__ __forceinline__ unsigned long long smem_desc_k_sw128(unsigned int addr) {
    return smem_desc(addr, 16, 1024, WgmmaSwizzle::b128);
}
// The descriptor of an MN-major ("transposed", imm-trans = 1) tile, 128-byte swizzled: one
// 128-byte row per k holding 64 consecutive 16-bit elements of M or N, chunk c of row k at
// c ^ (k % 8) (what TMA writes for a box of 64 columns of a row-major K x N matrix with
// CU_TENSOR_MAP_SWIZZLE_128B); 8-row swizzle atoms (8 k x 64 n, 1024 bytes) stacked along K
// 1024 bytes apart, and the next 64 elements of M or N `mn_block_bytes` further (the next box).
// What the two offsets mean for an MN-major swizzled operand, from
//   * CuTe, cute/atom/mma_traits_sm90_gmma.hpp, make_gmma_desc<Major::MN>: in 16-byte units the
//     canonical SW128 layout is ((8,n),(8,k)):((1,LBO),(8,SBO)), i.e. 8 units (64 elements)
//     contiguous along MN, then the next 64 along MN at LBO; 8 k rows 128 bytes apart, then
//     the next 8 k at SBO;
//   * the PTX ISA's leading-dimension-stride table (written out in the tcgen05 section,
//     "Major-ness supported by Strides"; wgmma's "Shared Memory Matrix Layout" has the same
//     8x8-unit MN-major SW128 atom): MN-major, swizzled: "stride from the first
//     (swizzle-byte-size/16) rows to the next (swizzle-byte-size/16) rows", i.e. 128/16 = 8
//     16-byte units along MN;
// so   LBO = from one 64-element block of M/N to the next (here: the next TMA box),
//      SBO = from one group of 8 k rows to the next (1024 bytes: one swizzle atom).
// K-major is the other way round (SBO = the 8-row step along M/N, LBO unused). Base offset 0:
// the tile starts on a 1024-byte boundary and each k16 step advances 2048 bytes.
// A layout probe in benchmarks/ (check_wgmma_layout.py) tests these fields on one tile.
__device__ __forceinline__ unsigned long long smem_desc_mn_sw128(unsigned int addr,
                                                                 unsigned int mn_block_bytes) {
    return smem_desc(addr, mn_block_bytes, 1024, WgmmaSwizzle::b128);
}
// The descriptor of the same layout `bytes` further on: the start address is the low 14 bits in
// 16-byte units, so while the tile stays in the 256 KiB the field spans (all of shared memory) the
// add never carries out of it (nor out of the low word, whose upper half is the LBO field). A loop can keep one descriptor per operand and add
// constants, where rebuilding it from the address costs a mask, a shift and the ORs every time.
__device__ __forceinline__ unsigned long long smem_desc_add(unsigned long long desc,
                                                            unsigned int bytes) {
    // a 32-bit add on the low word (the high word, SBO and swizzle, passes through untouched)
    const unsigned int lo = static_cast<unsigned int>(desc) + (bytes >> 4);
    return (desc & 0xFFFFFFFF00000000ull) | lo;
}
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
#define ROOFLINE_WGMMA_M64N256K16 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"
#else
#define ROOFLINE_WGMMA_M64N64K16 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"
#define ROOFLINE_WGMMA_M64N128K16 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"
#define ROOFLINE_WGMMA_M64N176K16 "wgmma.mma_async.sync.aligned.m64n176k16.f32.f16.f16"
#define ROOFLINE_WGMMA_M64N256K16 "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"
#endif

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

// wgmma m64nNk16 for a block tile N = 128 or 256 columns wide (a stage's BN): the m64n128k16
// or m64n256k16 above, so one stage source builds either tile width; d holds N / 2 accumulators.
template <int N, int imm_trans_b>
__device__ __forceinline__ void wgmma_m64nNk16(float (&d)[N / 2], unsigned long long desc_a,
                                               unsigned long long desc_b, int scale_d) {
    static_assert(N == 128 || N == 256, "wgmma_m64nNk16 wraps the n128 and n256 shapes");
    if constexpr (N == 128)
        wgmma_m64n128k16<imm_trans_b>(d, desc_a, desc_b, scale_d);
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

#endif  // ROOFLINE_PTX_SM90_CUH
