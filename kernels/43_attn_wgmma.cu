// Stage 43: FlashAttention on Hopper (the FlashAttention-3 design, arXiv 2407.08608), written for
// this contract. Stage 42 moved the tiles with cp.async and multiplied with mma.sync; here
//   * TMA copies Q, K and V into 128-byte swizzled shared memory, counted in bytes on mbarriers;
//     the maps are 3-D, [batch * heads, seq, HEAD_DIM], so rows past `seq` arrive as zeros;
//   * warp specialisation as in stage 25: warpgroup 0 is the producer (setmaxnreg down to 24,
//     one thread issues every copy) filling a ring of STAGES K and V tiles; warpgroups 1 and 2
//     are consumers (setmaxnreg up to 240), each owning 64 query rows of the block's 128;
//   * S = Q K^T is one WGMMA chain with both operands in shared memory (K K-major); O += P V has
//     A = P from registers (wgmma's register-A form: the S accumulator is already in A-fragment
//     layout, so P is S after exp2 and a conversion, never stored) and V N-major (imm-trans-b 1);
//   * online softmax in fp32 with exp2 (scale folded with log2(e) into one FMA per score);
//   * OVERLAP=1: iteration j issues S_j = Q K_j^T, then O += P_{j-1} V_{j-1}, and computes the
//     softmax of S_j while the second chain runs; PINGPONG=1 (with OVERLAP=1): the consumers take
//     turns at issuing WGMMAs (named barriers 1 and 2), so one's exponentials run during the
//     other's GEMMs;
//   * causal: key tiles past the block's last query row are never loaded; only diagonal (or
//     seq-tail) tiles are masked; causal blocks run heaviest first. GQA as in stage 42.
// O is written from registers (rows >= seq skipped), or with TMA_O=1 staged in the spent Q rows
// and stored by TMA. Tiles: BLOCK_M = 128, BLOCK_N = 128 keys (176 at head dim 128 non-causal,
// FlashAttention-3's choice), STAGES = 2 K/V tiles in the ring.
#ifndef HEAD_DIM
#error "HEAD_DIM must be given as -DHEAD_DIM=64 or 128"
#endif
#ifndef BLOCK_N
#define BLOCK_N 128  // keys per K/V tile: 128 or 176
#endif
#ifndef STAGES
#define STAGES 2  // K/V tiles in the ring
#endif
#ifndef OVERLAP
#define OVERLAP 1  // issue S_j before O += P_{j-1} V_{j-1}; softmax(S_j) while the latter runs
#endif
#ifndef PINGPONG
#define PINGPONG 1  // the consumer warpgroups take turns at the tensor cores (named barriers)
#endif
#ifndef TMA_O
#define TMA_O 0  // 1: O goes out through shared memory (Q's rows) and a TMA store (a 4th map)
#endif

#include "ptx_sm80.cuh"  // elem_t (-DELEM_BF16=1: bf16), pack2, ex2_approx
#include "sm70/named_barrier.cuh"  // bar_arrive, bar_sync
#include "sm90/fence.cuh"          // fence_proxy_async
#include "sm90/mbarrier.cuh"       // mbarrier init, arrivals and waits
#include "sm90/setmaxnreg.cuh"     // setmaxnreg_dec, setmaxnreg_inc
#include "sm90/tma.cuh"            // TmaMap, TMA loads and stores, bulk groups
#include "sm90/wgmma.cuh"          // wgmma fence, commit, wait and its m64nNk16 shapes
#include "sm90/wgmma_desc.cuh"     // smem_desc_k_sw128, smem_desc_mn_sw128

typedef unsigned int u32;
typedef unsigned long long u64;

constexpr int BLOCK_M = 128;                 // query rows per block: two consumers x 64
constexpr int CONSUMERS = BLOCK_M / 64;      // consumer warpgroups
constexpr int NUM_THREADS = 128 * (1 + CONSUMERS);
constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = 240;
constexpr int BOX_COLS = 64;                 // d columns per TMA box: one 128-byte swizzle row
constexpr int BOXES = HEAD_DIM / BOX_COLS;   // boxes side by side along d
constexpr int Q_BYTES = BLOCK_M * HEAD_DIM * 2;
constexpr int KV_BYTES = BLOCK_N * HEAD_DIM * 2;   // one K or one V tile
constexpr int Q_BOX_BYTES = BLOCK_M * 128, KV_BOX_BYTES = BLOCK_N * 128;
constexpr int SMEM_BYTES = Q_BYTES + 2 * STAGES * KV_BYTES + 1024;  // + alignment slack
constexpr int S_REGS = BLOCK_N / 2;          // fp32 scores per thread (m64 x BLOCK_N)
constexpr int O_REGS = HEAD_DIM / 2;         // fp32 outputs per thread (m64 x HEAD_DIM)
constexpr int P_FRAGS = BLOCK_N / 16;        // register-A fragments of P, one per k16 step
constexpr float LOG2E = 1.4426950408889634f;
// NVRTC has no math.h (no INFINITY): -inf from its bits
__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

