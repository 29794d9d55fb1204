// Stage 13: stage 12's loop and tiles on a persistent grid with a stream-K last wave. Stage 12
// launches one block per 128 x 128 tile and each walks all of K, so when the tiles are not a
// whole number of waves of resident blocks the last wave leaves SMs idle for a whole K loop.
// Here the grid is exactly the resident blocks (MIN_BLOCKS per SM) and the tiles are split in
// two parts, as stage 29 does for WGMMA (the hybrid of Osama et al., "Stream-K"):
//   * stream-K first: the first SK tiles of the grouped order (SK = tiles % blocks, plus
//     SK_WAVES - 1 whole waves) as one run of SK x ktiles K tiles cut into WORKERS equal ranges;
//     WORKERS is every block, but at most one per SK_MIN K tiles and at least SK. A range may
//     start inside one tile and end inside another;
//   * then data-parallel: the other tiles, whole, tile SK + b + i * blocks for block b.
// A cut tile is finished by its owner, the worker whose range holds its first K tile: the others
// compute their piece first, store the fp32 partial tile in the workspace (st.global.cg, L2) and
// set a flag (st.release); the owner, at the end of its range, waits for those flags
// (ld.acquire), adds the partials, puts the flags back to 0 and runs the epilogue. Dependencies
// point only to pieces that wait for nothing: no cycle while every block is resident
// (__launch_bounds__ promises MIN_BLOCKS per SM); an owner polling a flag for over a second traps.
// Each piece (K tiles k0 .. k1-1 of one tile) runs stage 12's main loop unchanged; only its
// K bounds are the piece's. Any M, N, K stays correct. STREAMK = 0 runs the same persistent
// kernel with whole tiles only (the control).
#ifndef BM
#error "BM (rows of the C tile) must be given as -DBM=..."
#endif
#ifndef BN
#error "BN (columns of the C tile) must be given as -DBN=..."
#endif
#ifndef BK
#error "BK (depth of one K tile) must be given as -DBK=..."
#endif
#ifndef WM
#error "WM (rows of the warp tile) must be given as -DWM=..."
#endif
#ifndef WN
#error "WN (columns of the warp tile) must be given as -DWN=..."
#endif
#ifndef WNITER
#error "WNITER (sub-tiles of a warp tile along N) must be given as -DWNITER=..."
#endif
#ifndef TM
#error "TM (rows of one thread sub-tile) must be given as -DTM=..."
#endif
#ifndef TN
#error "TN (columns of one thread sub-tile) must be given as -DTN=..."
#endif
#ifndef NUM_THREADS
#error "NUM_THREADS (blockDim.x) must be given as -DNUM_THREADS=..."
#endif
#ifndef STAGES
#error "STAGES (K tiles in flight in shared memory) must be given as -DSTAGES=..."
#endif
#ifndef COPY_STEP
#error "COPY_STEP (cp.async per k-step in interior tiles) must be given as -DCOPY_STEP=..."
#endif
#ifndef GROUP_M
#error "GROUP_M (row tiles per group of the block order) must be given as -DGROUP_M=..."
#endif
#ifndef MIN_BLOCKS
#error "MIN_BLOCKS (blocks resident per SM, promised to ptxas) must be given as -DMIN_BLOCKS=..."
#endif
#ifndef PAIR_LANES
#error "PAIR_LANES (1: lanes n, n^1 share A and n, n^2 share B) must be given as -DPAIR_LANES=..."
#endif
#ifndef SERPENTINE
#error "SERPENTINE (1: odd rows of FFMAs walk columns backwards) must be given as -DSERPENTINE=..."
#endif

#ifndef STREAMK
#error "STREAMK (1: cut the last wave's tiles along K; 0: whole tiles only) must be given"
#endif
#ifndef SK_WAVES
#error "SK_WAVES (waves of tiles cut along K, the partial last one counting 1) must be given"
#endif
#ifndef SK_MIN
#error "SK_MIN (fewest K tiles per stream-K worker) must be given as -DSK_MIN=..."
#endif

