// Stage 26: a persistent grid. Stage 25 launches one block per 128 x 256 tile, so every tile pays
// for a block start (barrier init, an empty ring, the first TMA trip to memory) and ends with an
// epilogue that runs while its SM's tensor cores idle. Here the grid is one block per SM
// (Stage.launch: min(tiles, SMs)) and each block walks tiles blockIdx.x, + gridDim.x, ... in
// grouped order (GROUP_M tile rows at a time, so the tiles in flight share A and B in L2).
// The roles are stage 25's; new is the tile loop around them:
//   * the ring's slot and phase come from one K-slice counter `it` that runs on across tiles in
//     every role: slot it % STAGES, use n = it / STAGES. The producer waits for empty phase
//     n - 1 before use n, the consumers for full phase n;
//   * so the producer runs ahead into the next tile's K slices while the consumers still do the
//     epilogue of this one: the next tile starts with up to STAGES slices in shared memory;
//   * consumers release a tile's last slice after wgmma.wait_group 0, and the first WGMMA of
//     each tile runs with scale-d = 0, which clears the accumulators;
//   * epilogue (TMA_C=1, gemm/tma_epilogue.cuh): each consumer stages its 64 x BN block in
//     64-column chunks through two 8 KiB swizzled buffers and one thread hands each chunk to the
//     TMA store engine: full-line writes clipped to M x N that drain while the next tile's main
//     loop runs. TMA_C=0 keeps stage 25's bounds-checked register stores.
// The ring's producer and consumer steps (load_slice, mma_slice) are gemm/wgmma_pipeline.cuh's.
// Shared memory: 4 x 48 KiB + 2 x 2 x 8 KiB staging + 1 KiB = 225 KiB. Any M; K, N multiples of
// 8. Tensor maps: parameters 9, 10 (A, B) and, with TMA_C=1, 11 (C), rooflinecli/gpu/tma.py.
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
#ifndef TMA_C
#define TMA_C 1
#endif

#include "ptx_sm80.cuh"  // elem_t (-DELEM_BF16=1: bf16), pack2, to_float
#include "sm90/mbarrier.cuh"    // fence_mbarrier_init, mbar_arrive, mbar_init
#include "sm90/setmaxnreg.cuh"  // setmaxnreg_dec, setmaxnreg_inc
#include "sm90/tma.cuh"         // TmaMap, bulk_wait, prefetch_tensormap
#include "sm90/wgmma.cuh"       // wgmma_wait
#include "gemm/tile_order.cuh"      // grouped_tile_origin
#include "gemm/wgmma_pipeline.cuh"  // load_slice, mma_slice
#include "gemm/tma_epilogue.cuh"    // store_tile_tma
#include "gemm/wgmma_store.cuh"  // store_block: the register epilogue

typedef unsigned int u32;
typedef unsigned long long u64;

constexpr int CONSUMERS = BM / 64;                  // consumer warpgroups, 64 rows each
constexpr int NUM_THREADS = 128 * (1 + CONSUMERS);  // + the producer warpgroup
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
constexpr int A_BYTES = BM * BK * 2;
constexpr int STAGE_BYTES = A_BYTES + BN * BK * 2;
constexpr int B_BOX_COLS = 64;            // columns of B per TMA box: one 128-byte swizzle row
constexpr int B_BOX_BYTES = BK * 128;     // a box: BK rows (k) of 128 bytes
constexpr int B_BOXES = BN / B_BOX_COLS;  // boxes per B tile, side by side along N
constexpr int B_TRANS = 1;                // wgmma imm-trans-b: B is N-major in shared memory
constexpr int RING_BYTES = STAGES * STAGE_BYTES;
constexpr int EPI_COLS = 64;                        // a staged chunk: 64 rows x one 128-byte row
constexpr int EPI_CHUNK_BYTES = 64 * EPI_COLS * 2;  // 8 KiB
constexpr int EPI_BYTES = TMA_C ? CONSUMERS * 2 * EPI_CHUNK_BYTES : 0;  // 2 buffers per consumer

static_assert(BK == 64, "A: one tile row is one 128-byte swizzle row of 64 two-byte elements");
static_assert(BN == 64 || BN == 128 || BN == 192 || BN == 256,
              "the WGMMA below is m64nNk16 with N = BN: 64, 128, 192 or 256");
static_assert(BN % B_BOX_COLS == 0, "B arrives in whole boxes of 64 columns (128-byte swizzle)");
static_assert(BM % 64 == 0 && BM <= 256 && BK <= 256, "TMA boxes are at most 256 rows");
static_assert(CONSUMERS <= 2, "consumers use named barriers 1 .. CONSUMERS (and the registers)");
static_assert(BN % EPI_COLS == 0, "the epilogue stages whole 64-column chunks");
static_assert(A_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0 && B_BOX_BYTES % 1024 == 0,
              "tiles and B boxes stay 1024-byte aligned (the swizzle atom; descriptor base 0)");
