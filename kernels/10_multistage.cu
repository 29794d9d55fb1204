// Stage 10: a cp.async multistage pipeline under stage 09's warp-tiled register tile.
// Stage 09 stages the next tile through registers, and its two static buffers must fit in
// 48 KiB, which caps BM x BN = 128 x 256 at BK = 8. Here `cp.async` (LDGSTS, sm_80+) copies
// global -> shared without passing through registers, STAGES K tiles deep in dynamic shared
// memory: while the warps multiply tile kt, tiles kt+1 .. kt+STAGES-1 are in flight, the 12
// staging registers are free, and BK = 16 halves the barriers per FLOP.
//   - B: one 16-byte cp.async.cg per float4 when N % 4 == 0 and B is 16-byte aligned, else one
//     4-byte cp.async.ca per float. A lands transposed (As[k][m], stride AS = BM + 4), one
//     4-byte copy per element; a warp instruction covers 4 rows x 8 k, 32 distinct banks.
//     Chunks outside A and B are zero-filled (src-size 0): any M, N, K >= 1 is correct.
//   - Register fragments are double-buffered: the LDS.128s of k-step dot+1 are issued before
//     the FMAs of dot (as in CUTLASS's SIMT mainloop), hiding shared-memory latency.
//   - One barrier per K tile, before its last k-step: cp.async.wait_group(STAGES-2), then
//     __syncthreads. Tile t lives in slot t % STAGES; iteration kt commits tile kt+STAGES-1 at
//     its first k-step (one group per tile, empty past the end, so the counts stay uniform)
//     into the slot of tile kt-1, whose last reads came before the previous barrier.
//   - Blocks whose rows of A and columns of B all lie inside copy full K tiles without
//     predicates or selects: at the FFMA peak every issue slot not taken by an FFMA is lost.
// Tiles as stage 09: 128 x 256 x 16, 8 warps of WM x WN = 64 x 64, 8 x 16 results per thread
// as 2 x 4 sub-tiles of TM x TN = 4 x 4; 42.7 FLOP/byte from global, 2.67 from shared memory.
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

#include "ptx_sm80.cuh"  // cp.async
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

static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
static_assert(NUM_THREADS == 32 * (BM / WM) * (BN / WN), "one warp per warp tile");
static_assert(NUM_THREADS <= 1024, "at most 1024 threads per block");
static_assert(WMITER >= 1 && WMITER * 32 * TM * TN * WNITER == WM * WN,
              "a warp's 32 lanes x WMITER x WNITER sub-tiles of TM x TN must cover WM x WN");
static_assert(WN % WNITER == 0 && WSUBN % TN == 0 && WSUBM % TM == 0,
              "thread sub-tiles must tile the warp sub-tile");
static_assert(LANES_N * (WSUBM / TM) == 32, "a warp sub-tile is (WSUBM/TM) x (WSUBN/TN) lanes");
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
static_assert(SMEM_BYTES <= 227 * 1024, "the slots must fit in 227 KiB (the opt-in per block)");
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

