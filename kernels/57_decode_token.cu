// Stage 57: a whole decode token in one launch. Kernels launched back to back each pay a
// ramp-up (the first weight bytes arrive a microsecond or more after the launch) and a drain
// (the last blocks leave SMs idle); stage 56 overlaps only what fits beside a draining kernel.
// Here one persistent grid, a block per SM, runs every GEMM of the chain (C = A W, W K x N, A an
// earlier GEMM's output). Weights do not depend on the activation, so a producer warp per block
// streams its share of every GEMM's weights through a ring of shared memory (TMA boxes of KC
// rows x NC columns, on mbarriers) without stopping at GEMM ends.
// Per GEMM, its units (column block x KC rows, column block major) are cut into gridDim.x equal
// contiguous runs (split-K where a run covers part of a column's K). A block sums its run per
// column block (warps meet in shared memory), adds that into the GEMM's float32 workspace
// (red.global.add.v4.f32) and counts its units in that column block's counter. No grid-wide
// barrier: a run needs only the K rows of its units, so its consumers wait for the few column
// blocks of the source holding them and read just those, rounded as a stored C would be.
// That hand-over is the token's critical path, so the last block into a column block does not
// stop for it: thread 0 counts (one acquire-release add) while the other consumers go on, a
// store warp writes completed column blocks out to C from a queue in shared memory, and a
// warp's lanes poll the counters a run waits on side by side.

// Two workspace sets: a launch uses set (launches & 1) and zeroes the other (the previous
// launch's), so each finds its set zero. Counters only grow: a launch waits for (launches
// before + 1) x a column block's units; the last block to finish counts the launch in sync[0].
// MROWS: rows of A (the batch, 1-4); NC = 256: 512-byte box rows, unswizzled, a warp's lanes
// one row's 16-byte pieces; CONSUMER_WARPS compute; STAGES: the ring; KMAX: the largest K.
// MMA = 1: the consumers multiply on Tensor Cores instead, for batches of 1-16 (at 16 rows, a
// multiply-add per weight and row at HBM's pace is more FP32 work than CUDA cores issue). The
// batch is the M side of mma.sync m16n8k16 (rows 8-15 zero below 9 rows), the weights its N
// side: each consumer warp owns 32 of the box's 256 columns over all KC rows, so the warps need
// no sums in shared memory. A box arrives as four 64-column boxes with the 128-byte swizzle,
// which ldmatrix.trans reads without bank conflicts. The input holds only the K chunks a run
// reads (KRUN of them, the host's count), each row padded by 16 bytes (conflict-free A
// fragments).
#ifndef MROWS
#error "MROWS (rows of A: the batch) must be given as -DMROWS=..."
#endif
#ifndef KC
#define KC 64  // rows of W per TMA box
#endif
#ifndef NC
#define NC 256  // columns of W per TMA box
#endif
#ifndef CONSUMER_WARPS
#define CONSUMER_WARPS 8
#endif
#ifndef STORE_WARP
#define STORE_WARP 1  // 1: a warp of its own writes completed column blocks out to C
#endif
#ifndef WAIT_LANES
#define WAIT_LANES 1  // 1: a warp's lanes poll the source's counters side by side; 0: thread 0 in turn
#endif
#ifndef PREFETCH
#define PREFETCH 0  // boxes the producer's L2 prefetches run ahead of its loads (0: none)
#endif
#ifndef MMA
#define MMA 0  // 1: mma.sync consumers (batch 1-16); 0: multiply-adds on CUDA cores (batch 1-4)
#endif
#ifndef STAMPS
#define STAMPS 0  // 1: consumer thread 0 stamps each GEMM's begin, input and end (the timeline)
#endif
#ifndef STAGES
#error "STAGES (the ring's depth, as the shared memory allows) must be given as -DSTAGES=..."
#endif
#ifndef KMAX
#error "KMAX (the largest K of the chain, a multiple of KC) must be given as -DKMAX=..."
#endif

