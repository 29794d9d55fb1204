// gemm/gemv_splitk.cuh: the in-block split-K decode tile of stage 52 (and of stage 56, which
// runs it under programmatic dependent launch). A block owns BN columns of C, BM rows and all of
// K; its NUM_THREADS threads split K and meet through shuffles and shared memory (stage 52's
// header says how). The parameters are the including stage's -D options.
//
// Hooks the stage may define before it includes this; each is empty otherwise:
//   GEMV_SPLITK_STATE           what a thread declares before the main loop
//   GEMV_SPLITK_AFTER_B(bq, k0) once a step's 16-byte loads of B are issued, before A is read
//   GEMV_SPLITK_BEFORE_A()      before the scalar path's reads of A, and before the K tail's
//   GEMV_SPLITK_AFTER_STREAM()  after the K tail: the thread's share of B is read
//   GEMV_SPLITK_LOAD_A16(p)     a 16-byte load of A (a uint4); __ldg(p) otherwise
//   GEMV_SPLITK_LOAD_A(p)       one element of A (an elem_t); __ldg(p) otherwise
#pragma once

#ifndef BM
#error "BM (rows of C per block) must be given as -DBM=..."
#endif
#ifndef TM
#error "TM (rows of C per thread) must be given as -DTM=..."
#endif
#ifndef BN
#error "BN (columns of C per block) must be given as -DBN=..."
#endif
#ifndef KU
#error "KU (rows of B per thread per step, 16-bit types) must be given as -DKU=..."
#endif
#ifndef NUM_THREADS
#error "NUM_THREADS (threads per block) must be given as -DNUM_THREADS=..."
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1  // blocks per SM ptxas must fit: 1 leaves it the registers to issue a step's
                      // loads at once
#endif

#ifndef GEMV_SPLITK_STATE
#define GEMV_SPLITK_STATE
#endif
#ifndef GEMV_SPLITK_AFTER_B
#define GEMV_SPLITK_AFTER_B(bq, k0)
#endif
#ifndef GEMV_SPLITK_BEFORE_A
#define GEMV_SPLITK_BEFORE_A()
#endif
#ifndef GEMV_SPLITK_AFTER_STREAM
#define GEMV_SPLITK_AFTER_STREAM()
#endif
#ifndef GEMV_SPLITK_LOAD_A16
#define GEMV_SPLITK_LOAD_A16(p) __ldg(p)
#endif
#ifndef GEMV_SPLITK_LOAD_A
#define GEMV_SPLITK_LOAD_A(p) __ldg(p)
#endif

#include "elem.cuh"              // elem_t (fp32, fp16 or bf16 bits), elem_to_float, elem_from_float
#include "gemm/gemv_unpack.cuh"  // unpack16, element

constexpr int VEC = 8;                             // columns of C per thread
constexpr int PER16 = 16 / sizeof(elem_t);         // elements in 16 bytes: 8 or 4
constexpr int LOADS = VEC / PER16;                 // 16-byte loads per row: 1 or 2 (fp32)
constexpr int KSTEP = KU * 2 / sizeof(elem_t);     // rows of B per step: 128 B per thread
constexpr int TPR = BN / VEC;                      // threads across the strip
constexpr int RG = BM / TM;                        // row groups
constexpr int LANES_PER_G = TPR * RG;              // lanes of one k group
constexpr int KSPLIT = NUM_THREADS / LANES_PER_G;  // k groups per block
constexpr int WARPS = NUM_THREADS / 32;

static_assert(BN % VEC == 0, "a thread owns 8 columns: BN must be a multiple of 8");
static_assert(BM % TM == 0, "row groups of TM rows must tile the block's BM rows");
static_assert((TM & (TM - 1)) == 0, "TM is a power of two (rows per thread are picked 1, 2, 4..)");
static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "whole warps, at most 1024 threads");
static_assert(32 % LANES_PER_G == 0, "a warp holds whole k groups (the shuffle reduction)");
static_assert(KSTEP * sizeof(elem_t) % 16 == 0, "A's KSTEP elements per row are 16-byte loads");
static_assert(WARPS * BM * BN * 4 <= 48 * 1024, "the per-warp partial sums fit in 48 KiB");

