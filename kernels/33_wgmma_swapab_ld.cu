// Stage 33: stage 31 for every shape: the tiles come through the producers' own loads, not TMA.
// A tensor map needs row pitches of whole 16 bytes, so N or K no multiple of 8 (a pitch of 4100
// or 12289 elements) left stage 31 out. Here PRODUCERS warpgroups fill the same 128-byte swizzled
// ring with ordinary loads: for a box row (64 elements of one row of A or B) eight lanes load the
// eight aligned 16-byte chunks that cover its start, lane 7 one more when the row is misaligned
// by s elements, and each lane takes its neighbour's chunk (shfl) and funnel-shifts by s: every
// load is aligned and a warp reads four whole rows. A row that crosses the matrix's edge (its
// last K slice, the last columns of B, rows past M of A) is read element by element, zeros past
// the edge. Each producer thread stores its 16 bytes at the swizzled place (chunk j of row r at
// r*128 + ((j ^ r % 8) * 16)), fences them for the async proxy (fence.proxy.async), and arrives
// on the slot's full barrier (one arrival per producer thread). Loads are issued before the wait
// for the slot, so a slice's bytes are in flight while the consumers finish the one before; with
// PRODUCERS = 2 the warpgroups take alternate slices: two slices in flight. The consumers, the
// stream-K split and the bounds-checked epilogue are stage 31's. Shapes: any M, N and K.
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
#ifndef PRODUCERS
#define PRODUCERS 1  // producer warpgroups: each fills every PRODUCERS-th slice
#endif
#ifndef SK_MIN
#define SK_MIN 4  // fewest K slices in one worker's range
#endif

#include "ptx_sm80.cuh"             // elem_t (-DELEM_BF16=1: bf16), pack2, to_float
#include "sm90/mbarrier.cuh"        // the ring's full and empty barriers
#include "sm90/fence.cuh"           // fence.proxy.async: the producers' stores seen by wgmma
#include "sm90/wgmma.cuh"           // wgmma_at_m64nNk16 (A MN-major), fence, commit, wait
#include "sm90/wgmma_desc.cuh"      // the operands' shared-memory descriptors
#include "gemm/swapab_stream.cuh"    // the stream-K line, its partials, the epilogue

typedef unsigned int u32;
typedef unsigned long long u64;

constexpr int CONSUMERS = BN / 64;                  // a warpgroup per 64 columns of C
constexpr int NUM_THREADS = 128 * (PRODUCERS + CONSUMERS);  // + the producer warpgroups
constexpr int B_BOX_BYTES = BK * 128;               // 64 columns x BK rows of B
constexpr int B_BYTES = CONSUMERS * B_BOX_BYTES;
constexpr int A_BYTES = BM * BK * 2;  // BM rows of A, one 128-byte swizzled row each
constexpr int STAGE_BYTES = B_BYTES + A_BYTES;
constexpr int RING_STAGES = RING_KIB * 1024 / STAGE_BYTES;
constexpr int STAGES = RING_STAGES < MAX_STAGES ? RING_STAGES : MAX_STAGES;
constexpr int PARTIAL_FLOATS = 64 * BM;  // one consumer's fp32 partial block

static_assert(BK == 64, "one K slice is one 128-byte swizzle row of 64 two-byte elements");
static_assert(BN == 64 || BN == 128 || BN == 256, "1, 2 or 4 consumer warpgroups of 64 columns");
static_assert(BM == 8 || BM == 16 || BM == 32 || BM == 64 || BM == 128 || BM == 256,
              "BM is the wgmma's N: 8, 16, 32, 64, 128 or 256 (wgmma_at_m64nNk16)");
static_assert(BM / 2 + 40 <= 65536 / NUM_THREADS,
              "a consumer's BM / 2 accumulators and its addresses must fit its registers");
static_assert(STAGES >= 2, "the ring holds at least two slices");
static_assert(STAGE_BYTES % 1024 == 0, "slots stay 1024-byte aligned (the swizzle atom)");
static_assert(STAGES * STAGE_BYTES + 1024 <= 227 * 1024, "the ring must fit in 227 KiB");
static_assert(SK_MIN >= 1, "a worker takes at least one K slice");
static_assert(PRODUCERS == 1 || PRODUCERS == 2, "one or two producer warpgroups");
static_assert(BM % 16 == 0 || BM == 8, "a producer pass fills 16 box rows (BM = 8: half a pass)");

