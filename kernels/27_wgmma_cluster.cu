// Stage 27: 2x1 thread-block clusters with TMA multicast of B, on stage 26's persistent kernel.
// In stage 26 the two blocks on row tiles 2i and 2i+1 of one column of C each fetch the same
// 64 x 256 slice of B per K step from L2. Here they form a cluster (__cluster_dims__(2, 1, 1):
// blocks 2c, 2c+1 of the persistent grid) and walk the same cluster tiles (256 x 256 of C; rank
// r computes rows 128r .. 128r+127). Each producer loads its own A and half of B's 64-column
// boxes, and the TMA multicasts those boxes into the same offset of both blocks' shared memory,
// counting the bytes on each block's full barrier: per K step L2 sends a block 16 + 16 KiB
// instead of 16 + 32 (fast.cu, "Outperforming cuBLAS on H100", cuts this traffic the same way).
//   * A slot is written by both producers, so it is refilled only when the consumers of both
//     blocks have released it: every empty barrier counts both blocks' 8 consumer warps; lane r
//     of each consumer warp arrives on block r's barrier (mbarrier.arrive.shared::cluster).
//   * Each full barrier expects the whole stage: the peer's multicast may land before this
//     block's producer announced the bytes (the phase still needs the producer's arrival).
//   * Both blocks run the same K slices in the same order, so `it` stays in step; a rank whose
//     row tile lies past M skips its A load (and its bytes), computes on stale A, stores nothing.
//   * The pair meets at a cluster barrier after the mbarriers are initialised and before exit.
//   * The grid is at most MAX_BLOCKS blocks, a whole number of clusters: a pair must sit in one
//     GPC, and whether every pair of the SMs fits at once depends on the GPCs (fast.cu launches
//     128 blocks). CLUSTER_M=1 is stage 26 again (with the cap).
// Everything else is stage 26's. Shared memory: 4 x 48 KiB + 2 x 2 x 8 KiB + 1 KiB = 225 KiB.
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
#define GROUP_M 16
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 2  // 1: no cluster (stage 26's loads)
#endif

#include "ptx_sm80.cuh"  // elem_t (-DELEM_BF16=1: bf16), pack2, to_float
#include "sm90/cluster.cuh"     // cluster_sync
#include "sm90/mbarrier.cuh"    // fence_mbarrier_init, mbar_init
#include "sm90/setmaxnreg.cuh"  // setmaxnreg_dec, setmaxnreg_inc
#include "sm90/tma.cuh"         // TmaMap, bulk_wait, prefetch_tensormap
#include "sm90/wgmma.cuh"       // wgmma_wait
#include "gemm/tile_order.cuh"      // grouped_cluster_origin
#include "gemm/wgmma_pipeline.cuh"  // load_slice, mma_slice, release_slot
#include "gemm/tma_epilogue.cuh"    // store_tile_tma

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
constexpr int EPI_BYTES = CONSUMERS * 2 * EPI_CHUNK_BYTES;  // 2 buffers per consumer
constexpr int GROUP_C = GROUP_M / CLUSTER_M > 0 ? GROUP_M / CLUSTER_M : 1;  // in cluster rows

static_assert(BK == 64, "A: one tile row is one 128-byte swizzle row of 64 two-byte elements");
static_assert(BN == 64 || BN == 128 || BN == 192 || BN == 256,
              "the WGMMA below is m64nNk16 with N = BN: 64, 128, 192 or 256");
static_assert(BN % B_BOX_COLS == 0, "B arrives in whole boxes of 64 columns (128-byte swizzle)");
static_assert(BM % 64 == 0 && BM <= 256 && BK <= 256, "TMA boxes are at most 256 rows");
static_assert(CONSUMERS <= 2, "consumers use named barriers 1 .. CONSUMERS (and the registers)");
static_assert(CLUSTER_M == 1 || CLUSTER_M == 2, "a cluster is one block or a pair of row tiles");
static_assert(A_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0 && B_BOX_BYTES % 1024 == 0,
              "tiles and B boxes stay 1024-byte aligned (the swizzle atom; descriptor base 0)");
static_assert((B_BOX_BYTES >> 4) < (1 << 14), "the descriptor's LBO field holds 14 bits of 16 B");
static_assert(RING_BYTES + EPI_BYTES + 1024 <= 227 * 1024,
              "ring + staging (+ alignment) must fit in 227 KiB");
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536,
              "setmaxnreg: the warpgroups' registers must fit in the SM's 64K");

