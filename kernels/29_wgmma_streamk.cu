// Stage 29: a stream-K tail. Stages 26-28 hand whole tiles to persistent blocks, so when the
// tiles are not a whole number of waves the last wave is partly empty: its tiles take a whole
// tile's time while the other SMs idle. Here the grid is every SM (MAX_BLOCKS=0) and the work is
// split in two parts (the hybrid of Osama et al., "Stream-K: Work-centric Parallel Decomposition
// for Dense Matrix-Matrix Multiplication"):
//   * stream-K first: the first SK = tiles % blocks tiles of the grouped order, as one run of
//     SK x ktiles K slices, cut into WORKERS equal ranges; WORKERS is every block, but at most
//     one per SK_MIN slices and at least SK. A range may start inside one tile and end inside
//     another;
//   * then data-parallel: the other tiles, whole, in waves of `blocks`.
// So every block does the same number of K slices within one, and all finish together. A cut
// tile is finished by its owner (the worker whose range holds its first slice): the others
// write their fp32 partial (one per consumer warpgroup, st.global.cg) and set a flag with
// release; the owner waits for those flags (acquire), adds the partials, puts the flags back to
// 0 (the workspace the runner zeroed stays ready) and runs the epilogue. Dependencies point only
// to higher workers, whose part came first: no cycle, while all blocks are resident; an owner
// that polls a flag for seconds traps. STREAMK=0 runs whole tiles only (the control).
// Everything else is stage 28's, without clusters (a pair would need both blocks to walk the
// same ranges): producer + 2 consumers of 64 x BN, LAG, grouped order, TMA-store epilogue.
// Workspace (after the tensor maps): blocks x 2 partials of 64 x BN floats, then the flags.
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
#ifndef LAG
#define LAG 1  // K slices consumer 1 starts behind consumer 0 (0: in step)
#endif
#ifndef STREAMK
#define STREAMK 1  // 0: no stream-K part, every tile whole in waves (what the tail costs)
#endif
#ifndef SK_MIN
#define SK_MIN 8  // fewest K slices per stream-K worker (when there are enough tiles)
#endif

#include "ptx_sm80.cuh"  // elem_t (-DELEM_BF16=1: bf16), pack2, to_float
#include "sm70/flags.cuh"          // ld_acquire_gpu, st_release_gpu
#include "sm70/named_barrier.cuh"  // bar_arrive, bar_sync
#include "sm90/mbarrier.cuh"       // fence_mbarrier_init, mbar_arrive, mbar_init
#include "sm90/setmaxnreg.cuh"     // setmaxnreg_dec, setmaxnreg_inc
#include "sm90/tma.cuh"            // TmaMap, bulk_wait, prefetch_tensormap
#include "sm90/wgmma.cuh"          // wgmma_wait
#include "gemm/tile_order.cuh"      // grouped_tile_origin
#include "gemm/wgmma_pipeline.cuh"  // load_slice, mma_slice
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
constexpr int PARTIAL_FLOATS = 64 * BN;  // one consumer's fp32 partial tile in the workspace
constexpr int PARTIAL_VECS = BN / 8;     // float4 per thread: its BN / 2 accumulators

static_assert(BK == 64, "A: one tile row is one 128-byte swizzle row of 64 two-byte elements");
static_assert(BN == 64 || BN == 128 || BN == 192 || BN == 256,
              "the WGMMA below is m64nNk16 with N = BN: 64, 128, 192 or 256");
static_assert(BN % B_BOX_COLS == 0, "B arrives in whole boxes of 64 columns (128-byte swizzle)");
static_assert(BM % 64 == 0 && BM <= 256 && BK <= 256, "TMA boxes are at most 256 rows");
static_assert(CONSUMERS <= 2, "consumers use named barriers 1 .. CONSUMERS (and the registers)");
static_assert(CONSUMERS == 2 || LAG == 0, "the stagger holds one consumer behind the other");
static_assert(LAG >= 0 && LAG < STAGES,
              "consumer 0 issues LAG slices alone: the ring must hold them and one more");
static_assert(SK_MIN >= 1, "a stream-K worker takes at least one K slice");
static_assert(A_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0 && B_BOX_BYTES % 1024 == 0,
              "tiles and B boxes stay 1024-byte aligned (the swizzle atom; descriptor base 0)");
static_assert((B_BOX_BYTES >> 4) < (1 << 14), "the descriptor's LBO field holds 14 bits of 16 B");
static_assert(RING_BYTES + EPI_BYTES + 1024 <= 227 * 1024,
              "ring + staging (+ alignment) must fit in 227 KiB");
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536,
              "setmaxnreg: the warpgroups' registers must fit in the SM's 64K");