#include "ptx_sm80.cuh"  // cp.async
#include "sm70/flags.cuh"  // ld_acquire_gpu, st_release_gpu
#include "gemm/simt_epilogue.cuh"  // aligned16, store_warp_tile (the float4 epilogue)

typedef unsigned int u32;

constexpr int NUM_WARPS = NUM_THREADS / 32;
constexpr int WARPS_N = BN / WN;  // warps side by side along N
constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);  // sub-tiles of a warp tile along M
constexpr int WSUBM = WM / (WMITER > 0 ? WMITER : 1);  // rows of one warp sub-tile
constexpr int WSUBN = WN / WNITER;  // columns of one warp sub-tile
constexpr int LANES_N = WSUBN / TN;  // lanes side by side along N in a sub-tile
constexpr int RM = WMITER * TM;  // rows of C per thread
constexpr int RN = WNITER * TN;  // columns of C per thread
constexpr int AS = BM + 4;  // padded stride of the transposed A tile (k -> k+1: 4 banks)
constexpr int A_TILE = BK * AS;  // floats of one transposed A tile
constexpr int B_TILE = BK * BN;  // floats of one row-major B tile
constexpr int STAGE_FLOATS = A_TILE + B_TILE;  // one slot: A tile, then B tile
constexpr int SMEM_BYTES = STAGES * STAGE_FLOATS * 4;  // the registry's smem_bytes
// A copies: one warp instruction = 4 rows x 8 consecutive k; warp w always takes the same 8 k
// (group w % A_KGROUPS) and rows 4 * (w / A_KGROUPS) + r * A_ROW_STEP, r < A_PER_THREAD.
constexpr int A_KGROUPS = BK / 8;
constexpr int A_ROW_STEP = 4 * NUM_WARPS / (A_KGROUPS > 0 ? A_KGROUPS : 1);
constexpr int A_PER_THREAD = BM * BK / NUM_THREADS;
// B copies: float4 chunk b_c of row b_row + r * B_ROW_STEP, r < B_PER_THREAD.
constexpr int B_CHUNKS = BN / 4;  // float4 per B row
constexpr int B_ROW_STEP = NUM_THREADS / B_CHUNKS;
constexpr int B_PER_THREAD = BK / (B_ROW_STEP > 0 ? B_ROW_STEP : 1);
constexpr int N_COPIES = A_PER_THREAD + B_PER_THREAD;  // cp.async per thread per interior tile
constexpr int COPY_DOTS = (N_COPIES + COPY_STEP - 1) / COPY_STEP;  // k-steps that issue copies

static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
static_assert(NUM_THREADS == 32 * (BM / WM) * (BN / WN), "one warp per warp tile");
static_assert(NUM_THREADS <= 1024, "at most 1024 threads per block");
static_assert(WMITER >= 1 && WMITER * 32 * TM * TN * WNITER == WM * WN,
              "a warp's 32 lanes x WMITER x WNITER sub-tiles of TM x TN must cover WM x WN");
static_assert(WN % WNITER == 0 && WSUBN % TN == 0 && WSUBM % TM == 0,
              "thread sub-tiles must tile the warp sub-tile");
static_assert(LANES_N * (WSUBM / TM) == 32, "a warp sub-tile is (WSUBM/TM) x (WSUBN/TN) lanes");
static_assert(!PAIR_LANES || (LANES_N % 2 == 0 && (32 / LANES_N) % 2 == 0),
              "paired lanes take bit 0 of the lane for a column and bit 1 for a row");
static_assert(TM % 4 == 0 && TN % 4 == 0, "operands are read and C rows written as float4");
static_assert(BK % 8 == 0, "an A copy instruction covers 8 consecutive k (one 32-byte sector per "
                           "row); an even BK also keeps the fragment buffers in step across tiles");
static_assert(NUM_WARPS % A_KGROUPS == 0,
              "every round of a thread's A copies must fall on the same 8 k (one k per thread)");
static_assert((BM * BK) % NUM_THREADS == 0 && A_ROW_STEP * A_PER_THREAD == BM,
              "every thread copies the same number of A floats, 4 rows per warp instruction");
