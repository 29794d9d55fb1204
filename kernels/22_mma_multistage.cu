// Stage 22: a cp.async multistage pipeline feeding mma.sync. Stage 21 stalls every warp on
// global memory once per K step (load, barrier, compute, barrier). Here `cp.async.cg` copies
// 16-byte chunks global -> shared without passing through registers, STAGES tiles deep: while
// the warps multiply tile k, the copies of tiles k+1 .. k+STAGES-1 are in flight.
// Bigger tiles raise the intensity: BM x BN = 256 x 128 (128 x 256 works too), 8 warps of
// WM x WN = 64 x 64 (4 x 8 MMAs per 16 of K fed by 4 ldmatrix.x4 of A + 4 ldmatrix.x4.trans of
// B), BK = 32, STAGES = 4: 96 KiB of shared memory, one block per SM, 128 accumulators a thread.
// The schedule inside a K step keeps the tensor cores fed (as CUTLASS's multistage mainloop):
//   * fragments are double-buffered in registers: those of k16 step s+1 are loaded by ldmatrix
//     before the MMAs of step s are issued;
//   * one barrier per K step, before the last k16 step: after it tile k+1 has landed and every
//     warp is done with tile k-1, whose buffer takes tile k+STAGES-1 at the next first k16 step;
//   * per-thread global pointers and shared offsets are computed once, outside the loop.
// Shared tiles are swizzled (16-byte chunk c of row r at chunk c ^ f(r); f = r & 7 for 128-byte
// rows, (r >> 1) & 3 for 64-byte rows): ldmatrix's 8 rows per phase hit 8 distinct bank groups.
// Blocks are renumbered in groups of GROUP_M block rows so the blocks in flight share A and B
// panels in L2. Any M, N, K: chunks outside the matrices are zero-filled (src-size 0); when K or
// N is not a multiple of 8 a second copy of the main loop loads 2-byte elements; tiles of 64
// accumulators a thread or fewer (GATHER) gather a whole tile's chunks before any shared store,
// so small shapes wait for memory fewer times.
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
#ifndef STAGES
#error "STAGES (shared-memory tiles in flight) must be given as -DSTAGES=..."
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif

#include "ptx_sm80.cuh"  // elem_t (-DELEM_BF16=1: bf16), pack2, to_float, cp.async, ldmatrix, mma

typedef unsigned int u32;

constexpr int NUM_THREADS = 32 * (BM / WM) * (BN / WN);
constexpr int WARPS_N = BN / WN;
constexpr int MI = WM / 16;  // m16 MMA tiles per warp tile
constexpr int NI = WN / 8;   // n8 MMA tiles per warp tile
constexpr int KSTEPS = BK / 16;
constexpr int A_CHUNKS = BK / 8;  // 16-byte chunks per A row
constexpr int B_CHUNKS = BN / 8;  // 16-byte chunks per B row
constexpr int A_ROW_STEP = NUM_THREADS / A_CHUNKS;  // A rows one pass of all threads covers
constexpr int B_ROW_STEP = NUM_THREADS / B_CHUNKS;  // B rows one pass covers
constexpr int A_PER_THREAD = BM / A_ROW_STEP;
constexpr int B_PER_THREAD = BK / B_ROW_STEP;
constexpr int A_BYTES = BM * BK * 2;
constexpr int STAGE_BYTES = A_BYTES + BK * BN * 2;
// Scalar path (K or N not a multiple of 8): hold a whole tile's chunks in registers before the
// shared stores, where the accumulators leave room (64 a thread or fewer: 64 x 64 warp tiles
// and smaller). The 256 x 128 tile's 128 accumulators spill with 24 more live registers.
constexpr bool GATHER = MI * NI * 4 <= 64;

