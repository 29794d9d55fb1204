// Stage 23: mma.sync fed by TMA, warp-specialized. Stage 22 spends most of its issue slots on
// things other than HMMA: every thread computes addresses and predicates for its cp.async
// copies, and all eight warps meet at a block barrier once per K step. Here the copies leave
// the math warps entirely:
//   * warpgroup 0 is the producer: one lane issues the TMA box copies of a K step (A: one box of
//     BM rows x BK; B: BN / 64 boxes of BK rows x 64 columns), STAGES tiles ahead, each
//     completing on the stage's `full` mbarrier; the TMA writes the 128-byte swizzle itself;
//   * warpgroups 1-2 hold the 8 consumer warps (WM x WN = 64 x 64 each over the 128 x 256 tile):
//     wait on `full`, ldmatrix + mma.sync as in stage 22, then one arrival per warp on `empty`
//     so the producer may refill the stage. No block-wide barrier is left in the main loop.
//     `setmaxnreg` moves registers from the producer (40) to the consumers (232).
// A is K-major with 128-byte rows (BK = 64), chunk c of row r at c ^ (r & 7). B is row-major
// K x N as the contract gives it: box q of the tile at q * BK * 128 bytes, chunk c of row k at
// c ^ (k & 7), read through ldmatrix.trans (8 k rows x 8 n per matrix, 8 distinct bank groups).
// Epilogue (TMA_C=1): each warp writes its 64 x 64 block, converted to 16-bit, into 8 KiB of the
// ring in the TMA's swizzle and one lane hands it to the store engine (full lines, clipped at
// the edge); TMA_C=0 stores from registers. CLUSTER_M=2: blocks on row tiles 2i, 2i+1 form a
// cluster, each loads half of the B boxes and the TMA multicasts them to both; a slot is refilled
// once both blocks' consumers have released it, so each slot waits for the slower block.
// Any M; N and K multiples of 8 (TMA row strides are whole 16-byte units); TMA zero-fills the rest.
#ifndef BM
#error "BM (rows of the C tile) must be given as -DBM=..."
#endif
#ifndef BN
#error "BN (columns of the C tile) must be given as -DBN=..."
#endif
#ifndef BK
#error "BK (depth of one K step) must be given as -DBK=..."
#endif
#ifndef WM
#error "WM (rows of the warp tile) must be given as -DWM=..."
#endif
#ifndef WN
#error "WN (columns of the warp tile) must be given as -DWN=..."
#endif
#ifndef STAGES
#error "STAGES (shared-memory tiles in the ring) must be given as -DSTAGES=..."
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef TMA_C
#define TMA_C 0  // 1: C leaves through the TMA store engine (a fourth kernel parameter, its map)
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 1  // 2: pairs of blocks on consecutive row tiles share B through TMA multicast
#endif

#include "ptx_sm80.cuh"  // elem_t (-DELEM_BF16=1: bf16), pack2, to_float, ldmatrix, mma, lane_id
#include "sm70/named_barrier.cuh"  // bar_sync
#include "sm90/cluster.cuh"        // cluster_sync, mbar_arrive_cluster
#include "sm90/fence.cuh"          // fence_proxy_async
#include "sm90/mbarrier.cuh"       // mbarrier init, arrivals and waits
#include "sm90/setmaxnreg.cuh"     // setmaxnreg_dec, setmaxnreg_inc
#include "sm90/tma.cuh"            // TmaMap, TMA loads and stores, bulk groups

typedef unsigned int u32;
typedef unsigned long long u64;

constexpr int CONSUMER_WARPS = (BM / WM) * (BN / WN);
constexpr int NUM_THREADS = 32 * CONSUMER_WARPS + 128;  // + the producer warpgroup
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
constexpr int WARPS_N = BN / WN;
constexpr int MI = WM / 16;  // m16 MMA tiles per warp tile
constexpr int NI = WN / 8;   // n8 MMA tiles per warp tile
constexpr int KSTEPS = BK / 16;
constexpr int A_BYTES = BM * BK * 2;
constexpr int STAGE_BYTES = A_BYTES + BN * BK * 2;
constexpr int B_BOX_COLS = 64;                  // columns of B per TMA box: one swizzle row
constexpr int B_BOX_BYTES = BK * 128;           // a box: BK rows (k) of 128 bytes
constexpr int B_BOXES = BN / B_BOX_COLS;        // boxes per B tile, side by side along N
constexpr int MY_B_BOXES = B_BOXES / CLUSTER_M; // boxes this block loads (and multicasts)

