// Stage 32: FP8 (e4m3; -DFP8_E5M2=1: e5m2) on stage 25's warp-specialised TMA pipeline. A is M x K
// row-major and B is given as N x K (K-major, how models store weights): 8-bit wgmma reads both
// operands K-major, so each is one TMA box per stage with 128-byte swizzle, a swizzle row being
// 128 elements of K (BK = 128); m64nBNk32 (QGMMA, BN 128-256 in 32s to fill the SMs) steps 32
// bytes along it. C = alpha * scale_a * scale_b * (A B^T) + beta * C in bf16 (or fp16), float32
// SCALES: 0 per tensor, 1 per row of A and column of B, 2 DeepGEMM's blocks (fp8_scales.cuh).
// Accumulation: the Tensor Cores add FP8 products into the f32 registers with fewer than FP32's
// significand bits. PROMOTE=0 keeps one accumulator over all of K. PROMOTE=p > 0 adds them into
// an FP32 accumulator on the CUDA cores every p k-blocks (p * BK of K), as DeepGEMM does (BN 128:
// two 64 x BN sets under setmaxnreg's 232). PROMOTE_ASYNC=1: two register sets take turns, so a
// group's promotion runs while the next group's WGMMAs do (scale_d = 0 restarts a set).
// PERSISTENT=1: one block per SM walks the tiles (stage 26's loop, register-store epilogue), the
// ring's slot and phase counted across tiles, so the next tile's loads overlap this epilogue.
// PINGPONG=1 (persistent, BM = 64): the two consumer warpgroups take turns on alternate 64 x BN
// tiles, one in its mainloop while the other stores its tile, so the epilogue leaves the Tensor
// Cores busy; named barriers hand the mainloop over in tile order (the ring's phases stay in step).
// CLUSTER_M=2: stage 27's pairs. FP8 math is twice 16-bit's, so a k-block's loads weigh twice as
// much: row tiles 2i, 2i+1 share B, each loading half its BN rows (multicast): 16 + 16 KiB from L2.
// TMA_C=1: stage 26's TMA-store epilogue, drained by the copy engine during the next tile.
// SKIP_KBLOCK=j >= 0 drops k-block j's WGMMAs: a deliberately wrong kernel the check must fail.
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
#ifndef PROMOTE
#define PROMOTE 0
#endif
#ifndef PERSISTENT
#define PERSISTENT 0
#endif
#ifndef PINGPONG
#define PINGPONG 0
#endif
#ifndef SKIP_KBLOCK
#define SKIP_KBLOCK -1
#endif
#ifndef SCALES
#define SCALES 0  // 0: per tensor; 1: per row of A and column of B; 2: 128-wide blocks
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 1  // 2: pairs of row tiles share B through TMA multicast
#endif
#ifndef TMA_C
#define TMA_C 0  // 1: the TMA-store epilogue
#endif
#ifndef PROMOTE_ASYNC
#define PROMOTE_ASYNC 0  // 1: a group's promotion runs under the next group's WGMMAs
#endif

#include "gemm/tile_order.cuh"   // grouped_tile_origin, grouped_cluster_origin
#include "gemm/cluster_multicast.cuh"  // load_b_share, release_slot
#include "gemm/tma_epilogue.cuh"  // store_tile_tma (TMA_C)
#include "ptx_sm80.cuh"         // elem_t (-DELEM_BF16=1: bf16), pack2, to_float
#include "sm70/named_barrier.cuh"  // bar_sync, bar_arrive (PINGPONG's turns)
#include "sm90/mbarrier.cuh"    // mbarrier init, arrivals and waits
#include "sm90/cluster.cuh"     // cluster_sync
#include "sm90/setmaxnreg.cuh"  // setmaxnreg_dec, setmaxnreg_inc
#include "sm90/tma.cuh"         // TmaMap, prefetch_tensormap, tma_load_2d, bulk_wait
#include "sm90/wgmma.cuh"       // wgmma_commit, wgmma_fence, wgmma_wait
#include "sm90/wgmma_desc.cuh"  // smem_desc_k_sw128
#include "sm90/wgmma_fp8.cuh"   // wgmma_fp8_m64nNk32: m64n128k32 .. m64n256k32
#include "gemm/wgmma_store.cuh"  // store_block: the register epilogue
#include "gemm/fp8_scales.cuh"   // scale_rows_cols, promote_block_scaled

typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned char u8;

// consumer warpgroups: 64 rows of the tile each, or (PINGPONG) a 64-row tile each in turn
constexpr int CONSUMERS = PINGPONG ? 2 : BM / 64;
constexpr int NUM_THREADS = 128 * (1 + CONSUMERS);  // + the producer warpgroup
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
constexpr int A_BYTES = BM * BK;  // one byte an element
constexpr int STAGE_BYTES = A_BYTES + BN * BK;
constexpr int NACC = BN / 2;  // f32 accumulators a thread holds for 64 x BN
constexpr int B_ROWS = BN / CLUSTER_M;  // rows of B one block loads per slice (one TMA box)
constexpr int RING_BYTES = STAGES * STAGE_BYTES;
constexpr int EPI_CHUNK_BYTES = 64 * 64 * 2;  // TMA_C: 64 rows x one 128-byte row of 16-bit C
constexpr int EPI_BYTES = TMA_C ? CONSUMERS * 2 * EPI_CHUNK_BYTES : 0;  // 2 buffers per consumer
constexpr int GROUP_C = GROUP_M / CLUSTER_M > 0 ? GROUP_M / CLUSTER_M : 1;  // in cluster rows

static_assert(BK == 128, "a tile row is one 128-byte swizzle row of 128 one-byte elements");
static_assert(BN == 128 || BN == 160 || BN == 192 || BN == 224 || BN == 256,
              "m64nBNk32: 128 or 256, or a width between that fills the SMs (160, 192, 224)");
static_assert(!TMA_C || BN % 64 == 0, "TMA_C stages C in whole 64-column chunks");
static_assert(BM % 64 == 0 && BM <= 256 && BN <= 256, "TMA boxes are at most 256 rows");
static_assert(A_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0,
              "tiles stay 1024-byte aligned (the swizzle atom; descriptor base 0)");
static_assert(RING_BYTES + EPI_BYTES + 1024 <= 227 * 1024,
              "the ring (+ TMA_C's staging, + alignment) must fit in 227 KiB");
static_assert(CLUSTER_M == 1 || CLUSTER_M == 2, "a cluster is one block or a pair of row tiles");
static_assert(CLUSTER_M == 1 || (PERSISTENT && !PINGPONG),
              "CLUSTER_M=2: pairs walk cluster tiles on a persistent grid, one tile per block");
static_assert(!TMA_C || (PERSISTENT && !PINGPONG),
              "TMA_C: the staged stores drain while the block's next tile runs (persistent); "
              "PINGPONG's named barriers 1, 2 are its turns");
static_assert((B_ROWS * BK) % 1024 == 0 && B_ROWS <= 256,
              "each block's share of B is a TMA box of whole 1024-byte swizzle atoms");
static_assert(PROMOTE >= 0, "PROMOTE: k-blocks between promotions (0: none)");
static_assert(!PINGPONG || (PERSISTENT && BM == 64 && PROMOTE == 0),
              "PINGPONG: a persistent grid of 64-row tiles, one accumulator per consumer");
static_assert(PROMOTE == 0 || BN == 128,
              "two 64 x BN f32 accumulator sets fit in 232 registers only for BN = 128");
static_assert(SCALES >= 0 && SCALES <= 2, "SCALES: 0 per tensor, 1 per row and column, 2 blocks");
static_assert(!PROMOTE_ASYNC || (PROMOTE > 0 && CLUSTER_M == 1 && !PINGPONG),
              "PROMOTE_ASYNC overlaps a promotion (PROMOTE > 0) on one block: in a pair ptxas "
              "serialises the WGMMAs (C7519, a warpgroup arrive in the divergent release)");
static_assert(SCALES != 2 || (PROMOTE == 1 && BN == 128 && BK == 128),
              "block scales: each 128-deep k-block promoted under its scales, one block of B wide");
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536,
              "setmaxnreg: the warpgroups' registers must fit in the SM's 64K");

#define WGMMA wgmma_fp8_m64nNk32<BN>