// One piece of a block's work: K slices k0 .. k1-1 of one tile.
struct Piece {
    int tile, k0, k1;
};

// This block's pieces, in order: its stream-K range, then its data-parallel tiles. The producer
// and both consumers walk the same sequence (so the ring's counter stays in step).
struct Schedule {
    int tiles, ktiles, sk_tiles, workers, per, extra;  // range w: per (+1 for w < extra) slices
    int pos, end, dp;  // next stream-K slice, end of this block's range, next data-parallel tile

    __device__ Schedule(int tiles_, int ktiles_) : tiles(tiles_), ktiles(ktiles_) {
        const int blocks = gridDim.x, b = blockIdx.x;
        sk_tiles = STREAMK ? tiles % blocks : 0;  // fewer tiles than blocks: all of them
        const int sk_slices = sk_tiles * ktiles;
        workers = sk_tiles ? max(sk_tiles, min(blocks, sk_slices / SK_MIN)) : 0;
        per = workers ? sk_slices / workers : 0;
        extra = workers ? sk_slices % workers : 0;
        pos = b < workers ? start(b) : 0;
        end = b < workers ? start(b + 1) : 0;
        dp = sk_tiles + b;
    }
    // first stream-K slice of worker w's range (w == workers: the end of the last)
    __device__ int start(int w) const { return w * per + min(w, extra); }
    __device__ bool next(Piece& p) {
        if (pos < end) {
            p.tile = pos / ktiles;
            p.k0 = pos - p.tile * ktiles;
            p.k1 = min(ktiles, p.k0 + (end - pos));
            pos += p.k1 - p.k0;
            return true;
        }
        if (dp < tiles) {
            p.tile = dp;
            p.k0 = 0;
            p.k1 = ktiles;
            dp += gridDim.x;
            return true;
        }
        return false;
    }
};

