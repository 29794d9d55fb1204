// Stage 31: skinny M (an LLM's batch times its weights), A and B swapped, every SM streaming B.
// At M of 2 to a few hundred, reading B once is nearly all the work, but 128-row tiles are mostly
// empty and too few to fill the SMs. Here C^T = B^T A^T: 64 columns of B (row-major K x N, so
// N-major in shared memory, imm-trans-a = 1) fill the instruction's 64-row side and BM rows of A
// (K-major) its N side, m64nBMk16 with BM = 8 .. 256 (wgmma_at_m64nNk16); a thread holds
// C[m0 + 8j + 2t + e][n0 + 16w + g + 8h] in d[4j + 2h + e]. The tiles (BM x BN, m fastest) times
// their K slices form one line, cut into an equal range per block (pure stream-K, at least
// SK_MIN slices a range): the worker holding a tile's first slice owns it; a worker whose range
// starts inside a tile computes that piece first, writes its fp32 partial (st.global.cg) and
// sets a flag; the owner's first warp waits for its workers' flags side by side, puts them back
// to 0, and the warpgroup adds the partials and stores C from registers (bounds-checked: any M
// and N). Waits point to higher workers, which did their share first: no cycle while all blocks
// are resident; a wait that lasts seconds traps. The TMA ring is as deep as RING_KIB allows (at
// most MAX_STAGES slices). Consumers: BN / WN warpgroups of WN columns (WN 128: two m64 WGMMAs
// on one A slice, a larger tile, less of A re-read per byte of B); one producer thread.
// Shapes: any M; N and K multiples of 8 (TMA row pitches). Tensor maps: A in boxes of BM x 64,
// B in boxes of 64 x 64; then the workspace (blocks x BN / 64 partials of 64 x BM, the flags).
// RED=1: workers add into the owner's slot (red.global.add) and count in; the owner reads one sum.
#ifndef BM
#error "BM (rows of C per tile: the instruction's N, 8 .. 256) must be given as -DBM=..."
#endif
#ifndef BN
#error "BN (columns of C per tile: 64 per consumer warpgroup) must be given as -DBN=..."
#endif
#ifndef BK
#error "BK (depth of one K slice) must be given as -DBK=..."
#endif
#ifndef RING_KIB
#define RING_KIB 200  // shared memory for the ring of slices (KiB)
#endif
#ifndef MAX_STAGES
#define MAX_STAGES 12
#endif
#ifndef SK_MIN
#define SK_MIN 4  // fewest K slices in one worker's range
#endif
#ifndef WN
#define WN 64  // columns of C per consumer warpgroup: 64, or 128 (two 64-column groups)
#endif
#ifndef RED
#define RED 0  // 1: workers add their partials into the owner's slot (one sum to read, not many)
#endif

#include "ptx_sm80.cuh"             // elem_t (-DELEM_BF16=1: bf16), pack2, to_float
#include "sm90/mbarrier.cuh"        // the ring's full and empty barriers
#include "sm90/tma.cuh"             // TmaMap, the tile loads
#include "sm90/wgmma.cuh"           // wgmma_at_m64nNk16 (A MN-major), fence, commit, wait
#include "sm90/wgmma_desc.cuh"      // the operands' shared-memory descriptors
#include "gemm/swapab_stream.cuh"    // the stream-K line, its partials, the epilogue

typedef unsigned int u32;
typedef unsigned long long u64;

constexpr int GROUPS = BN / 64;                     // 64-column groups of C (boxes of B, partials)
constexpr int SUBS = WN / 64;                       // groups per consumer warpgroup
constexpr int CONSUMERS = BN / WN;                  // a warpgroup per WN columns of C
constexpr int NUM_THREADS = 128 * (1 + CONSUMERS);  // + the producer warpgroup
constexpr int B_BOX_BYTES = BK * 128;               // 64 columns x BK rows of B
constexpr int B_BYTES = GROUPS * B_BOX_BYTES;
constexpr int A_BYTES = BM * BK * 2;  // BM rows of A, one 128-byte swizzled row each
constexpr int STAGE_BYTES = B_BYTES + A_BYTES;
constexpr int RING_STAGES = RING_KIB * 1024 / STAGE_BYTES;
constexpr int STAGES = RING_STAGES < MAX_STAGES ? RING_STAGES : MAX_STAGES;
constexpr int PARTIAL_FLOATS = 64 * BM;  // one consumer's fp32 partial block

static_assert(BK == 64, "one K slice is one 128-byte swizzle row of 64 two-byte elements");
static_assert(BN == 64 || BN == 128 || BN == 256, "1, 2 or 4 groups of 64 columns");
static_assert(WN == 64 || WN == 128, "a consumer warpgroup holds one or two 64-column groups");
static_assert(BN % WN == 0, "the consumers split BN evenly");
static_assert(BM == 8 || BM == 16 || BM == 32 || BM == 64 || BM == 128 || BM == 256,
              "BM is the wgmma's N: 8, 16, 32, 64, 128 or 256 (wgmma_at_m64nNk16)");
static_assert(SUBS * BM / 2 + 40 <= 65536 / NUM_THREADS,
              "a consumer's SUBS * BM / 2 accumulators and its addresses must fit its registers");