static_assert(A_PER_THREAD <= 32, "a thread's A row-validity bits must fit one 32-bit mask");
static_assert(AS % 32 == 4, "padding: k and k+1 of one m land 4 banks apart, so a warp's 4 rows "
                            "x 8 k of transposing 4-byte copies hit 32 distinct banks");
static_assert(BN % 4 == 0 && NUM_THREADS % B_CHUNKS == 0 && BK % B_ROW_STEP == 0,
              "every thread copies the same number of B float4s, whole rows per pass");
static_assert(STAGES >= 2, "a pipeline needs at least two shared-memory slots");
static_assert(COPY_DOTS <= BK - 1, "an interior tile commits its copies before the wait of its last "
                                    "k-step: at most BK - 1 k-steps may issue copies");
static_assert(GROUP_M >= 1, "a group of the block order holds at least one row of tiles");
static_assert(SMEM_BYTES <= 227 * 1024, "the slots must fit in 227 KiB (the opt-in per block)");
static_assert(MIN_BLOCKS >= 1 && MIN_BLOCKS * (SMEM_BYTES + 1024) <= 228 * 1024,
              "MIN_BLOCKS blocks' slots, and the 1 KiB the SM keeps per block, must fit its 228 KiB");
static_assert(MIN_BLOCKS * NUM_THREADS * 168 <= 64 * 1024,
              "MIN_BLOCKS blocks must leave each thread room for 128 accumulators, 2 x 24 fragments "
              "and addresses in the SM's 64 Ki registers");
static_assert(RM * RN <= 128,
              "the accumulator tile must leave registers for two fragment buffers and addresses");

// One k-step's operands: as / bs point at this thread's first A / B operand of a slot's tiles.
__device__ __forceinline__ void load_frags(float (&regM)[RM], float (&regN)[RN],
                                           const float* as, const float* bs, int dot) {
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; i += 4)
            *reinterpret_cast<float4*>(&regM[wm * TM + i]) =
                *reinterpret_cast<const float4*>(&as[dot * AS + wm * WSUBM + i]);
#pragma unroll
    for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
        for (int j = 0; j < TN; j += 4)
            *reinterpret_cast<float4*>(&regN[wn * TN + j]) =
                *reinterpret_cast<const float4*>(&bs[dot * BN + wn * WSUBN + j]);
}

static_assert(STREAMK == 0 || STREAMK == 1, "STREAMK is a switch");
static_assert(SK_WAVES >= 1, "the partial last wave is the least that stream-K cuts");
static_assert(SK_MIN >= 1, "a stream-K worker takes at least one K tile");
static_assert((RM * RN) % 4 == 0 && RN % 4 == 0,
              "a thread's partial tile goes to the workspace as whole float4 of one row");

constexpr int PARTIAL_FLOATS = BM * BN;  // one worker's fp32 partial tile in the workspace
constexpr int PARTIAL_VECS = RM * RN / 4;  // float4 per thread

// Tile number -> origin of its BM x BN block of C, in stage 12's grouped order: GROUP_M row
// tiles walked column by column, then the next group.
__device__ __forceinline__ void tile_origin(int tile, int tilesM, int tilesN, int& cRow,
                                            int& cCol) {
    const int perGroup = GROUP_M * tilesN;
    const int firstM = (tile / perGroup) * GROUP_M;
    const int groupM = min(tilesM - firstM, GROUP_M);  // the last group may be shorter
    const int inGroup = tile % perGroup;
    cRow = (firstM + inGroup % groupM) * BM;
    cCol = (inGroup / groupM) * BN;
}

// One piece of a block's work: K tiles k0 .. k1-1 of one output tile.
struct Piece {
    int tile, k0, k1;
};

// This block's pieces, in order: its stream-K range, then its data-parallel tiles. It lives in
// shared memory and only thread 0 walks it, so the main loop holds none of it in registers
// (stage 12 already uses 240 of 255).
struct Schedule {
    int tiles, ktiles, workers, per, extra;  // range w: per (+1 for w < extra) K tiles
    int pos, end, dp;  // next stream-K K tile, end of this block's range, next whole tile

