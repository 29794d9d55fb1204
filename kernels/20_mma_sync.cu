// Stage 20: Tensor Cores through mma.sync. FP16 or BF16 in, FP32 accumulate, C in the input
// type (like HGEMM). A BM x BN block tile is staged in shared memory exactly as in the SIMT
// stages, but a warp now multiplies 16x8x16 sub-tiles with one
// `mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}` each (SASS: HMMA.16816.F32): 4096 FLOPs
// per instruction instead of 64 for a warp's FFMA.
// The simplest correct version: 64 x 64 block tile, 4 warps of WM x WN = 32 x 32 (2 x 4 MMAs per
// 16 of K), operands gathered from shared memory with plain 32-bit and 16-bit loads into the
// fragment layout the PTX ISA gives for m16n8k16. Those loads are bank-conflicted (a warp's A
// fragment reads 8 rows 64 bytes apart, B pairs 128 bytes apart) and B needs two 16-bit loads per
// register: stage 21 replaces them with ldmatrix on a swizzled tile.
// Any M, N, K: rows, columns and the K tail outside the matrices are zero-filled in shared
// memory; 16-byte global loads where K (for A) and N (for B) are multiples of 8, else 2-byte.
// Elements are raw 16-bit patterns (unsigned short): NVRTC from PyPI has no cuda_fp16.h or
// cuda_bf16.h, so conversions are PTX (cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32, in ptx_sm80.cuh).
#ifndef BM
#error "BM (rows of the C tile) must be given as -DBM=..."
#endif
#ifndef BN
#error "BN (columns of the C tile) must be given as -DBN=..."
#endif
#ifndef BK
#error "BK (depth of one K step) must be given as -DBK=..."
#endif
#ifndef WM
#error "WM (rows of the warp tile) must be given as -DWM=..."
#endif
#ifndef WN
#error "WN (columns of the warp tile) must be given as -DWN=..."
#endif

#include "ptx_sm80.cuh"  // elem_t (-DELEM_BF16=1: bf16), pack2, to_float, mma_m16n8k16

typedef unsigned int u32;

constexpr int NUM_THREADS = 32 * (BM / WM) * (BN / WN);
constexpr int WARPS_N = BN / WN;
constexpr int MI = WM / 16;  // m16 MMA tiles per warp tile
constexpr int NI = WN / 8;   // n8 MMA tiles per warp tile

static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
static_assert(WM % 16 == 0 && WN % 8 == 0, "a warp tile is made of 16 x 8 MMA tiles");
static_assert(BK % 16 == 0, "one MMA consumes 16 of K");
static_assert(BK % 8 == 0 && BN % 8 == 0, "tiles are loaded in chunks of 8 elements (16 bytes)");
static_assert((BM * BK / 8) % NUM_THREADS == 0, "every thread loads the same number of A chunks");
static_assert((BK * BN / 8) % NUM_THREADS == 0, "every thread loads the same number of B chunks");
static_assert((BM * BK + BK * BN) * 2 <= 48 * 1024, "the static shared tiles must fit in 48 KiB");

// 8 consecutive elements of row `r` starting at column `c` (a multiple of 8) of a rows x cols
// row-major matrix, zeros outside it. `vec`: cols % 8 == 0, so a chunk is wholly in or out and
// 16-byte aligned (cupy allocations are 256-byte aligned).
__device__ __forceinline__ uint4 load_chunk(const elem_t* __restrict__ p, int r, int c, int rows,
                                            int cols, bool vec) {
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (r >= rows) return v;
    const elem_t* src = p + static_cast<size_t>(r) * cols + c;
    if (vec) {
        if (c < cols) v = *reinterpret_cast<const uint4*>(src);
        return v;
    }
    u32 w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const u32 lo = c + 2 * i < cols ? src[2 * i] : 0u;
        const u32 hi = c + 2 * i + 1 < cols ? src[2 * i + 1] : 0u;
        w[i] = lo | (hi << 16);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
gemm_mma_sync(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
              const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C) {
    __shared__ __align__(16) elem_t As[BM][BK];  // row-major, K contiguous
    __shared__ __align__(16) elem_t Bs[BK][BN];  // row-major, N contiguous

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;  // "groupID" and "threadID_in_group" of the PTX ISA
    const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const bool vec_a = K % 8 == 0, vec_b = N % 8 == 0;

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int i = 0; i < BM * BK / 8 / NUM_THREADS; ++i) {
            const int f = tid + i * NUM_THREADS, r = f / (BK / 8), c = (f % (BK / 8)) * 8;
            *reinterpret_cast<uint4*>(&As[r][c]) = load_chunk(A, m0 + r, k0 + c, M, K, vec_a);
        }
#pragma unroll
        for (int i = 0; i < BK * BN / 8 / NUM_THREADS; ++i) {
            const int f = tid + i * NUM_THREADS, r = f / (BN / 8), c = (f % (BN / 8)) * 8;
            // rows of B past K are zeros: the K tail then adds nothing
            const uint4 v = k0 + r < K ? load_chunk(B, k0 + r, n0 + c, K, N, vec_b)
                                       : make_uint4(0u, 0u, 0u, 0u);
            *reinterpret_cast<uint4*>(&Bs[r][c]) = v;
        }
        __syncthreads();

#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            u32 a[MI][4], b[NI][2];
#pragma unroll
            for (int i = 0; i < MI; ++i) {
                const int r = wm + i * 16 + g;  // a0,a1: (g, 2t..2t+1); a2,a3: row g+8;
                const int c = kk + 2 * t;       // a4..a7: the same 8 columns further along K
                a[i][0] = *reinterpret_cast<const u32*>(&As[r][c]);
                a[i][1] = *reinterpret_cast<const u32*>(&As[r + 8][c]);
                a[i][2] = *reinterpret_cast<const u32*>(&As[r][c + 8]);
                a[i][3] = *reinterpret_cast<const u32*>(&As[r + 8][c + 8]);
            }
#pragma unroll
            for (int j = 0; j < NI; ++j) {
                const int c = wn + j * 8 + g, r = kk + 2 * t;  // b0,b1: k = 2t, 2t+1 of column g
                b[j][0] = static_cast<u32>(Bs[r][c]) | (static_cast<u32>(Bs[r + 1][c]) << 16);
                b[j][1] = static_cast<u32>(Bs[r + 8][c]) | (static_cast<u32>(Bs[r + 9][c]) << 16);
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NI; ++j) mma_m16n8k16(acc[i][j], a[i], b[j][0], b[j][1]);
        }
        __syncthreads();
    }

    // Epilogue: d0,d1 at (g, 2t..2t+1), d2,d3 at (g+8, 2t..2t+1) of each 16 x 8 tile.
#pragma unroll
    for (int i = 0; i < MI; ++i) {
#pragma unroll
        for (int j = 0; j < NI; ++j) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = m0 + wm + i * 16 + g + 8 * h;
                const int col = n0 + wn + j * 8 + 2 * t;
                if (row >= M) continue;
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    if (col + e >= N) continue;
                    const size_t idx = static_cast<size_t>(row) * N + col + e;
                    float v = alpha * acc[i][j][2 * h + e];
                    if (beta != 0.0f) v = fmaf(beta, to_float(C[idx]), v);  // beta == 0: C unread
                    C[idx] = static_cast<elem_t>(pack2(v, 0.0f) & 0xffffu);
                }
            }
        }
    }
}