#include "elem.cuh"                 // elem_t (fp16 or bf16 bits), elem_to_float, elem_from_float
#include "gemm/gemv_unpack.cuh"     // unpack16
#include "ptx_sm80.cuh"            // ldmatrix_x4_trans, mma_m16n8k16 (MMA)
#include "sm70/flags.cuh"           // ld_acquire_gpu
#include "sm70/globaltimer.cuh"     // globaltimer_ns: the stamps of the timeline (STAMPS)
#include "sm70/named_barrier.cuh"   // bar_sync
#include "sm90/mbarrier.cuh"        // the ring's full and empty barriers
#include "sm90/red.cuh"             // red.global.add.v4.f32
#include "sm90/tma.cuh"             // TmaMap, tma_load_2d, tma_prefetch_2d_l2

static_assert(!ELEM_FP32, "the token kernel streams 16-bit weights (fp16 or bf16)");
#if MMA
static_assert(MROWS >= 1 && MROWS <= 16, "MROWS is 1 to 16: the M side of one m16n8k16 tile");
static_assert(NC / CONSUMER_WARPS == 32, "each consumer warp owns 32 columns: four n8 tiles");
static_assert(KC % 16 == 0, "a box is whole k16 steps of the MMA");
#ifndef KRUN
#define KRUN (KMAX / KC)  // K chunks of the input held at once: at most the largest run's
#endif
#define MPAD (MROWS <= 8 ? 8 : 16)        // rows of the input in shared memory (the rest zero)
#define ASTRIDE (KRUN * KC + 8)           // elements per input row: 16 bytes of padding
#define SUB_COLS 64                       // columns of a 128-byte swizzled box
#define RING_ALIGN 1024                   // the swizzle's atom: 8 rows of 128 bytes
#else
static_assert(MROWS >= 1 && MROWS <= 4, "MROWS is 1 to 4: the input of every GEMM sits in shared memory");
#define MPAD MROWS
#define ASTRIDE KMAX
#define RING_ALIGN 128                    // TMA's alignment for an unswizzled box
#endif
static_assert(NC == 32 * 8, "NC is 256: a warp's 32 lanes read one box row, 8 elements (16 bytes) each");
static_assert(KC % CONSUMER_WARPS == 0, "each consumer warp takes KC / CONSUMER_WARPS rows of a box");
static_assert(KC <= 256, "a TMA box has at most 256 rows");
static_assert(KMAX % KC == 0, "KMAX is a multiple of KC: the input is zero-padded to whole boxes");
static_assert(PREFETCH >= 0, "PREFETCH counts boxes ahead of the loads");

#define CONSUMERS (CONSUMER_WARPS * 32)
#define THREADS (CONSUMERS + 32 + 32 * STORE_WARP)  // + the producer warp (+ the store warp)
#define QUEUE 64  // completed column blocks on their way to the store warp
static_assert((QUEUE & (QUEUE - 1)) == 0, "QUEUE is a power of two: the queue's indices wrap");
#define TILE_BYTES (KC * NC * 2)
#define RING_BYTES (STAGES * TILE_BYTES)
#define ACT_BYTES (MPAD * ASTRIDE * 2)
#define SUM_BYTES (MMA ? 0 : CONSUMER_WARPS * MROWS * NC * 4)  // each warp's column sums (CUDA cores)
#define CONSUMER_BAR 1  // the named barrier of the consumer warps

// One GEMM of the token as the host packs it (rooflinecli/gpu/token.py): 32 bytes.
struct TokenGemm {
    int n, k;
    int src;       // the GEMM whose output is A (its first M*K elements); -1: the token input x
    int ctr;       // index in sync of this GEMM's first column-block counter (one per NC columns)
    long long ws;  // offset in floats, within a workspace set, of its M x N float32 workspace
    elem_t* out;   // its M x N output C
};
static_assert(sizeof(TokenGemm) == 32, "the host packs 32-byte records");

