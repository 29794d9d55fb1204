// Stage 09: warp tiling + double buffering. Stage 08's three levels of tiling (block tile in
// shared memory, warp tile, thread tile in registers; conflict-free shared-memory layout), plus
// two copies of each shared tile:
//   - while the block computes on tile t out of one buffer, each thread's LDG.128s for tile t+1
//     are already in flight into registers (register staging); only after its FMAs does the
//     thread store them into the other buffer. The global-memory latency hides behind the
//     BK * (thread tile) FMAs instead of stalling every warp at the barrier;
//   - a buffer is overwritten only one iteration after it was read, so one __syncthreads per
//     K tile suffices (single-buffered stages need two: after the stores, after the reads).
// The registry's tiles: BM x BN x BK = 128 x 256 x 8, 256 threads (8 warps of WM x WN = 64 x 64),
// 8 x 16 results per thread as 2 x 4 sub-tiles of TM x TN = 4 x 4 (every shared read a
// conflict-free LDS.128). From global memory per k the block loads BM + BN floats for BM*BN FMAs,
// 2*128*256 / (4*384) = 42.7 FLOP/byte; from shared memory per k a thread loads 8 + 16 floats
// for 128 FMAs, 2.67 FLOP/byte. Registers: 128 accumulators + 24 operands + 12 staged floats,
// so one block (8 warps) per SM: 128 independent FMAs per k hide latency instead of more warps.
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
#ifndef WNITER
#error "WNITER (sub-tiles of a warp tile along N) must be given as -DWNITER=..."
#endif
#ifndef TM
#error "TM (rows of one thread sub-tile) must be given as -DTM=..."
#endif
#ifndef TN
#error "TN (columns of one thread sub-tile) must be given as -DTN=..."
#endif
#ifndef NUM_THREADS
#error "NUM_THREADS (blockDim.x) must be given as -DNUM_THREADS=..."
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1  // blocks per SM promised to ptxas (__launch_bounds__): caps registers
#endif

#include "gemm/simt_epilogue.cuh"  // aligned16, store_warp_tile (the float4 epilogue)

constexpr int WARPS_N = BN / WN;  // warps side by side along N
constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);  // sub-tiles of a warp tile along M
constexpr int WSUBM = WM / (WMITER > 0 ? WMITER : 1);  // rows of one warp sub-tile
constexpr int WSUBN = WN / WNITER;  // columns of one warp sub-tile
constexpr int LANES_N = WSUBN / TN;  // lanes side by side along N in a sub-tile
constexpr int RM = WMITER * TM;  // rows of C per thread
constexpr int RN = WNITER * TN;  // columns of C per thread
constexpr int AS = BM + 4;  // padded stride of the transposed A tile (see the store below)
constexpr int A_ROUNDS = BM * BK / 4 / NUM_THREADS;  // float4 loads of A per thread per tile
constexpr int B_ROUNDS = BK * BN / 4 / NUM_THREADS;  // float4 loads of B per thread per tile

static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
static_assert(NUM_THREADS == 32 * (BM / WM) * (BN / WN), "one warp per warp tile");
static_assert(NUM_THREADS <= 1024, "at most 1024 threads per block");
static_assert(WMITER >= 1 && WMITER * 32 * TM * TN * WNITER == WM * WN,
              "a warp's 32 lanes x WMITER x WNITER sub-tiles of TM x TN must cover WM x WN");
static_assert(WN % WNITER == 0 && WSUBN % TN == 0 && WSUBM % TM == 0,
              "thread sub-tiles must tile the warp sub-tile");
static_assert(LANES_N * (WSUBM / TM) == 32, "a warp sub-tile is (WSUBM/TM) x (WSUBN/TN) lanes");
static_assert(TM % 4 == 0 && TN % 4 == 0, "operands and C rows are read and written as float4");
static_assert(BK % 8 == 0, "A is loaded as pairs of float4 (one 32-byte sector) along K");
static_assert(BM % 16 == 0, "A is loaded 16 rows x 2 float4 per warp");
static_assert(BN % 32 == 0, "a quarter warp stores 8 consecutive float4 of a B row (128 bytes)");
static_assert((BM * BK / 4) % NUM_THREADS == 0, "every thread loads the same number of A float4s");
static_assert((BK * BN / 4) % NUM_THREADS == 0, "every thread loads the same number of B float4s");
static_assert((4 * AS) % 32 == 16, "padding: k and k+4 of one m land 16 banks apart");
static_assert(2 * BK * (AS + BN) * 4 <= 48 * 1024, "two static shared buffers must fit in 48 KiB");
static_assert(RM * RN <= 128, "the accumulator tile must leave registers for operands and addresses");