static_assert(BK == 64, "A: one tile row is one 128-byte swizzle row of 64 two-byte elements");
static_assert(BM <= 256 && BK <= 256, "a TMA box has at most 256 rows");
static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
static_assert(WM % 16 == 0 && WN % 16 == 0, "ldmatrix.x4 loads 16 rows x 16 of K");
static_assert(BN % B_BOX_COLS == 0, "B arrives in whole boxes of 64 columns (128-byte swizzle)");
static_assert(KSTEPS * 16 == BK && BK % 16 == 0, "k16 steps cover whole 16-row blocks of a box");
static_assert(A_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0 && B_BOX_BYTES % 1024 == 0,
              "tiles and B boxes stay 1024-byte aligned (the swizzle pattern's period)");
static_assert(STAGES >= 2, "a ring needs at least two slots");
static_assert(CLUSTER_M == 1 || CLUSTER_M == 2, "a cluster is one block or a pair of row tiles");
static_assert(B_BOXES % CLUSTER_M == 0, "each block of a cluster loads a whole number of B boxes");
static_assert(STAGES * STAGE_BYTES + 1024 <= 227 * 1024, "the ring must fit in 227 KiB");
static_assert(CONSUMER_WARPS % 4 == 0, "consumers come in whole warpgroups (setmaxnreg)");
static_assert(128 * PRODUCER_REGS + 32 * CONSUMER_WARPS * CONSUMER_REGS <= 65536,
              "setmaxnreg: the warpgroups' registers must fit in the SM's 64K");

// The block's C tile (row, column of its corner). Grouped block order (a bijection of the grid
// for any grid size), as stage 22; with clusters it orders the pairs, and a pair covers row
// tiles 2i and 2i+1 of one column tile (the grid has an even number of rows of blocks: one past
// M computes zeros and stores none). Called where the origin is used, not kept live across the
// main loop, where every register is spoken for.
__device__ __forceinline__ int2 tile_origin() {
    const int rank = blockIdx.y % CLUSTER_M;
    const int grid_m = gridDim.y / CLUSTER_M, grid_n = gridDim.x;
    const int pid = (blockIdx.y / CLUSTER_M) * grid_n + blockIdx.x;
    constexpr int GROUP = GROUP_M / CLUSTER_M > 0 ? GROUP_M / CLUSTER_M : 1;
    const int group = pid / (GROUP * grid_n), first_m = group * GROUP;
    const int group_rows = min(grid_m - first_m, GROUP);
    const int in_group = pid % (GROUP * grid_n);
    return make_int2(((first_m + in_group % group_rows) * CLUSTER_M + rank) * BM,
                     (in_group / group_rows) * BN);
}