// Producer loads. A box row is 64 elements of one row of A (its K) or B (its N): eight lanes,
// lane j one 16-byte chunk. In the matrix the row starts s elements past a 16-byte boundary;
// lane j loads aligned chunk j from there, lane 7 also chunk 8 when s != 0 (it holds the row's
// last elements), and box_shift puts the 8 elements from s + 8j in one chunk. A row that is
// not wholly inside (gr >= rows, or columns past cols) is read an element at a time, zeros
// past the edge, already aligned (s = 0). The matrix starts on a 16-byte boundary or every row
// takes the element path.
struct RowLoad {
    uint4 x, y;  // aligned chunk j; lane 7: chunk 8
    u32 s;       // the row's misalignment in elements (0 .. 7)
};

__device__ __forceinline__ void box_load(RowLoad& L, const elem_t* __restrict__ G, int rows,
                                         int cols, int gr, int c0, int j, bool active) {
    L.x = make_uint4(0u, 0u, 0u, 0u);
    L.y = L.x;
    L.s = 0;
    if (!active || gr >= rows) return;
    const size_t e = static_cast<size_t>(gr) * cols + c0;  // the row's first element
    if (c0 + 64 <= cols && (reinterpret_cast<size_t>(G) & 15) == 0) {
        L.s = static_cast<u32>(e & 7);
        const uint4* q = reinterpret_cast<const uint4*>(G + (e - L.s));  // 16-byte aligned
        L.x = __ldg(q + j);
        if (j == 7 && L.s != 0) L.y = __ldg(q + 8);
        return;
    }
    u32 w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int c = c0 + 8 * j + i;
        if (c < cols) w[i / 2] |= static_cast<u32>(G[e + 8 * j + i]) << (16 * (i % 2));
    }
    L.x = make_uint4(w[0], w[1], w[2], w[3]);
}

// The 8 elements from s + 8j of the row: this lane's chunk and the next (lane j + 1's; lane 7's
// own chunk 8), shifted right by s two-byte elements. Every lane of the warp calls it (shfl).
__device__ __forceinline__ uint4 box_shift(const RowLoad& L, int j) {
    uint4 n;
    n.x = __shfl_down_sync(0xffffffffu, L.x.x, 1);
    n.y = __shfl_down_sync(0xffffffffu, L.x.y, 1);
    n.z = __shfl_down_sync(0xffffffffu, L.x.z, 1);
    n.w = __shfl_down_sync(0xffffffffu, L.x.w, 1);
    if (j == 7) n = L.y;
    u32 v0 = L.x.x, v1 = L.x.y, v2 = L.x.z, v3 = L.x.w, v4 = n.x, v5 = n.y, v6 = n.z, v7 = n.w;
    if (L.s & 4u) {  // two words
        v0 = v2, v1 = v3, v2 = v4, v3 = v5, v4 = v6, v5 = v7;
    }
    if (L.s & 2u) {  // one word
        v0 = v1, v1 = v2, v2 = v3, v3 = v4, v4 = v5;
    }
    const u32 sh = (L.s & 1u) * 16u;  // half a word
    return make_uint4(__funnelshift_r(v0, v1, sh), __funnelshift_r(v1, v2, sh),
                      __funnelshift_r(v2, v3, sh), __funnelshift_r(v3, v4, sh));
}

// A slice is B_PASSES passes of 16 box rows over B (CONSUMERS boxes of BK rows), then A_PASSES
// over A's BM rows; a producer thread loads GROUP passes (9 registers each, as many as its
// share of the register file leaves beside 40 for addresses, at most 16), then stores them.
constexpr int B_PASSES = CONSUMERS * BK / 16;
constexpr int A_PASSES = (BM + 15) / 16;
constexpr int PASSES = B_PASSES + A_PASSES;
constexpr int GROUP_FIT = (65536 / NUM_THREADS - 40) / 10;
constexpr int GROUP_MAX = GROUP_FIT < 16 ? GROUP_FIT : 16;
constexpr int GROUP = PASSES < GROUP_MAX ? PASSES : GROUP_MAX;
static_assert(GROUP >= 1, "a producer thread holds at least one pass of loads");

// Pass i's row for this thread: its offset in the slot and whether it is a row of the box.
__device__ __forceinline__ u32 pass_row(int i, int prow, bool& active) {
    if (i < B_PASSES) {
        active = true;
        return (i / 4) * B_BOX_BYTES + ((i % 4) * 16 + prow) * 128;
    }
    const int r = (i - B_PASSES) * 16 + prow;
    active = r < BM;
    return B_BYTES + r * 128;
}

__device__ __forceinline__ void pass_load(RowLoad& L, int i, int prow, int j, const elem_t* A,
                                          const elem_t* B, int M, int N, int K, int m0, int n0,
                                          int kt) {
    if (i < B_PASSES) {  // rows kt*BK + r of B (K rows of N), columns n0 + 64 * box
        const int r = (i % 4) * 16 + prow;
        box_load(L, B, K, N, kt * BK + r, n0 + 64 * (i / 4), j, true);
    } else {  // rows m0 + r of A (M rows of K), columns kt*BK ..
        const int r = (i - B_PASSES) * 16 + prow;
        box_load(L, A, M, K, m0 + r, kt * BK, j, r < BM);
    }
}

