// Stage 21: ldmatrix on an XOR-swizzled shared tile. Same mma.sync m16n8k16 as stage 20, but
// each operand fragment now comes from one `ldmatrix.sync.aligned.m8n8.x4` (four 8 x 8 matrices
// of 16-bit elements, one 16-byte row address per lane) instead of 4-8 scalar shared loads:
// A (K contiguous) loads straight into the A fragment; B (row-major K x N, N contiguous) loads
// with `.trans`, which hands lane (g, t) the elements k = 2t, 2t+1 of column g that the B
// fragment wants. One x4 gives a full 16 x 16 A fragment, or the B fragments of two n8 tiles.
// ldmatrix reads 8 rows of 16 bytes per phase. Unswizzled, those rows sit 64 (A) or 256 (B)
// bytes apart and share banks; so the 16-byte chunk c of row r is stored at chunk
//   A (4 chunks per 64-byte row):    c ^ ((r >> 1) & 3)
//   B (16 chunks per 256-byte row):  c ^ (r & 7)
// which puts any 8 consecutive rows of one logical chunk in 8 distinct 16-byte bank groups, and
// keeps the 16-byte stores from global memory (8 threads per phase) conflict-free too.
// 128 x 128 block tile, BK = 32, 8 warps of 64 x 32 (4 x 4 MMAs per 16 of K, fed by 4 + 2
// ldmatrix.x4). Loads are still synchronous (global -> registers -> shared, then a barrier):
// stage 22 overlaps them with cp.async. Any M, N, K, as in stage 20.
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

#include "ptx_sm80.cuh"  // elem_t (-DELEM_BF16=1: bf16), pack2, to_float, ldmatrix, mma

typedef unsigned int u32;

constexpr int NUM_THREADS = 32 * (BM / WM) * (BN / WN);
constexpr int WARPS_N = BN / WN;
constexpr int MI = WM / 16;  // m16 MMA tiles per warp tile
constexpr int NI = WN / 8;   // n8 MMA tiles per warp tile
constexpr int A_CHUNKS = BK / 8;  // 16-byte chunks per A row
constexpr int B_CHUNKS = BN / 8;  // 16-byte chunks per B row

static_assert(BK == 32, "the A swizzle below is written for 64-byte rows (BK = 32)");
static_assert(BN % 64 == 0, "the B swizzle permutes groups of 8 chunks (128 bytes) of a row");
static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
static_assert(WM % 16 == 0 && WN % 16 == 0, "ldmatrix.x4 loads 16 x 16 of A, or 16 of K x 16 of N");
static_assert((BM * A_CHUNKS) % NUM_THREADS == 0, "every thread loads the same number of A chunks");
static_assert((BK * B_CHUNKS) % NUM_THREADS == 0, "every thread loads the same number of B chunks");
static_assert((BM * BK + BK * BN) * 2 <= 48 * 1024, "the static shared tiles must fit in 48 KiB");

// Byte offsets of logical chunk c of row r in the swizzled tiles.
__device__ __forceinline__ u32 a_off(int r, int c) {
    return static_cast<u32>(r * (BK * 2) + ((c ^ ((r >> 1) & 3)) * 16));
}
__device__ __forceinline__ u32 b_off(int r, int c) {
    return static_cast<u32>(r * (BN * 2) + ((c ^ (r & 7)) * 16));
}

