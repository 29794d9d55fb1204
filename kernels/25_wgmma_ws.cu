// Stage 25: warp specialization. Stage 24's warpgroups both compute and wait together at a
// block barrier every K step, and thread 0 issues the TMA copies in between. Here roles split:
// warpgroup 0 is the producer (one thread issues the TMA copies, STAGES tiles ahead), warpgroups
// 1 and 2 are consumers (each issues WGMMAs for 64 rows x BN). They talk only through mbarriers:
//   full[s]:  the producer's arrive.expect_tx + the TMA bytes -> "stage s holds tile k"
//   empty[s]: one arrival per consumer warp once its WGMMAs on stage s completed -> "refill s"
// so no block-wide barrier remains in the main loop. `setmaxnreg` moves registers from the
// producer (dec to 40) to the consumers (inc to 232): a 64 x 256 FP32 accumulator is 128
// registers per thread, more than the 168 that 384 threads get at launch.
// 128 x 256 block tile, BK = 64, m64n256k16 (HGMMA.64x256x16), 4-stage ring of 48 KiB stages
// (192 KiB). Consumers keep one WGMMA batch in flight (wait_group 1) and release the stage of
// the batch before. Grouped block order, TMA zero-fill and shape rules as in stage 24.
#ifndef BM
#error "BM (rows of the C tile) must be given as -DBM=..."
#endif
#ifndef BN
#error "BN (columns of the C tile) must be given as -DBN=..."
#endif
#ifndef BK
#error "BK (depth of one K step) must be given as -DBK=..."
#endif
#ifndef STAGES
#error "STAGES (shared-memory tiles in the ring) must be given as -DSTAGES=..."
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef ELEM_BF16
#define ELEM_BF16 0
#endif

typedef unsigned short elem_t;  // fp16 or bf16 bits (NVRTC from PyPI has no cuda_fp16.h)
typedef unsigned int u32;
typedef unsigned long long u64;

// A CUtensorMap, encoded on the host (rooflinecli/tc_host.py, cuTensorMapEncodeTiled) and passed
// by value: NVRTC cannot include <cuda.h>, so the 128-byte, 64-byte-aligned type is declared here.
struct __align__(64) TmaMap {
    u64 opaque[16];
};

__device__ __forceinline__ u32 pack2(float lo, float hi) {
    u32 r;
#if ELEM_BF16
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
    return r;
}

__device__ __forceinline__ float to_float(elem_t x) {
#if ELEM_BF16
    return __uint_as_float(static_cast<u32>(x) << 16);
#else
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
    return f;
#endif
}

// ---- mbarriers (shared::cta addresses) ----
__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// One arrival that also announces `bytes` of TMA transactions the phase must wait for.
__device__ __forceinline__ void mbar_arrive_expect_tx(u32 bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(u32 bar) {
    asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}" ::"r"(bar)
                 : "memory");
}
// Wait until the phase with this parity has completed (acquire: the TMA's bytes are visible).
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
    u32 done;
    do {
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n}"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
    } while (!done);
}

// ---- TMA: one box of the tensor map at coordinates (c0 = K index, c1 = row) into shared memory,
// 128-byte swizzled as the map says; completion is counted in bytes on the mbarrier.
__device__ __forceinline__ void tma_load_2d(u32 dst, const TmaMap* map, u32 bar, int c0, int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
        "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(bar)
        : "memory");
}

// ---- WGMMA ----
// Shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format") for a K-major tile whose
// rows are 128 bytes (64 elements), 128-byte swizzled, 8-row groups 1024 bytes apart, the tile
// 1024-byte aligned (base offset 0). Leading byte offset is unused for swizzled K-major (1).
__device__ __forceinline__ u64 smem_desc(u32 addr) {
    return static_cast<u64>((addr & 0x3FFFF) >> 4) | (1ull << 16) | (static_cast<u64>(1024 >> 4) << 32) |
           (1ull << 62);
}
__device__ __forceinline__ void wgmma_fence() {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

#if ELEM_BF16
#define WGMMA_F16_N128 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"
#define WGMMA_F16_N256 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"
#else
#define WGMMA_F16_N128 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"
#define WGMMA_F16_N256 "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"
#endif

// D (64 x N, f32) += A (64 x 16, K-major in shared) * B (16 x N, K-major: N rows of K in shared).
// d[i] of a thread (warp w of the warpgroup, lane = 4g + t) holds D[16w + g + 8*((i>>1)&1)]
// [8*(i>>2) + 2t + (i&1)]: the m16n8 accumulator layout, repeated over N in steps of 8.
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], unsigned long long desc_a,
                                        unsigned long long desc_b) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        WGMMA_F16_N256 " {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, 0;\n"
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
        : "l"(desc_a), "l"(desc_b), "r"(1));
}