__device__ __forceinline__ unsigned int smem_u32(const void* p) {
    return static_cast<unsigned int>(__cvta_generic_to_shared(p));
}

#if WAIT_LANES
#define WAITERS 32  // warp 0's lanes, each polling every 32nd counter
#else
#define WAITERS 1
#endif

// Whether column blocks c0 / NC .. (c1 - 1) / NC of a GEMM are complete (their counters at
// `target`), as far as waiter `w` of WAITERS polls them (relaxed: an acquire fence follows).
__device__ __forceinline__ bool columns_ready(const unsigned int* ctr, unsigned int target, int c0, int c1, int w) {
    bool ok = true;
    for (int cb = c0 / NC + w; cb <= (c1 - 1) / NC; cb += WAITERS)
        ok = ok && static_cast<int>(ld_relaxed_gpu(ctr + cb) - target) >= 0;
    return ok;
}

// The same for the column blocks of an n-column output that hold its flat elements [a, b) (a
// row of A is K consecutive elements of the source's rows: up to two column ranges).
__device__ __forceinline__ bool flat_ready(const unsigned int* ctr, unsigned int target, int n, int a, int b, int w) {
    if (b - a >= n) return columns_ready(ctr, target, 0, n, w);
    const int c0 = a % n, c1 = c0 + (b - a);
    if (c1 <= n) return columns_ready(ctr, target, c0, c1, w);
    return columns_ready(ctr, target, c0, n, w) && columns_ready(ctr, target, 0, c1 - n, w);
}

// This block's share [len b / P, len (b+1) / P) of a workspace of `len` floats.
__device__ __forceinline__ void share_of(int len, int& lo, int& hi) {
    lo = static_cast<int>(static_cast<long long>(len) * blockIdx.x / gridDim.x);
    hi = static_cast<int>(static_cast<long long>(len) * (blockIdx.x + 1) / gridDim.x);
}

#if MMA
typedef float Acc[4][4];  // a warp's 32 columns: four m16n8 accumulators (rows g, g + 8; columns 2t, 2t + 1)
#else
typedef float Acc[MROWS][8];  // a lane's 8 columns of a box row, per row of A
#endif

__device__ __forceinline__ void zero(Acc& acc) {
    float* a = &acc[0][0];
#pragma unroll
    for (int i = 0; i < static_cast<int>(sizeof(Acc) / sizeof(float)); ++i) a[i] = 0.0f;
}

#if MMA
// The block's sums of column block cb into the workspace: each warp owns its 32 columns, so each
// lane reduces its accumulators into L2 straight away, two columns (8 bytes) at a time.
__device__ __forceinline__ void add_out(const Acc& acc, float*, float* wsg, int n, int cb, int tid) {
    const int warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
        const int col = cb * NC + warp * 32 + nt * 8 + 2 * t;  // N is a multiple of 8: col + 1 < n too
        if (col < n) {
            if (g < MROWS) red_add_v2_f32(wsg + static_cast<long long>(g) * n + col, acc[nt][0], acc[nt][1]);
            if (g + 8 < MROWS) red_add_v2_f32(wsg + static_cast<long long>(g + 8) * n + col, acc[nt][2], acc[nt][3]);
        }
    }
}
#else
// The block's sums of column block cb into the workspace: each warp leaves its MROWS x NC
// partial sums in its slab of shared memory (no shared atomics: fp32 ones are a CAS loop here),
// the consumers add the slabs up four columns a thread and reduce them into L2, 16 bytes at a
// time where the four columns are in range and aligned.
__device__ __forceinline__ void add_out(const Acc& acc, float* sum, float* wsg, int n, int cb, int tid) {
    const int warp = tid / 32, lane = tid % 32;
#pragma unroll
    for (int m = 0; m < MROWS; ++m) {
        float4* mine = reinterpret_cast<float4*>(sum + (warp * MROWS + m) * NC + lane * 8);
        mine[0] = make_float4(acc[m][0], acc[m][1], acc[m][2], acc[m][3]);
        mine[1] = make_float4(acc[m][4], acc[m][5], acc[m][6], acc[m][7]);
    }
    bar_sync(CONSUMER_BAR, CONSUMERS);
    for (int i = tid; i < MROWS * (NC / 4); i += CONSUMERS) {
        const int m = i / (NC / 4), c = (i % (NC / 4)) * 4, col = cb * NC + c;
        float v0 = 0.0f, v1 = 0.0f, v2 = 0.0f, v3 = 0.0f;
#pragma unroll
        for (int w = 0; w < CONSUMER_WARPS; ++w) {
            const float4 s = *reinterpret_cast<const float4*>(sum + (w * MROWS + m) * NC + c);
            v0 += s.x;
            v1 += s.y;
            v2 += s.z;
            v3 += s.w;
        }
        float* dst = wsg + static_cast<long long>(m) * n + col;
        if (col + 4 <= n && (reinterpret_cast<unsigned long long>(dst) & 15) == 0) {
            red_add_v4_f32(dst, v0, v1, v2, v3);
        } else {
            const float v[4] = {v0, v1, v2, v3};
            for (int e = 0; e < 4; ++e)
                if (col + e < n) atomicAdd(dst + e, v[e]);
        }
    }
}
#endif

