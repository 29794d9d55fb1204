// Stage 24: WGMMA fed by TMA (sm_90a). Hopper's warpgroup MMA: 4 warps (128 threads) issue one
// asynchronous `wgmma.mma_async.m64n128k16` (SASS: HGMMA.64x128x16.F32) that reads both operands
// straight from shared memory through 64-bit matrix descriptors and accumulates 64 x 128 FP32
// results in the warpgroup's registers (64 per thread): no ldmatrix, no fragment shuffling.
// The tiles get there by TMA: one thread issues `cp.async.bulk.tensor.2d` per operand and tile,
// the copy engine writes the box 128-byte swizzled (the layout WGMMA's descriptors name) and
// counts the bytes on an mbarrier; consumers wait on the mbarrier's phase parity.
// B is row-major K x N (b_layout "kn"): a 128-byte-swizzled box is at most 64 two-byte columns
// wide, so a BK x BN tile is BN / 64 boxes of BK rows x 64 columns, read N-major by the WGMMAs
// (imm-trans-b = 1, smem_desc_mn_sw128: LBO = BK * 128 bytes box to box, SBO = 1024 bytes per
// 8 k rows, +2048 bytes per k16 step); A stays K-major (smem_desc_k_sw128, +32 bytes per k16).
// BM x BN = 128 x 128, BK = 64 (one 128-byte swizzle row per tile row), 2 warpgroups of 64 rows,
// a STAGES-deep ring; every warpgroup computes and thread 0 also refills the stage that the
// barrier at the end of each step has freed. One WGMMA batch stays in flight (wait_group 1).
// Few tiles (a shape smaller than the GPU) get more blocks two ways:
//   * BM = 64: one consumer warpgroup, twice the tiles, a 24 KiB stage, two blocks per SM;
//   * SPLIT_K > 1: grid z cuts K into SPLIT_K runs; the first SPLIT_K - 1 blocks of a tile (by
//     ticket) write fp32 sums to the workspace (L2), the last adds them and runs the epilogue,
//     then zeroes the tile's counters for the next launch (every block it waits for is resident).
// Any M; K and N multiples of 8 (TMA row strides); TMA zero-fills outside A and B.
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
#ifndef SPLIT_K
#define SPLIT_K 1
#endif

#include "ptx_sm80.cuh"  // elem_t (-DELEM_BF16=1: bf16), pack2, to_float
#include "sm70/flags.cuh"       // ld_acquire_gpu
#include "sm90/mbarrier.cuh"    // fence_mbarrier_init, mbar_arrive_expect_tx, mbar_init, mbar_wait
#include "sm90/tma.cuh"         // TmaMap, prefetch_tensormap, tma_load_2d
#include "sm90/wgmma.cuh"       // wgmma_commit, wgmma_fence, wgmma_m64n128k16, wgmma_wait
#include "sm90/wgmma_desc.cuh"  // smem_desc_k_sw128, smem_desc_mn_sw128
#include "gemm/wgmma_store.cuh"  // store_block: the register epilogue

typedef unsigned int u32;
typedef unsigned long long u64;

constexpr int NUM_THREADS = 128 * (BM / 64);  // one warpgroup per 64 rows
constexpr int A_BYTES = BM * BK * 2;
constexpr int STAGE_BYTES = A_BYTES + BN * BK * 2;
constexpr int B_BOX_COLS = 64;            // columns of B per TMA box: one 128-byte swizzle row
constexpr int B_BOX_BYTES = BK * 128;     // a box: BK rows (k) of 128 bytes
constexpr int B_BOXES = BN / B_BOX_COLS;  // boxes per B tile, side by side along N
constexpr int B_TRANS = 1;                // wgmma imm-trans-b: B is N-major in shared memory

static_assert(BK == 64, "A: one tile row is one 128-byte swizzle row of 64 two-byte elements");
static_assert(BN == 128, "the WGMMA below is m64n128k16: the block is BN = 128 wide");
static_assert(BN % B_BOX_COLS == 0, "B arrives in whole boxes of 64 columns (128-byte swizzle)");
static_assert(BM % 64 == 0 && BM <= 256 && BK <= 256, "TMA boxes are at most 256 rows");
static_assert(A_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0 && B_BOX_BYTES % 1024 == 0,
              "tiles and B boxes stay 1024-byte aligned (the swizzle atom; descriptor base 0)");
static_assert((B_BOX_BYTES >> 4) < (1 << 14), "the descriptor's LBO field holds 14 bits of 16 B");
static_assert(STAGES * STAGE_BYTES + 1024 <= 227 * 1024, "the ring must fit in 227 KiB");
static_assert(SPLIT_K >= 1 && SPLIT_K <= 16, "SPLIT_K: K runs per tile, 1 (no split) to 16");

constexpr int PARTIAL_VECS = BN / 8;  // float4s of one thread's accumulators (BN / 2 floats)
constexpr int TILE_FLOATS = BM * BN;  // one slot: a whole tile's fp32 sums

