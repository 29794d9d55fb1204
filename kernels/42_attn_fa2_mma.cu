// Stage 42: FlashAttention-2 on the Ampere tensor-core path (mma.sync m16n8k16, fp32 accumulate).
// Stage 41 runs the online softmax on SIMT cores; here both GEMMs of a key tile run on HMMA:
//   S = Q K^T   A = the warp's Q rows (ldmatrix, kept in registers, or re-read from shared
//               memory with Q_IN_SMEM=1); B = K rows by ldmatrix (a K row is the "col" operand);
//   O += P V    A = P in registers: m16n8k16's accumulator layout is its A-operand layout once
//               two n8 tiles of S are packed to 16 bits; B = V rows by ldmatrix.trans.
// Work split (FlashAttention-2): a block owns BLOCK_M query rows, each warp WARP_M of them (16
// or 32). Warps never exchange anything: each keeps the running max m, the running sum l and
// its O rows in registers; a row's statistics need only its quad (two shuffles). Softmax in
// base 2: one FFMA + one MUFU.EX2 per score; O is rescaled by 2^(m_old - m_new) once per tile.
// K and V stream through a ring of STAGES shared-memory buffers filled by cp.async, one barrier
// per key tile; 16-byte chunk c of row r lives at chunk c ^ (r & 7), so ldmatrix phases and the
// copies hit 8 distinct bank groups. Q is staged once through the last ring buffer.
// Masks: only tiles that cross the diagonal (causal) or the sequence end take the masked path;
// tiles wholly above the diagonal are never loaded. Keys past seq are zero-filled (a garbage V
// row times p = 0 could be NaN); rows past seq are computed on zero Q and not stored. Causal
// blocks run heaviest first (the last query tiles in the first wave). GQA: query head h reads KV
// head h / (heads / kv_heads). O leaves through shared memory as whole 16-byte chunks.
// Every warp reads all of K and V of a tile with ldmatrix, so shared-memory bandwidth bounds
// it; 32-row warps (Q_IN_SMEM=1, FlashAttention-2's choice) halve those bytes per MMA.
#ifndef HEAD_DIM
#error "HEAD_DIM (64 or 128) must be given as -DHEAD_DIM=..."
#endif
#ifndef BLOCK_M
#define BLOCK_M 128  // query rows per block
#endif
#ifndef BLOCK_N
#define BLOCK_N 64  // keys per tile
#endif
#ifndef WARP_M
#define WARP_M 16  // query rows per warp (16 or 32)
#endif
#ifndef STAGES
#define STAGES 2  // K/V tiles in the shared-memory ring
#endif
#ifndef Q_IN_SMEM
#define Q_IN_SMEM 0  // 1: Q stays in shared memory, its fragments re-read per tile (see below)
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1  // __launch_bounds__ minimum blocks per SM (caps registers)
#endif

#include "elem.cuh"      // elem_t: fp16, or bf16 with -DELEM_BF16=1
#include "ptx_sm80.cuh"  // pack2, cp.async, ldmatrix, mma_m16n8k16, ex2_approx

#if ELEM_FP32
#error "stage 42 runs on tensor cores: fp16 or bf16 only"
#endif

typedef unsigned int u32;
#define NEG_INF __int_as_float(0xff800000)  // -inf (NVRTC has no math.h INFINITY)

