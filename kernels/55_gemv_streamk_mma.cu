// Stage 55: stage 54's stream-K split of B over every SM, the math on Tensor Cores. Stage 54 at
// M = 16 does 16 FFMAs per element of B on CUDA cores; stage 53 puts the math on HMMA but gives
// each block one strip and all of K, so SMs wait on one step at a time.
// Here a persistent grid (BLOCKS_PER_SM x SMs blocks) cuts the line of units (16-row block of C,
// BN-column strip, BK rows of K; K fastest) into equal shares, one per block, as in stage 54, and
// every unit goes through shared memory:
//   1. cp.async.cg copies the unit's BK x BN slice of B and 16 x BK slice of A (rows past M,
//      rows of K past K: zero-filled) into one of STAGES slots; STAGES - 1 units stay in flight
//      per block, one barrier per unit;
//   2. warp w owns columns w * WN .. + WN of the strip (WN = BN / WARPS) and every row of the
//      slice: per k16 step one ldmatrix.x4 of A (16 x 16) and one ldmatrix.x4.trans per 16
//      columns of B give the fragments of mma.sync m16n8k16 (fp32 accumulators, WN / 2 per lane);
//   3. when the share leaves a strip each warp flushes its 16 x WN partial sums: a segment that
//      covers all of K writes C (alpha, beta); any other adds them to an fp32 workspace in L2
//      (red.global.add.v4.f32) and counts its rows on the tile's counter, and the block that
//      completes K writes C and leaves the workspace zeroed (stage 54's protocol).
// Rows of shared memory are padded by 8 elements: each 8x8 ldmatrix hits distinct banks. M > 16
// takes more row blocks (B is read once per 16 rows). Any M, N, K: cp.async where rows start on
// 16 bytes, else 2-byte loads gathered into 16-byte stores; columns past N are never stored.
#ifndef BN
#error "BN (columns of C per strip) must be given as -DBN=..."
#endif
#ifndef BK
#error "BK (rows of K per unit) must be given as -DBK=..."
#endif
#ifndef STAGES
#error "STAGES (shared-memory slots of the cp.async pipeline) must be given as -DSTAGES=..."
#endif
#ifndef NUM_THREADS
#error "NUM_THREADS (threads per block) must be given as -DNUM_THREADS=..."
#endif
#ifndef BLOCKS_PER_SM
#error "BLOCKS_PER_SM (persistent blocks per SM) must be given as -DBLOCKS_PER_SM=..."
#endif

#include "elem.cuh"      // elem_t (fp16 or bf16 bits), elem_to_float, elem_from_float
#include "ptx_sm80.cuh"  // cp.async, ldmatrix, mma.sync m16n8k16
#include "sm90/red.cuh"  // red_add_v4_f32

constexpr int TM = 16;                   // rows of C per unit: the MMA's M
constexpr int WARPS = NUM_THREADS / 32;
constexpr int WN = BN / WARPS;           // columns of the strip per warp
constexpr int NT = WN / 8;               // n8 tiles per warp
constexpr int LDB_S = BN + 8;            // shared row strides in elements (+16 bytes)
constexpr int LDA_S = BK + 8;
constexpr int B_SLOT = BK * LDB_S;       // elements of one slot's B
constexpr int A_SLOT = TM * LDA_S;
constexpr int B_PIECES = BK * BN / 8;    // 16-byte pieces of B per unit
constexpr int A_PIECES = TM * BK / 8;
// The dynamic shared memory the registry passes (Stage.smem_bytes): the same formula.
constexpr int SMEM_BYTES = STAGES * (B_SLOT + A_SLOT) * 2;

static_assert(sizeof(elem_t) == 2, "Tensor Core stage: fp16 or bf16 only");
static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "whole warps, at most 1024 threads");
static_assert(BN % WARPS == 0 && WN % 16 == 0,
              "each warp owns whole 16-column groups (one ldmatrix.x4.trans per k16 step)");
static_assert(BK % 16 == 0, "a unit is whole k16 steps of the MMA");
static_assert(B_PIECES % NUM_THREADS == 0, "every thread copies the same number of B pieces");
static_assert(STAGES >= 2, "a pipeline: at least one unit in flight while one is computed");
static_assert(BLOCKS_PER_SM * (SMEM_BYTES + 1024) <= 227 * 1024,
              "BLOCKS_PER_SM blocks' slots fit in an SM's 227 KiB of shared memory");