// acc[r][j] += A[row r][k] * B[k][col + j] with scalar loads: the path for rows of B or A that
// do not start on 16 bytes, and for the K tail.
template <int R>
__device__ __forceinline__ void splitk_fma_row(int k, int N, int col, const elem_t* __restrict__ B,
                                        const elem_t* const (&arow)[R], float (&acc)[R][VEC]) {
    const elem_t* p = B + static_cast<size_t>(k) * N + col;
    float b[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) b[j] = col + j < N ? elem_to_float(__ldg(p + j)) : 0.0f;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const float a = elem_to_float(GEMV_SPLITK_LOAD_A(arow[r] + k));
#pragma unroll
        for (int j = 0; j < VEC; ++j) acc[r][j] = fmaf(a, b[j], acc[r][j]);
    }
}

// A thread's rows of A (rows past M read row M - 1: computed, never stored) and its zeroed
// accumulators, R rows x 8 columns.
template <int R>
__device__ __forceinline__ void splitk_start(const elem_t* __restrict__ A, int M, int K, int mb,
                                             const elem_t* (&arow)[R], float (&acc)[R][VEC]) {
    const int rg = (threadIdx.x / TPR) % RG;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        arow[r] = A + static_cast<size_t>(min(mb + rg + RG * r, M - 1)) * K;
#pragma unroll
        for (int j = 0; j < VEC; ++j) acc[r][j] = 0.0f;
    }
}

// The block's place: the row blocks of one strip of columns run side by side (blockIdx is
// relabelled so that the row block varies fastest in launch order, and a strip of B comes from
// HBM once, then from L2, instead of once per row block several waves apart); rows of C it
// writes (>= 1: the grid rounds up), and the rows per thread that cover them.
struct SplitkBlock {
    int mb, n0, rows, need;
};
__device__ __forceinline__ SplitkBlock splitk_block(int M) {
    const int linear = blockIdx.y * gridDim.x + blockIdx.x;
    const int mb = linear % gridDim.y * BM, n0 = linear / gridDim.y * BN;
    const int rows = min(BM, M - mb);
    return {mb, n0, rows, (rows + RG - 1) / RG};
}

// The end of a block's tile: acc (R rows x 8 columns, this thread's share of K) reduced over the
// k groups, first the 32 / LANES_PER_G groups of a warp (shuffles), then the warps (shared
// memory), and stored as alpha * sum + beta * C. Every thread calls it: there is a barrier.
template <int R>
__device__ __forceinline__ void splitk_finish(float (&acc)[R][VEC], int M, int N, float alpha,
                                              float beta, elem_t* __restrict__ C, int mb, int n0,
                                              int rows, float (*red)[BM][BN]) {
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int c = tid % TPR, rg = (tid / TPR) % RG;
#pragma unroll
    for (int off = LANES_PER_G; off < 32; off *= 2)
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int j = 0; j < VEC; ++j) acc[r][j] += __shfl_xor_sync(0xffffffffu, acc[r][j], off);
    if (lane < LANES_PER_G) {
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int j = 0; j < VEC; j += 4)
                *reinterpret_cast<float4*>(&red[warp][rg + RG * r][c * VEC + j]) =
                    make_float4(acc[r][j], acc[r][j + 1], acc[r][j + 2], acc[r][j + 3]);
    }
    __syncthreads();

    // Epilogue: one thread per element of the block's tile, BN neighbouring columns per row.
    for (int o = tid; o < rows * BN; o += NUM_THREADS) {
        const int r = o / BN, cc = o % BN, m = mb + r, n = n0 + cc;
        if (n >= N) continue;  // rows < `rows` are inside M; rows past are never visited
        float sum = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) sum += red[w][r][cc];
        const size_t idx = static_cast<size_t>(m) * N + n;
        float v = alpha * sum;
        if (beta != 0.0f) v = fmaf(beta, elem_to_float(C[idx]), v);  // beta == 0: C is never read
        C[idx] = elem_from_float(v);
    }
}

