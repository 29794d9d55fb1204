// Stage 41: fused attention with the online softmax (FlashAttention-1 style), on CUDA cores.
// One block owns BLOCK_M query rows of one (batch, head) and walks the keys in tiles of
// BLOCK_N: each K tile and V tile is staged in shared memory (as fp32), the block computes its
// BLOCK_M x BLOCK_N scores, and each row keeps a running max m and running sum l. When a new
// tile raises a row's max from m to m', everything accumulated so far is rescaled by
// exp(m - m'): the softmax never needs the whole row, so S and P never leave the chip and
// Q, K, V and O move once (per block: K and V are read once per BLOCK_M query rows, from L2).
// Scores are kept in base 2: Q is staged as q * scale * log2(e), so p = exp2(s - m).
//
// Threads: THREADS / BLOCK_M = TPR threads share a row (neighbouring lanes). For the scores a
// thread holds BLOCK_N / TPR of its row's columns and walks d, one Q value from shared memory
// feeding BLOCK_N / TPR FMAs; for O it owns HEAD_DIM / TPR of the row's output columns in
// registers. The row's max and sum are reduced across its TPR lanes by shuffles.
// fp32 math throughout (FFMA); fp16/bf16 in and out (elem.cuh).
#ifndef HEAD_DIM
#error "HEAD_DIM (64 or 128) must be given as -DHEAD_DIM=..."
#endif
#include "elem.cuh"  // elem_t (fp32, fp16 or bf16 bits), elem_to_float, elem_from_float

#ifndef BLOCK_M
#define BLOCK_M 64  // query rows per block
#endif
#ifndef BLOCK_N
#define BLOCK_N 32  // keys per tile
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2  // blocks per SM the register budget must allow (65,536 / (2 x 256) = 128)
#endif
constexpr int TPR = THREADS / BLOCK_M;        // threads per query row
constexpr int SCOLS = BLOCK_N / TPR;          // scores per thread per tile
constexpr int OCOLS = HEAD_DIM / TPR;         // output columns per thread
constexpr int QK_STRIDE = HEAD_DIM + 1;       // padded: rows of Q (and K) land in other banks
constexpr int S_STRIDE = BLOCK_N + 1;
// the dynamic shared memory the host must give (rooflinecli/stages/attention.py: smem_bytes)
constexpr int SMEM_FLOATS = BLOCK_M * QK_STRIDE + BLOCK_N * QK_STRIDE + BLOCK_N * HEAD_DIM +
                            BLOCK_M * S_STRIDE;
static_assert(SMEM_FLOATS * 4 <= 227 * 1024, "the tiles must fit one SM's shared memory (227 KiB)");
static_assert(THREADS % BLOCK_M == 0, "a whole number of threads per query row");
static_assert(TPR >= 1 && TPR <= 32 && (TPR & (TPR - 1)) == 0,
              "a row's threads are 1-32 neighbouring lanes (power of 2) for the shuffles");
