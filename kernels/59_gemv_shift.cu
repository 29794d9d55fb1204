// Stage 59: decode at any pitch. Stages 51-56 load B 16 bytes at a time only where each row of B
// starts on 16 bytes (N a multiple of 8 in 16-bit types, K likewise for A); at N = 6150 or
// K = 4097 they take one 2-byte load per element, and a product HBM should bound is bound by
// load instructions instead. Here stage 52's tile (a block owns BN columns and all of K, its
// threads split K) loads, for each row of its strip, the two aligned 16-byte pieces that hold a
// thread's 8 columns, and shifts them by the row's offset (gemm/shift16.cuh): one funnel shift
// per word, the same offset for every lane of the row. The second piece is the next lane's first,
// so it comes from L1: HBM still reads each byte of B once. A's rows (pitch K) come the same way.
// A step ends at least 16 bytes before K does, so no piece reads past a buffer; the last rows of
// K take stage 52's scalar path, as do N < 16 (a cut piece would read past B) and misaligned
// element pointers. Any M, N, K otherwise; rows past M and columns past N are never stored.
#include "gemm/gemv_splitk.cuh"  // stage 52's constants, its scalar row, start and finish
#include "gemm/shift16.cuh"      // shift16, piece_below

static_assert(LOADS * PER16 == VEC, "a thread's 8 columns are LOADS whole pieces");

// One block: a BN-column strip, all of K, rows mb .. mb + BM; R rows per thread (R <= TM).
// SHIFT: the shifted 16-byte path, else scalar loads throughout.
template <int R, bool SHIFT>
__device__ __forceinline__ void shift_tile(int M, int N, int K, float alpha,
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

    // a piece wholly past N reads the row's last 8 columns instead (its sums are never stored),
    // so every load is unconditional and the compiler issues a step's loads up front; the piece
    // N cuts reads on into the next row (N >= 16: still inside B), whose sums are never stored
    const int colp = col < N ? col : N - VEC;
    constexpr int AP = KSTEP / PER16;  // pieces of A per row per step
    int k0 = g * KSTEP;
    if (SHIFT) {
        for (; k0 + KSTEP + PER16 <= K; k0 += KSPLIT * KSTEP) {
            uint4 blo[KSTEP][LOADS], bhi[KSTEP][LOADS], alo[R][AP + 1];
            unsigned boff[KSTEP], aoff[R];
#pragma unroll
            for (int u = 0; u < KSTEP; ++u) {
                const size_t e = static_cast<size_t>(k0 + u) * N + colp;
                const uint4* p = piece_below(B + e, boff[u]);
#pragma unroll
                for (int l = 0; l < LOADS; ++l) {
                    blo[u][l] = __ldg(p + l);
                    bhi[u][l] = __ldg(p + l + 1);
                }
            }
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const uint4* p = piece_below(arow[r] + k0, aoff[r]);
#pragma unroll
                for (int l = 0; l <= AP; ++l) alo[r][l] = __ldg(p + l);
            }
            uint4 a16[R][AP];
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int l = 0; l < AP; ++l)
                    a16[r][l] = shift16(alo[r][l], alo[r][l + 1], aoff[r]);
#pragma unroll
            for (int u = 0; u < KSTEP; ++u) {
                float b[VEC];
#pragma unroll
                for (int l = 0; l < LOADS; ++l)
                    unpack16(shift16(blo[u][l], bhi[u][l], boff[u]), &b[l * PER16]);
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    const float a = element(a16[r][u / PER16], u % PER16);
#pragma unroll
                    for (int j = 0; j < VEC; ++j) acc[r][j] = fmaf(a, b[j], acc[r][j]);
                }
            }
        }
    }
    // the rest of this k group's steps on scalar loads: the last rows of K (or all of them)
    for (; k0 < K; k0 += KSPLIT * KSTEP)
        for (int u = 0; u < KSTEP && k0 + u < K; ++u)
            splitk_fma_row(k0 + u, N, col, B, arow, acc);
    splitk_finish<R>(acc, M, N, alpha, beta, C, mb, n0, rows, red);
}

// The smallest R in TM, TM/2, .. 1 that covers `need` rows per thread (block-uniform).
template <int R>
__device__ __forceinline__ void shift_pick_rows(int need, bool shift, int M, int N, int K,
                                                float alpha, const elem_t* __restrict__ A,
                                                const elem_t* __restrict__ B, float beta,
                                                elem_t* __restrict__ C, int mb, int n0, int rows,
                                                float (*red)[BM][BN]) {
    if constexpr (R > 1) {
        if (need <= R / 2) {
            shift_pick_rows<R / 2>(need, shift, M, N, K, alpha, A, B, beta, C, mb, n0, rows, red);
            return;
        }
    }
    if (shift)
        shift_tile<R, true>(M, N, K, alpha, A, B, beta, C, mb, n0, rows, red);
    else
        shift_tile<R, false>(M, N, K, alpha, A, B, beta, C, mb, n0, rows, red);
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MIN_BLOCKS)
gemv_shift(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
           const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C) {
    __shared__ __align__(16) float red[WARPS][BM][BN];
    const SplitkBlock blk = splitk_block(M);  // stage 52's order: a strip's row blocks together
    // pieces are found from each row's address: the buffers need only their elements' alignment
    const unsigned long long ab = reinterpret_cast<unsigned long long>(A) |
                                  reinterpret_cast<unsigned long long>(B);
    const bool shift = N >= 2 * VEC && ab % sizeof(elem_t) == 0;
    shift_pick_rows<TM>(blk.need, shift, M, N, K, alpha, A, B, beta, C, blk.mb, blk.n0, blk.rows,
                        red);
}