#if CLUSTER_M > 1
#define CLUSTER_DIMS __cluster_dims__(CLUSTER_M, 1, 1)  // blocks 2i, 2i+1 of the persistent grid
#else
#define CLUSTER_DIMS
#endif

// CLUSTER_M=2 (persistent, not PINGPONG). At BM 128, BN 256 a block draws 16 KiB of A and 32 KiB
// of B from L2 per k-block, for twice the FLOPs stage 26 gets from its 48 KiB. The blocks on row
// tiles 2i, 2i+1 of one column of C (grouped_cluster_origin) need the same B slice; each loads
// its own A and half of B's BN rows, multicast to both. B is N x K K-major: one box of BN rows x
// 128 bytes whose 128-byte swizzled rows are contiguous, so rank r loads rows n0 + r B_ROWS ..
// as a box of B_ROWS rows into A_BYTES + r B_ROWS 128 of the slot in both blocks: the slot holds
// the whole box, as alone, and the WGMMA descriptors do not change. The ring's counts:
//   * Slot s is written by both producers, so each block's empty barrier counts both blocks'
//     releases, CONSUMERS x 4 warps x 2: lane r of each consumer warp arrives on block r's
//     barrier (release_slot, mbarrier.arrive.shared::cluster). A producer refills use n of a
//     slot only after every consumer of both blocks has finished use n - 1.
//   * Each full barrier still takes one arrival (its producer's arrive.expect_tx) and expects
//     the whole stage: its own A, its own half of B and the peer's multicast half. The peer's
//     half of use n may land before this producer announces the bytes: the barrier is already
//     in phase n (this block's consumers waited out phase n - 1 before releasing the slot, which
//     the peer's producer waited for), the transaction count runs below zero, and the phase
//     cannot complete before this producer's arrival, which adds the bytes.
//   * Both blocks walk the same cluster tiles and K slices, so `it` (slot and phase) stays in
//     step; a rank whose row tile lies past M (M not a multiple of 2 BM) skips its A load and
//     those bytes, still loads and multicasts its half of B, computes on stale A and stores
//     nothing.
//   * The pair meets at a cluster barrier after the mbarriers are initialised (no multicast into
//     a barrier not yet made) and before exit (no arrival on, or copy into, a block gone).
//   * The grid is a whole number of pairs, at most MAX_BLOCKS blocks (0: one per SM; host side).
// TMA_C=1 (persistent, not PINGPONG): gemm/tma_epilogue.cuh's store_tile_tma. Each consumer
// converts its 64 x BN block (alpha * scale_a * scale_b, beta as store_block) to 16 bits in two
// 8 KiB staging buffers after the ring, 128-byte swizzled, and the copy engine stores them (64 x
// 64 boxes, clipped to M x N) while the consumer goes on to the next tile's main loop.

// Tile (cluster tile with CLUSTER_M > 1) number -> origin of this block's BM x BN block of C.
__device__ __forceinline__ void block_tile_origin(int t, int grid_cm, int grid_n, int rank, int& m0,
                                            int& n0) {
#if CLUSTER_M > 1
    grouped_cluster_origin<BM, BN, GROUP_C, CLUSTER_M>(t, grid_cm, grid_n, rank, m0, n0);
#else
    grouped_tile_origin<BM, BN, GROUP_M>(t, grid_cm, grid_n, m0, n0);
#endif
}

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(NUM_THREADS, 1)
gemm_wgmma_fp8(int M, int N, int K, float alpha, const u8* __restrict__ A,
               const u8* __restrict__ B, float beta, elem_t* __restrict__ C,
               const float* __restrict__ scale_a, const float* __restrict__ scale_b,
               const __grid_constant__ TmaMap tma_a, const __grid_constant__ TmaMap tma_b
#if TMA_C
               , const __grid_constant__ TmaMap tma_c  // over C (M x N), boxes of 64 x 64
#endif
) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ __align__(8) u64 full_bar[STAGES], empty_bar[STAGES];
    // 128-byte swizzle repeats every 1024 bytes: tiles start on a 1024-byte boundary. The offset
    // is the same in both blocks of a pair (same kernel, same static shared memory), which the
    // multicast needs: it writes at the issuing block's offsets.
    const u32 base = (static_cast<u32>(__cvta_generic_to_shared(smem)) + 1023u) & ~1023u;
    const u32 full0 = static_cast<u32>(__cvta_generic_to_shared(full_bar));
    const u32 empty0 = static_cast<u32>(__cvta_generic_to_shared(empty_bar));
    const int tid = threadIdx.x, wg = tid / 128;

    const int grid_m = (M + BM - 1) / BM, grid_n = (N + BN - 1) / BN;
    const int grid_cm = (grid_m + CLUSTER_M - 1) / CLUSTER_M;  // (cluster) tile rows
    const int tiles = grid_cm * grid_n;                        // (cluster) tiles
    const int ktiles = (K + BK - 1) / BK;
