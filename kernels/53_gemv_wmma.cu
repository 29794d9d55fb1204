// Stage 53: decode on Tensor Cores. Stage 52 streams B well, but its FFMAs are not free: per
// element of B a row of A costs one FFMA, and at M = 16 an fp16 weight needs 16 FMAs per 2 bytes,
// about what the SMs' FP32 pipes deliver at HBM speed (SMs x 128 FFMA/clk x clock against
// bandwidth / 2 B x 16). Tensor Cores have 16x that headroom, so here the same in-block split-K
// feeds HMMA: rows of A are padded to 16 (at M = 1 the padding costs nothing that matters), and
// up to BM rows share each byte of B.
// A block owns a BM x BN tile of C and all of K; warp w takes K steps of KW rows, k = w * KW,
// then every WARPS * KW rows. Per step a warp loads its KW x BN slice of B and BM x KW slice of A
// with 16-byte loads into registers (issued before the previous step's MMAs), stores them to its
// own region of shared memory (rows padded by 8 elements: conflict-free ldmatrix; __syncwarp
// only), and runs 16 x 16 x 16 WMMA on them with FP32 accumulators. At the end each warp stores
// its BM x BN partial tile to shared memory, one barrier, and every thread sums one element over
// the warps and applies alpha and beta (no workspace, no atomics). WMMA through the compiler's
// builtins (__hmma_m16n16k16_*, __mma_bf16_m16n16k16_*): NVRTC from PyPI ships no mma.h.
// Any M, N, K: rows past M, columns past N and rows past K are zeros in shared memory; 16-byte
// loads where rows start on 16 bytes (N % 8 == 0 for B, K % 8 == 0 for A, aligned buffers), else
// 2-byte loads gathered into the same 16-byte stores.
#ifndef BM
#error "BM (rows of C per block, a multiple of 16) must be given as -DBM=..."
#endif
#ifndef BN
#error "BN (columns of C per block) must be given as -DBN=..."
#endif
#ifndef KW
#error "KW (rows of K a warp takes per step) must be given as -DKW=..."
#endif
#ifndef NUM_THREADS
#error "NUM_THREADS (threads per block: warps splitting K) must be given as -DNUM_THREADS=..."
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2  // blocks per SM the registers must allow (2 x 256 threads: <= 128 each)
#endif


#include "elem.cuh"  // elem_t (fp32, fp16 or bf16 bits), elem_to_float, elem_from_float

constexpr int WARPS = NUM_THREADS / 32;
constexpr int LDA_S = KW + 8;  // shared row strides, in elements: +8 (16 bytes) staggers the
constexpr int LDB_S = BN + 8;  // rows of each 8x8 ldmatrix over all 32 banks
constexpr int B_PIECES = KW * BN / 8 / 32;  // 16-byte pieces of B per lane per step
constexpr int A_PIECES = BM * KW / 8 / 32;  // and of A
constexpr int STAGE_BYTES = (KW * LDB_S + BM * LDA_S) * 2;
constexpr int RED_BYTES = BM * BN * 4;  // a warp's partial tile (FP32), in the same region
constexpr int WARP_BYTES = ((STAGE_BYTES > RED_BYTES ? STAGE_BYTES : RED_BYTES) + 127) / 128 * 128;

static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "whole warps, at most 1024 threads");
static_assert(BM % 16 == 0 && BN % 16 == 0 && KW % 16 == 0, "tiles are made of 16x16x16 WMMA");
static_assert(BM <= 64, "a decode stage: BM x BN accumulators per warp stay in registers");
static_assert(32 % (BN / 8) == 0 && (KW * BN / 8) % 32 == 0,
              "a warp loads whole rows of B's slice, every lane the same number of 16-byte pieces");
static_assert(32 % (KW / 8) == 0 && (BM * KW / 8) % 32 == 0,
              "a warp loads whole rows of A's slice, every lane the same number of 16-byte pieces");

// The shared-memory size the registry passes as dynamic shared memory (Stage.smem_bytes).
constexpr int SMEM_BYTES = WARPS * WARP_BYTES;