static_assert(HEAD_DIM == 64 || HEAD_DIM == 128, "the PV wgmma is m64n64k16 or m64n128k16");
static_assert(BLOCK_N == 128 || BLOCK_N == 176, "the QK^T wgmma is m64n128k16 or m64n176k16");
static_assert(BLOCK_N <= 256 && BLOCK_M <= 256, "TMA boxes are at most 256 rows");
static_assert(STAGES >= 1, "the ring holds at least one K/V tile");
static_assert(Q_BOX_BYTES % 1024 == 0 && KV_BOX_BYTES % 1024 == 0 && Q_BYTES % 1024 == 0 &&
                  KV_BYTES % 1024 == 0,
              "boxes stay 1024-byte aligned (the swizzle atom; descriptor base offset 0)");
static_assert((KV_BOX_BYTES >> 4) < (1 << 14), "V's LBO (box to box) fits the 14-bit field");
static_assert(SMEM_BYTES <= 227 * 1024, "Q and the K/V ring must fit in 227 KiB");
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536,
              "setmaxnreg: the warpgroups' registers must fit in the SM's 64K");
static_assert(!PINGPONG || OVERLAP,
              "ping-pong hands over after S_j and P_{j-1} V_{j-1} are issued together");
static_assert(CONSUMERS == 2, "ping-pong pairs exactly two consumer warpgroups");

#if BLOCK_N == 176
#define WGMMA_QK wgmma_m64n176k16<0>
#else
#define WGMMA_QK wgmma_m64n128k16<0>
#endif
#if HEAD_DIM == 128
#define WGMMA_PV wgmma_m64n128k16_rs<1>
#else
#define WGMMA_PV wgmma_m64n64k16_rs<1>
#endif

// S (64 x BLOCK_N) = Q (this warpgroup's 64 rows) K^T, issued and committed (not waited for).
// Step kk covers d = 16kk .. 16kk+15: box kk / 4, 32 bytes per step inside its 128-byte rows.
__device__ __forceinline__ void issue_qk(float (&s)[S_REGS], u32 q_rows, u32 k_tile) {
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < HEAD_DIM / 16; ++kk) {
        const u32 off = (kk / 4), in_row = 32 * (kk % 4);
        WGMMA_QK(s, smem_desc_k_sw128(q_rows + off * Q_BOX_BYTES + in_row),
                 smem_desc_k_sw128(k_tile + off * KV_BOX_BYTES + in_row), kk > 0);
    }
    wgmma_commit();
}

// O (64 x HEAD_DIM) += P (64 x BLOCK_N, registers) V (BLOCK_N x HEAD_DIM, N-major), issued and
// committed. Step kk covers keys 16kk .. 16kk+15: 16 rows of 128 bytes further into each box;
// the next 64 columns of d are one box further (LBO).
__device__ __forceinline__ void issue_pv(float (&o)[O_REGS], const u32 (&p)[P_FRAGS][4],
                                         u32 v_tile) {
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < P_FRAGS; ++kk)
        WGMMA_PV(o, p[kk], smem_desc_mn_sw128(v_tile + 16 * 128 * kk, KV_BOX_BYTES), 1);
    wgmma_commit();
}