#if PERSISTENT
    const int rank = blockIdx.x % CLUSTER_M;  // %cluster_ctarank of a 1-D cluster along x
    // (cluster) tiles first, first + step, ...: a pair walks them together
    const int first = blockIdx.x / CLUSTER_M, step = gridDim.x / CLUSTER_M;
#else
    const int rank = 0;
    const int first = blockIdx.y * gridDim.x + blockIdx.x, step = tiles;  // this block's tile
#endif

    if (tid == 0) {
        prefetch_tensormap(&tma_a);
        prefetch_tensormap(&tma_b);
#if TMA_C
        prefetch_tensormap(&tma_c);
#endif
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full0 + 8 * s, 1);               // the producer's arrive.expect_tx
            // one arrival per consumer warp that reads the slice (PINGPONG: one warpgroup), of
            // every block the slot's B is multicast to
            mbar_init(empty0 + 8 * s, (PINGPONG ? 1 : CONSUMERS) * 4 * CLUSTER_M);
        }
        fence_mbarrier_init();  // visible to TMA (and to the peer block)
    }
#if CLUSTER_M > 1
    cluster_sync();  // the peer's barriers exist before anything is multicast or arrived on them
#else
    __syncthreads();
#endif

    if (wg == 0) {
        // Producer warpgroup: give registers away, then one thread runs the copy loop. The
        // ring's slot and phase come from `it`, the K-slice count that runs on across tiles.
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) {
            int it = 0;
            for (int t = first; t < tiles; t += step) {
                int m0, n0;
                block_tile_origin(t, grid_cm, grid_n, rank, m0, n0);
                // a rank of a pair whose rows lie past M loads no A (uniform over the tile)
                const bool load_a = CLUSTER_M == 1 || m0 < M;
                // the whole stage lands on this block's barrier: its A, and all BN rows of B
                // (its own B_ROWS and, in a pair, the peer's multicast B_ROWS)
                const u32 bytes = (load_a ? A_BYTES : 0) + BN * BK;
                for (int kt = 0; kt < ktiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    // use n >= 1 of slot s: every consumer (of both blocks) released use n - 1
                    if (it >= STAGES) mbar_wait(empty0 + 8 * s, ((it / STAGES) - 1) & 1);
                    const u32 sa = base + s * STAGE_BYTES, bar = full0 + 8 * s;
                    mbar_arrive_expect_tx(bar, bytes);
                    if (load_a) tma_load_2d(sa, &tma_a, bar, kt * BK, m0);  // BM rows of A, BK of K
                    // B_ROWS rows of B (rank r: rows n0 + r B_ROWS ..), BK of K, at A_BYTES +
                    // r B_ROWS 128 in the slot of every block of the cluster
                    load_b_share<CLUSTER_M, B_ROWS * BK, CLUSTER_M>(sa + A_BYTES, &tma_b, bar,
                                                                    kt * BK, n0, 0, B_ROWS, rank);
                }
            }
        }
    } else {
        setmaxnreg_inc<CONSUMER_REGS>();
        const int c = wg - 1;  // consumer c computes rows 64c .. 64c+63 of the block tile
        const bool lane0 = tid % 32 == 0;
        // per tensor: one factor in the epilogue; finer scales: 1 there (fp8_scales.cuh's do it)
        const float scale = SCALES == 0 ? alpha * scale_a[0] * scale_b[0] : alpha;
#if TMA_C
        const bool leader = tid % 128 == 0;  // issues this warpgroup's TMA stores
        const u32 bufs = base + RING_BYTES + c * 2 * EPI_CHUNK_BYTES;  // its 2 staging buffers
        u32 stores = 0;  // store groups this warpgroup committed, across tiles
#endif
        float d[NACC];
#if PROMOTE
        float acc[NACC];  // the FP32 sum of the promoted partial sums
#endif
#if PROMOTE_ASYNC
        float d2[NACC];  // the other register set: groups alternate between d and d2
#endif
#if PINGPONG
        // the block's tiles j = 0, 1, 2, ... alternate between the consumers; tile j's slices
        // are the ring's j * ktiles .. j * ktiles + ktiles - 1
        int j = c;
        for (int t = first + c * step; t < tiles; t += 2 * step, j += 2) {
            int it = j * ktiles;
            if (j > 0) bar_sync(1 + c, 256);  // tile j - 1's mainloop has passed its loads
#else
        int it = 0;
        for (int t = first; t < tiles; t += step) {
#endif
            int m0, n0;
            block_tile_origin(t, grid_cm, grid_n, rank, m0, n0);
#pragma unroll
            for (int i = 0; i < NACC; ++i) d[i] = 0.0f;
#if PROMOTE
#pragma unroll
            for (int i = 0; i < NACC; ++i) acc[i] = 0.0f;
#endif
#if PROMOTE_ASYNC
            // Two register sets in turn: group g (PROMOTE k-blocks) into set g % 2, its first
            // WGMMA with scale_d = 0 (the set starts over: no zeroing). Group g - 1's promotion
            // waits only until group g's first batch is issued and wgmma_wait<1> says g - 1's
            // last one is done, so its FFMAs run while the Tensor Cores work on group g.
            // the sums of a finished group (its last k-block kb) into the FP32 accumulator
            auto promote = [&](float (&done)[NACC], int kb) {
#if SCALES == 2
                promote_block_scaled<NACC, false>(acc, done, scale_a, scale_b, M, ktiles,
                                                  m0 + 64 * c, n0 / 128, kb);
#else
#pragma unroll
                for (int i = 0; i < NACC; ++i) acc[i] += done[i];
#endif
            };
            // k-block kt into cur (fresh: the group's first, scale_d = 0); with kb >= 0, prev (the
            // group before, last k-block kb) promoted once this batch's wait says it is done
            auto kblock = [&](float (&cur)[NACC], float (&prev)[NACC], int kt, bool fresh, int kb) {
                const int s = it % STAGES;
                mbar_wait(full0 + 8 * s, (it / STAGES) & 1);
                const u32 sa = base + s * STAGE_BYTES + c * (64 * BK);
                const u32 sb = base + s * STAGE_BYTES + A_BYTES;
                wgmma_fence();
                if (SKIP_KBLOCK < 0 || kt != SKIP_KBLOCK) {  // no k-block skipped: no test here
#pragma unroll
                    for (int kk = 0; kk < BK / 32; ++kk)
                        WGMMA(cur, smem_desc_k_sw128(sa + 32 * kk), smem_desc_k_sw128(sb + 32 * kk),
                              fresh && kk == 0 ? 0 : 1);
                }
#if SKIP_KBLOCK >= 0
                else if (fresh) {
#pragma unroll
                    for (int i = 0; i < NACC; ++i) cur[i] = 0.0f;  // the skipped block's set
                }
#endif
                wgmma_commit();
                wgmma_wait<1>();  // the batch of slice it-1 has completed: it may be refilled
                if (kb >= 0) promote(prev, kb);
#if CLUSTER_M > 1
                if (kt >= 1) release_slot<CLUSTER_M, false>(empty0 + 8 * ((it - 1) % STAGES));
#else
                if (kt >= 1 && lane0) mbar_arrive(empty0 + 8 * ((it - 1) % STAGES));
#endif
                ++it;
            };
            // group [k0, k0 + PROMOTE) into cur, the group before it (prev) promoted on the way
            auto group = [&](float (&cur)[NACC], float (&prev)[NACC], int k0) {
                const int end = min(k0 + PROMOTE, ktiles);
                for (int kt = k0; kt < end; ++kt) kblock(cur, prev, kt, kt == k0, kt == k0 ? k0 - 1 : -1);
                return end;
            };
            for (int k0 = 0;;) {
                k0 = group(d, d2, k0);
                if (k0 >= ktiles) {
                    wgmma_wait<0>();
                    promote(d, k0 - 1);
                    break;
                }
                k0 = group(d2, d, k0);
                if (k0 >= ktiles) {
                    wgmma_wait<0>();
                    promote(d2, k0 - 1);
                    break;
                }
            }
#else
            for (int kt = 0; kt < ktiles; ++kt, ++it) {
                const int s = it % STAGES;
                mbar_wait(full0 + 8 * s, (it / STAGES) & 1);
                const u32 sa = base + s * STAGE_BYTES + (PINGPONG ? 0 : c * (64 * BK));
                const u32 sb = base + s * STAGE_BYTES + A_BYTES;
                wgmma_fence();
                if (kt != SKIP_KBLOCK) {
#pragma unroll
                    for (int kk = 0; kk < BK / 32; ++kk)  // 32 bytes (32 k) along both rows
                        WGMMA(d, smem_desc_k_sw128(sa + 32 * kk), smem_desc_k_sw128(sb + 32 * kk),
                              1);
                }
                wgmma_commit();
                wgmma_wait<1>();  // the batch of slice it-1 has completed: it may be refilled
                // lane 0 of each warp releases; a pair's lane r on block r's barrier
#if CLUSTER_M > 1
                if (kt >= 1) release_slot<CLUSTER_M, false>(empty0 + 8 * ((it - 1) % STAGES));
#else
                if (kt >= 1 && lane0) mbar_arrive(empty0 + 8 * ((it - 1) % STAGES));
#endif
#if PROMOTE
                if ((kt + 1) % PROMOTE == 0 || kt + 1 == ktiles) {
                    wgmma_wait<0>();  // this batch too: d holds the sum of PROMOTE k-blocks
#if SCALES == 2
                    promote_block_scaled(acc, d, scale_a, scale_b, M, ktiles, m0 + 64 * c, n0 / 128,
                                         kt);
#else
#pragma unroll
                    for (int i = 0; i < NACC; ++i) {
                        acc[i] += d[i];
                        d[i] = 0.0f;
                    }
#endif
                }
#endif
            }
#endif  // PROMOTE_ASYNC
#if PINGPONG
            if (t + step < tiles) bar_arrive(2 - c, 256);  // the other consumer's turn: tile j + 1
#endif
            wgmma_wait<0>();
            // the tile's last slice: released here, the producers refill it during the epilogue
#if CLUSTER_M > 1
            release_slot<CLUSTER_M, false>(empty0 + 8 * ((it - 1) % STAGES));
#else
            if (lane0) mbar_arrive(empty0 + 8 * ((it - 1) % STAGES));
#endif
#if SCALES == 1 && PROMOTE
            scale_rows_cols(acc, scale_a, scale_b, M, N, m0 + 64 * c, n0);
#elif SCALES == 1
            scale_rows_cols(d, scale_a, scale_b, M, N, m0 + (PINGPONG ? 0 : 64 * c), n0);
#endif
#if TMA_C && PROMOTE
            // staged and stored by the copy engine, which drains it during the next tile
            store_tile_tma<BN>(acc, &tma_c, C, M, N, m0 + 64 * c, n0, scale, beta, bufs, 1 + c,
                               leader, stores);
#elif TMA_C
            store_tile_tma<BN>(d, &tma_c, C, M, N, m0 + 64 * c, n0, scale, beta, bufs, 1 + c,
                               leader, stores);
#elif PROMOTE
            store_block(acc, C, M, N, m0 + 64 * c, n0, scale, beta);
#else
            store_block(d, C, M, N, m0 + (PINGPONG ? 0 : 64 * c), n0, scale, beta);
#endif
        }
#if TMA_C
        if (leader) bulk_wait<0>();  // the staging buffers must outlive the stores reading them
#endif
    }
#if CLUSTER_M > 1
    // the peer's consumers may still arrive on this block's empty barriers, and its producer
    // multicast into this ring: neither block of a pair exits before both are done
    cluster_sync();
#endif
}