// C = alpha * D + beta * C for the 64 x (2 * NACC / 8 * 8) block a warpgroup holds, rows from
// row0 and columns from col0; pairs (2t, 2t+1) go out as one 32-bit store when N is even.
template <int NACC>
__device__ __forceinline__ void store_block(const float (&d)[NACC], elem_t* __restrict__ C, int M,
                                            int N, int row0, int col0, float alpha, float beta) {
    const int lane = threadIdx.x % 32, w = (threadIdx.x / 32) % 4;
    const int g = lane / 4, t = lane % 4;
    const bool pairs = N % 2 == 0;
#pragma unroll
    for (int j = 0; j < NACC / 4; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = row0 + 16 * w + g + 8 * h, col = col0 + 8 * j + 2 * t;
            if (row >= M || col >= N) continue;
            const size_t idx = static_cast<size_t>(row) * N + col;
            float v0 = alpha * d[4 * j + 2 * h], v1 = alpha * d[4 * j + 2 * h + 1];
            if (pairs) {
                if (beta != 0.0f) {  // beta == 0: C is never read
                    const u32 old = *reinterpret_cast<const u32*>(C + idx);
                    v0 = fmaf(beta, to_float(static_cast<elem_t>(old & 0xffffu)), v0);
                    v1 = fmaf(beta, to_float(static_cast<elem_t>(old >> 16)), v1);
                }
                *reinterpret_cast<u32*>(C + idx) = pack2(v0, v1);
            } else {
                if (beta != 0.0f) v0 = fmaf(beta, to_float(C[idx]), v0);
                C[idx] = static_cast<elem_t>(pack2(v0, 0.0f) & 0xffffu);
                if (col + 1 < N) {
                    if (beta != 0.0f) v1 = fmaf(beta, to_float(C[idx + 1]), v1);
                    C[idx + 1] = static_cast<elem_t>(pack2(v1, 0.0f) & 0xffffu);
                }
            }
        }
    }
}

constexpr int CONSUMERS = BM / 64;               // consumer warpgroups, 64 rows each
constexpr int NUM_THREADS = 128 * (1 + CONSUMERS);  // + the producer warpgroup
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
constexpr int A_BYTES = BM * BK * 2;
constexpr int STAGE_BYTES = A_BYTES + BN * BK * 2;

static_assert(BK == 64, "one tile row is one 128-byte swizzle row: 64 two-byte elements");
static_assert(BN == 256, "the WGMMA below is m64n256k16: the block is BN = 256 wide");
static_assert(BM % 64 == 0 && BM <= 256 && BN <= 256, "TMA boxes are at most 256 rows");
static_assert(A_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0, "tiles stay 1024-byte aligned");
static_assert(STAGES * STAGE_BYTES + 1024 <= 227 * 1024, "the ring must fit in 227 KiB");
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536,
              "setmaxnreg: the warpgroups' registers must fit in the SM's 64K");

#define WGMMA wgmma_m64n256k16

extern "C" __global__ void __launch_bounds__(NUM_THREADS, 1)
gemm_wgmma_ws(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
              const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C,
              const __grid_constant__ TmaMap tma_a, const __grid_constant__ TmaMap tma_b) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ __align__(8) u64 full_bar[STAGES], empty_bar[STAGES];
    // 128-byte swizzle repeats every 1024 bytes: tiles start on a 1024-byte boundary
    const u32 base = (static_cast<u32>(__cvta_generic_to_shared(smem)) + 1023u) & ~1023u;
    const u32 full0 = static_cast<u32>(__cvta_generic_to_shared(full_bar));
    const u32 empty0 = static_cast<u32>(__cvta_generic_to_shared(empty_bar));
    const int tid = threadIdx.x, wg = tid / 128;

    const int grid_m = gridDim.y, grid_n = gridDim.x;
    const int pid = blockIdx.y * grid_n + blockIdx.x;
    const int group = pid / (GROUP_M * grid_n), first_m = group * GROUP_M;
    const int group_rows = min(grid_m - first_m, GROUP_M);
    const int in_group = pid % (GROUP_M * grid_n);
    const int m0 = (first_m + in_group % group_rows) * BM;
    const int n0 = (in_group / group_rows) * BN;
    const int ktiles = (K + BK - 1) / BK;

    if (tid == 0) {
        asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<u64>(&tma_a)) : "memory");
        asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<u64>(&tma_b)) : "memory");
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full0 + 8 * s, 1);                   // the producer's arrive.expect_tx
            mbar_init(empty0 + 8 * s, CONSUMERS * 4);      // one arrival per consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");  // visible to TMA
    }
    __syncthreads();

    if (wg == 0) {
        // Producer warpgroup: give registers away, then one thread runs the copy loop.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (tid == 0) {
            for (int kt = 0; kt < ktiles; ++kt) {
                const int s = kt % STAGES;
                if (kt >= STAGES) mbar_wait(empty0 + 8 * s, ((kt / STAGES) - 1) & 1);
                const u32 sa = base + s * STAGE_BYTES, bar = full0 + 8 * s;
                mbar_arrive_expect_tx(bar, STAGE_BYTES);
                tma_load_2d(sa, &tma_a, bar, kt * BK, m0);
                tma_load_2d(sa + A_BYTES, &tma_b, bar, kt * BK, n0);
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        const int c = wg - 1;  // consumer c computes rows 64c .. 64c+63 of the block tile
        const bool lane0 = tid % 32 == 0;
        float d[BN / 2];
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;

        for (int kt = 0; kt < ktiles; ++kt) {
            const int s = kt % STAGES;
            mbar_wait(full0 + 8 * s, (kt / STAGES) & 1);
            const u32 sa = base + s * STAGE_BYTES + c * (64 * BK * 2);
            const u32 sb = base + s * STAGE_BYTES + A_BYTES;
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk)  // +32 bytes per 16 of K inside swizzled rows
                WGMMA(d, smem_desc(sa + 32 * kk), smem_desc(sb + 32 * kk));
            wgmma_commit();
            wgmma_wait<1>();  // the batch of step kt-1 has completed: its stage may be refilled
            if (kt >= 1 && lane0) mbar_arrive(empty0 + 8 * ((kt - 1) % STAGES));
        }
        wgmma_wait<0>();

        store_block(d, C, M, N, m0 + 64 * c, n0, alpha, beta);
    }
}