// The softmax step of one tile on this thread's two rows (g and g + 8 of its warp's 16):
// masks S where needed, updates the running max m (raw score units), turns S in place into
// p = 2^(S * scale_log2 - m * scale_log2), adds p to the row sums l (rescaled first) and returns
// each row's rescale factor for O, alpha = 2^((m_old - m_new) * scale_log2).
__device__ __forceinline__ void softmax_tile(float (&s)[S_REGS], float (&m)[2], float (&l)[2],
                                             float (&alpha)[2], float scale_log2, bool mask,
                                             int row0, int col0, int seq, int causal) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    if (mask) {  // keys past seq, and (causal) keys after the query: -inf, i.e. p = 0
#pragma unroll
        for (int i = 0; i < S_REGS; ++i) {
            const int row = row0 + g + 8 * ((i >> 1) & 1);
            const int col = col0 + 8 * (i >> 2) + 2 * t + (i & 1);
            if (col >= seq || (causal && col > row)) s[i] = neg_inf();
        }
    }
    // 4 chains a row (column blocks i>>2 mod 4): a quarter of the dependent fmax / add latency
    float mx4[2][4];
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int q = 0; q < 4; ++q) mx4[r][q] = m[r];
#pragma unroll
    for (int i = 0; i < S_REGS; ++i) {
        float& acc = mx4[(i >> 1) & 1][(i >> 2) % 4];
        acc = fmaxf(acc, s[i]);
    }
    float mx[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {  // the row's 4 threads (a quad) hold its BLOCK_N columns
        mx[r] = fmaxf(fmaxf(mx4[r][0], mx4[r][1]), fmaxf(mx4[r][2], mx4[r][3]));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    }
    float ms[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        // a row with every key masked so far keeps max -inf: use 0 so no inf - inf = NaN appears
        ms[r] = mx[r] == neg_inf() ? 0.0f : mx[r] * scale_log2;
        alpha[r] = ex2_approx(m[r] * scale_log2 - ms[r]);  // m = -inf on the first tile: 0
        m[r] = mx[r];
    }
    float sum4[2][4] = {};
#pragma unroll
    for (int i = 0; i < S_REGS; ++i) {
        s[i] = ex2_approx(fmaf(s[i], scale_log2, -ms[(i >> 1) & 1]));
        sum4[(i >> 1) & 1][(i >> 2) % 4] += s[i];
    }
#pragma unroll
    for (int r = 0; r < 2; ++r)
        l[r] = fmaf(l[r], alpha[r], (sum4[r][0] + sum4[r][1]) + (sum4[r][2] + sum4[r][3]));
}

// p (fp32, in the accumulator layout) -> P's register-A fragments: columns 16k .. 16k+15 are
// fragment k, d[8k + 0,1] (row g, cols 2t, 2t+1), d[8k + 2,3] (row g + 8), d[8k + 4,5] (row g,
// cols 2t + 8, 2t + 9), d[8k + 6,7] (row g + 8): exactly a[0..3]'s order.
__device__ __forceinline__ void pack_p(const float (&s)[S_REGS], u32 (&p)[P_FRAGS][4]) {
#pragma unroll
    for (int k = 0; k < P_FRAGS; ++k)
#pragma unroll
        for (int q = 0; q < 4; ++q) p[k][q] = pack2(s[8 * k + 2 * q], s[8 * k + 2 * q + 1]);
}