// A worker whose range starts inside a tile: its warpgroup's partial sums to its slot, then the
// flag (after every thread of the warpgroup has written).
__device__ __forceinline__ void put_partial(const float (&d)[BN / 2], float* slot, u32* flag,
                                            int bar_id, bool leader) {
    float4* out = reinterpret_cast<float4*>(slot) + threadIdx.x % 128;
#pragma unroll
    for (int j = 0; j < PARTIAL_VECS; ++j)  // st.global.cg: kept in L2, where the owner reads
        __stcg(out + 128 * j, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
    bar_sync(bar_id, 128);
    if (leader) {
        __threadfence();
        st_release_gpu(flag, 1u);
    }
}

// The owner of a cut tile: wait for one other worker's flag, add its partial sums to d, and put
// the flag back to 0 for the next launch.
__device__ __forceinline__ void add_partial(float (&d)[BN / 2], const float* slot, u32* flag,
                                            int bar_id, bool leader) {
    if (leader) {
        for (u32 polls = 1; ld_acquire_gpu(flag) == 0u; ++polls) {
            // seconds without the flag: a worker never ran (were all blocks resident at once?)
            // or never will; fail the launch rather than hang the GPU
            if (polls == (1u << 22)) __trap();  // 4M polls of an L2 line: over a second
            __nanosleep(64);
        }
    }
    bar_sync(bar_id, 128);  // the warpgroup sees what the leader acquired
    const float4* in = reinterpret_cast<const float4*>(slot) + threadIdx.x % 128;
#pragma unroll
    for (int j = 0; j < PARTIAL_VECS; ++j) {
        const float4 p = __ldcg(in + 128 * j);
        d[4 * j] += p.x;
        d[4 * j + 1] += p.y;
        d[4 * j + 2] += p.z;
        d[4 * j + 3] += p.w;
    }
    if (leader) st_release_gpu(flag, 0u);
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS, 1)
gemm_wgmma_streamk(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
                   const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C,
                   const __grid_constant__ TmaMap tma_a, const __grid_constant__ TmaMap tma_b,
                   const __grid_constant__ TmaMap tma_c, float* __restrict__ workspace) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ __align__(8) u64 full_bar[STAGES], empty_bar[STAGES];
    // 128-byte swizzle repeats every 1024 bytes: tiles start on a 1024-byte boundary
    const u32 base = (static_cast<u32>(__cvta_generic_to_shared(smem)) + 1023u) & ~1023u;
    const u32 full0 = static_cast<u32>(__cvta_generic_to_shared(full_bar));
    const u32 empty0 = static_cast<u32>(__cvta_generic_to_shared(empty_bar));
    const int tid = threadIdx.x, wg = tid / 128;

    const int grid_m = (M + BM - 1) / BM, grid_n = (N + BN - 1) / BN;
    const int ktiles = (K + BK - 1) / BK;
    const int num_tiles = grid_m * grid_n;

    if (tid == 0) {
        prefetch_tensormap(&tma_a);
        prefetch_tensormap(&tma_b);
        prefetch_tensormap(&tma_c);
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full0 + 8 * s, 1);  // the producer's arrive.expect_tx
            mbar_init(empty0 + 8 * s, CONSUMERS * 4);  // one arrival per consumer warp
        }
        fence_mbarrier_init();  // visible to TMA
    }
    __syncthreads();

    Schedule sched(num_tiles, ktiles);
    Piece p;
    if (wg == 0) {
        // Producer warpgroup: one thread runs the copy loop over this block's pieces; `it`
        // counts K slices across pieces (slot it % STAGES, use it / STAGES of the slot).
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) {
            u32 it = 0;
            while (sched.next(p)) {
                int m0, n0;
                grouped_tile_origin<BM, BN, GROUP_M>(p.tile, grid_m, grid_n, m0, n0);
                for (int kt = p.k0; kt < p.k1; ++kt, ++it)  // A and all of B: STAGE_BYTES
                    load_slice<BM, BN, BK, STAGES, 1>(it, base, full0, empty0, &tma_a, &tma_b,
                                                      kt, m0, n0, 0, true, STAGE_BYTES);
            }
        }
    } else {
        setmaxnreg_inc<CONSUMER_REGS>();
        const int c = wg - 1;  // consumer c computes rows 64c .. 64c+63 of each block tile
        const bool leader = tid % 128 == 0;  // issues this warpgroup's TMA stores and flags
        const u32 bufs = base + RING_BYTES + c * 2 * EPI_CHUNK_BYTES;
        const int bar_id = 1 + c;
        // the workspace: every worker's partials (CONSUMERS per worker), then their flags
        u32* flags = reinterpret_cast<u32*>(workspace + static_cast<size_t>(gridDim.x) *
                                                            CONSUMERS * PARTIAL_FLOATS);
        u32 stores = 0;
        float d[BN / 2];
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;  // defined once; each piece starts scale-d 0

        u32 it = 0;  // the producer's K-slice counter, followed slice by slice
        constexpr int STAGGER_BAR = 3;  // ids 1, 2: the consumers' own barriers
        if (LAG > 0 && c == 1) bar_sync(STAGGER_BAR, 256);  // consumer 0 has issued LAG slices
        while (sched.next(p)) {
            int m0, n0;
            grouped_tile_origin<BM, BN, GROUP_M>(p.tile, grid_m, grid_n, m0, n0);
            for (int kt = p.k0; kt < p.k1; ++kt, ++it) {
                mma_slice<BM, BN, BK, STAGES, B_TRANS>(d, it, base, full0, c, kt != p.k0);
                if (LAG > 0 && c == 0 && it == LAG - 1) bar_arrive(STAGGER_BAR, 256);  // once
                wgmma_wait<1>();  // the batch of slice it-1 has completed: release its slot
                if (kt > p.k0 && (tid % 32) == 0) mbar_arrive(empty0 + 8 * ((it - 1) % STAGES));
            }
            wgmma_wait<0>();
            // the piece's last slice: released here, the producer refills it meanwhile
            if ((tid % 32) == 0) mbar_arrive(empty0 + 8 * ((it - 1) % STAGES));
            const int me = blockIdx.x;
            if (p.k0 > 0) {  // the range started inside this tile: its owner finishes it
                const int i = me * CONSUMERS + c;
                put_partial(d, workspace + static_cast<size_t>(i) * PARTIAL_FLOATS, flags + i,
                            bar_id, leader);
                continue;
            }
            if (p.k1 < ktiles) {  // owner of a cut tile: the workers after it hold the rest
                const int tile_end = (p.tile + 1) * ktiles;
                for (int w = me + 1; w < sched.workers && sched.start(w) < tile_end; ++w) {
                    const int i = w * CONSUMERS + c;
                    add_partial(d, workspace + static_cast<size_t>(i) * PARTIAL_FLOATS,
                                flags + i, bar_id, leader);
                }
            }
            store_tile_tma<BN>(d, &tma_c, C, M, N, m0 + 64 * c, n0, alpha, beta, bufs, bar_id,
                               leader, stores);
        }
        // fewer than LAG slices in all: consumer 0 never reached the arrival above
        if (LAG > 0 && c == 0 && it < LAG) bar_arrive(STAGGER_BAR, 256);
        if (leader) bulk_wait<0>();  // the staging buffers must outlive the stores reading them
    }
}