// Elements [lo, hi) of every row of the input (lo, hi multiples of KC; zeros from K on), rounded
// to elem_t as a stored C would be, from element `at` on in each row of act (rows ASTRIDE
// apart). From a workspace with K a multiple of 4: four elements a thread per load, INPUT_LOADS
// loads issued before any is used (the run waits on them).
#define INPUT_LOADS 8
__device__ __forceinline__ void load_range(const float* a_src, const elem_t* x, elem_t* act, int k,
                                           int lo, int hi, int at, int tid) {
    const int w = hi - lo, total = MROWS * w;
    if (a_src != nullptr && k % 4 == 0) {
        for (int base = tid * 4; base < total; base += CONSUMERS * 4 * INPUT_LOADS) {
            float4 v[INPUT_LOADS];
#pragma unroll
            for (int l = 0; l < INPUT_LOADS; ++l) {
                const int i = base + l * CONSUMERS * 4, m = i / w, kk = lo + i % w;
                v[l] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                if (i < total && kk < k) v[l] = __ldcg(reinterpret_cast<const float4*>(a_src + m * k + kk));
            }
#pragma unroll
            for (int l = 0; l < INPUT_LOADS; ++l) {
                const int i = base + l * CONSUMERS * 4, m = i / w, kk = lo + i % w;
                if (i < total) {
                    const unsigned int v01 = elem_from_float(v[l].x) | (static_cast<unsigned int>(elem_from_float(v[l].y)) << 16);
                    const unsigned int v23 = elem_from_float(v[l].z) | (static_cast<unsigned int>(elem_from_float(v[l].w)) << 16);
                    *reinterpret_cast<uint2*>(act + m * ASTRIDE + at + (kk - lo)) = make_uint2(v01, v23);
                }
            }
        }
        return;
    }
    for (int i = tid; i < total; i += CONSUMERS) {
        const int m = i / w, kk = lo + i % w;
        elem_t v = elem_from_float(0.0f);
        if (kk < k) v = a_src ? elem_from_float(__ldcg(a_src + m * k + kk)) : x[m * k + kk];
        act[m * ASTRIDE + at + (kk - lo)] = v;
    }
}

// Column block cb of a GEMM, complete in the workspace, out to C (threads t of `count`).
__device__ __forceinline__ void store_column(const float* wsg, const TokenGemm& d, int cb, int t, int count) {
    const int c0 = cb * NC, width = min(NC, d.n - c0);
    for (int i = t; i < MROWS * width; i += count) {
        const int m = i / width, c = c0 + i % width;
        d.out[m * d.n + c] = elem_from_float(__ldcg(wsg + m * d.n + c));
    }
}