#if ELEM_BF16
typedef int frag_ab[4];  // bf16 16x16 operand fragment: 8 elements per lane
__device__ __forceinline__ void ld_a(frag_ab& f, const elem_t* p, unsigned ld) {
    __mma_bf16_m16n16k16_ld_a(f, reinterpret_cast<const int*>(p), ld, 0);  // 0: row-major
}
__device__ __forceinline__ void ld_b(frag_ab& f, const elem_t* p, unsigned ld) {
    __mma_bf16_m16n16k16_ld_b(f, reinterpret_cast<const int*>(p), ld, 0);  // 0: row-major
}
__device__ __forceinline__ void mma(float (&d)[8], const frag_ab& a, const frag_ab& b) {
    __mma_bf16_m16n16k16_mma_f32(d, a, b, d, 0, 0);  // layout 0: A row, B row; no saturation
}
#else
typedef int frag_ab[8];  // fp16 16x16 operand fragment
__device__ __forceinline__ void ld_a(frag_ab& f, const elem_t* p, unsigned ld) {
    __hmma_m16n16k16_ld_a(f, reinterpret_cast<const int*>(p), ld, 0);
}
__device__ __forceinline__ void ld_b(frag_ab& f, const elem_t* p, unsigned ld) {
    __hmma_m16n16k16_ld_b(f, reinterpret_cast<const int*>(p), ld, 0);
}
__device__ __forceinline__ void mma(float (&d)[8], const frag_ab& a, const frag_ab& b) {
    __hmma_m16n16k16_mma_f32f32(d, a, b, d, 0, 0);
}
#endif