    __device__ void init(int tiles_, int ktiles_) {
        const int blocks = gridDim.x, b = blockIdx.x;
        tiles = tiles_;
        ktiles = ktiles_;
        // K == 0 has nothing to cut: every tile is whole (its epilogue writes beta * C)
        const int sk_tiles =
            STREAMK && ktiles > 0 ? min(tiles, tiles % blocks + (SK_WAVES - 1) * blocks) : 0;
        const int sk_slices = sk_tiles * ktiles;
        workers = sk_tiles ? min(blocks, max(sk_tiles, sk_slices / SK_MIN)) : 0;
        per = workers ? sk_slices / workers : 0;  // >= 1: workers <= sk_slices
        extra = workers ? sk_slices % workers : 0;
        pos = b < workers ? start(b) : 0;
        end = b < workers ? start(b + 1) : 0;
        dp = sk_tiles + b;
    }
    // first stream-K K tile of worker w's range (w == workers: the end of the last)
    __device__ int start(int w) const { return w * per + min(w, extra); }
    // the next piece, or k1 = -1 when there is none
    __device__ Piece next() {
        Piece p{0, 0, -1};
        if (pos < end) {
            p.tile = pos / ktiles;
            p.k0 = pos - p.tile * ktiles;
            p.k1 = min(ktiles, p.k0 + (end - pos));
            pos += p.k1 - p.k0;
        } else if (dp < tiles) {
            p.tile = dp;
            p.k0 = 0;
            p.k1 = ktiles;
            dp += gridDim.x;
        }
        return p;
    }
};

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MIN_BLOCKS)
gemm_serpentine_streamk(int M, int N, int K, float alpha, const float* __restrict__ A,
                        const float* __restrict__ B, float beta, float* __restrict__ C,
                        float* __restrict__ workspace) {
    extern __shared__ __align__(16) float smem[];  // STAGES x (A tile [BK][AS], B tile [BK][BN])
    const u32 sbase = static_cast<u32>(__cvta_generic_to_shared(smem));

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int wRow = (warp / WARPS_N) * WM;  // this warp's tile inside the block tile
    const int wCol = (warp % WARPS_N) * WN;
    // This lane's sub-tile inside a warp sub-tile (stage 12's, PAIR_LANES included).
    const int hi = lane >> 2;  // bits 2..4
    const int laneRow = PAIR_LANES ? ((lane >> 1) & 1) | (hi / (LANES_N / 2)) << 1 : lane / LANES_N;
    const int laneCol = PAIR_LANES ? (lane & 1) | (hi % (LANES_N / 2)) << 1 : lane % LANES_N;
    const int tRow = laneRow * TM;
    const int tCol = laneCol * TN;
    const int tilesM = (M + BM - 1) / BM, tilesN = (N + BN - 1) / BN;
    const int ktiles = (K + BK - 1) / BK;
    const int a_k = (warp % A_KGROUPS) * 8 + lane / 4;  // this thread's A copies (stage 12's)
    const int a_m = (warp / A_KGROUPS) * 4 + lane % 4;
    const u32 a_dst = static_cast<u32>((a_k * AS + a_m) * 4);
    const int b_row = tid / B_CHUNKS, b_c = tid % B_CHUNKS;  // and its B copies
    const u32 b_dst = static_cast<u32>((A_TILE + b_row * BN + 4 * b_c) * 4);
    const bool vecB = (N & 3) == 0 && aligned16(B);  // a float4 is wholly in or out, aligned
    const int a_thr = wRow + tRow;  // this thread's first A operand in a slot (floats)
    const int b_thr = A_TILE + wCol + tCol;  // and its first B operand
    // the workspace: one partial tile per worker, then one flag per worker
    float* const partials = workspace;
    u32* const flags =
        reinterpret_cast<u32*>(workspace + static_cast<size_t>(gridDim.x) * PARTIAL_FLOATS);

    float acc[RM][RN];
    float regM[2][RM], regN[2][RN];  // fragments of k-steps dot (buffer dot % 2) and dot + 1
    __shared__ Schedule sched;
    __shared__ Piece pieces[2];  // piece n in pieces[n % 2]: thread 0 writes the next one while
                                 // the others may still read this one
    if (tid == 0) {
        sched.init(tilesM * tilesN, ktiles);
        pieces[0] = sched.next();
    }
    for (int n = 0;; ++n) {
        __syncthreads();  // piece n is in shared memory; the slots of piece n - 1 are read
        const Piece p = pieces[n % 2];
        if (p.k1 < 0) break;  // uniform: no piece left
        if (tid == 0) pieces[(n + 1) % 2] = sched.next();
        int cRow, cCol;
        tile_origin(p.tile, tilesM, tilesN, cRow, cCol);
        const int k1 = p.k1;
        // A copies of this thread: k = a_k of every tile, rows a_m + r * A_ROW_STEP.
        const float* a_src = A + static_cast<size_t>(min(cRow + a_m, M - 1)) * K + a_k;
        u32 a_rows_ok = 0;  // bit r: row a_m + r * A_ROW_STEP is inside A
#pragma unroll
        for (int r = 0; r < A_PER_THREAD; ++r)
            a_rows_ok |= (cRow + a_m + r * A_ROW_STEP < M ? 1u : 0u) << r;
        // B copies of this thread: columns 4 * b_c .. +3 of rows b_row + r * B_ROW_STEP.
        const int b_col = cCol + 4 * b_c;
        const float* b_src = B + static_cast<size_t>(b_row) * N + b_col;
        const bool rowsA = cRow + BM <= M;  // all the tile's rows of A inside the matrix
        const bool colsB = vecB && cCol + BN <= N;  // and its columns of B

        // Tile kt -> slot `slot`: stage 12's copies, one cp.async per A float, one per B float4.
        auto load_tile = [&](int slot, int kt) {
            const u32 sa = sbase + static_cast<u32>(slot * STAGE_FLOATS * 4);
            const int k0 = kt * BK;
            const bool fullK = k0 + BK <= K;  // uniform: only the last K tile can be partial
            const float* pa = a_src + k0;
            if (rowsA && fullK) {  // interior: every copy in bounds
#pragma unroll
                for (int r = 0; r < A_PER_THREAD; ++r)
                    cp_async4(sa + a_dst + r * A_ROW_STEP * 4,
                              pa + static_cast<size_t>(r * A_ROW_STEP) * K, 4u);
            } else {  // edge: zeros outside A
                const bool a_k_ok = k0 + a_k < K;
#pragma unroll
                for (int r = 0; r < A_PER_THREAD; ++r) {
                    const bool ok = a_k_ok && ((a_rows_ok >> r) & 1u);
                    const float* src = pa + static_cast<size_t>(r * A_ROW_STEP) * K;
                    cp_async4(sa + a_dst + r * A_ROW_STEP * 4, ok ? src : A, ok ? 4u : 0u);
                }
            }
            const float* pb = b_src + static_cast<size_t>(k0) * N;
            if (colsB && fullK) {  // interior
#pragma unroll
                for (int r = 0; r < B_PER_THREAD; ++r)
                    cp_async16(sa + b_dst + r * B_ROW_STEP * BN * 4,
                               pb + static_cast<size_t>(r * B_ROW_STEP) * N, 16u);
            } else if (vecB) {  // edge, N % 4 == 0: a float4 is wholly inside or outside B
                const bool col_ok = b_col < N;
#pragma unroll
                for (int r = 0; r < B_PER_THREAD; ++r) {
                    const bool ok = col_ok && k0 + b_row + r * B_ROW_STEP < K;
                    const float* src = pb + static_cast<size_t>(r * B_ROW_STEP) * N;
                    cp_async16(sa + b_dst + r * B_ROW_STEP * BN * 4, ok ? src : B, ok ? 16u : 0u);
                }
            } else {  // N % 4 != 0 or B misaligned: 4-byte copies, column by column
#pragma unroll
                for (int r = 0; r < B_PER_THREAD; ++r) {
                    const bool row_ok = k0 + b_row + r * B_ROW_STEP < K;
                    const float* src = pb + static_cast<size_t>(r * B_ROW_STEP) * N;
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const bool ok = row_ok && b_col + e < N;
                        cp_async4(sa + b_dst + (r * B_ROW_STEP * BN + e) * 4, ok ? src + e : B,
                                  ok ? 4u : 0u);
                    }
                }
            }
        };

#pragma unroll
        for (int i = 0; i < RM; ++i)
#pragma unroll
            for (int j = 0; j < RN; ++j) acc[i][j] = 0.0f;

        // Prologue: the piece's K tiles k0 .. k0+STAGES-2 in flight, one commit group each.
#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
            if (p.k0 + s < k1) load_tile(s, p.k0 + s);
            cp_async_commit();
        }
        cp_async_wait<STAGES - 2>();  // this thread's copies of tile k0 landed
        __syncthreads();  // everyone's have
        load_frags(regM[0], regN[0], smem + a_thr, smem + b_thr, 0);

        // A: the tile the first iteration copies; B: the same
        const float* ga = a_src + (p.k0 + STAGES - 1) * BK;
        const float* gb = b_src + static_cast<size_t>((p.k0 + STAGES - 1) * BK) * N;
        const size_t b_tile_step = static_cast<size_t>(BK) * N;
        // K and N as unsigned: the copies' row offsets are then 32 x 32 -> 64-bit products
        // (IMAD.WIDE.U32), where a signed int widened to 64 bits costs an IMAD and an IADD3 more
        // per copy in this loop (NVRTC 13.0 recomputes them here, out of registers)
        const u32 Ku = static_cast<u32>(K), Nu = static_cast<u32>(N);
        int rd = 0;  // slot of tile kt
        int wr = STAGES - 1;  // slot that takes tile kt + STAGES - 1 (the slot of tile kt - 1)
        // Stage 12's iteration: the k-steps of tile kt, the copies of tile kt + STAGES - 1 (if it
        // is in the piece) spread over them (interior) or at k-step 0 (bounds-checked).
        auto iteration = [&](int kt, bool interior) {
            const int nx = rd + 1 == STAGES ? 0 : rd + 1;  // slot of tile kt + 1
            const float* as = smem + rd * STAGE_FLOATS + a_thr;
            const float* bs = smem + rd * STAGE_FLOATS + b_thr;
            const int kc = kt + STAGES - 1;  // the tile this iteration copies
            const u32 sw = sbase + static_cast<u32>(wr * STAGE_FLOATS * 4);
#pragma unroll
            for (int dot = 0; dot < BK; ++dot) {
                if (dot < BK - 1) {  // the next k-step's operands, before this one's FMAs
                    load_frags(regM[(dot + 1) % 2], regN[(dot + 1) % 2], as, bs, dot + 1);
                } else if (kt + 1 < k1) {  // uniform: the whole block agrees
                    cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt+1 landed
                    __syncthreads();  // everyone's have; everyone is done reading tile kt-1
                    const float* next = smem + nx * STAGE_FLOATS;
                    load_frags(regM[(dot + 1) % 2], regN[(dot + 1) % 2], next + a_thr,
                               next + b_thr, 0);
                }
                if (interior) {  // copies dot * COPY_STEP .. + COPY_STEP - 1: A rows, then B rows
#pragma unroll
                    for (int c = dot * COPY_STEP; c < (dot + 1) * COPY_STEP && c < N_COPIES; ++c) {
                        if (c < A_PER_THREAD) {
                            cp_async4(sw + a_dst + c * A_ROW_STEP * 4,
                                      ga + static_cast<size_t>(c * A_ROW_STEP) * Ku, 4u);
                        } else {
                            const int r = c - A_PER_THREAD;
                            cp_async16(sw + b_dst + r * B_ROW_STEP * BN * 4,
                                       gb + static_cast<size_t>(r * B_ROW_STEP) * Nu, 16u);
                        }
                    }
                } else if (dot == 0 && kc < k1) {
                    load_tile(wr, kc);  // bounds-checked copies, all at once
                }
                if (dot == COPY_DOTS - 1)
                    cp_async_commit();  // one group per iteration, empty or not: uniform counts
#pragma unroll
                for (int i = 0; i < RM; ++i)
#pragma unroll
                    for (int jj = 0; jj < RN; ++jj) {
                        const int j = SERPENTINE && (i & 1) ? RN - 1 - jj : jj;
                        acc[i][j] = fmaf(regM[dot % 2][i], regN[dot % 2][j], acc[i][j]);
                    }
            }
            rd = nx;
            wr = wr + 1 == STAGES ? 0 : wr + 1;
            ga += BK;  // the next iteration's tile, first A float of this thread
            gb += b_tile_step;  // and first B float4
        };

        int kt = p.k0;
        if (rowsA && colsB) {  // iterations whose tile kt + STAGES - 1 is a full one of the piece
            const int interior_end = min(K / BK, k1) - (STAGES - 1);
#pragma unroll 1
            for (; kt < interior_end; ++kt) iteration(kt, true);
        }