// The queue of completed column blocks, filled by consumer thread 0, emptied by the store warp.
struct StoreQueue {
    unsigned int tail, head;  // entries pushed, entries stored
    int entry[QUEUE];         // GEMM << 16 | column block; -1: the launch's last
};

__device__ __forceinline__ void push(StoreQueue* q, int entry) {
    const unsigned int t = q->tail;
    while (t - ld_acquire_cta_shared(&q->head) >= QUEUE) {  // full: wait for the store warp
    }
    q->entry[t % QUEUE] = entry;
    st_release_cta_shared(&q->tail, t + 1u);
}

// A column block of this block's run is summed: added into the workspace, its units counted by
// thread 0 (acquire-release: the block's additions, seen through the barrier, go before the
// count, and whoever completes the column block sees every other block's). The block whose count
// completes it has it written out as C.
__device__ __forceinline__ void finish_column(const Acc& acc, float* sum, float* wsg,
                                              const TokenGemm& d, int g, unsigned int* ctr, unsigned int target,
                                              int cb, int units, StoreQueue* q, unsigned int* flag, int tid) {
    add_out(acc, sum, wsg, d.n, cb, tid);
    bar_sync(CONSUMER_BAR, CONSUMERS);  // the block's additions issued, the slabs read
    if (tid == 0) {
        const bool last = atom_add_acq_rel_gpu(ctr + cb, static_cast<unsigned int>(units)) + units == target;
#if STORE_WARP
        if (last) push(q, (g << 16) | cb);
#else
        *flag = last;
#endif
    }
#if !STORE_WARP
    bar_sync(CONSUMER_BAR, CONSUMERS);
    if (*flag) store_column(wsg, d, cb, tid, CONSUMERS);
#endif
}

// With STAMPS, consumer thread 0's stamp i of GEMM g: 0 its run begins (before the wait for its
// input), 1 the input is in, 2 its last column block is counted. stamps holds count x gridDim.x
// x 3 nanosecond times (%globaltimer), zero where a block has no run in a GEMM.
__device__ __forceinline__ void stamp(unsigned long long* stamps, int g, int i, int tid) {
#if STAMPS
    if (tid == 0) stamps[(static_cast<long long>(g) * gridDim.x + blockIdx.x) * 3 + i] = globaltimer_ns();
#endif
}

// One box of KC weight rows into the accumulators, the input's rows from element kbase of act on.
__device__ __forceinline__ void consume(Acc& acc, const unsigned char* tile, const elem_t* act, int kbase,
                                        int warp, int lane) {
#if MMA
    // the warp's 32 columns: half (warp % 2) of 64-column box warp / 2, in 16-byte chunks
    // 4 (warp % 2) .. + 3 of its 128-byte rows, chunk c of row k stored at chunk c ^ (k % 8)
    const unsigned int sub = smem_u32(tile) + (warp / 2) * (KC * SUB_COLS * 2);
    const int g = lane / 4, t = lane % 4, i = lane / 8, r = lane % 8;
    const elem_t* ap = act + g * ASTRIDE + kbase + 2 * t;
#pragma unroll
    for (int ks = 0; ks < KC / 16; ++ks) {
        unsigned int a[4];  // rows g and g + 8 of the batch, k 2t, 2t + 1 and 8 on
        a[0] = *reinterpret_cast<const unsigned int*>(ap + ks * 16);
        a[2] = *reinterpret_cast<const unsigned int*>(ap + ks * 16 + 8);
#if MPAD == 16
        a[1] = *reinterpret_cast<const unsigned int*>(ap + 8 * ASTRIDE + ks * 16);
        a[3] = *reinterpret_cast<const unsigned int*>(ap + 8 * ASTRIDE + ks * 16 + 8);
#else
        a[1] = a[3] = 0u;
#endif
#pragma unroll
        for (int p = 0; p < 2; ++p) {  // n8 tiles 2p and 2p + 1: lanes 8i.. address matrix i's k rows
            const int k = ks * 16 + (i & 1) * 8 + r, chunk = (warp % 2) * 4 + p * 2 + (i >> 1);
            unsigned int b[4];
            ldmatrix_x4_trans(b, sub + k * (SUB_COLS * 2) + ((chunk ^ (k & 7)) << 4));
            mma_m16n8k16(acc[2 * p], a, b[0], b[1]);
            mma_m16n8k16(acc[2 * p + 1], a, b[2], b[3]);
        }
    }
#else
    // each warp takes KC / CONSUMER_WARPS rows of the box, a lane 8 columns of each
#pragma unroll
    for (int i = 0; i < KC / CONSUMER_WARPS; ++i) {
        const int r = warp + CONSUMER_WARPS * i;
        float f[8];
        unpack16(*reinterpret_cast<const uint4*>(tile + r * (NC * 2) + lane * 16), f);
#pragma unroll
        for (int m = 0; m < MROWS; ++m) {
            const float a = elem_to_float(act[m * ASTRIDE + kbase + r]);
#pragma unroll
            for (int j = 0; j < 8; ++j) acc[m][j] = fmaf(a, f[j], acc[m][j]);
        }
    }
#endif
}