extern "C" __global__ void __launch_bounds__(NUM_THREADS, 1)
gemm_multistage(int M, int N, int K, float alpha, const float* __restrict__ A,
                const float* __restrict__ B, float beta, float* __restrict__ C) {
    extern __shared__ __align__(16) float smem[];  // STAGES x (A tile [BK][AS], B tile [BK][BN])
    const u32 sbase = static_cast<u32>(__cvta_generic_to_shared(smem));

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int wRow = (warp / WARPS_N) * WM;  // this warp's tile inside the block tile
    const int wCol = (warp % WARPS_N) * WN;
    const int tRow = (lane / LANES_N) * TM;  // this lane's sub-tile inside a warp sub-tile
    const int tCol = (lane % LANES_N) * TN;
    const int cRow = blockIdx.y * BM;  // blockIdx.y -> row tile, blockIdx.x -> column tile
    const int cCol = blockIdx.x * BN;
    const int ktiles = (K + BK - 1) / BK;

    // A copies of this thread: k = a_k of every tile, rows a_m + r * A_ROW_STEP.
    const int a_k = (warp % A_KGROUPS) * 8 + lane / 4;
    const int a_m = (warp / A_KGROUPS) * 4 + lane % 4;
    const u32 a_dst = static_cast<u32>((a_k * AS + a_m) * 4);
    const float* a_src = A + static_cast<size_t>(min(cRow + a_m, M - 1)) * K + a_k;
    u32 a_rows_ok = 0;  // bit r: row a_m + r * A_ROW_STEP is inside A
#pragma unroll
    for (int r = 0; r < A_PER_THREAD; ++r)
        a_rows_ok |= (cRow + a_m + r * A_ROW_STEP < M ? 1u : 0u) << r;

    // B copies of this thread: columns 4 * b_c .. +3 of rows b_row + r * B_ROW_STEP.
    const int b_row = tid / B_CHUNKS, b_c = tid % B_CHUNKS;
    const int b_col = cCol + 4 * b_c;  // first column of this thread's chunk
    const u32 b_dst = static_cast<u32>((A_TILE + b_row * BN + 4 * b_c) * 4);
    const float* b_src = B + static_cast<size_t>(b_row) * N + b_col;
    const bool vecB = (N & 3) == 0 && aligned16(B);  // a float4 is wholly in or out, aligned

    // Decided once per block: all of its rows of A (columns of B) lie inside the matrix, so the
    // copies of a full K tile need no bounds checks, predicates or pointer selects.
    const bool rowsA = cRow + BM <= M;
    const bool colsB = vecB && cCol + BN <= N;

    // Tile kt -> slot `slot`: one cp.async per A float, one per B float4 (or float).
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

    float acc[RM][RN];
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
        for (int j = 0; j < RN; ++j) acc[i][j] = 0.0f;

    // Prologue: tiles 0 .. STAGES-2 in flight, one commit group each (empty past the end).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) load_tile(s, s);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();  // this thread's copies of tile 0 landed
    __syncthreads();  // everyone's have

    const int a_thr = wRow + tRow;  // this thread's first A operand in a slot (floats)
    const int b_thr = A_TILE + wCol + tCol;  // and its first B operand
    float regM[2][RM], regN[2][RN];  // fragments of k-steps dot (buffer dot % 2) and dot + 1
    load_frags(regM[0], regN[0], smem + a_thr, smem + b_thr, 0);

    int rd = 0;  // slot of tile kt
    int wr = STAGES - 1;  // slot that takes tile kt + STAGES - 1 (the slot of tile kt - 1)
#pragma unroll 1
    for (int kt = 0; kt < ktiles; ++kt) {
        const int nx = rd + 1 == STAGES ? 0 : rd + 1;  // slot of tile kt + 1
        const float* as = smem + rd * STAGE_FLOATS + a_thr;
        const float* bs = smem + rd * STAGE_FLOATS + b_thr;
#pragma unroll
        for (int dot = 0; dot < BK; ++dot) {
            if (dot < BK - 1) {  // the next k-step's operands, before this one's FMAs
                load_frags(regM[(dot + 1) % 2], regN[(dot + 1) % 2], as, bs, dot + 1);
            } else if (kt + 1 < ktiles) {  // uniform: the whole block agrees
                cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt+1 landed
                __syncthreads();  // everyone's have; everyone is done reading tile kt-1
                load_frags(regM[(dot + 1) % 2], regN[(dot + 1) % 2],
                           smem + nx * STAGE_FLOATS + a_thr, smem + nx * STAGE_FLOATS + b_thr, 0);
            }
            if (dot == 0) {  // tile kt-1's slot is free since the last barrier
                if (kt + STAGES - 1 < ktiles) load_tile(wr, kt + STAGES - 1);
                cp_async_commit();  // always: the wait_group counts stay uniform
            }
#pragma unroll
            for (int i = 0; i < RM; ++i)
#pragma unroll
                for (int j = 0; j < RN; ++j)
                    acc[i][j] = fmaf(regM[dot % 2][i], regN[dot % 2][j], acc[i][j]);
        }
        rd = nx;
        wr = wr + 1 == STAGES ? 0 : wr + 1;
    }
    cp_async_wait<0>();  // only empty groups remain; no copy may outlive the block regardless

    // Epilogue (gemm/simt_epilogue.cuh): beta == 0 never reads C.
    store_warp_tile<BM, BN, WMITER, WNITER, TM, TN, WSUBM, WSUBN>(
        acc, C, M, N, alpha, beta, cRow, cCol, wRow, wCol, tRow, tCol);
}