constexpr int D = HEAD_DIM;
constexpr int WARPS = BLOCK_M / WARP_M;
constexpr int THREADS = 32 * WARPS;
constexpr int MT = WARP_M / 16;      // m16 tiles per warp
constexpr int QK = D / 16;           // k16 steps of Q K^T (Q fragments per m16 tile)
constexpr int SN = BLOCK_N / 8;      // n8 tiles of S per m16 tile
constexpr int PK = BLOCK_N / 16;     // k16 steps of P V
constexpr int ON = D / 8;            // n8 tiles of O per m16 tile
constexpr int CHUNKS = D / 8;        // 16-byte chunks per row
constexpr int ROW_BYTES = D * 2;
constexpr int TILE_BYTES = BLOCK_N * ROW_BYTES;  // one K or V tile
constexpr int STAGE_BYTES = 2 * TILE_BYTES;      // K then V
constexpr int Q_BYTES = BLOCK_M * ROW_BYTES;
constexpr int ROW_STEP = THREADS / CHUNKS;       // rows one pass of all threads copies
constexpr int QF = Q_IN_SMEM ? 1 : QK;          // Q fragments kept in registers (per m16 tile)
// k16 steps of Q K^T unrolled together: all with Q in registers (its fragments are indexed by
// the step); 2 with Q in shared memory, which keeps ptxas from hoisting the fragment loads of
// all 8 steps at D = 128 (392 bytes spilled with 32-row warps, 88 when unrolled by 2).
constexpr int KS_UNROLL = Q_IN_SMEM ? 2 : QK;
// Q in registers: Q is staged in the last ring buffer (plus what does not fit); else its own.
constexpr int Q_EXTRA = Q_IN_SMEM ? Q_BYTES : (Q_BYTES > STAGE_BYTES ? Q_BYTES - STAGE_BYTES : 0);
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + Q_EXTRA;  // the host's dynamic shared memory

static_assert(D == 64 || D == 128, "HEAD_DIM is 64 or 128 (the registry builds these two)");
static_assert(WARP_M == 16 || WARP_M == 32, "a warp owns one or two m16 tiles of query rows");
static_assert(BLOCK_M % WARP_M == 0, "warps split the block's query rows evenly");
static_assert(BLOCK_N % 16 == 0, "P V takes keys 16 at a time, ldmatrix.x4 loads 16 keys of K");
static_assert(CHUNKS % 8 == 0, "the swizzle permutes groups of 8 chunks (128 bytes) of a row");
static_assert(THREADS % CHUNKS == 0 && ROW_STEP % 8 == 0,
              "rows a thread copies differ by multiples of 8: one swizzle pattern per thread");
static_assert(BLOCK_N % ROW_STEP == 0 && BLOCK_M % ROW_STEP == 0, "tile copies split evenly");
static_assert(STAGES >= 2, "the ring needs a buffer to fill while another is read");
static_assert(SMEM_BYTES <= 227 * 1024, "the ring must fit in 227 KiB of shared memory");

// Byte offset of logical 16-byte chunk c of row r in a swizzled tile.
__device__ __forceinline__ u32 swz(int r, int c) {
    return static_cast<u32>(r * ROW_BYTES + ((c ^ (r & 7)) << 4));
}
// The same for a fragment load: row 16 * i + lr, chunk 2 * k + lc (lr < 16, lc < 2; the lane's
// part is `lane_off` = swz(lr, lc)). 2k + lc = 2k ^ lc, so chunk ^ (row & 7) =
// (lc ^ (lr & 7)) ^ 2k: one XOR with a constant per load, not one register per k.
__device__ __forceinline__ u32 frag_off(u32 lane_off, int i, int k) {
    return (lane_off ^ static_cast<u32>(k << 5)) + static_cast<u32>(16 * i * ROW_BYTES);
}

// Copy ROWS rows (from row0 on; seq rows exist) of a [seq, D] matrix into a swizzled tile: each
// thread moves chunk c of rows r, r + ROW_STEP, ... (one swizzle pattern: ROW_STEP % 8 == 0), so
// one pointer per tile serves all its copies with immediate offsets. Rows >= seq are zero-filled:
// src-size 0 reads no byte, so their (out-of-range) addresses are never touched.
template <int ROWS>
__device__ __forceinline__ void load_tile(u32 dst, const elem_t* __restrict__ src, int row0,
                                          int seq, int r, int c) {
    const elem_t* p = src + static_cast<size_t>(row0 + r) * D + 8 * c;
    const int left = seq - row0 - r;  // rows of this thread's column still inside the matrix
    dst += swz(r, c);
#pragma unroll
    for (int i = 0; i < ROWS / ROW_STEP; ++i)
        cp_async16(dst + i * ROW_STEP * ROW_BYTES, p + i * ROW_STEP * D,
                   i * ROW_STEP < left ? 16u : 0u);
}

