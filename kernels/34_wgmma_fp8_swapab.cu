// Stage 34: FP8 at decode batches, stage 31's swap on stage 32's operands. At M = 1 to 64 the
// weights (B, N x K, one byte a value) are nearly all the bytes, and 128-row tiles of the batch
// would be mostly empty. Here C^T = B A^T: 64 rows of the weights fill the instruction's 64-row
// side and BM rows of the batch its N side, m64nBMk32 (QGMMA, e4m3; -DFP8_E5M2=1: e5m2) with
// BM = 8 .. 64. 8-bit wgmma reads both operands K-major, which is how both arrive: the weights as
// one TMA box of BN rows x BK = 128 bytes per K slice (a 128-byte swizzle row), the batch as one
// box of BM rows x 128 bytes; no transposed form is needed. A thread holds
// C[m0 + 8j + 2t + e][n0 + 16w + g + 8h] in d[4j + 2h + e], as in stage 31, so stage 31's
// stream-K line serves unchanged (gemm/swapab_stream.cuh): the tiles (BM x BN, m fastest) times
// their K slices are one line cut into an equal range per block, cut tiles meet in an fp32
// workspace, and the owner stores C (bf16; -DELEM_BF16=0: fp16) from registers, bounds-checked.
// C = alpha * scale_a * scale_b * (A B^T) + beta * C, the scales per tensor (device scalars).
// One accumulator over the block's K range: the Tensor Cores' reduced-precision FP8 sums, the
// partials added in FP32 (cuBLASLt's fast-accumulation mode is the like-for-like reference).
// SKIP_KBLOCK=j >= 0 leaves out K slice j's WGMMAs: a deliberately wrong kernel the check must
// fail. Shapes: any M; N and K multiples of 16 (the FP8 contract: TMA rows of 16-byte pitch).
#ifndef BM
#error "BM (rows of the batch per tile: the instruction's N, 8 .. 64) must be given as -DBM=..."
#endif
#ifndef BN
#error "BN (rows of the weights per tile: 64 per consumer warpgroup) must be given as -DBN=..."
#endif
#ifndef BK
#error "BK (bytes of K per slice) must be given as -DBK=..."
#endif
#ifndef RING_KIB
#define RING_KIB 200  // shared memory for the ring of slices (KiB)
#endif
#ifndef MAX_STAGES
#define MAX_STAGES 16
#endif
#ifndef SK_MIN
#define SK_MIN 4  // fewest K slices in one worker's range
#endif
#ifndef EVEN
#define EVEN 0  // the host's grid, read by no code here: 1 launches a whole number of blocks per
                // tile where the tiles fit the SMs, so no block's range runs into a second tile
#endif
#ifndef SKIP_KBLOCK
#define SKIP_KBLOCK -1
#endif

#include "ptx_sm80.cuh"            // elem_t (-DELEM_BF16=1: bf16), pack2, to_float
#include "sm90/mbarrier.cuh"       // the ring's full and empty barriers
#include "sm90/tma.cuh"            // TmaMap, the slice loads
#include "sm90/wgmma.cuh"          // wgmma_fence, wgmma_commit, wgmma_wait
#include "sm90/wgmma_desc.cuh"     // smem_desc_k_sw128
#include "sm90/wgmma_fp8.cuh"      // wgmma_fp8_m64nNk32
#include "gemm/swapab_stream.cuh"  // the stream-K line, its partials, the epilogue

typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned char u8;

constexpr int CONSUMERS = BN / 64;                  // a warpgroup per 64 rows of the weights
constexpr int NUM_THREADS = 128 * (1 + CONSUMERS);  // + the producer warpgroup
constexpr int B_BYTES = BN * BK;                    // BN rows of the weights, BK bytes each
constexpr int A_BYTES = BM * BK;                    // BM rows of the batch
constexpr int STAGE_BYTES = B_BYTES + A_BYTES;
constexpr int RING_STAGES = RING_KIB * 1024 / STAGE_BYTES;
constexpr int STAGES = RING_STAGES < MAX_STAGES ? RING_STAGES : MAX_STAGES;
constexpr int PARTIAL_FLOATS = 64 * BM;  // one consumer's fp32 partial block

static_assert(BK == 128, "one K slice is one 128-byte swizzle row of 128 one-byte elements");
static_assert(BN == 64 || BN == 128 || BN == 256, "1, 2 or 4 consumers of 64 weight rows");
static_assert(BM == 8 || BM == 16 || BM == 32 || BM == 64,
              "BM is the wgmma's N: 8, 16, 32 or 64 (wgmma_fp8_m64nNk32)");
static_assert(A_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0,
              "slots and the batch's box stay 1024-byte aligned (the swizzle atom: 8 rows)");
static_assert(STAGES >= 2, "the ring holds at least two slices");
static_assert(STAGES * STAGE_BYTES + 1024 <= 227 * 1024, "the ring must fit in 227 KiB");
static_assert(SK_MIN >= 1, "a worker takes at least one K slice");