struct Unit {
    int tile, chunk;  // tile = strip * mblocks + row block; chunk: BK rows of K

    __device__ __forceinline__ void advance(int chunks) {  // the next unit of the line, K fastest
        if (++chunk == chunks) chunk = 0, ++tile;
    }
};

__device__ __forceinline__ Unit unit_at(long long u, int chunks) {
    return {static_cast<int>(u / chunks), static_cast<int>(u % chunks)};
}

// Issue the copies of unit `un` into slot `slot` (cp.async, or plain loads on the scalar path).
template <bool VEC>
__device__ __forceinline__ void load_unit(Unit un, int mblocks, int M, int N, int K,
                                          const elem_t* __restrict__ A,
                                          const elem_t* __restrict__ B, elem_t* sb, elem_t* sa) {
    const int mb = un.tile % mblocks * TM, n0 = un.tile / mblocks * BN, k0 = un.chunk * BK;
    const unsigned sb_addr = static_cast<unsigned>(__cvta_generic_to_shared(sb));
    const unsigned sa_addr = static_cast<unsigned>(__cvta_generic_to_shared(sa));
#pragma unroll
    for (int i = 0; i < B_PIECES / NUM_THREADS; ++i) {
        const int p = threadIdx.x + i * NUM_THREADS, r = p / (BN / 8), c = p % (BN / 8) * 8;
        const int k = k0 + r, n = n0 + c;
        const bool in = k < K && n < N;
        const elem_t* src = B + static_cast<size_t>(in ? k : 0) * N + (in ? n : 0);
        if (VEC) {
            cp_async16(sb_addr + (r * LDB_S + c) * 2, src, in ? 16 : 0);
        } else {
            elem_t v[8];
#pragma unroll
            for (int j = 0; j < 8; ++j) v[j] = k < K && n + j < N ? src[j] : elem_t(0);
            uint4 w;
            w.x = v[0] | (static_cast<unsigned>(v[1]) << 16);
            w.y = v[2] | (static_cast<unsigned>(v[3]) << 16);
            w.z = v[4] | (static_cast<unsigned>(v[5]) << 16);
            w.w = v[6] | (static_cast<unsigned>(v[7]) << 16);
            *reinterpret_cast<uint4*>(sb + r * LDB_S + c) = w;
        }
    }
    for (int p = threadIdx.x; p < A_PIECES; p += NUM_THREADS) {
        const int r = p / (BK / 8), c = p % (BK / 8) * 8;
        const int m = mb + r, k = k0 + c;
        const bool in = m < M && k < K;
        const elem_t* src = A + static_cast<size_t>(in ? m : 0) * K + (in ? k : 0);
        if (VEC) {
            cp_async16(sa_addr + (r * LDA_S + c) * 2, src, in ? 16 : 0);
        } else {
            elem_t v[8];
#pragma unroll
            for (int j = 0; j < 8; ++j) v[j] = m < M && k + j < K ? src[j] : elem_t(0);
            uint4 w;
            w.x = v[0] | (static_cast<unsigned>(v[1]) << 16);
            w.y = v[2] | (static_cast<unsigned>(v[3]) << 16);
            w.z = v[4] | (static_cast<unsigned>(v[5]) << 16);
            w.w = v[6] | (static_cast<unsigned>(v[7]) << 16);
            *reinterpret_cast<uint4*>(sa + r * LDA_S + c) = w;
        }
    }
}

// One unit's MMAs: warp w, columns w * WN .. + WN of the slot's slice, all BK rows.
__device__ __forceinline__ void mma_unit(const elem_t* sb, const elem_t* sa, float (&acc)[NT][4]) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int mat = lane / 8, row = lane % 8;  // which 8x8 matrix this lane addresses, its row
    const unsigned a_base = static_cast<unsigned>(__cvta_generic_to_shared(
        sa + (row + (mat % 2) * 8) * LDA_S + (mat / 2) * 8));
    const unsigned b_base = static_cast<unsigned>(__cvta_generic_to_shared(
        sb + (row + (mat % 2) * 8) * LDB_S + warp * WN + (mat / 2) * 8));
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
        unsigned a[4];
        ldmatrix_x4(a, a_base + kk * 2);  // rows 0-7/8-15 x k 0-7/8-15: a0..a3 in mma order