// Global -> registers. A's float4 f covers rows m = 16*rg + r_lo and floats kq..kq+3 with
// kq = 8*qp + 4*q_lo, where (r_lo, q_lo) = (f % 16, f / 16 % 2): a warp loads 16 rows x 32
// bytes (one full sector per row), and its transposed 4-byte stores below hit 32 banks.
__device__ __forceinline__ void a_coords(int f, int& m, int& kq) {
    const int r_lo = f % 16, q_lo = (f / 16) % 2, rest = f / 32;
    const int qp = rest % (BK / 8), rg = rest / (BK / 8);
    m = rg * 16 + r_lo;
    kq = qp * 8 + q_lo * 4;
}

__device__ __forceinline__ void load_a(float4 (&ld)[A_ROUNDS], const float* __restrict__ A,
                                       int M, int K, int cRow, int k0, bool vec, int tid) {
#pragma unroll
    for (int rnd = 0; rnd < A_ROUNDS; ++rnd) {
        int m, kq;
        a_coords(tid + rnd * NUM_THREADS, m, kq);
        const int r = cRow + m, k = k0 + kq;
        const float* p = A + (size_t)r * K + k;
        if (vec) {  // interior tile, K % 4 == 0, aligned base: one LDG.128
            ld[rnd] = *reinterpret_cast<const float4*>(p);
        } else {  // edge tile: scalar loads, zero outside the matrix
            ld[rnd].x = (r < M && k + 0 < K) ? p[0] : 0.0f;
            ld[rnd].y = (r < M && k + 1 < K) ? p[1] : 0.0f;
            ld[rnd].z = (r < M && k + 2 < K) ? p[2] : 0.0f;
            ld[rnd].w = (r < M && k + 3 < K) ? p[3] : 0.0f;
        }
    }
}

__device__ __forceinline__ void load_b(float4 (&ld)[B_ROUNDS], const float* __restrict__ B,
                                       int N, int K, int cCol, int k0, bool vec, int tid) {
#pragma unroll
    for (int rnd = 0; rnd < B_ROUNDS; ++rnd) {
        const int f = tid + rnd * NUM_THREADS;
        const int k = k0 + f / (BN / 4), c = cCol + (f % (BN / 4)) * 4;  // a warp: 512 contiguous bytes
        const float* p = B + (size_t)k * N + c;
        if (vec) {
            ld[rnd] = *reinterpret_cast<const float4*>(p);
        } else {
            ld[rnd].x = (k < K && c + 0 < N) ? p[0] : 0.0f;
            ld[rnd].y = (k < K && c + 1 < N) ? p[1] : 0.0f;
            ld[rnd].z = (k < K && c + 2 < N) ? p[2] : 0.0f;
            ld[rnd].w = (k < K && c + 3 < N) ? p[3] : 0.0f;
        }
    }
}

// Registers -> shared. A goes in transposed (As[k * AS + m]) so that a thread's operands for one
// k are contiguous in m (LDS.128). With AS = BM + 4, floats k and k+4 of the same m are
// 4*AS = 16 (mod 32) banks apart: a warp's 16 rows x 2 float4 store into 32 distinct banks.
__device__ __forceinline__ void store_a(float* As, const float4 (&ld)[A_ROUNDS], int tid) {
#pragma unroll
    for (int rnd = 0; rnd < A_ROUNDS; ++rnd) {
        int m, kq;
        a_coords(tid + rnd * NUM_THREADS, m, kq);
        As[(kq + 0) * AS + m] = ld[rnd].x;
        As[(kq + 1) * AS + m] = ld[rnd].y;
        As[(kq + 2) * AS + m] = ld[rnd].z;
        As[(kq + 3) * AS + m] = ld[rnd].w;
    }
}

