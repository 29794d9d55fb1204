// Stage 56: stage 52 under programmatic dependent launch (PDL). In a decode chain each GEMV's
// input is the previous one's output, but its weights are not: only the reads of A must wait.
// Launched with the programmatic stream serialization attribute, this kernel's blocks may start
// while the previous kernel drains; griddepcontrol.wait holds them before the first read of A
// (and before C is written), and griddepcontrol.launch_dependents lets the next kernel start.
// Where both go is a compile-time choice, because overlap is not free (a dependent's blocks take
// SM slots and bandwidth from the kernel still running):
//   PDL_WAIT   0: wait at entry; 1: issue the first step's loads of B (KSTEP x 16 B a thread,
//              into registers), and prefetch PDL_PF more steps of it into L2, then wait.
//   PDL_SIGNAL 0: signal at entry; 1: once the first step's loads of B are issued; 2: after the
//              main loop (the block's weight stream is done); 3: never (implicit at exit).
// Without the launch attribute both instructions return at once: the kernel is stage 52's.
// The rest is stage 52: a block owns BN columns and all of K, its threads split K, partial sums
// meet through shuffles and shared memory.
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
#ifndef PDL_WAIT
#error "PDL_WAIT (0: at entry, 1: after the first step's loads of B) must be given as -DPDL_WAIT=..."
#endif
#ifndef PDL_SIGNAL
#error "PDL_SIGNAL (0 entry, 1 first step, 2 after the loop, 3 never) must be given as -DPDL_SIGNAL=..."
#endif
#ifndef PDL_PF
#define PDL_PF 0  // steps of B past the first prefetched into L2 before the wait (PDL_WAIT 1)
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1  // blocks per SM ptxas must fit: 1 leaves it the registers to issue a step's
                      // loads at once
#endif


#include "elem.cuh"                 // elem_t (fp32, fp16 or bf16 bits), elem_to_float, ..
#include "ptx_sm80.cuh"             // prefetch.global.L2
#include "sm90/griddepcontrol.cuh"  // griddepcontrol.wait, griddepcontrol.launch_dependents

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
static_assert(PDL_WAIT == 0 || PDL_WAIT == 1, "PDL_WAIT is 0 (entry) or 1 (after B's first step)");
static_assert(PDL_SIGNAL >= 0 && PDL_SIGNAL <= 3, "PDL_SIGNAL is 0, 1, 2 or 3");
static_assert(PDL_PF >= 0 && (PDL_PF == 0 || PDL_WAIT == 1),
              "L2 prefetch before the wait needs PDL_WAIT 1 (there is no before at 0)");

// This thread's first step of B is issued (or it has none): signal (PDL_SIGNAL 1), then wait for
// the previous kernel before anything reads A (PDL_WAIT 1). Once per thread; then a no-op.
__device__ __forceinline__ void hand_over(bool& handed) {
    if (handed) return;
    handed = true;
#if PDL_SIGNAL == 1
    griddepcontrol_launch_dependents();
#endif
#if PDL_WAIT == 1
    griddepcontrol_wait();
#endif
}

// 16 bytes -> PER16 floats.
__device__ __forceinline__ void unpack16(const uint4& v, float* f) {
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#if ELEM_FP32
        f[i] = __uint_as_float(w[i]);
#elif ELEM_BF16
        f[2 * i] = __uint_as_float(w[i] << 16);
        f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
#else
        f[2 * i] = __nv_half2float(static_cast<unsigned short>(w[i] & 0xffffu));
        f[2 * i + 1] = __nv_half2float(static_cast<unsigned short>(w[i] >> 16));
#endif
    }
}

// Element i (0 <= i < PER16, known at compile time once unrolled) of 16 bytes, as a float.
__device__ __forceinline__ float element(const uint4& v, int i) {
    const int word = i / (PER16 / 4);
    const unsigned w = word == 0 ? v.x : word == 1 ? v.y : word == 2 ? v.z : v.w;
#if ELEM_FP32
    return __uint_as_float(w);
#elif ELEM_BF16
    return __uint_as_float(i % 2 ? w & 0xffff0000u : w << 16);
#else
    return __nv_half2float(static_cast<unsigned short>(i % 2 ? w >> 16 : w & 0xffffu));
#endif
}

// acc[r][j] += A[row r][k] * B[k][col + j] with scalar loads: the path for rows of B or A that
// do not start on 16 bytes, and for the K tail.
template <int R>
__device__ __forceinline__ void fma_row(int k, int N, int col, const elem_t* __restrict__ B,
                                        const elem_t* const (&arow)[R], float (&acc)[R][VEC]) {
    const elem_t* p = B + static_cast<size_t>(k) * N + col;
    float b[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) b[j] = col + j < N ? elem_to_float(__ldg(p + j)) : 0.0f;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const float a = elem_to_float(__ldg(arow[r] + k));
#pragma unroll
        for (int j = 0; j < VEC; ++j) acc[r][j] = fmaf(a, b[j], acc[r][j]);
    }
}