#if CLUSTER_M > 1
#define CLUSTER_DIMS __cluster_dims__(CLUSTER_M, 1, 1)  // blocks 2c, 2c+1 of the persistent grid
#else
#define CLUSTER_DIMS
#endif

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(NUM_THREADS, 1)
gemm_wgmma_cluster(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
                   const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C,
                   const __grid_constant__ TmaMap tma_a, const __grid_constant__ TmaMap tma_b,
                   const __grid_constant__ TmaMap tma_c) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ __align__(8) u64 full_bar[STAGES], empty_bar[STAGES];
    // 128-byte swizzle repeats every 1024 bytes: tiles start on a 1024-byte boundary. The offset
    // is the same in both blocks of a pair (same kernel, same static shared memory), which the
    // multicast needs: it writes at the issuing block's offsets.
    const u32 base = (static_cast<u32>(__cvta_generic_to_shared(smem)) + 1023u) & ~1023u;
    const u32 full0 = static_cast<u32>(__cvta_generic_to_shared(full_bar));
    const u32 empty0 = static_cast<u32>(__cvta_generic_to_shared(empty_bar));
    const int tid = threadIdx.x, wg = tid / 128;
    const int rank = blockIdx.x % CLUSTER_M;  // %cluster_ctarank of a 1-D cluster along x
    const int cluster = blockIdx.x / CLUSTER_M, clusters = gridDim.x / CLUSTER_M;

    const int grid_m = (M + BM - 1) / BM, grid_n = (N + BN - 1) / BN;
    const int grid_cm = (grid_m + CLUSTER_M - 1) / CLUSTER_M;  // cluster rows
    const int num_tiles = grid_cm * grid_n;                    // cluster tiles
    const int ktiles = (K + BK - 1) / BK;

    if (tid == 0) {
        prefetch_tensormap(&tma_a);
        prefetch_tensormap(&tma_b);
        prefetch_tensormap(&tma_c);
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full0 + 8 * s, 1);  // the producer's arrive.expect_tx
            // one arrival per consumer warp of every block the slot's B is multicast to
            mbar_init(empty0 + 8 * s, CONSUMERS * 4 * CLUSTER_M);
        }
        fence_mbarrier_init();  // visible to TMA and to the peer block
    }
    if (CLUSTER_M > 1) {
        cluster_sync();  // the peer's barriers exist before anything is multicast to them
    } else {
        __syncthreads();
    }

    if (wg == 0) {
        // Producer warpgroup: one thread runs the copy loop over this pair's cluster tiles; `it`
        // counts K-slices across tiles (slot it % STAGES, use it / STAGES of the slot).
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) {
            u32 it = 0;
            for (int tile = cluster; tile < num_tiles; tile += clusters) {
                int m0, n0;
                grouped_cluster_origin<BM, BN, GROUP_C, CLUSTER_M>(tile, grid_cm, grid_n,
                                                                   rank, m0, n0);
                const bool load_a = m0 < M;  // a rank past M loads no A (uniform per tile)
                const u32 bytes = (load_a ? A_BYTES : 0) + B_BOXES * B_BOX_BYTES;
                for (int kt = 0; kt < ktiles; ++kt, ++it)  // A (unless past M), this block's B
                    load_slice<BM, BN, BK, STAGES, CLUSTER_M>(it, base, full0, empty0, &tma_a,
                                                              &tma_b, kt, m0, n0, rank, load_a,
                                                              bytes);
            }
        }
    } else {
        setmaxnreg_inc<CONSUMER_REGS>();
        const int c = wg - 1;  // consumer c computes rows 64c .. 64c+63 of each block tile
        const bool leader = tid % 128 == 0;  // issues this warpgroup's TMA stores
        const u32 bufs = base + RING_BYTES + c * 2 * EPI_CHUNK_BYTES;
        u32 stores = 0;
        float d[BN / 2];
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;  // defined once; each tile starts scale-d 0

        u32 it = 0;  // the producer's K-slice counter, followed slice by slice
        for (int tile = cluster; tile < num_tiles; tile += clusters) {
            int m0, n0;
            grouped_cluster_origin<BM, BN, GROUP_C, CLUSTER_M>(tile, grid_cm, grid_n,
                                                               rank, m0, n0);
            for (int kt = 0; kt < ktiles; ++kt, ++it) {
                mma_slice<BM, BN, BK, STAGES, B_TRANS>(d, it, base, full0, c, kt != 0);
                wgmma_wait<1>();  // the batch of slice it-1 has completed: release its slot
                if (kt >= 1) release_slot<CLUSTER_M, false>(empty0 + 8 * ((it - 1) % STAGES));
            }
            wgmma_wait<0>();
            // the tile's last slice: released here, the producers refill it during the epilogue
            release_slot<CLUSTER_M, false>(empty0 + 8 * ((it - 1) % STAGES));
            store_tile_tma<BN>(d, &tma_c, C, M, N, m0 + 64 * c, n0, alpha, beta, bufs, 1 + c,
                               leader, stores);
        }
        if (leader) bulk_wait<0>();  // the staging buffers must outlive the stores reading them
    }
    // With a pair, the peer's consumers may still arrive on this block's empty barriers and its
    // producer multicast into this block's ring: neither block exits before both are done.
    if (CLUSTER_M > 1) cluster_sync();
}
