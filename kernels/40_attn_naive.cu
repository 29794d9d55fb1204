// Stage 40: naive attention, three kernels and the score matrix in memory. The textbook
// formula O = softmax(scale * Q K^T + mask) V taken one step at a time:
//   1. attn_naive_scores:  S = scale * Q K^T (causal: -inf above the diagonal), fp32, N x N
//   2. attn_naive_softmax: each row of S turned into P = softmax(row), in place
//   3. attn_naive_pv:      O = P V
// S is B*H*N^2 fp32 values: at B2 H16 N8192, 8.6 GB written, read, written back and read
// again, against 0.13 GB of Q, K, V and O. That traffic puts this stage far left of the ridge
// (rooflinecli/core/attention.py: bytes_unfused); the fused stages (41+) never let S leave
// the chip. Each kernel is itself naive: one thread per output element, operands straight
// from global memory, FFMA in fp32.
//
// Contract (rooflinecli/stages/attention.py): the fused stages' ten arguments plus the fp32
// workspace S ([B, H, N, N]), passed to every kernel; Q, O [B, H, N, HEAD_DIM], K, V
// [B, H_kv, N, HEAD_DIM] row-major; query head h reads KV head h / (H / H_kv).
#ifndef HEAD_DIM
#error "HEAD_DIM (64 or 128) must be given as -DHEAD_DIM=..."
#endif
#include "elem.cuh"  // elem_t (fp32, fp16 or bf16 bits), elem_to_float, elem_from_float

#ifndef SCORE_TILE
#define SCORE_TILE 16  // kernel 1: a SCORE_TILE x SCORE_TILE block of S per thread block
#endif
#ifndef SOFTMAX_ROWS
#define SOFTMAX_ROWS 8  // kernel 2: one warp per row, SOFTMAX_ROWS warps per block
#endif
#ifndef PV_ROWS
#define PV_ROWS 4  // kernel 3: 64 lanes across the head dimension x PV_ROWS rows of O
#endif
static_assert(HEAD_DIM % 64 == 0, "kernel 3 spreads the head dimension over 64 threads");
static_assert(SCORE_TILE * SCORE_TILE <= 1024, "kernel 1: at most 1024 threads per block");

// the (batch, head) of blockIdx's bh, and the offsets of its rows in Q/O and in K/V
struct Head {
    size_t qo, kv;
};
__device__ __forceinline__ Head head_of(int bh, int heads, int kv_heads, int seq) {
    const int b = bh / heads, h = bh % heads;
    const int kvh = h / (heads / kv_heads);  // grouped-query: heads / kv_heads share one K, V
    return {static_cast<size_t>(bh) * seq * HEAD_DIM,
            (static_cast<size_t>(b) * kv_heads + kvh) * seq * HEAD_DIM};
}

// 1. S[i, j] = scale * q_i . k_j. threadIdx.x -> key j, threadIdx.y -> query i; grid
// (ceil(N / SCORE_TILE), ceil(N / SCORE_TILE), B*H). A warp reads 16 keys HEAD_DIM elements
// apart for each d: uncoalesced, as a first kernel is.
extern "C" __global__ void __launch_bounds__(SCORE_TILE * SCORE_TILE)
attn_naive_scores(int batch, int heads, int kv_heads, int seq, float scale, int causal,
                  const elem_t* __restrict__ Q, const elem_t* __restrict__ K,
                  const elem_t* __restrict__ V, elem_t* __restrict__ O, float* __restrict__ S) {
    const int j = blockIdx.x * SCORE_TILE + threadIdx.x;
    const int i = blockIdx.y * SCORE_TILE + threadIdx.y;
    if (i >= seq || j >= seq) return;  // the grid rounds N up
    const Head hd = head_of(blockIdx.z, heads, kv_heads, seq);
    const elem_t* q = Q + hd.qo + static_cast<size_t>(i) * HEAD_DIM;
    const elem_t* k = K + hd.kv + static_cast<size_t>(j) * HEAD_DIM;
    float acc = 0.0f;
#pragma unroll 8
    for (int d = 0; d < HEAD_DIM; ++d) acc = fmaf(elem_to_float(q[d]), elem_to_float(k[d]), acc);
    // the masked entries are stored too (-inf): the next kernel reads whole rows
    S[(static_cast<size_t>(blockIdx.z) * seq + i) * seq + j] =
        (causal && j > i) ? -__int_as_float(0x7f800000) : scale * acc;
}

// 2. P = softmax(S) row by row, in place: a warp per row; max, then sum of exp(s - max), then
// the normalised values. Three passes over the row, each lane striding 32 apart (coalesced).
extern "C" __global__ void __launch_bounds__(32 * SOFTMAX_ROWS)
attn_naive_softmax(int batch, int heads, int kv_heads, int seq, float scale, int causal,
                   const elem_t* __restrict__ Q, const elem_t* __restrict__ K,
                   const elem_t* __restrict__ V, elem_t* __restrict__ O, float* __restrict__ S) {
    const int i = blockIdx.x * SOFTMAX_ROWS + threadIdx.y;
    if (i >= seq) return;  // a whole warp leaves together: the shuffles below see full warps
    float* row = S + (static_cast<size_t>(blockIdx.y) * seq + i) * seq;
    const int lane = threadIdx.x;
    const int end = causal ? i + 1 : seq;  // causal: the rest of the row is -inf, P is 0 there
    float mx = -__int_as_float(0x7f800000);
    for (int j = lane; j < end; j += 32) mx = fmaxf(mx, row[j]);
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float sum = 0.0f;
    for (int j = lane; j < end; j += 32) sum += __expf(row[j] - mx);
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const float inv = 1.0f / sum;  // j = i is never masked: sum >= 1
    for (int j = lane; j < seq; j += 32) row[j] = j < end ? __expf(row[j] - mx) * inv : 0.0f;
}

// 3. O[i, d] = sum_j P[i, j] V[j, d]. threadIdx.x -> d (64 lanes, HEAD_DIM / 64 columns
// each: V's rows read coalesced), threadIdx.y -> row i (P's element a broadcast).
extern "C" __global__ void __launch_bounds__(64 * PV_ROWS)
attn_naive_pv(int batch, int heads, int kv_heads, int seq, float scale, int causal,
              const elem_t* __restrict__ Q, const elem_t* __restrict__ K,
              const elem_t* __restrict__ V, elem_t* __restrict__ O, float* __restrict__ S) {
    constexpr int COLS = HEAD_DIM / 64;
    const int i = blockIdx.x * PV_ROWS + threadIdx.y;
    if (i >= seq) return;
    const Head hd = head_of(blockIdx.y, heads, kv_heads, seq);
    const float* p = S + (static_cast<size_t>(blockIdx.y) * seq + i) * seq;
    const elem_t* v = V + hd.kv + threadIdx.x;
    const int end = causal ? i + 1 : seq;  // P is zero past the diagonal: skip it
    float acc[COLS] = {};
    for (int j = 0; j < end; ++j) {
        const float pj = p[j];
#pragma unroll
        for (int c = 0; c < COLS; ++c)
            acc[c] = fmaf(pj, elem_to_float(v[static_cast<size_t>(j) * HEAD_DIM + 64 * c]), acc[c]);
    }
    elem_t* o = O + hd.qo + static_cast<size_t>(i) * HEAD_DIM + threadIdx.x;
#pragma unroll
    for (int c = 0; c < COLS; ++c) o[64 * c] = elem_from_float(acc[c]);
}