static_assert(BK == 32 || BK == 64, "A rows are 64 or 128 bytes (the two swizzles below)");
static_assert(BN % 64 == 0, "the B swizzle permutes groups of 8 chunks (128 bytes) of a row");
static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
static_assert(WM % 16 == 0 && WN % 16 == 0, "ldmatrix.x4 loads 16 x 16 of A, or 16 of K x 16 of N");
static_assert(KSTEPS >= 2 && KSTEPS % 2 == 0, "fragment buffers alternate: an even number of k16 steps");
static_assert(NUM_THREADS % A_CHUNKS == 0 && BM % A_ROW_STEP == 0, "A copies split evenly");
static_assert(NUM_THREADS % B_CHUNKS == 0 && BK % B_ROW_STEP == 0, "B copies split evenly");
static_assert(A_ROW_STEP % 8 == 0 && B_ROW_STEP % 8 == 0,
              "rows a thread copies differ by multiples of 8: one swizzle pattern per thread");
static_assert(STAGES >= 2, "a pipeline needs at least two buffers");
static_assert(STAGES * STAGE_BYTES <= 227 * 1024, "the stages must fit in 227 KiB of shared memory");

// Byte offset of logical 16-byte chunk c of row r in the swizzled A and B tiles.
__device__ __forceinline__ u32 a_off(int r, int c) {
    const int f = A_CHUNKS == 8 ? (r & 7) : ((r >> 1) & 3);
    return static_cast<u32>(r * (BK * 2) + ((c ^ f) * 16));
}
__device__ __forceinline__ u32 b_off(int r, int c) {
    return static_cast<u32>(r * (BN * 2) + ((c ^ (r & 7)) * 16));
}

// 8 elements from column c of row r, zeros outside the matrix, packed in pairs: the path for
// K or N not a multiple of 8, where 16-byte copies would be misaligned.
__device__ __forceinline__ void load_chunk_scalar(u32 (&w)[4], const elem_t* __restrict__ p,
                                                  int r, int c, int rows, int cols) {
    w[0] = w[1] = w[2] = w[3] = 0u;
    if (r < rows) {
        const elem_t* src = p + static_cast<size_t>(r) * cols + c;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const u32 lo = c + 2 * i < cols ? src[2 * i] : 0u;
            const u32 hi = c + 2 * i + 1 < cols ? src[2 * i + 1] : 0u;
            w[i] = lo | (hi << 16);
        }
    }
}

// The shared stores are asm volatile "memory", so no load moves above one: a chunk stored
// right after its loads makes the next chunk's loads wait a whole trip to memory. With GATHER
// all of a tile's chunks are loaded first, one trip per tile.
__device__ __forceinline__ void store_chunk(u32 dst, const u32 (&w)[4]) {
    st_shared_v4_u32(dst, w[0], w[1], w[2], w[3]);
}