// One block: a BN-column strip, all of K, rows mb .. mb + BM; R rows per thread (R <= TM).
// VEC16: the 16-byte path (alignment checked by the caller), else scalar loads.
template <int R, bool VEC16>
__device__ __forceinline__ void splitk_tile(int M, int N, int K, float alpha,
                                            const elem_t* __restrict__ A,
                                            const elem_t* __restrict__ B, float beta,
                                            elem_t* __restrict__ C, int mb, int n0, int rows,
                                            float (*red)[BM][BN]) {
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int c = tid % TPR, rg = (tid / TPR) % RG, g = tid / LANES_PER_G;
    const int col = n0 + c * VEC;

    const elem_t* arow[R];  // rows past M read row M - 1 (computed, never stored)
#pragma unroll
    for (int r = 0; r < R; ++r) arow[r] = A + static_cast<size_t>(min(mb + rg + RG * r, M - 1)) * K;

    float acc[R][VEC];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int j = 0; j < VEC; ++j) acc[r][j] = 0.0f;

    // 16-byte path: a piece past N reads the last piece of the row instead (its sums are never
    // stored), so every load is unconditional and the compiler issues them all up front
    int piece[LOADS];
#pragma unroll
    for (int l = 0; l < LOADS; ++l) piece[l] = min(col + l * PER16, N - PER16) / PER16;
    const int ldb = N / PER16;  // a row of B in 16-byte units (when VEC16)

    bool handed = false;  // hand_over() done
    int k0 = g * KSTEP;
    for (; k0 + KSTEP <= K; k0 += KSPLIT * KSTEP) {
        if (VEC16) {
            // every load of the step is issued before the first FMA: KSTEP x 16 B of B in flight
            uint4 braw[KSTEP][LOADS], araw[R][KSTEP / PER16];
            const uint4* bq = reinterpret_cast<const uint4*>(B) + static_cast<size_t>(k0) * ldb;
#pragma unroll
            for (int u = 0; u < KSTEP; ++u)
#pragma unroll
                for (int l = 0; l < LOADS; ++l) braw[u][l] = __ldg(bq + u * ldb + piece[l]);
#if PDL_PF > 0
            if (!handed) {  // the next PDL_PF steps of this thread's rows of B, into L2
#pragma unroll
                for (int p = 1; p <= PDL_PF; ++p) {
                    if (k0 + p * KSPLIT * KSTEP + KSTEP > K) break;
#pragma unroll
                    for (int u = 0; u < KSTEP; ++u)
#pragma unroll
                        for (int l = 0; l < LOADS; ++l)
                            prefetch_l2(bq + (p * KSPLIT * KSTEP + u) * ldb + piece[l]);
                }
            }
#endif
            hand_over(handed);  // B's loads are in flight; A is the previous kernel's output
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int l = 0; l < KSTEP / PER16; ++l)
                    araw[r][l] = __ldg(reinterpret_cast<const uint4*>(arow[r] + k0) + l);
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
            hand_over(handed);
#pragma unroll 2
            for (int u = 0; u < KSTEP; ++u) fma_row(k0 + u, N, col, B, arow, acc);
        }
    }
    hand_over(handed);  // before the K tail's reads of A and the epilogue's writes of C
    for (; k0 < K; ++k0) fma_row(k0, N, col, B, arow, acc);  // the K tail: < KSTEP rows, one group
#if PDL_SIGNAL == 2
    griddepcontrol_launch_dependents();  // this thread's share of the weight stream is done
#endif

    // Reduce over the k groups: first the 32 / LANES_PER_G groups of a warp (shuffles), then
    // the warps (shared memory). Every thread gets here: no early exit before the barrier.
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

// The smallest R in TM, TM/2, .. 1 that covers `need` rows per thread (block-uniform).
template <int R>
__device__ __forceinline__ void pick_rows(int need, bool vec, int M, int N, int K, float alpha,
                                          const elem_t* __restrict__ A,
                                          const elem_t* __restrict__ B, float beta,
                                          elem_t* __restrict__ C, int mb, int n0, int rows,
                                          float (*red)[BM][BN]) {
    if constexpr (R > 1) {
        if (need <= R / 2) {
            pick_rows<R / 2>(need, vec, M, N, K, alpha, A, B, beta, C, mb, n0, rows, red);
            return;
        }
    }
    if (vec)
        splitk_tile<R, true>(M, N, K, alpha, A, B, beta, C, mb, n0, rows, red);
    else
        splitk_tile<R, false>(M, N, K, alpha, A, B, beta, C, mb, n0, rows, red);
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MIN_BLOCKS)
gemv_pdl(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
            const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C) {
    // one partial tile per warp, declared here once (not per instantiation of the tile code)
    __shared__ __align__(16) float red[WARPS][BM][BN];
#if PDL_SIGNAL == 0
    griddepcontrol_launch_dependents();
#endif
#if PDL_WAIT == 0
    griddepcontrol_wait();
#endif
    // The blocks of one strip of columns (its row blocks, M > BM) run side by side: blockIdx is
    // relabelled so that the row block varies fastest in launch order, and a strip of B comes
    // from HBM once, then from L2, instead of once per row block several waves apart.
    const int linear = blockIdx.y * gridDim.x + blockIdx.x;
    const int mb = linear % gridDim.y * BM, n0 = linear / gridDim.y * BN;
    const int rows = min(BM, M - mb);  // rows of C this block writes (>= 1: the grid rounds up)
    const int need = (rows + RG - 1) / RG;
    // 16-byte loads: rows of B (k * N) and of A (m * K) start on 16 bytes, and so do the buffers
    const unsigned long long ab = reinterpret_cast<unsigned long long>(A) |
                                  reinterpret_cast<unsigned long long>(B);
    const bool vec = N % PER16 == 0 && K % PER16 == 0 && ab % 16 == 0;
    pick_rows<TM>(need, vec, M, N, K, alpha, A, B, beta, C, mb, n0, rows, red);
}
