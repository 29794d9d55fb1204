// Stage 58: FP8 decode on warp-level Tensor Cores, stage 53's idea on one-byte weights. At M = 1 ..
// 16 the weights (B, N x K) are the bytes; stage 34's TMA ring and stream-K workspace cost more
// than they save on small matrices. Here a block owns a strip of 16 weight rows and BM rows of the
// batch; its warps split K and stream B straight into registers, 16 bytes a lane: lanes 4g + t of a
// warp read rows g and g + 8 of the strip at K offset 64c + 16t, so one load instruction covers 64
// contiguous bytes of 8 rows. Both operands already sit as mma.sync m16n8k32 wants them (e4m3;
// -DFP8_E5M2=1: e5m2), the weights as A (16 x 32, rows K-contiguous) and the batch as B (32 x 8,
// columns K-contiguous), once A and B take the same order of K: a lane's bytes 0-7 feed the first
// MMA of a chunk and bytes 8-15 the second. Hopper runs that MMA as fp16 HMMA on operands it widens
// (F2FP); no shared memory in the main loop. KU chunks a warp loads before the step's first MMA
// (bytes in flight: Little's law). Each chunk's two MMAs start from zero and their sum is added
// into FP32 registers: promoted every 64 of K, under the k-block's scales where they are DeepGEMM's
// (-DSCALES=2); per tensor (0) and per row and column (1) apply in the epilogue. The warps' partial
// tiles meet in shared memory, one barrier, and each thread stores pairs of C (bf16; -DELEM_BF16=0:
// fp16) with alpha and beta. Blocks of one strip run side by side (stage 52's relabelling), so a
// strip comes from HBM once at M > BM.
// SKIP_KBLOCK=j >= 0 leaves out 128-wide k-block j: a deliberately wrong kernel the check must
// fail. Shapes: any M; N and K multiples of 16 (the FP8 contract).
#ifndef BM
#error "BM (rows of the batch per block: 8 per MMA's N side) must be given as -DBM=..."
#endif
#ifndef BN
#define BN 16  // weight rows per block: 16 per MMA (its A side)
#endif
#ifndef NUM_THREADS
#error "NUM_THREADS (threads per block: warps splitting K) must be given as -DNUM_THREADS=..."
#endif
#ifndef KU
#define KU 4  // 64-byte chunks of K a warp loads before its first MMA of the step
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef SCALES
#define SCALES 0  // 0: per tensor, 1: per row of A and column of C, 2: DeepGEMM's 128-wide blocks
#endif
#ifndef SKIP_KBLOCK
#define SKIP_KBLOCK -1
#endif

#include "ptx_sm80.cuh"      // elem_t (-DELEM_BF16=1: bf16), pack2, to_float, ld_nc_na_v4
#include "sm89/mma_fp8.cuh"  // mma_fp8_m16n8k32

typedef unsigned int u32;
typedef unsigned char u8;

constexpr int WARPS = NUM_THREADS / 32;
constexpr int MT = BM / 8;   // MMAs per chunk half along the batch: 8 rows each
constexpr int NT = BN / 16;  // and along the weights: 16 rows each, sharing one batch fragment
constexpr int CHUNK = 64;    // bytes of K per lane quad and chunk (4 lanes x 16 bytes)
constexpr int KBLOCK = 128;  // the block scales' span of K (SCALES=2)

static_assert(BN == 16 || BN == 32 || BN == 64, "a strip of 1, 2 or 4 MMAs' 16 weight rows");
static_assert(BM == 8 || BM == 16 || BM == 32 || BM == 64,
              "BM rows of the batch: 1, 2, 4 or 8 MMAs of 8");
