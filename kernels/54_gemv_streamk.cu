// Stage 54: decode as a stream-K GEMV. Stage 52's blocks own a strip of BN columns and ALL of K,
// and the grid is N / BN of them: with about one block per SM, an SM issues one step of loads,
// waits for all of it, multiplies, and only then issues the next, so its average bytes in flight
// fall short of what Little's law asks; when N / BN is a few waves the last leaves SMs idle.
// Here the grid is persistent (BLOCKS_PER_SM x SMs blocks, however small N is) and the work is
// one line of "units" cut into equal shares, one per block (stream-K): a unit is U rows of K of
// one BN-column strip for one block of TM rows of C, K fastest. Every SM streams the same bytes
// of B with no wave tail; a share crosses one or two strips (segments). A thread owns PER16
// columns (one 16-byte piece of a row) and U consecutive rows per pass, and issues its U loads of
// B (ld.global.nc.L1::no_allocate, .L2::256B with L2PF) back to back before the first FMA; with
// PIPE = 1 it issues the next pass's loads before the current FMAs. Threads: tid = s * TPR + c,
// c < TPR = BN / PER16 the piece of the strip, s < SLOTS the row slot (rows k0 + s * U .., then
// every SLOTS * U rows).
// Reduction: the row slots add up in shared memory (no shared atomics: on sm_90 a float atomicAdd
// there is a CAS loop); a segment that covers all of K writes C, any other adds its partials to
// an fp32 workspace (red.global.add.v4.f32 in L2) and counts its rows on the tile's counter; the
// block whose rows complete K writes C (alpha, beta) and leaves the workspace and counter zeroed.
// Any M, N, K: 16-byte loads need N and K multiples of PER16, else the same split runs on scalar
// loads; the K tail takes scalar loads; pieces past N and rows past M read clamped addresses.
#ifndef TM
#error "TM (rows of C per block) must be given as -DTM=..."
#endif
#ifndef BN
#error "BN (columns of C per strip) must be given as -DBN=..."
#endif
#ifndef U
#error "U (rows of B a thread loads per pass) must be given as -DU=..."
#endif
#ifndef NUM_THREADS
#error "NUM_THREADS (threads per block) must be given as -DNUM_THREADS=..."
#endif
#ifndef BLOCKS_PER_SM
#error "BLOCKS_PER_SM (persistent blocks per SM) must be given as -DBLOCKS_PER_SM=..."
#endif
#ifndef L2PF
#define L2PF 0  // 1: loads of B carry the .L2::256B prefetch hint
#endif
#ifndef PIPE
#define PIPE 0  // 1: a pass's loads are issued before the previous pass's FMAs (register pipeline)
#endif

#include "elem.cuh"              // elem_t (fp32, fp16 or bf16 bits), elem_to_float, elem_from_float
#include "gemm/gemv_unpack.cuh"  // unpack16, element: 16 bytes of A or B as floats
#include "ptx_sm80.cuh"          // ld.global.nc.L1::no_allocate
#include "sm90/red.cuh"          // red_add_v4_f32

constexpr int PER16 = 16 / sizeof(elem_t);  // columns a thread owns: one 16-byte piece of a row
constexpr int TPR = BN / PER16;             // threads across the strip
constexpr int SLOTS = NUM_THREADS / TPR;    // row slots
constexpr int PASS = SLOTS * U;             // rows of the strip a block reads per pass

static_assert(BN % PER16 == 0, "a thread owns one 16-byte piece of a row: BN a multiple of it");
static_assert(NUM_THREADS % TPR == 0, "the threads tile the strip's width exactly");
static_assert(U % PER16 == 0, "A's U elements per row of C are whole 16-byte loads");
static_assert((TM & (TM - 1)) == 0, "TM is a power of two (rows per thread are picked 1, 2, 4..)");
static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "whole warps, at most 1024 threads");
static_assert(SLOTS * TM * BN * 4 <= 48 * 1024,
              "each slot's partial tile fits in 48 KiB of shared memory");
static_assert(BN % 4 == 0, "partial sums leave in groups of four floats (16-byte reductions)");

__device__ __forceinline__ uint4 stream_b(const elem_t* p) {
#if L2PF
    return ld_nc_na_l2_256b_v4(p);
#else
    return ld_nc_na_v4(p);
#endif
}

// acc[r][j] += A[row r][k] * B[k][col + j] with scalar loads (unaligned rows, the K tail).
template <int R>
__device__ __forceinline__ void fma_row(int k, int N, int col, const elem_t* __restrict__ B,
                                        const elem_t* const (&arow)[R], float (&acc)[R][PER16]) {
    const elem_t* p = B + static_cast<size_t>(k) * N + col;
    float b[PER16];
#pragma unroll
    for (int j = 0; j < PER16; ++j) b[j] = col + j < N ? elem_to_float(__ldg(p + j)) : 0.0f;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const float a = elem_to_float(__ldg(arow[r] + k));
#pragma unroll
        for (int j = 0; j < PER16; ++j) acc[r][j] = fmaf(a, b[j], acc[r][j]);
    }
}