// The main loop. VEC: K % 8 == 0 and N % 8 == 0, so every 16-byte chunk of A or B is wholly
// inside or outside the matrix and aligned: cp.async. Otherwise 2-byte loads + shared stores.
template <bool VEC>
__device__ __forceinline__ void mainloop(float (&acc)[MI][NI][4], int M, int N, int K, int m0,
                                         int n0, const elem_t* __restrict__ A,
                                         const elem_t* __restrict__ B, u32 sbase) {
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
    const int ktiles = (K + BK - 1) / BK;

    // This thread copies A chunks (a_row + i * A_ROW_STEP, a_c) and B chunks
    // (b_row + i * B_ROW_STEP, b_c) of every tile; rows A_ROW_STEP apart share a swizzle.
    const int a_row = tid / A_CHUNKS, a_c = tid % A_CHUNKS;
    const int b_row = tid / B_CHUNKS, b_c = tid % B_CHUNKS;
    const u32 a_dst = a_off(a_row, a_c), b_dst = b_off(b_row, b_c);
    const elem_t* a_src = A + static_cast<size_t>(min(m0 + a_row, M - 1)) * K + 8 * a_c;
    const elem_t* b_src = B + static_cast<size_t>(b_row) * N + n0 + 8 * b_c;
    u32 a_rows_ok = 0;  // bit i: row a_row + i * A_ROW_STEP is inside A
#pragma unroll
    for (int i = 0; i < A_PER_THREAD; ++i)
        a_rows_ok |= (m0 + a_row + i * A_ROW_STEP < M ? 1u : 0u) << i;
    const bool b_col_ok = n0 + 8 * b_c < N;

    // The scalar path in two halves: a tile's chunks into registers (fetch), then into shared
    // memory (put). With GATHER a tile's fetch is whole before its put, so its loads are in
    // flight together; without, each chunk is put right after its loads (fewer live registers).
    typedef u32 ChunksA[A_PER_THREAD][4];
    typedef u32 ChunksB[B_PER_THREAD][4];
    auto fetch = [&](int kt, ChunksA& wa, ChunksB& wb) {
        const int k0 = kt * BK;
#pragma unroll
        for (int i = 0; i < A_PER_THREAD; ++i)
            load_chunk_scalar(wa[i], A, m0 + a_row + i * A_ROW_STEP, k0 + 8 * a_c, M, K);
#pragma unroll
        for (int i = 0; i < B_PER_THREAD; ++i)  // rows past K: zeros (the K tail)
            load_chunk_scalar(wb[i], B, k0 + b_row + i * B_ROW_STEP, n0 + 8 * b_c, K, N);
    };
    auto put = [&](int stage, const ChunksA& wa, const ChunksB& wb) {
        const u32 sa = sbase + stage * STAGE_BYTES, sb = sa + A_BYTES;
#pragma unroll
        for (int i = 0; i < A_PER_THREAD; ++i) store_chunk(sa + a_dst + i * A_ROW_STEP * BK * 2, wa[i]);
#pragma unroll
        for (int i = 0; i < B_PER_THREAD; ++i) store_chunk(sb + b_dst + i * B_ROW_STEP * BN * 2, wb[i]);
    };

    auto load_tile = [&](int stage, int kt) {
        const u32 sa = sbase + stage * STAGE_BYTES, sb = sa + A_BYTES;
        const int k0 = kt * BK;
        if (VEC) {
            const bool a_k_ok = k0 + 8 * a_c < K;
#pragma unroll
            for (int i = 0; i < A_PER_THREAD; ++i) {
                const bool ok = a_k_ok && ((a_rows_ok >> i) & 1u);
                const elem_t* src = a_src + static_cast<size_t>(i * A_ROW_STEP) * K + k0;
                cp_async16(sa + a_dst + i * A_ROW_STEP * BK * 2, ok ? src : A, ok ? 16u : 0u);
            }
#pragma unroll
            for (int i = 0; i < B_PER_THREAD; ++i) {
                const bool ok = b_col_ok && k0 + b_row + i * B_ROW_STEP < K;
                const elem_t* src = b_src + static_cast<size_t>(k0 + i * B_ROW_STEP) * N;
                cp_async16(sb + b_dst + i * B_ROW_STEP * BN * 2, ok ? src : B, ok ? 16u : 0u);
            }
        } else if (GATHER) {
            ChunksA wa;
            ChunksB wb;
            fetch(kt, wa, wb);
            put(stage, wa, wb);
        } else {
            u32 w[4];
#pragma unroll
            for (int i = 0; i < A_PER_THREAD; ++i) {
                load_chunk_scalar(w, A, m0 + a_row + i * A_ROW_STEP, k0 + 8 * a_c, M, K);
                store_chunk(sa + a_dst + i * A_ROW_STEP * BK * 2, w);
            }
#pragma unroll
            for (int i = 0; i < B_PER_THREAD; ++i) {  // rows past K: zeros (the K tail)
                load_chunk_scalar(w, B, k0 + b_row + i * B_ROW_STEP, n0 + 8 * b_c, K, N);
                store_chunk(sb + b_dst + i * B_ROW_STEP * BN * 2, w);
            }
        }
    };

    // ldmatrix addresses: lane l serves row (l & 15) of a 16-row block and chunk (l >> 4) of a
    // 16-column block (lanes 0-7, 8-15, 16-23, 24-31 -> matrices 0..3 = fragment registers 0..3).
    const int lrow = lane & 15, lchunk = lane >> 4;
    u32 a[2][MI][4], b[2][NI / 2][4];
    auto load_frags = [&](int buf, int stage, int ks) {
        const u32 sa = sbase + stage * STAGE_BYTES, sb = sa + A_BYTES;
#pragma unroll
        for (int i = 0; i < MI; ++i)
            ldmatrix_x4(a[buf][i], sa + a_off(wm + 16 * i + lrow, 2 * ks + lchunk));
#pragma unroll
        for (int j = 0; j < NI / 2; ++j)  // b0,b1 of n-tile 2j, then b0,b1 of n-tile 2j+1
            ldmatrix_x4_trans(b[buf][j], sb + b_off(16 * ks + lrow, (wn + 16 * j) / 8 + lchunk));
    };

    // Prologue: tiles 0 .. STAGES-2 in flight, one commit group each (empty past the end, so
    // that the wait_group counts stay uniform); then the first fragments of tile 0.
    if (!VEC && GATHER) {  // every prologue tile fetched before the first put: one trip for all
        ChunksA wa[STAGES - 1];
        ChunksB wb[STAGES - 1];
#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s)
            if (s < ktiles) fetch(s, wa[s], wb[s]);
#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
            if (s < ktiles) put(s, wa[s], wb[s]);
            cp_async_commit();
        }
    } else {
#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
            if (s < ktiles) load_tile(s, s);
            cp_async_commit();
        }
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    load_frags(0, 0, 0);

    int read_stage = 0, write_stage = STAGES - 1;
    for (int kt = 0; kt < ktiles; ++kt) {
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ++ks) {
            if (ks == KSTEPS - 1) {
                if (kt + 1 < ktiles) {
                    cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt+1 landed
                    __syncthreads();  // everyone's have; everyone is done reading tile kt-1
                    const int next = read_stage + 1 == STAGES ? 0 : read_stage + 1;
                    load_frags((ks + 1) % 2, next, 0);
                }
            } else {
                load_frags((ks + 1) % 2, read_stage, ks + 1);
            }
            if (ks == 0) {  // tile kt-1's buffer is free since the last barrier
                if (kt + STAGES - 1 < ktiles) load_tile(write_stage, kt + STAGES - 1);
                cp_async_commit();
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NI; ++j)
                    mma_m16n8k16(acc[i][j], a[ks % 2][i], b[ks % 2][j / 2][2 * (j % 2)],
                                 b[ks % 2][j / 2][2 * (j % 2) + 1]);
        }
        read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
        write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;
    }
    cp_async_wait<0>();  // no copy may still target shared memory when the block exits
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS, 1)
gemm_mma_multistage(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
                    const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C) {
    extern __shared__ __align__(128) unsigned char smem[];
    const u32 sbase = static_cast<u32>(__cvta_generic_to_shared(smem));

    // Grouped block order (a bijection of the grid for any grid size).
    const int grid_m = gridDim.y, grid_n = gridDim.x;
    const int pid = blockIdx.y * grid_n + blockIdx.x;
    const int group = pid / (GROUP_M * grid_n), first_m = group * GROUP_M;
    const int group_rows = min(grid_m - first_m, GROUP_M);
    const int in_group = pid % (GROUP_M * grid_n);
    const int m0 = (first_m + in_group % group_rows) * BM;
    const int n0 = (in_group / group_rows) * BN;

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

    if (K % 8 == 0 && N % 8 == 0)
        mainloop<true>(acc, M, N, K, m0, n0, A, B, sbase);
    else
        mainloop<false>(acc, M, N, K, m0, n0, A, B, sbase);

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;
    const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
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