__device__ __forceinline__ void rescale_o(float (&o)[O_REGS], const float (&alpha)[2]) {
#pragma unroll
    for (int i = 0; i < O_REGS; ++i) o[i] *= alpha[(i >> 1) & 1];
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS, 1)
attn_wgmma(int batch, int heads, int kv_heads, int seq, float scale, int causal,
           const elem_t* __restrict__ Q, const elem_t* __restrict__ K,
           const elem_t* __restrict__ V, elem_t* __restrict__ O,
           const __grid_constant__ TmaMap tma_q, const __grid_constant__ TmaMap tma_k,
           const __grid_constant__ TmaMap tma_v
#if TMA_O
           , const __grid_constant__ TmaMap tma_o
#endif
           ) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ __align__(8) u64 q_bar, k_full[STAGES], v_full[STAGES], k_empty[STAGES],
        v_empty[STAGES];
    // 128-byte swizzle repeats every 1024 bytes: tiles start on a 1024-byte boundary
    const u32 q_s = (static_cast<u32>(__cvta_generic_to_shared(smem)) + 1023u) & ~1023u;
    const u32 k_s = q_s + Q_BYTES, v_s = k_s + STAGES * KV_BYTES;
    const u32 qb = static_cast<u32>(__cvta_generic_to_shared(&q_bar));
    const u32 kf = static_cast<u32>(__cvta_generic_to_shared(k_full));
    const u32 vf = static_cast<u32>(__cvta_generic_to_shared(v_full));
    const u32 ke = static_cast<u32>(__cvta_generic_to_shared(k_empty));
    const u32 ve = static_cast<u32>(__cvta_generic_to_shared(v_empty));
    const int tid = threadIdx.x, wg = tid / 128;

    // causal: the last query tiles have the most key tiles; run them first
    const int m_block = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
    const int m0 = m_block * BLOCK_M;
    const int bh = blockIdx.y, b = bh / heads, h = bh % heads;
    const int bkv = b * kv_heads + h / (heads / kv_heads);
    const int seq_tiles = (seq + BLOCK_N - 1) / BLOCK_N;
    const int n_tiles = causal ? min(seq_tiles, (m0 + BLOCK_M + BLOCK_N - 1) / BLOCK_N) : seq_tiles;

    if (tid == 0) {
        prefetch_tensormap(&tma_q);
        prefetch_tensormap(&tma_k);
        prefetch_tensormap(&tma_v);
        mbar_init(qb, 1);
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(kf + 8 * s, 1);              // the producer's arrive.expect_tx
            mbar_init(vf + 8 * s, 1);
            mbar_init(ke + 8 * s, CONSUMERS * 4);  // one arrival per consumer warp
            mbar_init(ve + 8 * s, CONSUMERS * 4);
        }
        fence_mbarrier_init();  // visible to TMA
    }
    __syncthreads();

    if (wg == 0) {
        // Producer: give registers away; one thread issues Q once, then K_j and V_j into the ring.
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) {
            mbar_arrive_expect_tx(qb, Q_BYTES);
#pragma unroll
            for (int x = 0; x < BOXES; ++x)
                tma_load_3d(q_s + x * Q_BOX_BYTES, &tma_q, qb, 64 * x, m0, bh);
            for (int j = 0; j < n_tiles; ++j) {
                const int s = j % STAGES;
                const u32 parity = ((j / STAGES) - 1) & 1;  // the release of tile j - STAGES
                if (j >= STAGES) mbar_wait(ke + 8 * s, parity);
                mbar_arrive_expect_tx(kf + 8 * s, KV_BYTES);
#pragma unroll
                for (int x = 0; x < BOXES; ++x)
                    tma_load_3d(k_s + s * KV_BYTES + x * KV_BOX_BYTES, &tma_k, kf + 8 * s, 64 * x,
                                j * BLOCK_N, bkv);
                if (j >= STAGES) mbar_wait(ve + 8 * s, parity);
                mbar_arrive_expect_tx(vf + 8 * s, KV_BYTES);
#pragma unroll
                for (int x = 0; x < BOXES; ++x)
                    tma_load_3d(v_s + s * KV_BYTES + x * KV_BOX_BYTES, &tma_v, vf + 8 * s, 64 * x,
                                j * BLOCK_N, bkv);
            }
        }
        return;
    }

    setmaxnreg_inc<CONSUMER_REGS>();
    const int c = wg - 1;                      // consumer c owns rows 64c .. 64c+63 of the block
    const int w = (tid / 32) % 4, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int row0 = m0 + 64 * c + 16 * w;     // this warp's first row
    const bool warp_leader = lane == 0;
    const u32 q_rows = q_s + c * 64 * 128;     // this consumer's 64 rows in each Q box
    const float scale_log2 = scale * LOG2E;
    // a tile needs the mask when it reaches past seq, or (causal) past this warpgroup's first row
    const int wg_row0 = m0 + 64 * c;
    auto needs_mask = [&](int j) {
        return (j + 1) * BLOCK_N > seq || (causal && (j + 1) * BLOCK_N - 1 > wg_row0);
    };

    float o[O_REGS], s[S_REGS];
    u32 p[P_FRAGS][4];
    float m[2] = {neg_inf(), neg_inf()}, l[2] = {0.0f, 0.0f}, alpha[2];
#pragma unroll
    for (int i = 0; i < O_REGS; ++i) o[i] = 0.0f;

    mbar_wait(qb, 0);
#if PINGPONG
    // consumer 0 goes first: consumer 1 opens its turn (barrier 1 needs both warpgroups' 256)
    if (c == 1) bar_arrive(1, 256);
#endif

#if OVERLAP
    // tile 0: S_0 and its softmax alone
    mbar_wait(kf, 0);
#if PINGPONG
    bar_sync(1 + c, 256);
#endif
    issue_qk(s, q_rows, k_s);
#if PINGPONG
    bar_arrive(2 - c, 256);  // the other consumer's turn