// One pass of one thread on the 16-byte path: its U rows of B from row kb (one 16-byte piece
// each), and the U elements of A of each of its R rows of C.
template <int R>
__device__ __forceinline__ void load_pass(const elem_t* bcol, const elem_t* const (&arow)[R], int N,
                                          int kb, uint4 (&braw)[U], uint4 (&araw)[R][U / PER16]) {
#pragma unroll
    for (int u = 0; u < U; ++u) braw[u] = stream_b(bcol + static_cast<size_t>(kb + u) * N);
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int l = 0; l < U / PER16; ++l)
            araw[r][l] = __ldg(reinterpret_cast<const uint4*>(arow[r] + kb) + l);
}

// ... and its FMAs: converted as used, one row of B (PER16 floats) and one element of A a time.
template <int R>
__device__ __forceinline__ void fma_pass(const uint4 (&braw)[U], const uint4 (&araw)[R][U / PER16],
                                         float (&acc)[R][PER16]) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
        float b[PER16];
        unpack16(braw[u], b);
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const float a = element(araw[r][u / PER16], u % PER16);
#pragma unroll
            for (int j = 0; j < PER16; ++j) acc[r][j] = fmaf(a, b[j], acc[r][j]);
        }
    }
}

// One segment: rows [k0, k1) of K of the strip at column n0, rows mb .. mb + rows of C, R rows
// per thread. Leaves this thread's sums in part[its slot][r][its columns of the strip].
template <int R, bool VEC16>
__device__ __forceinline__ void segment(int M, int N, int K, const elem_t* __restrict__ A,
                                        const elem_t* __restrict__ B, int mb, int n0, int k0,
                                        int k1, float (*part)[TM][BN]) {
    const int tid = threadIdx.x, c = tid % TPR, s = tid / TPR;
    const int col = n0 + c * PER16;
    const elem_t* arow[R];  // rows past M read row M - 1 (computed, never stored)
#pragma unroll
    for (int r = 0; r < R; ++r) arow[r] = A + static_cast<size_t>(min(mb + r, M - 1)) * K;
    float acc[R][PER16];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int j = 0; j < PER16; ++j) acc[r][j] = 0.0f;

    const int kfull = VEC16 ? min(k1, K - K % U) : k0;  // rows [k0, kfull) in whole passes of U
    if (VEC16) {
        // a piece past N reads the row's last piece instead (never stored): loads unconditional
        const elem_t* bcol = B + min(col, N - PER16);
        int kb = k0 + s * U;
#if PIPE
        // software pipelined: the next pass's loads are issued before this pass's FMAs, so a
        // thread keeps U loads in flight while it multiplies (twice the registers for B)
        if (kb < kfull) {
            uint4 braw[U], araw[R][U / PER16];
            load_pass(bcol, arow, N, kb, braw, araw);
            for (;;) {
                const int kn = kb + PASS;
                if (kn >= kfull) {
                    fma_pass(braw, araw, acc);
                    break;
                }
                uint4 bnext[U], anext[R][U / PER16];
                load_pass(bcol, arow, N, kn, bnext, anext);
                fma_pass(braw, araw, acc);
#pragma unroll
                for (int u = 0; u < U; ++u) braw[u] = bnext[u];
#pragma unroll
                for (int r = 0; r < R; ++r)
#pragma unroll
                    for (int l = 0; l < U / PER16; ++l) araw[r][l] = anext[r][l];
                kb = kn;
            }
        }
#else
        for (; kb < kfull; kb += PASS) {  // every load of a pass is issued before its first FMA
            uint4 braw[U], araw[R][U / PER16];
            load_pass(bcol, arow, N, kb, braw, araw);
            fma_pass(braw, araw, acc);
        }
#endif
    }
    // the K tail (< U rows, VEC16) or every row (scalar path): one row per slot at a time
    for (int k = kfull + s; k < k1; k += SLOTS) fma_row(k, N, col, B, arow, acc);

#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int j = 0; j < PER16; j += 4)
            *reinterpret_cast<float4*>(&part[s][r][c * PER16 + j]) =
                make_float4(acc[r][j], acc[r][j + 1], acc[r][j + 2], acc[r][j + 3]);
}

// The smallest R in TM, TM/2, .. 1 that covers `rows` (block-uniform).
template <int R>
__device__ __forceinline__ void pick_rows(int rows, bool vec, int M, int N, int K,
                                          const elem_t* __restrict__ A,
                                          const elem_t* __restrict__ B, int mb, int n0, int k0,
                                          int k1, float (*part)[TM][BN]) {
    if constexpr (R > 1) {
        if (rows <= R / 2) {
            pick_rows<R / 2>(rows, vec, M, N, K, A, B, mb, n0, k0, k1, part);
            return;
        }
    }
    if (vec)
        segment<R, true>(M, N, K, A, B, mb, n0, k0, k1, part);
    else
        segment<R, false>(M, N, K, A, B, mb, n0, k0, k1, part);
}