// Stage 52's tile, one block: a BN-column strip, all of K, rows mb .. mb + BM; R rows per thread
// (R <= TM). VEC16: the 16-byte path (alignment checked by the caller), else scalar loads.
template <int R, bool VEC16>
__device__ __forceinline__ void splitk_tile(int M, int N, int K, float alpha,
                                            const elem_t* __restrict__ A,
                                            const elem_t* __restrict__ B, float beta,
                                            elem_t* __restrict__ C, int mb, int n0, int rows,
                                            float (*red)[BM][BN]) {
    const int tid = threadIdx.x;
    const int c = tid % TPR, g = tid / LANES_PER_G;
    const int col = n0 + c * VEC;
    const elem_t* arow[R];
    float acc[R][VEC];
    splitk_start<R>(A, M, K, mb, arow, acc);

    // 16-byte path: a piece past N reads the last piece of the row instead (its sums are
    // never stored), so every load is unconditional and the compiler issues them all up front
    int piece[LOADS];
#pragma unroll
    for (int l = 0; l < LOADS; ++l) piece[l] = min(col + l * PER16, N - PER16) / PER16;
    const int ldb = N / PER16;  // a row of B in 16-byte units (when VEC16)

    GEMV_SPLITK_STATE
    int k0 = g * KSTEP;
    for (; k0 + KSTEP <= K; k0 += KSPLIT * KSTEP) {
        if (VEC16) {
            // every load of the step is issued before the first FMA: KSTEP x 16 B of B in
            // flight
            uint4 braw[KSTEP][LOADS], araw[R][KSTEP / PER16];
            const uint4* bq = reinterpret_cast<const uint4*>(B) + static_cast<size_t>(k0) * ldb;
#pragma unroll
            for (int u = 0; u < KSTEP; ++u)
#pragma unroll
                for (int l = 0; l < LOADS; ++l) braw[u][l] = __ldg(bq + u * ldb + piece[l]);
            GEMV_SPLITK_AFTER_B(bq, k0);  // the step's loads of B are in flight; A comes next
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int l = 0; l < KSTEP / PER16; ++l)
                    araw[r][l] = GEMV_SPLITK_LOAD_A16(
                        reinterpret_cast<const uint4*>(arow[r] + k0) + l);
            // convert as used: one row of B (8 floats) and one element of A per row at a time
#pragma unroll
            for (int u = 0; u < KSTEP; ++u) {
                float b[VEC];
#pragma unroll
                for (int l = 0; l < LOADS; ++l) unpack16(braw[u][l], &b[l * PER16]);
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    const float a = element(araw[r][u / PER16], u % PER16);
#pragma unroll
                    for (int j = 0; j < VEC; ++j) acc[r][j] = fmaf(a, b[j], acc[r][j]);
                }
            }
        } else {
            GEMV_SPLITK_BEFORE_A();
#pragma unroll 2
            for (int u = 0; u < KSTEP; ++u) splitk_fma_row(k0 + u, N, col, B, arow, acc);
        }
    }
    GEMV_SPLITK_BEFORE_A();  // before the K tail's reads of A and the epilogue's writes of C
    for (; k0 < K; ++k0) splitk_fma_row(k0, N, col, B, arow, acc);  // the K tail: < KSTEP rows
    GEMV_SPLITK_AFTER_STREAM();
    splitk_finish<R>(acc, M, N, alpha, beta, C, mb, n0, rows, red);
}

// The smallest R in TM, TM/2, .. 1 that covers `need` rows per thread (block-uniform).
template <int R>
__device__ __forceinline__ void splitk_pick_rows(int need, bool vec, int M, int N, int K, float alpha,
                                                 const elem_t* __restrict__ A,
                                                 const elem_t* __restrict__ B, float beta,
                                                 elem_t* __restrict__ C, int mb, int n0, int rows,
                                                 float (*red)[BM][BN]) {
    if constexpr (R > 1) {
        if (need <= R / 2) {
            splitk_pick_rows<R / 2>(need, vec, M, N, K, alpha, A, B, beta, C, mb, n0, rows, red);
            return;
        }
    }
    if (vec)
        splitk_tile<R, true>(M, N, K, alpha, A, B, beta, C, mb, n0, rows, red);
    else
        splitk_tile<R, false>(M, N, K, alpha, A, B, beta, C, mb, n0, rows, red);
}