#if CLUSTER_M > 1
#define CLUSTER_DIMS __cluster_dims__(1, CLUSTER_M, 1)  // blockIdx.y 2j, 2j+1, one blockIdx.x
#else
#define CLUSTER_DIMS
#endif

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(NUM_THREADS, 1)
gemm_mma_tma_ws(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
                const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C,
                const __grid_constant__ TmaMap tma_a, const __grid_constant__ TmaMap tma_b
#if TMA_C
                , const __grid_constant__ TmaMap tma_c
#endif
) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ __align__(8) u64 full_bar[STAGES], empty_bar[STAGES];
    // the 128-byte swizzle repeats every 1024 bytes: tiles start on a 1024-byte boundary
    const u32 base = (static_cast<u32>(__cvta_generic_to_shared(smem)) + 1023u) & ~1023u;
    const u32 full0 = static_cast<u32>(__cvta_generic_to_shared(full_bar));
    const u32 empty0 = static_cast<u32>(__cvta_generic_to_shared(empty_bar));
    const int tid = threadIdx.x, warp = tid / 32;

    const int rank = blockIdx.y % CLUSTER_M;  // the block's rank in its cluster

    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full0 + 8 * s, 1);                // the producer's arrive.expect_tx
            // one arrival per consumer warp of every block the slot's B is multicast to
            mbar_init(empty0 + 8 * s, CONSUMER_WARPS * CLUSTER_M);
        }
        fence_mbarrier_init();  // visible to TMA
    }
    if (CLUSTER_M > 1) {
        cluster_sync();  // the peer's barriers exist before anything is multicast to them
    } else {
        __syncthreads();
    }

    if (warp < 4) {  // the producer warpgroup: registers given away, one thread runs the copies
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) {
            prefetch_tensormap(&tma_a);
            prefetch_tensormap(&tma_b);
            const int2 origin = tile_origin();
            const int m0 = origin.x, n0 = origin.y;
            for (int kt = 0; kt * BK < K; ++kt) {
                const int s = kt % STAGES;
                if (kt >= STAGES) mbar_wait(empty0 + 8 * s, ((kt / STAGES) - 1) & 1);
                const u32 sa = base + s * STAGE_BYTES, bar = full0 + 8 * s;
                mbar_arrive_expect_tx(bar, STAGE_BYTES);  // A, and all of B (both halves)
                tma_load_2d(sa, &tma_a, bar, kt * BK, m0);
#pragma unroll
                for (int q = 0; q < MY_B_BOXES; ++q) {  // columns n0 + 64 box .., rows kt * BK ..
                    const int box = rank * MY_B_BOXES + q;  // with a pair: this block's half
                    const u32 dst = sa + A_BYTES + box * B_BOX_BYTES;
                    if (CLUSTER_M == 1) {
                        tma_load_2d(dst, &tma_b, bar, n0 + box * B_BOX_COLS, kt * BK);
                    } else {  // to the same offset in both blocks of the pair
                        tma_load_2d_multicast(dst, &tma_b, bar, n0 + box * B_BOX_COLS, kt * BK,
                                              (1u << CLUSTER_M) - 1);
                    }
                }
            }
        }
        // With a pair, the peer's consumers still arrive on this block's barriers: it may not
        // exit before they are done. Alone, no barrier follows.
        if (CLUSTER_M > 1) cluster_sync();
        return;
    }
    setmaxnreg_inc<CONSUMER_REGS>();

    const int cw = warp - 4;  // consumer warp 0 .. CONSUMER_WARPS-1
    const int lane = lane_id();
    const int wm = (cw / WARPS_N) * WM, wn = (cw % WARPS_N) * WN;
    // ldmatrix lanes: A rows (l & 15), chunk (l >> 4) -> a0..a3 of m16n8k16. Chunk 2 ks + x of
    // A's row r is stored at ((2 ks) ^ x ^ (r & 7)) * 16 bytes, and r & 7 = l & 7 for every row
    // a lane reads, so (x ^ (l & 7)) * 16 is this lane's fixed XOR term.
    // B (.trans): k rows 16 ks + (l & 15), n chunk (wn + 16j) / 8 + (l >> 4) -> b0, b1 of n-tile
    // 2j (lanes 0-15), then of n-tile 2j+1 (lanes 16-31), as in stage 22. That chunk lies in
    // box (wn + 16j) / 64 at chunk c = ((wn + 16j) / 8) % 8 + (l >> 4), c even before the +, and
    // is stored at (c ^ (k & 7)) * 16 = ((c - (l >> 4)) * 16) ^ a_xor with k & 7 = l & 7: the
    // same XOR term as A's. So lane l's address of B fragment j is a fixed offset b_off[j] plus
    // 2048 bytes (16 k rows) per k16 step: no XOR left in the loop.
    const u32 a_row = static_cast<u32>((wm + (lane & 15)) * 128);
    const u32 a_xor = static_cast<u32>(((lane >> 4) ^ (lane & 7)) * 16);
    u32 b_off[NI / 2];