// The box of GEMM map at column c, row k into ring slot dst, counted on the mbarrier bar (MMA:
// four 64-column boxes, one after the other).
__device__ __forceinline__ void load_box(unsigned char* dst, const TmaMap* map, unsigned long long* bar,
                                         int c, int k) {
#if MMA
#pragma unroll
    for (int s = 0; s < NC / SUB_COLS; ++s)
        tma_load_2d(smem_u32(dst + s * (KC * SUB_COLS * 2)), map, smem_u32(bar), c + s * SUB_COLS, k);
#else
    tma_load_2d(smem_u32(dst), map, smem_u32(bar), c, k);
#endif
}

__device__ __forceinline__ void prefetch_box(const TmaMap* map, int c, int k) {
#if MMA
#pragma unroll
    for (int s = 0; s < NC / SUB_COLS; ++s) tma_prefetch_2d_l2(map, c + s * SUB_COLS, k);
#else
    tma_prefetch_2d_l2(map, c, k);
#endif
}

// The producer's walk over this block's units of every GEMM in turn (column block major).
struct Walk {
    int g, u, u1, nk, cb, kc;  // the GEMM, the unit and the run's end, K chunks, the unit's place
};

// From GEMM w.g on, the first whose run (this block's share of its units) is not empty.
__device__ __forceinline__ void walk_from(Walk& w, const TokenGemm* gemms, int count) {
    for (; w.g < count; ++w.g) {
        w.nk = (gemms[w.g].k + KC - 1) / KC;
        int u0;
        share_of(((gemms[w.g].n + NC - 1) / NC) * w.nk, u0, w.u1);
        if (w.u1 > u0) {
            w.u = u0;
            w.cb = u0 / w.nk;
            w.kc = u0 % w.nk;
            return;
        }
    }
}

__device__ __forceinline__ void walk_next(Walk& w, const TokenGemm* gemms, int count) {
    if (++w.kc == w.nk) {
        w.kc = 0;
        ++w.cb;
    }
    if (++w.u == w.u1) {
        ++w.g;
        walk_from(w, gemms, count);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
decode_token(const TokenGemm* __restrict__ gemms, int count, const TmaMap* __restrict__ maps,
             const elem_t* __restrict__ x, float* ws, long long ws_set, unsigned int* sync,
             unsigned long long* stamps) {
    extern __shared__ unsigned char smem_raw[];
    // the ring at a RING_ALIGN boundary (TMA's alignment for an unswizzled box, or the swizzle's)
    unsigned char* ring = smem_raw + ((RING_ALIGN - (smem_u32(smem_raw) & (RING_ALIGN - 1u))) & (RING_ALIGN - 1u));
    elem_t* act = reinterpret_cast<elem_t*>(ring + RING_BYTES);
    float* sum = reinterpret_cast<float*>(ring + RING_BYTES + ACT_BYTES);
    unsigned long long* full = reinterpret_cast<unsigned long long*>(ring + RING_BYTES + ACT_BYTES + SUM_BYTES);
    unsigned long long* empty = full + STAGES;
    unsigned int* launches = reinterpret_cast<unsigned int*>(empty + STAGES);
    unsigned int* flag = launches + 1;
    StoreQueue* queue = reinterpret_cast<StoreQueue*>(launches + 2);

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_u32(full + s), 1);
            mbar_init(smem_u32(empty + s), CONSUMER_WARPS);
        }
        fence_mbarrier_init();
        *launches = ld_acquire_gpu(sync);  // launches finished before this one
        queue->tail = queue->head = 0;
    }