// One key tile for one warp: S = Q K^T, the online softmax, O += P V. MASK: the tile crosses the
// diagonal or the end of the sequence (per-element -inf); otherwise no compare at all.
template <bool MASK>
__device__ __forceinline__ void attend_tile(float (&o)[MT][ON][4], float (&m)[MT][2],
                                            float (&l)[MT][2], const u32 (&qf)[QF][MT][4],
                                            u32 sq, u32 sk, u32 sv, int n0, int row_base, int seq,
                                            int causal, float scale_log2) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;

    // S = Q K^T. ldmatrix.x4 of K: lanes 0-7 key rows 0-7 chunk 2ks, 8-15 the same rows chunk
    // 2ks+1, 16-31 keys 8-15: b0, b1 of n8 tile 2j, then b0, b1 of n8 tile 2j+1.
    const u32 k_lane = swz((lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1);
#if Q_IN_SMEM
    const u32 q_lane = swz(lane & 15, lane >> 4);  // as the A operand: see the Q fragments below
#endif
    float s[MT][SN][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < SN; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[i][j][e] = 0.0f;
#pragma unroll KS_UNROLL
    for (int ks = 0; ks < QK; ++ks) {
#if Q_IN_SMEM  // this k16 step's A fragments from the Q tile (sq: the warp's first row)
        u32 qa[MT][4];
#pragma unroll
        for (int i = 0; i < MT; ++i)
            ldmatrix_x4(qa[i], sq + frag_off(q_lane, i, ks));
#else
        const u32(&qa)[MT][4] = qf[ks];
#endif
#pragma unroll
        for (int j = 0; j < SN / 2; ++j) {
            u32 kf[4];
            ldmatrix_x4(kf, sk + frag_off(k_lane, j, ks));
#pragma unroll
            for (int i = 0; i < MT; ++i) {
                mma_m16n8k16(s[i][2 * j], qa[i], kf[0], kf[1]);
                mma_m16n8k16(s[i][2 * j + 1], qa[i], kf[2], kf[3]);
            }
        }
    }

    if (MASK) {  // element e of n8 tile j: row g + 8 * (e >> 1), key 8j + 2t + (e & 1)
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int j = 0; j < SN; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int row = row_base + 16 * i + g + 8 * (e >> 1);
                    const int key = n0 + 8 * j + 2 * t + (e & 1);
                    if (key >= seq || (causal && key > row)) s[i][j][e] = NEG_INF;
                }
    }

    // Online softmax, rows g (h = 0) and g + 8 (h = 1) of each m16 tile.
#pragma unroll
    for (int i = 0; i < MT; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = m[i][h];
#pragma unroll
            for (int j = 0; j < SN; ++j) mx = fmaxf(mx, fmaxf(s[i][j][2 * h], s[i][j][2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));  // the quad holds the row
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            // A row with no key yet keeps m = -inf: subtract 0 then, not -inf (-inf - -inf = NaN).
            const float ms = mx == NEG_INF ? 0.0f : mx * scale_log2;
            const float corr = ex2_approx(m[i][h] * scale_log2 - ms);  // 0 on the first tile
            m[i][h] = mx;
            l[i][h] *= corr;
#pragma unroll
            for (int d = 0; d < ON; ++d) {
                o[i][d][2 * h] *= corr;
                o[i][d][2 * h + 1] *= corr;
            }
#pragma unroll
            for (int j = 0; j < SN; ++j) {
                const float p0 = ex2_approx(fmaf(s[i][j][2 * h], scale_log2, -ms));
                const float p1 = ex2_approx(fmaf(s[i][j][2 * h + 1], scale_log2, -ms));
                s[i][j][2 * h] = p0;
                s[i][j][2 * h + 1] = p1;
                l[i][h] += p0 + p1;  // this lane's part of the row sum
            }
        }
    }

    // O += P V. P's A fragment for keys 16kk..16kk+15 = n8 tiles 2kk and 2kk+1 of S, packed.
    // ldmatrix.x4.trans of V: lanes 0-15 key rows 16kk + (lane & 15) chunk 2dj, lanes 16-31
    // chunk 2dj+1: b0, b1 of O's n8 tile 2dj, then b0, b1 of n8 tile 2dj+1.
    const u32 v_lane = swz(lane & 15, lane >> 4);
#pragma unroll
    for (int kk = 0; kk < PK; ++kk) {
        u32 pa[MT][4];
#pragma unroll
        for (int i = 0; i < MT; ++i) {
            pa[i][0] = pack2(s[i][2 * kk][0], s[i][2 * kk][1]);
            pa[i][1] = pack2(s[i][2 * kk][2], s[i][2 * kk][3]);
            pa[i][2] = pack2(s[i][2 * kk + 1][0], s[i][2 * kk + 1][1]);
            pa[i][3] = pack2(s[i][2 * kk + 1][2], s[i][2 * kk + 1][3]);
        }
#pragma unroll
        for (int dj = 0; dj < ON / 2; ++dj) {
            u32 vf[4];
            ldmatrix_x4_trans(vf, sv + frag_off(v_lane, kk, dj));
#pragma unroll
            for (int i = 0; i < MT; ++i) {
                mma_m16n8k16(o[i][2 * dj], pa[i], vf[0], vf[1]);
                mma_m16n8k16(o[i][2 * dj + 1], pa[i], vf[2], vf[3]);
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
attn_fa2_mma(int batch, int heads, int kv_heads, int seq, float scale, int causal,
             const elem_t* __restrict__ Q, const elem_t* __restrict__ K,
             const elem_t* __restrict__ V, elem_t* __restrict__ O) {
    extern __shared__ __align__(128) unsigned char smem[];
    const u32 sbase = static_cast<u32>(__cvta_generic_to_shared(smem));
    const u32 sq = sbase + (Q_IN_SMEM ? STAGES : STAGES - 1) * STAGE_BYTES;

    // Block -> (query tile, batch * head). Causal: heaviest query tiles of all heads first.
    int mtile = blockIdx.x, bh = blockIdx.y;
    if (causal) {
        const int bhs = gridDim.y;
        const int pid = blockIdx.y * gridDim.x + blockIdx.x;
        mtile = gridDim.x - 1 - pid / bhs;
        bh = pid % bhs;
    }
    const int m0 = mtile * BLOCK_M;
    const int b = bh / heads, h = bh % heads;
    const int kvh = h / (heads / kv_heads);
    const elem_t* q = Q + static_cast<size_t>(bh) * seq * D;
    const elem_t* k = K + static_cast<size_t>(b * kv_heads + kvh) * seq * D;
    const elem_t* v = V + static_cast<size_t>(b * kv_heads + kvh) * seq * D;

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int row_base = m0 + warp * WARP_M;  // this warp's first query row
    const int n_end = causal ? min(seq, m0 + BLOCK_M) : seq;
    const int ntiles = (n_end + BLOCK_N - 1) / BLOCK_N;
    // Tiles before `nfree` need no mask: all keys < seq and (causal) <= the block's first row.
    const int nfree = min(ntiles, (causal ? min(seq, m0 + 1) : seq) / BLOCK_N);

    const int cr = tid / CHUNKS, cc = tid % CHUNKS;  // this thread's copy row and chunk
    auto load_kv = [&](int tile) {
        const u32 st = sbase + (tile % STAGES) * STAGE_BYTES;
        load_tile<BLOCK_N>(st, k, tile * BLOCK_N, seq, cr, cc);
        load_tile<BLOCK_N>(st + TILE_BYTES, v, tile * BLOCK_N, seq, cr, cc);
    };

    // Prologue: group 0 = Q + tile 0, then tiles 1 .. STAGES-2 (empty groups past the end keep
    // the wait counts uniform). Tile STAGES-1 goes into Q's buffer once Q is in registers.
    load_tile<BLOCK_M>(sq, q, m0, seq, cr, cc);
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ntiles) load_kv(s);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    // Q fragments: A operand of m16 tile i, k16 step ks (lanes 0-15 rows, 16-31 chunk + 1).
    u32 qf[QF][MT][4];
#if !Q_IN_SMEM
    const u32 q_lane = swz(lane & 15, lane >> 4);
#pragma unroll
    for (int ks = 0; ks < QK; ++ks)
#pragma unroll
        for (int i = 0; i < MT; ++i)
            ldmatrix_x4(qf[ks][i], sq + warp * WARP_M * ROW_BYTES + frag_off(q_lane, i, ks));
#endif

    float o[MT][ON][4], m[MT][2], l[MT][2];
#pragma unroll
    for (int i = 0; i < MT; ++i) {
#pragma unroll
        for (int d = 0; d < ON; ++d)
#pragma unroll
            for (int e = 0; e < 4; ++e) o[i][d][e] = 0.0f;
        m[i][0] = m[i][1] = NEG_INF;
        l[i][0] = l[i][1] = 0.0f;
    }
    const float scale_log2 = scale * 1.4426950408889634f;  // 2^(x log2 e) = e^x

    // Tile t: barrier (tile t landed everywhere, every warp is done with tile t-1, whose buffer,
    // or Q's at t = 0, takes tile t+STAGES-1), issue that copy, then the math on tile t.
    // (`masked` is a constant at both call sites below, so each loop keeps one branch: NVRTC 13.0
    // refuses the generic lambda that would carry it as a type)
    auto step = [&](int tile, bool masked) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        if (tile + STAGES - 1 < ntiles) load_kv(tile + STAGES - 1);
        cp_async_commit();
        const u32 st = sbase + (tile % STAGES) * STAGE_BYTES;
        const u32 sw = sq + warp * WARP_M * ROW_BYTES;
        if (!masked) {
            attend_tile<false>(o, m, l, qf, sw, st, st + TILE_BYTES, tile * BLOCK_N, row_base, seq,
                               causal, scale_log2);
            return;
        }
        // causal: a warp whose last row is above the tile's first key has nothing to do
        if (causal && tile * BLOCK_N > row_base + WARP_M - 1) return;
        attend_tile<true>(o, m, l, qf, sw, st, st + TILE_BYTES, tile * BLOCK_N, row_base, seq,
                          causal, scale_log2);
    };
    int tile = 0;
    for (; tile < nfree; ++tile) step(tile, false);
    for (; tile < ntiles; ++tile) step(tile, true);
    cp_async_wait<0>();  // no copy may still target shared memory when the block exits

    // O / l, rounded to elem_t, through shared memory: each warp writes its rows into Q's
    // (swizzled) tile, then stores whole 16-byte chunks, a row's 128 or 256 bytes contiguous
    // (the accumulator layout would give 4-byte stores, 8 rows apart). Rows past seq are not
    // stored. The barrier: with Q in registers its tile is the last ring buffer, which other
    // warps may still be reading.
    __syncthreads();
    const int g = lane >> 2, t = lane & 3;
    const int wrow = warp * WARP_M;  // the warp's first row in the tile
#pragma unroll
    for (int i = 0; i < MT; ++i) {
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
            float sum = l[i][hh];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            const float inv = 1.0f / sum;
            const int r = wrow + 16 * i + g + 8 * hh;
#pragma unroll
            for (int d = 0; d < ON; ++d)  // columns 8d + 2t, 8d + 2t + 1: chunk d, word t
                *reinterpret_cast<u32*>(smem + (sq - sbase) + swz(r, d) + 4 * t) =
                    pack2(o[i][d][2 * hh] * inv, o[i][d][2 * hh + 1] * inv);
        }
    }
    __syncwarp();
    constexpr int ROWS_PER_PASS = 32 / CHUNKS;  // rows one warp-wide pass of 16-byte chunks covers
    static_assert(32 % CHUNKS == 0 && WARP_M % ROWS_PER_PASS == 0, "O rows split over the lanes");
    const int oc = lane % CHUNKS;
#pragma unroll
    for (int pass = 0; pass < WARP_M / ROWS_PER_PASS; ++pass) {
        const int r = wrow + pass * ROWS_PER_PASS + lane / CHUNKS;
        if (m0 + r >= seq) continue;
        const uint4 val = *reinterpret_cast<const uint4*>(smem + (sq - sbase) + swz(r, oc));
        *reinterpret_cast<uint4*>(O + (static_cast<size_t>(bh) * seq + m0 + r) * D + 8 * oc) = val;
    }
}