#pragma unroll 1
        for (; kt < k1; ++kt) iteration(kt, false);
        cp_async_wait<0>();  // only empty groups remain; no copy may outlive the piece regardless

        const int me = blockIdx.x;
        const Piece q = pieces[n % 2];  // p again, from shared memory (no registers in the loop)
        tile_origin(q.tile, tilesM, tilesN, cRow, cCol);
        // (STREAMK = 0 compiles neither path: every piece is a whole tile)
        if (STREAMK && q.k0 > 0) {  // this range started inside the tile: its owner finishes it
            float4* out =
                reinterpret_cast<float4*>(partials + static_cast<size_t>(me) * PARTIAL_FLOATS) + tid;
            // st.global.cg: kept in L2, where the owner reads; float4 v of every thread together
#pragma unroll
            for (int v = 0; v < PARTIAL_VECS; ++v) {
                const float* a = &acc[v / (RN / 4)][(v % (RN / 4)) * 4];
                __stcg(out + v * NUM_THREADS, make_float4(a[0], a[1], a[2], a[3]));
            }
            __syncthreads();  // every thread's partial is written ...
            if (tid == 0) {  // ... before the flag says so
                __threadfence();
                st_release_gpu(flags + me, 1u);
            }
            continue;
        }
        if (STREAMK && q.k1 < ktiles) {  // owner of a cut tile: the workers after it hold the rest
            const int tile_end = (q.tile + 1) * ktiles;
            for (int w = me + 1; w < sched.workers && sched.start(w) < tile_end; ++w) {
                if (tid == 0) {
                    for (u32 polls = 1; ld_acquire_gpu(flags + w) == 0u; ++polls) {
                        // seconds without the flag: a worker never ran (were all blocks resident
                        // at once?) or never will; fail the launch rather than hang the GPU
                        if (polls == (1u << 22)) __trap();
                        __nanosleep(64);
                    }
                }
                __syncthreads();  // the block sees what thread 0 acquired
                const float4* in =
                    reinterpret_cast<const float4*>(partials + static_cast<size_t>(w) * PARTIAL_FLOATS) +
                    tid;
#pragma unroll
                for (int v = 0; v < PARTIAL_VECS; ++v) {
                    const float4 part = __ldcg(in + v * NUM_THREADS);
                    float* a = &acc[v / (RN / 4)][(v % (RN / 4)) * 4];
                    a[0] += part.x;
                    a[1] += part.y;
                    a[2] += part.z;
                    a[3] += part.w;
                }
                if (tid == 0) st_release_gpu(flags + w, 0u);  // zeroed again for the next launch
            }
        }

        // Epilogue (gemm/simt_epilogue.cuh): beta == 0 never reads C.
        store_warp_tile<BM, BN, WMITER, WNITER, TM, TN, WSUBM, WSUBN>(
            acc, C, M, N, alpha, beta, cRow, cCol, wRow, wCol, tRow, tCol);
    }
}