// 8 consecutive elements of row r from column c (a multiple of 8), zeros outside the matrix.
__device__ __forceinline__ uint4 load_chunk(const elem_t* __restrict__ p, int r, int c, int rows,
                                            int cols, bool vec) {
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (r >= rows) return v;
    const elem_t* src = p + static_cast<size_t>(r) * cols + c;
    if (vec) {  // cols % 8 == 0: a chunk is wholly in or out, and 16-byte aligned
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
gemm_mma_ldmatrix(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
                  const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C) {
    __shared__ __align__(128) unsigned char As[BM * BK * 2];
    __shared__ __align__(128) unsigned char Bs[BK * BN * 2];
    const u32 as = static_cast<u32>(__cvta_generic_to_shared(As));
    const u32 bs = static_cast<u32>(__cvta_generic_to_shared(Bs));

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;
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

    // ldmatrix row addresses: lane l serves row (l & 15) of a 16-row block and chunk (l >> 4)
    // of a 16-column block: lanes 0-7, 8-15, 16-23, 24-31 -> matrices 0..3 = fragment regs 0..3.
    const int lrow = lane & 15, lchunk = lane >> 4;

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int i = 0; i < BM * A_CHUNKS / NUM_THREADS; ++i) {
            const int f = tid + i * NUM_THREADS, r = f / A_CHUNKS, c = f % A_CHUNKS;
            const uint4 v = load_chunk(A, m0 + r, k0 + 8 * c, M, K, vec_a);
            st_shared_v4_u32(as + a_off(r, c), v.x, v.y, v.z, v.w);
        }
#pragma unroll
        for (int i = 0; i < BK * B_CHUNKS / NUM_THREADS; ++i) {
            const int f = tid + i * NUM_THREADS, r = f / B_CHUNKS, c = f % B_CHUNKS;
            const uint4 v = k0 + r < K ? load_chunk(B, k0 + r, n0 + 8 * c, K, N, vec_b)
                                       : make_uint4(0u, 0u, 0u, 0u);  // K tail: zero rows
            st_shared_v4_u32(bs + b_off(r, c), v.x, v.y, v.z, v.w);
        }
        __syncthreads();

#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            u32 a[MI][4], b[NI / 2][4];
#pragma unroll
            for (int i = 0; i < MI; ++i)
                ldmatrix_x4(a[i], as + a_off(wm + 16 * i + lrow, kk / 8 + lchunk));
#pragma unroll
            for (int j = 0; j < NI / 2; ++j)  // regs: b0,b1 of n-tile 2j, then of n-tile 2j+1
                ldmatrix_x4_trans(b[j], bs + b_off(kk + lrow, (wn + 16 * j) / 8 + lchunk));
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NI; ++j)
                    mma_m16n8k16(acc[i][j], a[i], b[j / 2][2 * (j % 2)], b[j / 2][2 * (j % 2) + 1]);
        }
        __syncthreads();
    }

    // Epilogue: pairs (2t, 2t+1) written as one 32-bit store when N is even (both in or out).
    const bool pairs = N % 2 == 0;
#pragma unroll
    for (int i = 0; i < MI; ++i) {
#pragma unroll
        for (int j = 0; j < NI; ++j) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = m0 + wm + i * 16 + g + 8 * h;
                const int col = n0 + wn + j * 8 + 2 * t;
                if (row >= M || col >= N) continue;
                const size_t idx = static_cast<size_t>(row) * N + col;
                float v0 = alpha * acc[i][j][2 * h], v1 = alpha * acc[i][j][2 * h + 1];
                if (pairs) {
                    if (beta != 0.0f) {  // beta == 0: C is never read
                        const u32 old = *reinterpret_cast<const u32*>(C + idx);
                        v0 = fmaf(beta, to_float(static_cast<elem_t>(old & 0xffffu)), v0);
                        v1 = fmaf(beta, to_float(static_cast<elem_t>(old >> 16)), v1);
                    }
                    *reinterpret_cast<u32*>(C + idx) = pack2(v0, v1);
                } else {
                    if (beta != 0.0f) v0 = fmaf(beta, to_float(C[idx]), v0);
                    C[idx] = static_cast<elem_t>(pack2(v0, 0.0f) & 0xffffu);
                    if (col + 1 < N) {
                        if (beta != 0.0f) v1 = fmaf(beta, to_float(C[idx + 1]), v1);
                        C[idx + 1] = static_cast<elem_t>(pack2(v1, 0.0f) & 0xffffu);
                    }
                }
            }
        }
    }
}
