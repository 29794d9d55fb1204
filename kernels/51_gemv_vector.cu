// Stage 51: 16-byte loads along N. B is K x N row-major, so a row of B is contiguous along N:
// a thread owns VEC = 8 neighbouring columns of C and reads them with one 16-byte load per row
// of B (two for fp32), a warp reads 32 x 16 = 512 contiguous bytes of a row at once, and per
// load instruction 8x (4x) the bytes of stage 50 arrive. Register blocking over M: the thread
// keeps TM rows x 8 columns of accumulators, so the rows of A it covers share each load of B;
// the block's threads all read the same A[m][k] (a broadcast through L1).
// The catch, and why stage 52 exists: each thread still walks ALL of K, so the whole GPU has
// only N / 8 threads: at N = 4096, 512 threads (16 warps of 64-thread blocks on 8 SMs). Bytes
// in flight, not load width, bound a stream from HBM, and this stage has few: a thread keeps
// the unroll's 4 rows x 16 B in flight, 32 KiB for the whole GPU at N = 4096.
// Any M, N, K: 16-byte loads need every row of B to start on 16 bytes (N % (16 / sizeof(T))
// == 0); otherwise the same loop runs on scalar loads. Columns past N read nothing; rows of A
// past M compute on a clamped row and are never stored. fp16/bf16 elements are raw 16-bit
// patterns (NVRTC from PyPI has no cuda_fp16.h), converted to fp32 for FFMA.
#ifndef TM
#error "TM (rows of C per thread) must be given as -DTM=..."
#endif
#ifndef NUM_THREADS
#error "NUM_THREADS (threads per block, 8 columns each) must be given as -DNUM_THREADS=..."
#endif


#include "elem.cuh"              // elem_t (fp32, fp16 or bf16 bits), elem_to_float, elem_from_float
#include "gemm/gemv_unpack.cuh"  // unpack16: 16 bytes of B as floats

constexpr int VEC = 8;                      // columns of C per thread
constexpr int PER16 = 16 / sizeof(elem_t);  // elements in 16 bytes: 8 or 4
constexpr int LOADS = VEC / PER16;          // 16-byte loads per row: 1 or 2 (fp32)
constexpr int BN = NUM_THREADS * VEC;       // columns of C per block

static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "whole warps, at most 1024 threads");
static_assert(TM >= 1 && (TM & (TM - 1)) == 0, "TM is a power of two (rows are picked 1, 2, 4..)");
static_assert(TM * VEC <= 64, "TM x 8 accumulators must leave registers for loads in flight");

// R rows of C (R <= TM) starting at m0, this thread's 8 columns from col. VEC16: 16-byte loads
// (the caller checked alignment), else one scalar load per element.
template <int R, bool VEC16>
__device__ __forceinline__ void vector_rows(int M, int N, int K, float alpha,
                                            const elem_t* __restrict__ A,
                                            const elem_t* __restrict__ B, float beta,
                                            elem_t* __restrict__ C, int m0, int col) {
    const elem_t* arow[R];  // rows past M read row M - 1 (computed, never stored)
#pragma unroll
    for (int r = 0; r < R; ++r) arow[r] = A + static_cast<size_t>(min(m0 + r, M - 1)) * K;

    float acc[R][VEC];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int j = 0; j < VEC; ++j) acc[r][j] = 0.0f;

    const elem_t* p = B + col;
#pragma unroll 4
    for (int k = 0; k < K; ++k, p += N) {
        float b[VEC];
        if (VEC16) {
#pragma unroll
            for (int l = 0; l < LOADS; ++l) {  // N % PER16 == 0: a 16-byte piece is in or out
                const uint4 v = col + l * PER16 < N
                                    ? __ldg(reinterpret_cast<const uint4*>(p + l * PER16))
                                    : make_uint4(0u, 0u, 0u, 0u);
                unpack16(v, &b[l * PER16]);
            }
        } else {
#pragma unroll
            for (int j = 0; j < VEC; ++j) b[j] = col + j < N ? elem_to_float(__ldg(p + j)) : 0.0f;
        }
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const float a = elem_to_float(__ldg(arow[r] + k));  // the same address for the whole block
#pragma unroll
            for (int j = 0; j < VEC; ++j) acc[r][j] = fmaf(a, b[j], acc[r][j]);
        }
    }

#pragma unroll
    for (int r = 0; r < R; ++r) {
        if (m0 + r >= M) continue;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            if (col + j >= N) continue;
            const size_t idx = static_cast<size_t>(m0 + r) * N + col + j;
            float v = alpha * acc[r][j];
            if (beta != 0.0f) v = fmaf(beta, elem_to_float(C[idx]), v);  // beta == 0: C is never read
            C[idx] = elem_from_float(v);
        }
    }
}

// The smallest R in TM, TM/2, .. 1 that covers `rows` (block-uniform).
template <int R>
__device__ __forceinline__ void pick_rows(int rows, bool vec, int M, int N, int K, float alpha,
                                          const elem_t* __restrict__ A,
                                          const elem_t* __restrict__ B, float beta,
                                          elem_t* __restrict__ C, int m0, int col) {
    if constexpr (R > 1) {
        if (rows <= R / 2) {
            pick_rows<R / 2>(rows, vec, M, N, K, alpha, A, B, beta, C, m0, col);
            return;
        }
    }
    if (vec)
        vector_rows<R, true>(M, N, K, alpha, A, B, beta, C, m0, col);
    else
        vector_rows<R, false>(M, N, K, alpha, A, B, beta, C, m0, col);
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
gemv_vector(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
            const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C) {
    const int col = blockIdx.x * BN + threadIdx.x * VEC;
    const int m0 = blockIdx.y * TM;
    if (col >= N) return;  // no barrier below: threads past N may leave
    // 16-byte loads: every row of B (k * N elements) and the buffer start on 16 bytes
    const bool vec = N % PER16 == 0 && reinterpret_cast<unsigned long long>(B) % 16 == 0;
    pick_rows<TM>(min(TM, M - m0), vec, M, N, K, alpha, A, B, beta, C, m0, col);
}