// Split-K's end of a block (see the header): true when this block holds the whole tile's sums in
// d and runs the epilogue; false when it has left its share in the workspace.
__device__ __forceinline__ bool reduce_split_k(float (&d)[BN / 2], float* __restrict__ workspace,
                                               int tile, int tiles) {
    __shared__ u32 ticket_s;
    const int tid = threadIdx.x;
    u32* count = reinterpret_cast<u32*>(workspace) + tile;  // tickets taken
    u32* done = count + tiles;                              // slots written
    // slots after the 2 * tiles counters, 16-byte aligned
    float* slots = workspace + ((2 * tiles + 3) & ~3);
    if (tid == 0) ticket_s = atomicAdd(count, 1u);
    __syncthreads();
    const u32 ticket = ticket_s;
    if (ticket + 1 < SPLIT_K) {  // not the last: leave the sums in slot `ticket`
        const size_t slot = (static_cast<size_t>(ticket) * tiles + tile) * TILE_FLOATS;
        float4* out = reinterpret_cast<float4*>(slots + slot) + tid;
#pragma unroll
        for (int j = 0; j < PARTIAL_VECS; ++j)
            __stcg(out + NUM_THREADS * j,
                   make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
        __syncthreads();  // every thread's stores are issued ...
        if (tid == 0) {
            __threadfence();  // ... and visible at gpu scope before the count says so
            atomicAdd(done, 1u);
        }
        return false;
    }
    if (tid == 0) {  // the last: the others hold tickets, so they are resident and finishing
        for (u32 polls = 1; ld_acquire_gpu(done) != SPLIT_K - 1; ++polls) {
            if (polls == (1u << 22)) __trap();  // over a second: fail the launch, never hang
            __nanosleep(32);
        }
        *count = 0u;  // both counters back to 0 for the next launch (no block reads them now)
        *done = 0u;
    }
    __syncthreads();  // the block sees what thread 0 acquired
#pragma unroll 1
    for (int s = 0; s < SPLIT_K - 1; ++s) {
        const size_t slot = (static_cast<size_t>(s) * tiles + tile) * TILE_FLOATS;
        const float4* in = reinterpret_cast<const float4*>(slots + slot) + tid;
#pragma unroll
        for (int j = 0; j < PARTIAL_VECS; ++j) {
            const float4 p = __ldcg(in + NUM_THREADS * j);
            d[4 * j] += p.x;
            d[4 * j + 1] += p.y;
            d[4 * j + 2] += p.z;
            d[4 * j + 3] += p.w;
        }
    }
    return true;
}

#define WGMMA wgmma_m64n128k16<B_TRANS>

extern "C" __global__ void __launch_bounds__(NUM_THREADS, 1)
gemm_wgmma_tma(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
               const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C,
               const __grid_constant__ TmaMap tma_a, const __grid_constant__ TmaMap tma_b
#if SPLIT_K > 1
               , float* __restrict__ workspace
#endif
) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ __align__(8) u64 full_bar[STAGES];
    // 128-byte swizzle repeats every 1024 bytes: tiles start on a 1024-byte boundary
    const u32 base = (static_cast<u32>(__cvta_generic_to_shared(smem)) + 1023u) & ~1023u;
    const u32 bar0 = static_cast<u32>(__cvta_generic_to_shared(full_bar));
    const int tid = threadIdx.x, wg = tid / 128;

    const int grid_m = gridDim.y, grid_n = gridDim.x;
    const int pid = blockIdx.y * grid_n + blockIdx.x;
    const int group = pid / (GROUP_M * grid_n), first_m = group * GROUP_M;
    const int group_rows = min(grid_m - first_m, GROUP_M);
    const int in_group = pid % (GROUP_M * grid_n);
    const int m0 = (first_m + in_group % group_rows) * BM;
    const int n0 = (in_group / group_rows) * BN;
    // this block's run of K tiles: [kt0, kt0 + ktiles) of all; runs differ by at most one tile
    const int all_ktiles = (K + BK - 1) / BK;
    const int kt0 = all_ktiles * static_cast<int>(blockIdx.z) / SPLIT_K;
    const int ktiles = all_ktiles * static_cast<int>(blockIdx.z + 1) / SPLIT_K - kt0;

    if (tid == 0) {
        prefetch_tensormap(&tma_a);
        prefetch_tensormap(&tma_b);
#pragma unroll
        for (int s = 0; s < STAGES; ++s) mbar_init(bar0 + 8 * s, 1);  // the producer's arrival
        fence_mbarrier_init();  // visible to TMA
    }
    __syncthreads();

    auto issue = [&](int s, int kt) {  // thread 0 only; kt counts from the run's first K tile
        const u32 sa = base + s * STAGE_BYTES, bar = bar0 + 8 * s;
        kt += kt0;
        mbar_arrive_expect_tx(bar, STAGE_BYTES);
        tma_load_2d(sa, &tma_a, bar, kt * BK, m0);
#pragma unroll
        for (int j = 0; j < B_BOXES; ++j)  // columns n0 + 64j .., rows kt * BK ..
            tma_load_2d(sa + A_BYTES + j * B_BOX_BYTES, &tma_b, bar, n0 + j * B_BOX_COLS, kt * BK);
    };
    if (tid == 0)
        for (int s = 0; s < STAGES && s < ktiles; ++s) issue(s, s);

    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;

    for (int kt = 0; kt < ktiles; ++kt) {
        const int s = kt % STAGES;
        mbar_wait(bar0 + 8 * s, (kt / STAGES) & 1);
        const u32 sa = base + s * STAGE_BYTES + wg * (64 * BK * 2), sb = base + s * STAGE_BYTES + A_BYTES;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)  // A: +32 bytes inside its rows; B: +16 rows
            WGMMA(d, smem_desc_k_sw128(sa + 32 * kk),
                  smem_desc_mn_sw128(sb + 16 * 128 * kk, B_BOX_BYTES), 1);
        wgmma_commit();
        wgmma_wait<1>();  // this step's batch may run on; the previous one has finished
        __syncthreads();  // ... in both warpgroups: its stage is free
        if (tid == 0 && kt >= 1 && kt - 1 + STAGES < ktiles) issue((kt - 1) % STAGES, kt - 1 + STAGES);
    }
    wgmma_wait<0>();

#if SPLIT_K > 1
    if (!reduce_split_k(d, workspace, pid, grid_m * grid_n)) return;
#endif
    store_block(d, C, M, N, m0 + 64 * wg, n0, alpha, beta);
}