#pragma unroll
    for (int j = 0; j < NI / 2; ++j) {
        const int n = wn + 16 * j;  // first column of n-tiles 2j, 2j+1
        b_off[j] = static_cast<u32>(A_BYTES + (n / B_BOX_COLS) * B_BOX_BYTES + (lane & 15) * 128) +
                   ((static_cast<u32>((n / 8) % 8) * 16) ^ a_xor);
    }

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

    u32 a[2][MI][4], b[2][NI / 2][4];
    auto load_frags = [&](int buf, u32 stage_base, int ks) {
        const u32 sa = stage_base + a_row + ((32u * ks) ^ a_xor);
#pragma unroll
        for (int i = 0; i < MI; ++i) ldmatrix_x4(a[buf][i], sa + i * 16 * 128);
#pragma unroll
        for (int j = 0; j < NI / 2; ++j)
            ldmatrix_x4_trans(b[buf][j], stage_base + b_off[j] + ks * 16 * 128);
    };

    // Loop bounds compare with K itself (a kernel parameter, read from the constant bank) rather
    // than a tile count held in a register across the loop: every register is spoken for.
    if (K > 0) {
        mbar_wait(full0, 0);
        load_frags(0, base, 0);
    }
    for (int kt = 0; kt * BK < K; ++kt) {
        const int s = kt % STAGES;
        const u32 stage_base = base + s * STAGE_BYTES;
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ++ks) {
            if (ks + 1 < KSTEPS) {
                load_frags((ks + 1) % 2, stage_base, ks + 1);
            } else if ((kt + 1) * BK < K) {  // the first fragments of the next tile
                const int s1 = (kt + 1) % STAGES;
                mbar_wait(full0 + 8 * s1, ((kt + 1) / STAGES) & 1);
                load_frags((ks + 1) % 2, base + s1 * STAGE_BYTES, 0);
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NI; ++j)
                    mma_m16n8k16(acc[i][j], a[ks % 2][i], b[ks % 2][j / 2][2 * (j % 2)],
                                 b[ks % 2][j / 2][2 * (j % 2) + 1]);
        }
        // The MMAs above consumed every fragment read from stage s: the producers (this block's
        // and, with a pair, the peer's, which multicasts into this slot too) may refill it.
        __syncwarp();
        if (CLUSTER_M == 1) {
            if (lane_id() == 0) mbar_arrive(empty0 + 8 * s);
        } else if (lane_id() < CLUSTER_M) {
            mbar_arrive_cluster(empty0 + 8 * s, lane_id());
        }
    }

    const int g = lane_id() / 4, t = lane_id() % 4;
    const int2 origin = tile_origin();
    const int m0 = origin.x, n0 = origin.y;
#if TMA_C
    // Every consumer is past its last ldmatrix (and every TMA load was waited for): the ring is
    // free. Warp cw stages its block in bytes cw * 8 KiB ..: row r at r * 128, 16-byte piece j
    // (columns 8j .. 8j+7) at piece j ^ (r % 8) = j ^ g, so a warp's 32 stores hit 32 banks.
    bar_sync(1, 32 * CONSUMER_WARPS);  // the consumer warps only
    static_assert(CONSUMER_WARPS * WM * WN * 2 <= STAGES * STAGE_BYTES, "staging fits the ring");
    static_assert(WN == 64, "one staged row is one 128-byte swizzle row: 64 two-byte elements");
    const int row0 = m0 + wm, col0 = n0 + wn;
    if (row0 < M && col0 < N) {  // else the whole block is outside C (uniform over the warp)
        const u32 buf = base + static_cast<u32>(cw * WM * WN * 2);
#pragma unroll
        for (int i = 0; i < MI; ++i) {
#pragma unroll
            for (int j = 0; j < NI; ++j) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int r = 16 * i + g + 8 * h;
                    float v0 = alpha * acc[i][j][2 * h], v1 = alpha * acc[i][j][2 * h + 1];
                    if (beta != 0.0f) {  // beta == 0: C is never read
                        const int row = row0 + r, col = col0 + 8 * j + 2 * t;
                        if (row < M && col < N) {  // N % 8 == 0: col + 1 < N too
                            const u32 old = __ldcg(reinterpret_cast<const unsigned int*>(
                                C + static_cast<size_t>(row) * N + col));
                            v0 = fmaf(beta, to_float(static_cast<elem_t>(old & 0xffffu)), v0);
                            v1 = fmaf(beta, to_float(static_cast<elem_t>(old >> 16)), v1);
                        }
                    }
                    const u32 v = pack2(v0, v1);
                    const u32 at = buf + r * 128 + ((j ^ g) << 4) + 4 * t;
                    st_shared_u32(at, v);
                }
            }
        }
        fence_proxy_async();  // visible to the copy engine
        __syncwarp();
        if (lane_id() == 0) {
            tma_store_2d(&tma_c, buf, col0, row0);
            bulk_commit();
            // Only the read of shared memory must finish before the block exits; the global write
            // completes on its own (waiting for it too would only stall this warp).
            bulk_wait_read<0>();
        }
    }
#else
    const bool pairs = N % 2 == 0;
#pragma unroll
    for (int i = 0; i < MI; ++i) {
#pragma unroll
        for (int j = 0; j < NI; ++j) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = m0 + wm + i * 16 + g + 8 * h;
                const int col = n0 + wn + j * 8 + 2 * t;
                if (row >= M || col >= N) continue;
                const size_t idx = static_cast<size_t>(row) * N + col;
                float v0 = alpha * acc[i][j][2 * h], v1 = alpha * acc[i][j][2 * h + 1];
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
#endif
    if (CLUSTER_M > 1) cluster_sync();  // the peer may still arrive on this block's barriers
}