#pragma unroll
        for (int j = 0; j < NT; j += 2) {
            unsigned b[4];  // k 0-7 / 8-15 of columns j*8.. (b[0], b[1]), then j*8+8.. (b[2], b[3])
            ldmatrix_x4_trans(b, b_base + (kk * LDB_S + j * 8) * 2);
            mma_m16n8k16(acc[j], a, b[0], b[1]);
            mma_m16n8k16(acc[j + 1], a, b[2], b[3]);
        }
    }
}

__device__ __forceinline__ void store_c(elem_t* C, size_t idx, float sum, float alpha, float beta) {
    float v = alpha * sum;
    if (beta != 0.0f) v = fmaf(beta, elem_to_float(C[idx]), v);  // beta 0: C unread
    C[idx] = elem_from_float(v);
}

// The block whose rows complete K of a tile: every other segment has added its partials; read
// the sums back, write C, leave the workspace and the counter zeroed. Not inlined: it runs once
// or twice per block, and kept out of line its loop does not hide the main loop from tools
// that look for the innermost loop doing arithmetic (tests/test_stages.py's SASS claim).
__device__ __noinline__ void finish_tile(int tile, int mblocks, int M, int N, float alpha,
                                         float beta, elem_t* __restrict__ C,
                                         float* __restrict__ ws, unsigned* count) {
    __threadfence();
    const int mb = tile % mblocks * TM, rows = min(TM, M - mb), s0 = tile / mblocks * BN;
    for (int o = threadIdx.x; o < rows * BN; o += NUM_THREADS) {
        const int r = o / BN, n = s0 + o % BN;
        if (n >= N) continue;
        const size_t idx = static_cast<size_t>(mb + r) * N + n;
        const float sum = __ldcg(&ws[idx]);  // from L2: L1 may hold a stale line
        __stcg(&ws[idx], 0.0f);              // zero for the next launch
        store_c(C, idx, sum, alpha, beta);
    }
    if (threadIdx.x == 0) count[tile] = 0;
}

// The end of a segment (rows [k0, k1) of K of one tile): write C, or add to the workspace and
// finish the tile if this block's rows complete K. Block-uniform (contains barriers).
__device__ __forceinline__ void flush(float (&acc)[NT][4], int tile, int mblocks, int k0, int k1,
                                      int M, int N, int K, float alpha, float beta,
                                      elem_t* __restrict__ C, float* __restrict__ ws,
                                      unsigned* count, int* last) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
    const int mb = tile % mblocks * TM, n0 = tile / mblocks * BN + warp * WN;
    if (k0 == 0 && k1 == K) {  // the whole of K: no other block adds to this tile
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int m = mb + g + h * 8, n = n0 + j * 8 + 2 * t;
                if (m >= M) continue;
                if (n < N) store_c(C, static_cast<size_t>(m) * N + n, acc[j][2 * h], alpha, beta);
                if (n + 1 < N)
                    store_c(C, static_cast<size_t>(m) * N + n + 1, acc[j][2 * h + 1], alpha, beta);
            }
        return;
    }
#if __CUDA_ARCH__ >= 900
    if (N % 4 == 0) {  // rows of the workspace start on 16 bytes: four sums per reduction
        // lanes t and t ^ 1 trade halves: even t gets row g, columns 2t .. 2t + 3; odd t row
        // g + 8, columns 2t - 2 .. 2t + 1 (one red.global.add.v4.f32 where two v2 would go)
        const bool odd = t & 1;
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            const float x0 = __shfl_xor_sync(0xffffffffu, odd ? acc[j][0] : acc[j][2], 1);
            const float x1 = __shfl_xor_sync(0xffffffffu, odd ? acc[j][1] : acc[j][3], 1);
            const int m = mb + g + (odd ? 8 : 0), n = n0 + j * 8 + 2 * (t & ~1);
            if (m < M && n < N)  // N % 4 == 0: a group of four is wholly in or out
                red_add_v4_f32(ws + static_cast<size_t>(m) * N + n, odd ? x0 : acc[j][0],
                               odd ? x1 : acc[j][1], odd ? acc[j][2] : x0,
                               odd ? acc[j][3] : x1);
        }
    } else