static_assert(STAGES >= 2, "the ring holds at least two slices");
static_assert(STAGE_BYTES % 1024 == 0, "slots stay 1024-byte aligned (the swizzle atom)");
static_assert(STAGES * STAGE_BYTES + 1024 <= 227 * 1024, "the ring must fit in 227 KiB");
static_assert(SK_MIN >= 1, "a worker takes at least one K slice");
static_assert(RED == 0 || RED == 1, "RED: one partial per worker (0) or one sum per owner (1)");

#define WGMMA wgmma_at_m64nNk16<BM>

extern "C" __global__ void __launch_bounds__(NUM_THREADS, 1)
gemm_wgmma_swapab(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
                  const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C,
                  const __grid_constant__ TmaMap tma_a, const __grid_constant__ TmaMap tma_b, float* __restrict__ workspace) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ __align__(8) u64 full_bar[STAGES], empty_bar[STAGES];
    // 128-byte swizzle repeats every 1024 bytes: slots start on a 1024-byte boundary
    const u32 smem0 = static_cast<u32>(__cvta_generic_to_shared(smem));
    const u32 base = (smem0 + 1023u) & ~1023u;
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
            mbar_init(full0 + 8 * s, 1);  // the producer's arrive.expect_tx
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
                    tma_load_2d(sb + B_BYTES, &tma_a, bar, kt * BK, m0);
#pragma unroll
                    for (int q = 0; q < GROUPS; ++q)  // columns n0 + 64q .., rows kt*BK ..
                        tma_load_2d(sb + q * B_BOX_BYTES, &tma_b, bar, n0 + 64 * q, kt * BK);
                }
            }
        }
    } else {
        const int c = wg - 1;  // consumer c: groups SUBS*c .. SUBS*c+SUBS-1 of each tile
        const bool leader = tid % 128 == 0;
        const int bar_id = 1 + c;
        // the workspace: every block's partials (GROUPS each), then their flags
        u32* flags = reinterpret_cast<u32*>(workspace + static_cast<size_t>(gridDim.x) *
                                                            GROUPS * PARTIAL_FLOATS);
        float d[SUBS][BM / 2];
#pragma unroll
        for (int h = 0; h < SUBS; ++h)
#pragma unroll
            for (int i = 0; i < BM / 2; ++i) d[h][i] = 0.0f;

        u32 it = 0;
        while (range.take(p)) {
            const int m0 = (p.tile % grid_m) * BM, n0 = (p.tile / grid_m) * BN;
            for (int kt = p.k0; kt < p.k1; ++kt, ++it) {
                const u32 s = it % STAGES;
                swap_wait(full0 + 8 * s, (it / STAGES) & 1);
                const u32 sa = base + s * STAGE_BYTES + B_BYTES;
                wgmma_fence();
#pragma unroll
                for (int h = 0; h < SUBS; ++h) {
                    const u32 sb = base + s * STAGE_BYTES + (c * SUBS + h) * B_BOX_BYTES;
#pragma unroll
                    for (int kk = 0; kk < BK / 16; ++kk)  // B: +16 rows; A: +32 bytes in its rows
                        WGMMA(d[h], smem_desc_mn_sw128(sb + 16 * 128 * kk, B_BOX_BYTES),
                              smem_desc_k_sw128(sa + 32 * kk), kt != p.k0 || kk != 0);
                }
                wgmma_commit();
                wgmma_wait<1>();  // the batch of slice it-1 has completed: release its slot
                if (kt > p.k0 && lane == 0) mbar_arrive(empty0 + 8 * ((it - 1) % STAGES));
            }
            wgmma_wait<0>();
            if (lane == 0) mbar_arrive(empty0 + 8 * ((it - 1) % STAGES));
            const int me = blockIdx.x;
            if (p.k0 > 0) {  // the range started inside this tile: its owner finishes it
                const int o = RED ? range.worker_of(p.tile * ktiles) : me;  // whose slot
#pragma unroll
                for (int h = 0; h < SUBS; ++h) {
                    const int i = o * GROUPS + c * SUBS + h;
                    float* slot = workspace + static_cast<size_t>(i) * PARTIAL_FLOATS;
                    if (RED)
                        swap_red_partial<BM>(d[h], slot, flags + i, bar_id, leader);
                    else
                        swap_put_partial<BM>(d[h], slot, flags + i, bar_id, leader);
                }
                continue;
            }
            if (p.k1 < ktiles) {  // owner of a cut tile: the workers after it hold the rest
                const int tile_end = (p.tile + 1) * ktiles;
                int w1 = me + 1;
                while (w1 < range.workers && range.first_slice(w1) < tile_end) ++w1;
#pragma unroll
                for (int h = 0; h < SUBS; ++h) {
                    const int i = me * GROUPS + c * SUBS + h;
                    if (RED)
                        swap_take_sum<BM>(d[h], workspace + static_cast<size_t>(i) * PARTIAL_FLOATS,
                                          flags + i, static_cast<u32>(w1 - me - 1), bar_id);
                    else
                        swap_add_partials<BM, GROUPS>(d[h], workspace, flags, me + 1, w1,
                                                      c * SUBS + h, bar_id);
                }
            }
#pragma unroll
            for (int h = 0; h < SUBS; ++h)
                swap_store<BM>(d[h], C, M, N, m0, n0 + 64 * (c * SUBS + h), alpha, beta);
        }
    }
}