static_assert(BLOCK_N % TPR == 0 && HEAD_DIM % TPR == 0, "a row's work splits evenly");
static_assert(OCOLS + SCOLS <= 64, "accumulators must leave registers for the rest");

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
attn_fused(int batch, int heads, int kv_heads, int seq, float scale, int causal,
           const elem_t* __restrict__ Q, const elem_t* __restrict__ K,
           const elem_t* __restrict__ V, elem_t* __restrict__ O) {
    extern __shared__ float smem[];
    float* Qs = smem;                       // BLOCK_M x QK_STRIDE, pre-scaled
    float* Ks = Qs + BLOCK_M * QK_STRIDE;   // BLOCK_N x QK_STRIDE
    float* Vs = Ks + BLOCK_N * QK_STRIDE;   // BLOCK_N x HEAD_DIM
    float* Ps = Vs + BLOCK_N * HEAD_DIM;    // BLOCK_M x S_STRIDE: this tile's probabilities

    const int tid = threadIdx.x;
    const int r = tid / TPR, sub = tid % TPR;  // this thread's row in the tile, its part
    const int q0 = blockIdx.x * BLOCK_M;
    const int bh = blockIdx.y, b = bh / heads, h = bh % heads;
    const int kvh = h / (heads / kv_heads);  // grouped-query attention
    const elem_t* Qg = Q + static_cast<size_t>(bh) * seq * HEAD_DIM;
    const elem_t* Kg = K + (static_cast<size_t>(b) * kv_heads + kvh) * seq * HEAD_DIM;
    const elem_t* Vg = V + (static_cast<size_t>(b) * kv_heads + kvh) * seq * HEAD_DIM;
    const float qscale = scale * 1.4426950408889634f;  // log2(e): exp2 below

    // Q tile once, coalesced along d; rows past seq are zeros (computed, never stored)
    for (int idx = tid; idx < BLOCK_M * HEAD_DIM; idx += THREADS) {
        const int row = idx / HEAD_DIM, d = idx % HEAD_DIM;
        const int qi = q0 + row;
        Qs[row * QK_STRIDE + d] =
            qi < seq ? qscale * elem_to_float(Qg[static_cast<size_t>(qi) * HEAD_DIM + d]) : 0.0f;
    }

    const float NEG_INF = -__int_as_float(0x7f800000);
    const int qi = q0 + r;
    float m = NEG_INF, l = 0.0f;  // the row's running max (base 2) and running sum
    float acc[OCOLS];
#pragma unroll
    for (int c = 0; c < OCOLS; ++c) acc[c] = 0.0f;

    // causal: keys past the block's last row are masked for every row of it
    const int kv_end = causal ? min(seq, q0 + BLOCK_M) : seq;
    for (int k0 = 0; k0 < kv_end; k0 += BLOCK_N) {
        __syncthreads();  // the previous tile's K, V and P are no longer read
        for (int idx = tid; idx < BLOCK_N * HEAD_DIM; idx += THREADS) {
            const int row = idx / HEAD_DIM, d = idx % HEAD_DIM;
            const int kj = k0 + row;
            const size_t g = static_cast<size_t>(kj) * HEAD_DIM + d;
            Ks[row * QK_STRIDE + d] = kj < seq ? elem_to_float(Kg[g]) : 0.0f;
            Vs[row * HEAD_DIM + d] = kj < seq ? elem_to_float(Vg[g]) : 0.0f;
        }
        __syncthreads();

        // scores of this row against the thread's columns j = sub + TPR * c
        float s[SCOLS];
#pragma unroll
        for (int c = 0; c < SCOLS; ++c) s[c] = 0.0f;
#pragma unroll 4
        for (int d = 0; d < HEAD_DIM; ++d) {
            const float qv = Qs[r * QK_STRIDE + d];  // one load feeds SCOLS FMAs
#pragma unroll
            for (int c = 0; c < SCOLS; ++c) s[c] = fmaf(qv, Ks[(sub + TPR * c) * QK_STRIDE + d], s[c]);
        }
        float tile_max = NEG_INF;
#pragma unroll
        for (int c = 0; c < SCOLS; ++c) {
            const int kj = k0 + sub + TPR * c;
            if (kj >= seq || (causal && kj > qi)) s[c] = NEG_INF;  // tail and mask
            tile_max = fmaxf(tile_max, s[c]);
        }
#pragma unroll
        for (int o = TPR / 2; o > 0; o >>= 1)
            tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, o));

        // the online softmax: rescale what came before by exp2(m - m_new)
        const float m_new = fmaxf(m, tile_max);
        const float base = m_new == NEG_INF ? 0.0f : m_new;  // a row masked so far: no NaN
        const float alpha = exp2f(m - base);                 // m = -inf: 0
        float psum = 0.0f;
#pragma unroll
        for (int c = 0; c < SCOLS; ++c) {
            const float p = exp2f(s[c] - base);  // masked: exp2(-inf) = 0
            psum += p;
            Ps[r * S_STRIDE + sub + TPR * c] = p;
        }
#pragma unroll
        for (int o = TPR / 2; o > 0; o >>= 1) psum += __shfl_xor_sync(0xffffffffu, psum, o);
        l = l * alpha + psum;
        m = m_new;
        __syncwarp();  // the row's P comes from its TPR neighbouring lanes, all in this warp

        // O_row = alpha * O_row + P_row V_tile: columns d = sub + TPR * c
#pragma unroll
        for (int c = 0; c < OCOLS; ++c) acc[c] *= alpha;
        for (int j = 0; j < BLOCK_N; ++j) {
            const float p = Ps[r * S_STRIDE + j];  // a broadcast to the row's lanes
#pragma unroll
            for (int c = 0; c < OCOLS; ++c) acc[c] = fmaf(p, Vs[j * HEAD_DIM + sub + TPR * c], acc[c]);
        }
    }

    if (qi >= seq) return;  // rows past seq were computed on zeros: never stored
    const float inv = 1.0f / l;  // l >= 1: the row's max contributes exp2(0)
    elem_t* o = O + (static_cast<size_t>(bh) * seq + qi) * HEAD_DIM;
#pragma unroll
    for (int c = 0; c < OCOLS; ++c) o[sub + TPR * c] = elem_from_float(acc[c] * inv);
}