static_assert((B_BOX_BYTES >> 4) < (1 << 14), "the descriptor's LBO field holds 14 bits of 16 B");
static_assert(RING_BYTES + EPI_BYTES + 1024 + 16 * STAGES <= 227 * 1024,
              "ring + staging (+ alignment, + barriers) must fit in 227 KiB");
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536,
              "setmaxnreg: the warpgroups' registers must fit in the SM's 64K");

#if !TMA_C
#endif

extern "C" __global__ void __launch_bounds__(NUM_THREADS, 1)
gemm_wgmma_persistent(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
                      const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C,
                      const __grid_constant__ TmaMap tma_a, const __grid_constant__ TmaMap tma_b
#if TMA_C
                      , const __grid_constant__ TmaMap tma_c
#endif
) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ __align__(8) u64 full_bar[STAGES], empty_bar[STAGES];
    // 128-byte swizzle repeats every 1024 bytes: tiles start on a 1024-byte boundary
    const u32 base = (static_cast<u32>(__cvta_generic_to_shared(smem)) + 1023u) & ~1023u;
    const u32 full0 = static_cast<u32>(__cvta_generic_to_shared(full_bar));
    const u32 empty0 = static_cast<u32>(__cvta_generic_to_shared(empty_bar));
    const int tid = threadIdx.x, wg = tid / 128;

    const int grid_m = (M + BM - 1) / BM, grid_n = (N + BN - 1) / BN;
    const int num_tiles = grid_m * grid_n;
    const int ktiles = (K + BK - 1) / BK;

    if (tid == 0) {
        prefetch_tensormap(&tma_a);
        prefetch_tensormap(&tma_b);
#if TMA_C
        prefetch_tensormap(&tma_c);
#endif
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full0 + 8 * s, 1);                // the producer's arrive.expect_tx
            mbar_init(empty0 + 8 * s, CONSUMERS * 4);   // one arrival per consumer warp
        }
        fence_mbarrier_init();  // visible to TMA
    }
    __syncthreads();

    if (wg == 0) {
        // Producer warpgroup: give registers away, then one thread runs the copy loop over all
        // of this block's tiles; `it` counts K-slices across tiles (slot it % STAGES, use
        // it / STAGES of the slot).
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) {
            u32 it = 0;
            for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
                int m0, n0;
                grouped_tile_origin<BM, BN, GROUP_M>(tile, grid_m, grid_n, m0, n0);
                for (int kt = 0; kt < ktiles; ++kt, ++it)  // A and all of B: STAGE_BYTES
                    load_slice<BM, BN, BK, STAGES, 1>(it, base, full0, empty0, &tma_a, &tma_b,
                                                      kt, m0, n0, 0, true, STAGE_BYTES);
            }
        }
    } else {
        setmaxnreg_inc<CONSUMER_REGS>();
        const int c = wg - 1;  // consumer c computes rows 64c .. 64c+63 of each block tile
        const bool lane0 = tid % 32 == 0;
#if TMA_C
        const bool leader = tid % 128 == 0;  // issues this warpgroup's TMA stores
        const u32 bufs = base + RING_BYTES + c * 2 * EPI_CHUNK_BYTES;
        u32 stores = 0;
#endif
        float d[BN / 2];
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;  // defined once; each tile starts scale-d 0

        u32 it = 0;  // the producer's K-slice counter, followed slice by slice
        for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
            int m0, n0;
            grouped_tile_origin<BM, BN, GROUP_M>(tile, grid_m, grid_n, m0, n0);
            for (int kt = 0; kt < ktiles; ++kt, ++it) {
                mma_slice<BM, BN, BK, STAGES, B_TRANS>(d, it, base, full0, c, kt != 0);
                wgmma_wait<1>();  // the batch of slice it-1 has completed: release its slot
                if (kt >= 1 && lane0) mbar_arrive(empty0 + 8 * ((it - 1) % STAGES));
            }
            wgmma_wait<0>();
            // the tile's last slice (it - 1): released here, the producer refills it while the
            // epilogue runs (kt >= 1 above never releases it twice: it belongs to this tile)
            if (lane0) mbar_arrive(empty0 + 8 * ((it - 1) % STAGES));

#if TMA_C
            store_tile_tma<BN>(d, &tma_c, C, M, N, m0 + 64 * c, n0, alpha, beta, bufs, 1 + c,
                               leader, stores);
#else
            store_block(d, C, M, N, m0 + 64 * c, n0, alpha, beta);
#endif
        }
#if TMA_C
        if (leader) bulk_wait<0>();  // the staging buffers must outlive the stores reading them
#endif
    }
}