static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "whole warps, at most 1024 threads");
static_assert(KU >= 1 && KU <= 8, "1 to 8 chunks in flight per warp (registers)");
static_assert(KBLOCK % CHUNK == 0, "a chunk lies inside one k-block of the scales");
static_assert(WARPS * BM * (BN + 1) * 4 <= 48 * 1024,
              "the warps' partial tiles fit in static shared memory");

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MIN_BLOCKS)
gemv_fp8(int M, int N, int K, float alpha, const u8* __restrict__ A, const u8* __restrict__ B,
         float beta, elem_t* __restrict__ C, const float* __restrict__ scale_a,
         const float* __restrict__ scale_b) {
    __shared__ float red[WARPS][BM][BN + 1];  // each warp's partial tile (+1: no bank conflicts)
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32, g = lane / 4, t = lane % 4;
    const int linear = blockIdx.y * gridDim.x + blockIdx.x;
    const int m0 = linear % gridDim.y * BM, n0 = linear / gridDim.y * BN;
    const u8* b_row = B + static_cast<size_t>(n0 + g) * K + 16 * t;  // row g: rows g + 8i
    const u8* a_row[MT];  // the batch rows this lane feeds (clamped: rows past M load zeros)
    bool a_in[MT];
#pragma unroll
    for (int j = 0; j < MT; ++j) {
        const int m = m0 + 8 * j + g;
        a_in[j] = m < M;
        a_row[j] = A + static_cast<size_t>(min(m, M - 1)) * K + 16 * t;
    }
    const int chunks = (K + CHUNK - 1) / CHUNK, kb_count = (K + KBLOCK - 1) / KBLOCK;
    const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    float acc[NT][MT][4];
#pragma unroll
    for (int s = 0; s < NT; ++s)
#pragma unroll
        for (int j = 0; j < MT; ++j)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[s][j][i] = 0.0f;

    for (int c0 = w; c0 < chunks; c0 += WARPS * KU) {
        uint4 wt[KU][2 * NT], act[KU][MT];  // weight rows g + 8i of the strip; the batch's rows
#pragma unroll
        for (int u = 0; u < KU; ++u) {  // every load of the step before its first MMA
            const int c = c0 + u * WARPS;
            const bool in = c < chunks && CHUNK * c + 16 * t < K;  // K % 16 == 0: whole lanes
            const uint4 z = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
            for (int i = 0; i < 2 * NT; ++i)
                wt[u][i] = in && n0 + 16 * (i / 2) < N  // a second MMA's rows may lie past N
                               ? ld_nc_na_v4(b_row + static_cast<size_t>(8 * i) * K + CHUNK * c)
                               : z;
#pragma unroll
            for (int j = 0; j < MT; ++j)
                act[u][j] =
                    in && a_in[j] ? __ldg(reinterpret_cast<const uint4*>(a_row[j] + CHUNK * c)) : z;
        }
#pragma unroll
        for (int u = 0; u < KU; ++u) {
            const int c = c0 + u * WARPS;
            if (SKIP_KBLOCK >= 0 && c * CHUNK / KBLOCK == SKIP_KBLOCK) continue;
#if SCALES == 2
            // the k-block's scales: the strip's 128-row block of B, rows 2t, 2t + 1 of each 8 of
            // the batch (clamped)
            const int kb = min(c * CHUNK / KBLOCK, kb_count - 1);
            const float sb = __ldg(scale_b + (n0 / KBLOCK) * kb_count + kb);
#endif
#pragma unroll
            for (int s = 0; s < NT; ++s) {
                const uint4 lo = wt[u][2 * s], hi = wt[u][2 * s + 1];  // rows 16s + g, + 8
                const u32 first[4] = {lo.x, hi.x, lo.y, hi.y};         // bytes 0-7 of each lane
                const u32 second[4] = {lo.z, hi.z, lo.w, hi.w};        // bytes 8-15
#pragma unroll
                for (int j = 0; j < MT; ++j) {
                    float d[4];
                    mma_fp8_m16n8k32(d, first, act[u][j].x, act[u][j].y, zero);
                    mma_fp8_m16n8k32(d, second, act[u][j].z, act[u][j].w, d);
#if SCALES == 2
                    const int r = min(m0 + 8 * j + 2 * t, M - 1), r1 = min(r + 1, M - 1);
                    const float s0 = __ldg(scale_a + r * kb_count + kb) * sb;
                    const float s1 = __ldg(scale_a + r1 * kb_count + kb) * sb;
                    acc[s][j][0] += d[0] * s0;
                    acc[s][j][1] += d[1] * s1;
                    acc[s][j][2] += d[2] * s0;
                    acc[s][j][3] += d[3] * s1;
#else
#pragma unroll
                    for (int i = 0; i < 4; ++i) acc[s][j][i] += d[i];
#endif
                }
            }
        }
    }
    (void)kb_count;

    // d[0], d[1]: weight row 16s + g, batch rows 8j + 2t, + 1; d[2], d[3]: weight row + 8
#pragma unroll
    for (int s = 0; s < NT; ++s)
#pragma unroll
        for (int j = 0; j < MT; ++j) {
            red[w][8 * j + 2 * t][16 * s + g] = acc[s][j][0];
            red[w][8 * j + 2 * t + 1][16 * s + g] = acc[s][j][1];
            red[w][8 * j + 2 * t][16 * s + g + 8] = acc[s][j][2];
            red[w][8 * j + 2 * t + 1][16 * s + g + 8] = acc[s][j][3];
        }
    __syncthreads();
    // one pair of C per thread and step: batch row m, weight rows n, n + 1
    for (int e = threadIdx.x; e < BM * BN / 2; e += NUM_THREADS) {
        const int m = e / (BN / 2), n = 2 * (e % (BN / 2));
        if (m0 + m >= M || n0 + n >= N) continue;
        float v0 = 0.0f, v1 = 0.0f;
#pragma unroll
        for (int q = 0; q < WARPS; ++q) {
            v0 += red[q][m][n];
            v1 += red[q][m][n + 1];
        }
#if SCALES == 0
        const float s = alpha * scale_a[0] * scale_b[0];
        v0 *= s;
        v1 *= s;
#elif SCALES == 1
        const float sa = alpha * scale_a[m0 + m];
        v0 *= sa * scale_b[n0 + n];
        v1 *= sa * scale_b[n0 + n + 1];
#else
        v0 *= alpha;
        v1 *= alpha;
#endif
        u32* out = reinterpret_cast<u32*>(C + static_cast<size_t>(m0 + m) * N + n0 + n);
        if (beta != 0.0f) {
            const u32 old = *out;
            v0 += beta * to_float(static_cast<unsigned short>(old & 0xffffu));
            v1 += beta * to_float(static_cast<unsigned short>(old >> 16));
        }
        *out = pack2(v0, v1);
    }
}