// ws: M x N fp32 partial sums, then one counter per tile (row block x strip); zero on entry,
// zero again on exit.
extern "C" __global__ void __launch_bounds__(NUM_THREADS, BLOCKS_PER_SM)
gemv_streamk(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
             const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C,
             float* __restrict__ ws) {
    __shared__ __align__(16) float part[SLOTS][TM][BN];  // each row slot's sums of a segment
    __shared__ int last;
    const int tid = threadIdx.x;

    const int mblocks = (M + TM - 1) / TM, strips = (N + BN - 1) / BN, chunks = (K + U - 1) / U;
    unsigned* count = reinterpret_cast<unsigned*>(ws + static_cast<size_t>(M) * N);
    const unsigned long long ab = reinterpret_cast<unsigned long long>(A) |
                                  reinterpret_cast<unsigned long long>(B);
    const bool vec = N % PER16 == 0 && K % PER16 == 0 && ab % 16 == 0;

    // this block's share of the line of units: [lo, hi), tile = strip * mblocks + row block
    const long long units = static_cast<long long>(mblocks) * strips * chunks;
    const long long lo = units * blockIdx.x / gridDim.x, hi = units * (blockIdx.x + 1) / gridDim.x;
    for (long long u = lo; u < hi;) {
        const int tile = static_cast<int>(u / chunks), c0 = static_cast<int>(u % chunks);
        const int c1 = static_cast<int>(min(static_cast<long long>(chunks), c0 + (hi - u)));
        u += c1 - c0;
        const int mb = tile % mblocks * TM, n0 = tile / mblocks * BN;
        const int k0 = c0 * U, k1 = min(c1 * U, K);
        const int rows = min(TM, M - mb);
        pick_rows<TM>(rows, vec, M, N, K, A, B, mb, n0, k0, k1, part);
        __syncthreads();  // part holds the segment's sums

        if (k0 == 0 && k1 == K) {  // the whole of K: no other block adds to this tile
            for (int o = tid; o < rows * BN; o += NUM_THREADS) {
                const int r = o / BN, cc = o % BN, n = n0 + cc;
                if (n >= N) continue;
                float sum = 0.0f;
#pragma unroll
                for (int q = 0; q < SLOTS; ++q) sum += part[q][r][cc];
                const size_t idx = static_cast<size_t>(mb + r) * N + n;
                float v = alpha * sum;
                if (beta != 0.0f) v = fmaf(beta, elem_to_float(C[idx]), v);  // beta 0: C unread
                C[idx] = elem_from_float(v);
            }
            __syncthreads();  // part read: the next segment may overwrite it
            continue;
        }
        // four neighbouring sums per thread: one 16-byte reduction in L2 on sm_90 (N % 4 == 0 puts
        // every row of the workspace on 16 bytes), else four RED.ADD.F32
        for (int o = tid; o < rows * (BN / 4); o += NUM_THREADS) {
            const int r = o / (BN / 4), cc = o % (BN / 4) * 4, n = n0 + cc;
            float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
            for (int q = 0; q < SLOTS; ++q) {
                const float4 v = *reinterpret_cast<const float4*>(&part[q][r][cc]);
                sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
            }
            float* w = ws + static_cast<size_t>(mb + r) * N + n;
#if __CUDA_ARCH__ >= 900
            if (N % 4 == 0 && n + 4 <= N) {
                red_add_v4_f32(w, sum.x, sum.y, sum.z, sum.w);
                continue;
            }
#endif
            const float s4[4] = {sum.x, sum.y, sum.z, sum.w};
#pragma unroll
            for (int j = 0; j < 4; ++j)
                if (n + j < N) atomicAdd(w + j, s4[j]);  // RED.ADD.F32 in L2
        }
        __threadfence();  // our partials are visible GPU-wide before the counter says so
        __syncthreads();
        if (tid == 0) {
            const unsigned done = atomicAdd(&count[tile], static_cast<unsigned>(k1 - k0));
            last = done + (k1 - k0) == static_cast<unsigned>(K);
        }
        __syncthreads();
        if (last) {  // every other segment of the tile has added its partials: finish the tile
            __threadfence();
            for (int o = tid; o < rows * BN; o += NUM_THREADS) {
                const int r = o / BN, n = n0 + o % BN;
                if (n >= N) continue;
                const size_t idx = static_cast<size_t>(mb + r) * N + n;
                const float sum = __ldcg(&ws[idx]);  // from L2: L1 may hold a stale line
                __stcg(&ws[idx], 0.0f);              // zero for the next launch
                float v = alpha * sum;
                if (beta != 0.0f) v = fmaf(beta, elem_to_float(C[idx]), v);
                C[idx] = elem_from_float(v);
            }
            if (tid == 0) count[tile] = 0;
        }
    }
}