__device__ __forceinline__ void store_b(float* Bs, const float4 (&ld)[B_ROUNDS], int tid) {
#pragma unroll
    for (int rnd = 0; rnd < B_ROUNDS; ++rnd) {
        const int f = tid + rnd * NUM_THREADS;
        // a quarter warp writes 128 contiguous bytes: one STS.128 wavefront each, no conflict
        *reinterpret_cast<float4*>(&Bs[(f / (BN / 4)) * BN + (f % (BN / 4)) * 4]) = ld[rnd];
    }
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MIN_BLOCKS)
gemm_double_buffer(int M, int N, int K, float alpha, const float* __restrict__ A,
                   const float* __restrict__ B, float beta, float* __restrict__ C) {
    __shared__ __align__(16) float As[2][BK * AS];  // two transposed, padded A tiles
    __shared__ __align__(16) float Bs[2][BK * BN];  // two row-major B tiles

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int wRow = (warp / WARPS_N) * WM;  // this warp's tile inside the block tile
    const int wCol = (warp % WARPS_N) * WN;
    // Lanes form a (WSUBM/TM) x LANES_N grid in each warp sub-tile. With TM = TN = 4, a warp's
    // A operands for one k are 8 consecutive float4 (128 bytes, one wavefront) and its B
    // operands 4 consecutive float4: the LDS.128s are conflict-free (the rest is broadcast).
    const int tRow = (lane / LANES_N) * TM;
    const int tCol = (lane % LANES_N) * TN;
    const int cRow = blockIdx.y * BM;  // blockIdx.y -> row tile, blockIdx.x -> column tile
    const int cCol = blockIdx.x * BN;

    // Decided once per block, identical for all its threads: no divergence in the loads.
    const bool vecA = cRow + BM <= M && (K & 3) == 0 && aligned16(A);
    const bool vecB = cCol + BN <= N && (N & 3) == 0 && aligned16(B);

    float acc[RM][RN];
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
        for (int j = 0; j < RN; ++j) acc[i][j] = 0.0f;

    float4 ldA[A_ROUNDS], ldB[B_ROUNDS];  // the next tile, staged in registers
    // Prologue: tile 0 into buffer 0.
    load_a(ldA, A, M, K, cRow, 0, vecA && BK <= K, tid);
    load_b(ldB, B, N, K, cCol, 0, vecB && BK <= K, tid);
    store_a(As[0], ldA, tid);
    store_b(Bs[0], ldB, tid);
    __syncthreads();

    int cur = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const int k1 = k0 + BK;  // the next tile
        const bool more = k1 < K;  // uniform: the whole block agrees
        if (more) {  // issue the next tile's LDGs now; they land while we compute
            const bool fullK = k1 + BK <= K;  // only the last K tile can be partial
            load_a(ldA, A, M, K, cRow, k1, vecA && fullK, tid);
            load_b(ldB, B, N, K, cCol, k1, vecB && fullK, tid);
        }

        const float* as = As[cur];
        const float* bs = Bs[cur];
#pragma unroll
        for (int dot = 0; dot < BK; ++dot) {
            float regM[RM], regN[RN];
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
                for (int i = 0; i < TM; i += 4)
                    *reinterpret_cast<float4*>(&regM[wm * TM + i]) = *reinterpret_cast<const float4*>(
                        &as[dot * AS + wRow + wm * WSUBM + tRow + i]);
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; j += 4)
                    *reinterpret_cast<float4*>(&regN[wn * TN + j]) = *reinterpret_cast<const float4*>(
                        &bs[dot * BN + wCol + wn * WSUBN + tCol + j]);
#pragma unroll
            for (int i = 0; i < RM; ++i)
#pragma unroll
                for (int j = 0; j < RN; ++j) acc[i][j] = fmaf(regM[i], regN[j], acc[i][j]);
        }

        if (more) {  // the other buffer was last read one iteration ago, before the last barrier
            store_a(As[cur ^ 1], ldA, tid);
            store_b(Bs[cur ^ 1], ldB, tid);
        }
        __syncthreads();  // the one barrier per tile: next tile written, this one fully read
        cur ^= 1;
    }

    // Epilogue (gemm/simt_epilogue.cuh): beta == 0 never reads C.
    store_warp_tile<BM, BN, WMITER, WNITER, TM, TN, WSUBM, WSUBN>(
        acc, C, M, N, alpha, beta, cRow, cCol, wRow, wCol, tRow, tCol);
}