#define WGMMA wgmma_at_m64nNk16<BM>

extern "C" __global__ void __launch_bounds__(NUM_THREADS, 1)
gemm_wgmma_swapab_ld(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
                     const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C,
                     float* __restrict__ workspace) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ __align__(8) u64 full_bar[STAGES], empty_bar[STAGES];
    // 128-byte swizzle repeats every 1024 bytes: slots start on a 1024-byte boundary
    const u32 smem0 = static_cast<u32>(__cvta_generic_to_shared(smem));
    const u32 base = (smem0 + 1023u) & ~1023u;
    unsigned char* const ring = smem + (base - smem0);  // the same bytes, for the producers
    const u32 full0 = static_cast<u32>(__cvta_generic_to_shared(full_bar));
    const u32 empty0 = static_cast<u32>(__cvta_generic_to_shared(empty_bar));
    const int tid = threadIdx.x, wg = tid / 128, lane = tid % 32;

    const int grid_m = (M + BM - 1) / BM, grid_n = (N + BN - 1) / BN;
    const int ktiles = (K + BK - 1) / BK;

    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full0 + 8 * s, 128);  // every thread of the slot's producer warpgroup
            mbar_init(empty0 + 8 * s, CONSUMERS * 4);  // one arrival per consumer warp
        }
        fence_mbarrier_init();
    }
    __syncthreads();

    SwapRange<SK_MIN> range(grid_m * grid_n, ktiles);
    SwapPiece p;
    if (wg < PRODUCERS) {
        // `it` counts K slices across pieces (slot it % STAGES, use it / STAGES); this
        // warpgroup fills the slices with it % PRODUCERS == wg
        const int prow = (tid % 128) / 8, j = tid % 8;
        u32 it = 0;
        while (range.take(p)) {
            const int m0 = (p.tile % grid_m) * BM, n0 = (p.tile / grid_m) * BN;
            for (int kt = p.k0; kt < p.k1; ++kt, ++it) {
                if (static_cast<int>(it % PRODUCERS) != wg) continue;
                const u32 s = it % STAGES;
                unsigned char* const slot = ring + s * STAGE_BYTES;
#pragma unroll
                for (int g = 0; g < PASSES; g += GROUP) {
                    RowLoad L[GROUP];
#pragma unroll
                    for (int i = 0; i < GROUP; ++i)
                        if (g + i < PASSES) pass_load(L[i], g + i, prow, j, A, B, M, N, K, m0, n0, kt);
                    if (g == 0 && it >= STAGES) swap_wait(empty0 + 8 * s, ((it / STAGES) - 1) & 1);
#pragma unroll
                    for (int i = 0; i < GROUP; ++i) {
                        if (g + i >= PASSES) continue;
                        bool active;
                        const u32 row = pass_row(g + i, prow, active);
                        const uint4 v = box_shift(L[i], j);
                        const u32 r = (row / 128) % 8;  // the swizzle: row r's chunk j at j ^ r
                        if (active) *reinterpret_cast<uint4*>(slot + row + ((j ^ r) * 16)) = v;
                    }
                }
                fence_proxy_async();  // this thread's stores visible to the wgmma's reads
                mbar_arrive(full0 + 8 * s);
            }
        }
    } else {
        const int c = wg - PRODUCERS;  // consumer c: columns 64c .. 64c+63 of each tile
        const bool leader = tid % 128 == 0;
        const int bar_id = 1 + c;
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
                const u32 sb = base + s * STAGE_BYTES + c * B_BOX_BYTES;
                const u32 sa = base + s * STAGE_BYTES + B_BYTES;
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)  // B: +16 rows; A: +32 bytes in its rows
                    WGMMA(d, smem_desc_mn_sw128(sb + 16 * 128 * kk, B_BOX_BYTES),
                          smem_desc_k_sw128(sa + 32 * kk), kt != p.k0 || kk != 0);
                wgmma_commit();
                wgmma_wait<1>();  // the batch of slice it-1 has completed: release its slot
                if (kt > p.k0 && lane == 0) mbar_arrive(empty0 + 8 * ((it - 1) % STAGES));
            }
            wgmma_wait<0>();
            if (lane == 0) mbar_arrive(empty0 + 8 * ((it - 1) % STAGES));
            // a worker's partial to its slot, or the owner's: its workers' partials added in
            if (swap_finish_piece<BM, CONSUMERS>(d, range, p, workspace, flags, c, bar_id, leader))
                swap_store<BM>(d, C, M, N, m0, n0 + 64 * c, alpha, beta);
        }
    }
}