// 8 elements of row r from column c of a rows x cols row-major matrix, zeros outside it, by
// 2-byte loads: the path for rows that do not start on 16 bytes.
__device__ __forceinline__ uint4 gather8(const elem_t* __restrict__ p, int r, int c, int rows,
                                         int cols) {
    unsigned w[4] = {0u, 0u, 0u, 0u};
    if (r < rows) {
        const elem_t* q = p + static_cast<size_t>(r) * cols;
#pragma unroll
        for (int e = 0; e < 8; ++e)
            if (c + e < cols) w[e / 2] |= static_cast<unsigned>(__ldg(q + c + e)) << (16 * (e % 2));
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

template <bool VA, bool VB>
__device__ __forceinline__ void wmma_tile(int M, int N, int K, float alpha,
                                          const elem_t* __restrict__ A,
                                          const elem_t* __restrict__ B, float beta,
                                          elem_t* __restrict__ C, unsigned char* smem,
                                          int mb, int n0) {
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    elem_t* As = reinterpret_cast<elem_t*>(smem + warp * WARP_BYTES);  // [BM][LDA_S]
    elem_t* Bs = As + BM * LDA_S;                                       // [KW][LDB_S]

    float acc[BM / 16][BN / 16][8];
#pragma unroll
    for (int i = 0; i < BM / 16; ++i)
#pragma unroll
        for (int j = 0; j < BN / 16; ++j)
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[i][j][e] = 0.0f;

    // Lane l's pieces of a step: of B, rows l / BPR + i * (32 / BPR) (BPR = BN / 8 pieces per
    // row) at columns 8 * (l % BPR); of A, rows l / APR + i * (32 / APR) at k 8 * (l % APR).
    // One address per operand and lane, the pieces at constant strides from it.
    constexpr int BPR = BN / 8, APR = KW / 8;
    const int b_row = lane / BPR, b_col = 8 * (lane % BPR);
    const int a_row = lane / APR, a_col = 8 * (lane % APR);
    elem_t* const bs = Bs + b_row * LDB_S + b_col;  // this lane's first piece in shared memory
    elem_t* const as = As + a_row * LDA_S + a_col;

    // 16-byte operands are loaded a step ahead into registers; a 2-byte one is gathered
    // straight into shared memory (a rare shape: kept light, it sets no register budget)
    uint4 a_reg[A_PIECES], b_reg[B_PIECES];
    auto load = [&](int kw) {
        if (VB) {
            const bool in_n = n0 + b_col < N;  // N % 8 == 0: a piece is wholly in or out
            const uint4* p = reinterpret_cast<const uint4*>(
                B + static_cast<size_t>(kw + b_row) * N + n0 + b_col);
#pragma unroll
            for (int i = 0; i < B_PIECES; ++i)
                b_reg[i] = in_n && kw + b_row + i * (32 / BPR) < K
                               ? __ldg(p + static_cast<size_t>(i) * (32 / BPR) * (N / 8))
                               : make_uint4(0u, 0u, 0u, 0u);
        }
        if (VA) {
            const bool in_k = kw + a_col < K;  // K % 8 == 0: a piece is wholly in or out
            const uint4* p = reinterpret_cast<const uint4*>(
                A + static_cast<size_t>(mb + a_row) * K + kw + a_col);
#pragma unroll
            for (int i = 0; i < A_PIECES; ++i)
                a_reg[i] = in_k && mb + a_row + i * (32 / APR) < M
                               ? __ldg(p + static_cast<size_t>(i) * (32 / APR) * (K / 8))
                               : make_uint4(0u, 0u, 0u, 0u);
        }
    };

    int kw = warp * KW;
    if (kw < K) load(kw);
    for (; kw < K; kw += WARPS * KW) {  // warp-uniform: WMMA needs the whole warp
        __syncwarp();                    // the previous step's ldmatrix reads are done
#pragma unroll(VB ? B_PIECES : 1)
        for (int i = 0; i < B_PIECES; ++i)
            *reinterpret_cast<uint4*>(bs + i * (32 / BPR) * LDB_S) =
                VB ? b_reg[i] : gather8(B, kw + b_row + i * (32 / BPR), n0 + b_col, K, N);
#pragma unroll(VA ? A_PIECES : 1)
        for (int i = 0; i < A_PIECES; ++i)
            *reinterpret_cast<uint4*>(as + i * (32 / APR) * LDA_S) =
                VA ? a_reg[i] : gather8(A, mb + a_row + i * (32 / APR), kw + a_col, M, K);
        __syncwarp();
        if (kw + WARPS * KW < K) load(kw + WARPS * KW);  // the next step's loads fly meanwhile
#pragma unroll
        for (int kk = 0; kk < KW; kk += 16) {
            frag_ab a[BM / 16], b;
#pragma unroll
            for (int i = 0; i < BM / 16; ++i) ld_a(a[i], As + i * 16 * LDA_S + kk, LDA_S);
#pragma unroll
            for (int j = 0; j < BN / 16; ++j) {
                ld_b(b, Bs + kk * LDB_S + j * 16, LDB_S);
#pragma unroll
                for (int i = 0; i < BM / 16; ++i) mma(acc[i][j], a[i], b);
            }
        }
    }

    // The warps' partial tiles meet in shared memory (each in its own region), then one thread
    // per element of C sums them. Every thread gets here: the barrier sees the whole block.
    __syncwarp();
    float* red = reinterpret_cast<float*>(smem + warp * WARP_BYTES);  // [BM][BN]
#pragma unroll
    for (int i = 0; i < BM / 16; ++i)
#pragma unroll
        for (int j = 0; j < BN / 16; ++j)
            __hmma_m16n16k16_st_c_f32(red + i * 16 * BN + j * 16, acc[i][j], BN, 0);  // row-major
    __syncthreads();

    const int rows = min(BM, M - mb);
    for (int o = tid; o < rows * BN; o += NUM_THREADS) {
        const int r = o / BN, cc = o % BN, n = n0 + cc;
        if (n >= N) continue;
        float sum = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w)
            sum += reinterpret_cast<const float*>(smem + w * WARP_BYTES)[r * BN + cc];
        const size_t idx = static_cast<size_t>(mb + r) * N + n;
        float v = alpha * sum;
        if (beta != 0.0f) v = fmaf(beta, elem_to_float(C[idx]), v);  // beta == 0: C is never read
        C[idx] = elem_from_float(v);
    }
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MIN_BLOCKS)
gemv_wmma(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
          const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C) {
    extern __shared__ __align__(128) unsigned char smem[];  // SMEM_BYTES, dynamic
    // the row blocks of one strip of columns (M > BM) run side by side (row block fastest in
    // launch order): the strip of B comes from HBM once, then from L2
    const int linear = blockIdx.y * gridDim.x + blockIdx.x;
    const int mb = linear % gridDim.y * BM, n0 = linear / gridDim.y * BN;
    const bool va = K % 8 == 0 && reinterpret_cast<unsigned long long>(A) % 16 == 0;
    const bool vb = N % 8 == 0 && reinterpret_cast<unsigned long long>(B) % 16 == 0;
    if (va && vb)
        wmma_tile<true, true>(M, N, K, alpha, A, B, beta, C, smem, mb, n0);
    else if (vb)
        wmma_tile<false, true>(M, N, K, alpha, A, B, beta, C, smem, mb, n0);
    else if (va)
        wmma_tile<true, false>(M, N, K, alpha, A, B, beta, C, smem, mb, n0);
    else
        wmma_tile<false, false>(M, N, K, alpha, A, B, beta, C, smem, mb, n0);
}