#if MMA
    for (int i = tid; i < (MPAD - MROWS) * ASTRIDE; i += THREADS)  // the MMA's rows past the batch
        act[MROWS * ASTRIDE + i] = static_cast<elem_t>(0);
#endif
    __syncthreads();
    const unsigned int before = *launches;

    if (warp == CONSUMER_WARPS) {  // the producer: this block's runs of every GEMM, in order
        if (lane == 0) {
            int slot = 0;
            unsigned int phase = 0;
            Walk load{};
            walk_from(load, gemms, count);
#if PREFETCH
            // L2 prefetches PREFETCH boxes ahead: while the ring is full (its consumers wait
            // for their input), HBM goes on streaming the weights that come next into L2
            Walk ahead = load;
            for (int i = 0; i < PREFETCH && ahead.g < count; ++i) {
                prefetch_box(maps + ahead.g, ahead.cb * NC, ahead.kc * KC);
                walk_next(ahead, gemms, count);
            }
#endif
            while (load.g < count) {
                mbar_wait(smem_u32(empty + slot), phase ^ 1u);  // the consumers are done with it
                mbar_arrive_expect_tx(smem_u32(full + slot), TILE_BYTES);
                load_box(ring + slot * TILE_BYTES, maps + load.g, full + slot, load.cb * NC, load.kc * KC);
#if PREFETCH
                if (ahead.g < count) {
                    prefetch_box(maps + ahead.g, ahead.cb * NC, ahead.kc * KC);
                    walk_next(ahead, gemms, count);
                }
#endif
                walk_next(load, gemms, count);
                if (++slot == STAGES) {
                    slot = 0;
                    phase ^= 1u;
                }
            }
        }
        return;
    }

    float* mine = ws + (before & 1u) * ws_set;           // this launch's workspaces, zero
    float* other = ws + ((before + 1u) & 1u) * ws_set;   // the previous launch's: zeroed here
#if STORE_WARP
    if (warp == CONSUMER_WARPS + 1) {  // the store warp: completed column blocks out to C
        for (unsigned int head = 0;; ++head) {
            unsigned int tail;
            while ((tail = ld_acquire_cta_shared(&queue->tail)) == head) {
            }
            const int e = queue->entry[head % QUEUE];
            if (e < 0) return;
            const TokenGemm d = gemms[e >> 16];
            store_column(mine + d.ws, d, e & 0xffff, lane, 32);
            __syncwarp();
            if (lane == 0) st_release_cta_shared(&queue->head, head + 1u);
        }
    }