#endif
    {
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int m = mb + g + h * 8, n = n0 + j * 8 + 2 * t;
                if (m >= M) continue;
                float* w = ws + static_cast<size_t>(m) * N + n;
                if (n < N) atomicAdd(w, acc[j][2 * h]);  // RED.ADD.F32 in L2
                if (n + 1 < N) atomicAdd(w + 1, acc[j][2 * h + 1]);
            }
    }
    __threadfence();  // our partials are visible GPU-wide before the counter says so
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned done = atomicAdd(&count[tile], static_cast<unsigned>(k1 - k0));
        *last = done + (k1 - k0) == static_cast<unsigned>(K);
    }
    __syncthreads();
    if (*last) finish_tile(tile, mblocks, M, N, alpha, beta, C, ws, count);
    __syncthreads();  // `last` is read by all before the next segment's flush rewrites it
}

template <bool VEC>
__device__ __forceinline__ void run(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
                                    const elem_t* __restrict__ B, float beta,
                                    elem_t* __restrict__ C, float* __restrict__ ws, elem_t* smem,
                                    int* last) {
    const int mblocks = (M + TM - 1) / TM, strips = (N + BN - 1) / BN, chunks = (K + BK - 1) / BK;
    unsigned* count = reinterpret_cast<unsigned*>(ws + static_cast<size_t>(M) * N);
    elem_t* sb = smem;                   // STAGES slots of B
    elem_t* sa = smem + STAGES * B_SLOT;  // then STAGES slots of A

    // this block's share of the line of units: [lo, hi)
    const long long units = static_cast<long long>(mblocks) * strips * chunks;
    const long long lo = units * blockIdx.x / gridDim.x, hi = units * (blockIdx.x + 1) / gridDim.x;
    if (lo >= hi) return;

    // prologue: STAGES - 1 units in flight (one commit group each, empty past the share)
    Unit ld = unit_at(lo, chunks);  // the next unit to copy
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (lo + s < hi)
            load_unit<VEC>(ld, mblocks, M, N, K, A, B, sb + s * B_SLOT, sa + s * A_SLOT);
        ld.advance(chunks);
        cp_async_commit();
    }
    float acc[NT][4];
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    Unit un = unit_at(lo, chunks);  // the unit computed now
    int seg_k0 = un.chunk * BK;
    int slot = 0;
    for (long long u = lo; u < hi; ++u) {
        cp_async_wait<STAGES - 2>();  // unit u has landed (this thread's copies) ...
        __syncthreads();              // ... everyone's; and slot u - 1 is free again
        const int nslot = (slot + STAGES - 1) % STAGES;
        if (u + STAGES - 1 < hi)
            load_unit<VEC>(ld, mblocks, M, N, K, A, B, sb + nslot * B_SLOT, sa + nslot * A_SLOT);
        ld.advance(chunks);
        cp_async_commit();
        mma_unit(sb + slot * B_SLOT, sa + slot * A_SLOT, acc);
        slot = (slot + 1) % STAGES;

        if (u + 1 == hi || un.chunk + 1 == chunks) {  // the segment ends: flush its sums
            const int k1 = min((un.chunk + 1) * BK, K);
            flush(acc, un.tile, mblocks, seg_k0, k1, M, N, K, alpha, beta, C, ws, count, last);
#pragma unroll
            for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
            seg_k0 = 0;  // the next segment starts a strip at k = 0
        }
        un.advance(chunks);
    }
    cp_async_wait<0>();  // no copies outlive the block
}

// ws: M x N fp32 partial sums, then one counter per tile (row block x strip); zero on entry,
// zero again on exit.
extern "C" __global__ void __launch_bounds__(NUM_THREADS, BLOCKS_PER_SM)
gemv_streamk_mma(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
                 const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C,
                 float* __restrict__ ws) {
    extern __shared__ __align__(128) elem_t smem[];  // SMEM_BYTES, dynamic
    __shared__ int last;
    const unsigned long long ab = reinterpret_cast<unsigned long long>(A) |
                                  reinterpret_cast<unsigned long long>(B);
    if (N % 8 == 0 && K % 8 == 0 && ab % 16 == 0)
        run<true>(M, N, K, alpha, A, B, beta, C, ws, smem, &last);
    else
        run<false>(M, N, K, alpha, A, B, beta, C, ws, smem, &last);
}
