// Stage 25: warp specialization. Stage 24's warpgroups both compute and wait together at a
// block barrier every K step, and thread 0 issues the TMA copies in between. Here roles split:
// warpgroup 0 is the producer (one thread issues the TMA copies, STAGES tiles ahead), warpgroups
// 1 and 2 are consumers (each issues WGMMAs for 64 rows x BN). They talk only through mbarriers:
//   full[s]:  the producer's arrive.expect_tx + the TMA bytes -> "stage s holds tile k"
//   empty[s]: one arrival per consumer warp once its WGMMAs on stage s completed -> "refill s"
// so no block-wide barrier remains in the main loop. `setmaxnreg` moves registers from the
// producer (dec to 40) to the consumers (inc to 232): a 64 x 256 FP32 accumulator is 128
// registers per thread, more than the 168 that 384 threads get at launch.
// BM x BN = 128 x 256, BK = 64, m64n256k16 (HGMMA.64x256x16), 4-stage ring of 48 KiB stages
// (192 KiB). Consumers keep one WGMMA batch in flight (wait_group 1) and release the stage of
// the batch before. Grouped block order, TMA zero-fill and shape rules as in stage 24.
// B row-major as in stage 24: the producer copies a 64 x 256 B tile as 4 boxes of 64 k x 64 n,
// and the WGMMAs read it N-major (imm-trans-b 1, smem_desc_mn_sw128: LBO 8 KiB, SBO 1 KiB).
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

#include "ptx_sm80.cuh"  // elem_t (-DELEM_BF16=1: bf16), pack2, to_float
#include "sm90/mbarrier.cuh"    // mbarrier init, arrivals and waits
#include "sm90/setmaxnreg.cuh"  // setmaxnreg_dec, setmaxnreg_inc
#include "sm90/tma.cuh"         // TmaMap, prefetch_tensormap, tma_load_2d
#include "sm90/wgmma.cuh"       // wgmma_commit, wgmma_fence, wgmma_m64n256k16, wgmma_wait
#include "sm90/wgmma_desc.cuh"  // smem_desc_k_sw128, smem_desc_mn_sw128
#include "gemm/wgmma_store.cuh"  // store_block: the register epilogue

typedef unsigned int u32;
typedef unsigned long long u64;

constexpr int CONSUMERS = BM / 64;               // consumer warpgroups, 64 rows each
constexpr int NUM_THREADS = 128 * (1 + CONSUMERS);  // + the producer warpgroup
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
constexpr int A_BYTES = BM * BK * 2;
constexpr int STAGE_BYTES = A_BYTES + BN * BK * 2;
constexpr int B_BOX_COLS = 64;            // columns of B per TMA box: one 128-byte swizzle row
constexpr int B_BOX_BYTES = BK * 128;     // a box: BK rows (k) of 128 bytes
constexpr int B_BOXES = BN / B_BOX_COLS;  // boxes per B tile, side by side along N
constexpr int B_TRANS = 1;                // wgmma imm-trans-b: B is N-major in shared memory

static_assert(BK == 64, "A: one tile row is one 128-byte swizzle row of 64 two-byte elements");
static_assert(BN == 256, "the WGMMA below is m64n256k16: the block is BN = 256 wide");
static_assert(BN % B_BOX_COLS == 0, "B arrives in whole boxes of 64 columns (128-byte swizzle)");
static_assert(BM % 64 == 0 && BM <= 256 && BK <= 256, "TMA boxes are at most 256 rows");
static_assert(A_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0 && B_BOX_BYTES % 1024 == 0,
              "tiles and B boxes stay 1024-byte aligned (the swizzle atom; descriptor base 0)");
static_assert((B_BOX_BYTES >> 4) < (1 << 14), "the descriptor's LBO field holds 14 bits of 16 B");
static_assert(STAGES * STAGE_BYTES + 1024 <= 227 * 1024, "the ring must fit in 227 KiB");
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536,
              "setmaxnreg: the warpgroups' registers must fit in the SM's 64K");

#define WGMMA wgmma_m64n256k16<B_TRANS>

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
        prefetch_tensormap(&tma_a);
        prefetch_tensormap(&tma_b);
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full0 + 8 * s, 1);                   // the producer's arrive.expect_tx
            mbar_init(empty0 + 8 * s, CONSUMERS * 4);      // one arrival per consumer warp
        }
        fence_mbarrier_init();  // visible to TMA
    }
    __syncthreads();

    if (wg == 0) {
        // Producer warpgroup: give registers away, then one thread runs the copy loop.
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) {
            for (int kt = 0; kt < ktiles; ++kt) {
                const int s = kt % STAGES;
                if (kt >= STAGES) mbar_wait(empty0 + 8 * s, ((kt / STAGES) - 1) & 1);
                const u32 sa = base + s * STAGE_BYTES, bar = full0 + 8 * s;
                mbar_arrive_expect_tx(bar, STAGE_BYTES);
                tma_load_2d(sa, &tma_a, bar, kt * BK, m0);
#pragma unroll
                for (int j = 0; j < B_BOXES; ++j)  // columns n0 + 64j .., rows kt * BK ..
                    tma_load_2d(sa + A_BYTES + j * B_BOX_BYTES, &tma_b, bar, n0 + j * B_BOX_COLS,
                                kt * BK);
            }
        }
    } else {
        setmaxnreg_inc<CONSUMER_REGS>();
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
            for (int kk = 0; kk < BK / 16; ++kk)  // A: +32 bytes inside its rows; B: +16 rows
                WGMMA(d, smem_desc_k_sw128(sa + 32 * kk),
                      smem_desc_mn_sw128(sb + 16 * 128 * kk, B_BOX_BYTES), 1);
            wgmma_commit();
            wgmma_wait<1>();  // the batch of step kt-1 has completed: its stage may be refilled
            if (kt >= 1 && lane0) mbar_arrive(empty0 + 8 * ((kt - 1) % STAGES));
        }
        wgmma_wait<0>();

        store_block(d, C, M, N, m0 + 64 * c, n0, alpha, beta);
    }
}