extern "C" __global__ void __launch_bounds__(NUM_THREADS, 1)
gemm_wgmma_fp8_swapab(int M, int N, int K, float alpha, const u8* __restrict__ A,
                      const u8* __restrict__ B, float beta, elem_t* __restrict__ C,
                      const float* __restrict__ scale_a, const float* __restrict__ scale_b,
                      const __grid_constant__ TmaMap tma_a, const __grid_constant__ TmaMap tma_b,
                      float* __restrict__ workspace) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ __align__(8) u64 full_bar[STAGES], empty_bar[STAGES];
    // 128-byte swizzle repeats every 1024 bytes: slots start on a 1024-byte boundary
    const u32 base = (static_cast<u32>(__cvta_generic_to_shared(smem)) + 1023u) & ~1023u;
    const u32 full0 = static_cast<u32>(__cvta_generic_to_shared(full_bar));
    const u32 empty0 = static_cast<u32>(__cvta_generic_to_shared(empty_bar));
    const int tid = threadIdx.x, wg = tid / 128, warp = tid / 32, lane = tid % 32;

    const int grid_m = (M + BM - 1) / BM, grid_n = (N + BN - 1) / BN;
    const int ktiles = (K + BK - 1) / BK;

    if (tid == 0) {
        prefetch_tensormap(&tma_a);
        prefetch_tensormap(&tma_b);
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full0 + 8 * s, 1);               // the producer's arrive.expect_tx
            mbar_init(empty0 + 8 * s, CONSUMERS * 4);  // one arrival per consumer warp
        }
        fence_mbarrier_init();  // visible to TMA
    }
    __syncthreads();

    SwapRange<SK_MIN> range(grid_m * grid_n, ktiles);
    SwapPiece p;
    if (wg == 0) {
        if (warp == 0 && lane == 0) {
            // the copies; `it` counts K slices across pieces (slot it % STAGES, use it / STAGES)
            u32 it = 0;
            while (range.take(p)) {
                const int m0 = (p.tile % grid_m) * BM, n0 = (p.tile / grid_m) * BN;
                for (int kt = p.k0; kt < p.k1; ++kt, ++it) {
                    const u32 s = it % STAGES;
                    if (it >= STAGES) swap_wait(empty0 + 8 * s, ((it / STAGES) - 1) & 1);
                    const u32 sb = base + s * STAGE_BYTES, bar = full0 + 8 * s;
                    mbar_arrive_expect_tx(bar, STAGE_BYTES);
                    tma_load_2d(sb, &tma_b, bar, kt * BK, n0);            // BN weight rows
                    tma_load_2d(sb + B_BYTES, &tma_a, bar, kt * BK, m0);  // BM batch rows
                }
            }
        }
    } else {
        const int c = wg - 1;  // consumer c: weight rows n0 + 64c .. n0 + 64c + 63 of each tile
        const bool leader = tid % 128 == 0;
        const int bar_id = 1 + c;
        const float scale = alpha * scale_a[0] * scale_b[0];
        // the workspace: every block's partials (CONSUMERS each), then their flags
        u32* flags = reinterpret_cast<u32*>(workspace + static_cast<size_t>(gridDim.x) *
                                                            CONSUMERS * PARTIAL_FLOATS);
        float d[BM / 2];
#pragma unroll
        for (int i = 0; i < BM / 2; ++i) d[i] = 0.0f;

        u32 it = 0;
        while (range.take(p)) {
            const int m0 = (p.tile % grid_m) * BM, n0 = (p.tile / grid_m) * BN;
            for (int kt = p.k0; kt < p.k1; ++kt, ++it) {
                const u32 s = it % STAGES;
                swap_wait(full0 + 8 * s, (it / STAGES) & 1);
                const u32 sb = base + s * STAGE_BYTES + c * (64 * BK);
                const u32 sa = base + s * STAGE_BYTES + B_BYTES;
                wgmma_fence();
                if (SKIP_KBLOCK < 0 || kt != SKIP_KBLOCK) {  // (-1: the test is compiled out)
#pragma unroll
                    for (int kk = 0; kk < BK / 32; ++kk)  // 32 bytes (32 k) along both rows
                        wgmma_fp8_m64nNk32<BM>(d, smem_desc_k_sw128(sb + 32 * kk),
                                               smem_desc_k_sw128(sa + 32 * kk),
                                               kt != p.k0 || kk != 0);
                } else if (kt == p.k0) {  // the wrong kernel still starts its sum at zero
#pragma unroll
                    for (int i = 0; i < BM / 2; ++i) d[i] = 0.0f;
                }
                wgmma_commit();
                wgmma_wait<1>();  // the batch of slice it-1 has completed: release its slot
                if (kt > p.k0 && lane == 0) mbar_arrive(empty0 + 8 * ((it - 1) % STAGES));
            }
            wgmma_wait<0>();
            if (lane == 0) mbar_arrive(empty0 + 8 * ((it - 1) % STAGES));
            // a worker's partial to its slot, or the owner's: its workers' partials added in
            if (swap_finish_piece<BM, CONSUMERS>(d, range, p, workspace, flags, c, bar_id, leader))
                swap_store<BM>(d, C, M, N, m0, n0 + 64 * c, scale, beta);
        }
    }
}