#endif
    int slot = 0;
    unsigned int phase = 0;
    for (int g = 0; g < count; ++g) {
        const TokenGemm d = gemms[g];
        const int kp = (d.k + KC - 1) / KC * KC;
        const int nk = kp / KC, units = ((d.n + NC - 1) / NC) * nk;
        int u0, u1;
        share_of(units, u0, u1);
        if (u1 > u0) {
            stamp(stamps, g, 0, tid);
            // the K rows the run needs: chunks [r0, r1) and, where it wraps past a column
            // block's end, [0, r2) too
            int r0 = 0, r1 = nk, r2 = 0;
            if (u1 - u0 < nk) {
                r0 = u0 % nk;
                r1 = r0 + (u1 - u0);
                if (r1 > nk) {
                    r2 = r1 - nk;
                    r1 = nk;
                }
            }
            const float* a_src = d.src >= 0 ? mine + gemms[d.src].ws : nullptr;
            if (d.src >= 0 && tid < WAITERS) {  // the source's column blocks holding those rows
                const TokenGemm s = gemms[d.src];
                const unsigned int target = (before + 1u) * static_cast<unsigned int>((s.k + KC - 1) / KC);
                const unsigned int* ctr = sync + s.ctr;
                for (;;) {
                    bool ok = true;
#pragma unroll
                    for (int m = 0; m < MROWS; ++m) {
                        ok = ok && flat_ready(ctr, target, s.n, m * d.k + r0 * KC, m * d.k + min(r1 * KC, d.k), tid);
                        if (r2 > 0) ok = ok && flat_ready(ctr, target, s.n, m * d.k, m * d.k + min(r2 * KC, d.k), tid);
                    }
#if WAIT_LANES
                    if (__all_sync(0xffffffffu, ok)) break;
#else
                    if (ok) break;
#endif
                }
                fence_acq_rel_gpu();  // the counters' releases seen: the source's sums are in
            }
            bar_sync(CONSUMER_BAR, CONSUMERS);
            stamp(stamps, g, 1, tid);
            // MMA: chunk kc of the run at place kc - r0, the wrapped ones after; else at kc
            load_range(a_src, x, act, d.k, r0 * KC, r1 * KC, MMA ? 0 : r0 * KC, tid);
            if (r2 > 0) load_range(a_src, x, act, d.k, 0, r2 * KC, MMA ? (r1 - r0) * KC : 0, tid);
            bar_sync(CONSUMER_BAR, CONSUMERS);

            const unsigned int target = (before + 1u) * static_cast<unsigned int>(nk);
            float* wsg = mine + d.ws;
            Acc acc;
            zero(acc);
            int cb = u0 / nk, kc = u0 % nk, done = 0;  // the unit's column block and K chunk, stepped
            for (int u = u0; u < u1; ++u) {
                if (kc == nk) {  // a column block done (the same unit for every warp)
                    finish_column(acc, sum, wsg, d, g, sync + d.ctr, target, cb, done, queue, flag, tid);
                    zero(acc);
                    kc = done = 0;
                    ++cb;
                }
                const int place = MMA ? (kc >= r0 ? kc - r0 : r1 - r0 + kc) : kc;  // in act
                ++kc;
                ++done;
                mbar_wait(smem_u32(full + slot), phase);
                consume(acc, ring + slot * TILE_BYTES, act, place * KC, warp, lane);
                __syncwarp();
                if (lane == 0) mbar_arrive(smem_u32(empty + slot));
                if (++slot == STAGES) {
                    slot = 0;
                    phase ^= 1u;
                }
            }
            finish_column(acc, sum, wsg, d, g, sync + d.ctr, target, cb, done, queue, flag, tid);  // the last
            stamp(stamps, g, 2, tid);
        }
        // while the input of the next GEMM is on its way: this block's share of the GEMM's
        // workspace in the other set, zero for the next launch
        int lo, hi;
        share_of(MROWS * d.n, lo, hi);
        for (int i = lo + tid; i < hi; i += CONSUMERS) other[d.ws + i] = 0.0f;
    }
    // the last block to finish counts the launch (every block has read sync[0] by then)
    bar_sync(CONSUMER_BAR, CONSUMERS);
    if (tid == 0) {
#if STORE_WARP
        push(queue, -1);  // the store warp's last entry
#endif
        __threadfence();
        if (atomicAdd(sync + 1, 1u) + 1u == (before + 1u) * gridDim.x) atomicAdd(sync, 1u);
    }
}