#endif
    wgmma_wait<0>();
    if (warp_leader) mbar_arrive(ke);
    softmax_tile(s, m, l, alpha, scale_log2, needs_mask(0), row0, 0, seq, causal);
    pack_p(s, p);  // O is still 0: nothing to rescale
    for (int j = 1; j < n_tiles; ++j) {
        const int s_k = j % STAGES, s_v = (j - 1) % STAGES;
        mbar_wait(kf + 8 * s_k, (j / STAGES) & 1);
#if PINGPONG
        bar_sync(1 + c, 256);
#endif
        issue_qk(s, q_rows, k_s + s_k * KV_BYTES);
        mbar_wait(vf + 8 * s_v, ((j - 1) / STAGES) & 1);
        issue_pv(o, p, v_s + s_v * KV_BYTES);
#if PINGPONG
        bar_arrive(2 - c, 256);
#endif
        wgmma_wait<1>();  // S_j is in; P_{j-1} V_{j-1} may still run
        if (warp_leader) mbar_arrive(ke + 8 * s_k);
        // p is still read by the PV chain: the exponentials go into s; p changes after the wait
        softmax_tile(s, m, l, alpha, scale_log2, needs_mask(j), row0, j * BLOCK_N, seq, causal);
        wgmma_wait<0>();  // O += P_{j-1} V_{j-1} is in: V's slot is free, O and p may change
        if (warp_leader) mbar_arrive(ve + 8 * s_v);
        rescale_o(o, alpha);
        pack_p(s, p);
    }
    {  // the last tile's P V
        const int s_v = (n_tiles - 1) % STAGES;
        mbar_wait(vf + 8 * s_v, ((n_tiles - 1) / STAGES) & 1);
        issue_pv(o, p, v_s + s_v * KV_BYTES);
        wgmma_wait<0>();
        if (warp_leader) mbar_arrive(ve + 8 * s_v);
    }
#if PINGPONG
    // barriers balanced: consumer 1's last hand-over to consumer 0 is taken here
    if (c == 0) bar_sync(1, 256);
#endif
#else
    for (int j = 0; j < n_tiles; ++j) {
        const int st = j % STAGES;
        const u32 parity = (j / STAGES) & 1;
        mbar_wait(kf + 8 * st, parity);
        issue_qk(s, q_rows, k_s + st * KV_BYTES);
        wgmma_wait<0>();
        if (warp_leader) mbar_arrive(ke + 8 * st);
        softmax_tile(s, m, l, alpha, scale_log2, needs_mask(j), row0, j * BLOCK_N, seq, causal);
        rescale_o(o, alpha);
        pack_p(s, p);
        mbar_wait(vf + 8 * st, parity);
        issue_pv(o, p, v_s + st * KV_BYTES);
        wgmma_wait<0>();
        if (warp_leader) mbar_arrive(ve + 8 * st);
    }
#endif

    // O = O / rowsum: the quad's partial sums first
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
        inv[r] = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    }
#if TMA_O
    // This warpgroup's 64 rows of Q are no longer read (its last QK^T has completed): write O
    // there, 128-byte swizzled as TMA expects (16-byte chunk k of a row at k ^ (row % 8); here
    // row % 8 = g), then one thread stores each 64-column box; the map skips rows past seq.
    bar_sync(3 + c, 128);  // every warp of this warpgroup is past its last wgmma on Q
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const u32 row = 16 * w + g + 8 * r;
#pragma unroll
        for (int j = 0; j < HEAD_DIM / 8; ++j)
            st_shared_u32(q_rows + (j / 8) * Q_BOX_BYTES + row * 128 + ((j % 8) ^ g) * 16 + 4 * t,
                          pack2(o[4 * j + 2 * r] * inv[r], o[4 * j + 2 * r + 1] * inv[r]));
    }
    fence_proxy_async();         // the writes above, visible to the copy engine
    bar_sync(3 + c, 128);        // this warpgroup's rows are all written
    if (tid % 128 == 0) {
#pragma unroll
        for (int x = 0; x < BOXES; ++x)
            tma_store_3d(&tma_o, q_rows + x * Q_BOX_BYTES, 64 * x, m0 + 64 * c, bh);
        bulk_commit();
        bulk_wait_read<0>();     // shared memory stays the block's until the engine has read it
    }
#else
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const int row = row0 + g + 8 * r;
        if (row >= seq) continue;
        elem_t* out = O + (static_cast<size_t>(bh) * seq + row) * HEAD_DIM + 2 * t;
#pragma unroll
        for (int j = 0; j < HEAD_DIM / 8; ++j)
            *reinterpret_cast<u32*>(out + 8 * j) =
                pack2(o[4 * j + 2 * r] * inv[r], o[4 * j + 2 * r + 1] * inv[r]);
    }
#endif
}
