// Stage 57: a whole decode token in one launch. Kernels launched back to back each pay a
// ramp-up (the first weight bytes arrive a microsecond or more after the launch) and a drain
// (the last blocks leave SMs idle); stage 56 overlaps only what fits beside a draining kernel.
// Here one persistent grid, a block per SM, runs every GEMM of the chain (C = A W, W K x N, A an
// earlier GEMM's output), and the weight stream does not stop at a GEMM's end: weights do not
// depend on the activation, so a producer warp per block streams its share of every GEMM's
// weights through a ring of shared memory (TMA boxes of KC rows x NC columns, on mbarriers),
// running into the next GEMM while the consumer warps wait for the grid to finish this one.
// Per GEMM, its units (column block x KC rows, column block major) are cut into gridDim.x equal
// contiguous runs (split-K where a run covers part of a column's K). A block sums its run per
// column block (warps meet in shared memory) and adds that into the GEMM's float32 workspace
// (red.global.add.v4.f32), then counts itself in the GEMM's counter (release); the next GEMM's
// consumers wait for every block (acquire) and read their input from the source's workspace,
// rounded as a stored C would be. Once counted, while the others finish, a block writes out
// its share of the previous GEMM as C and zeroes the workspaces no later GEMM reads (listed by
// rooflinecli/stages/token.py; the last ones after the end), so they are zero at every launch.
// Counters only grow: a launch waits for (launches before + 1) x blocks; sync[0] counts them.
// MROWS: rows of A (the batch, 1-4); NC = 256: 512-byte box rows, unswizzled, a warp's lanes
// one row's 16-byte pieces; CONSUMER_WARPS compute; STAGES: the ring; KMAX: the largest K.
#ifndef MROWS
#error "MROWS (rows of A: the batch) must be given as -DMROWS=..."
#endif
#ifndef KC
#define KC 32  // rows of W per TMA box
#endif
#ifndef NC
#define NC 256  // columns of W per TMA box
#endif
#ifndef CONSUMER_WARPS
#define CONSUMER_WARPS 8
#endif
#ifndef STAGES
#error "STAGES (the ring's depth, as the shared memory allows) must be given as -DSTAGES=..."
#endif
#ifndef KMAX
#error "KMAX (the largest K of the chain, a multiple of KC) must be given as -DKMAX=..."
#endif

#include "elem.cuh"                 // elem_t (fp16 or bf16 bits), elem_to_float, elem_from_float
#include "gemm/gemv_unpack.cuh"     // unpack16
#include "sm70/flags.cuh"           // ld_acquire_gpu
#include "sm70/named_barrier.cuh"   // bar_sync
#include "sm90/mbarrier.cuh"        // the ring's full and empty barriers
#include "sm90/red.cuh"             // red.global.add.v4.f32
#include "sm90/tma.cuh"             // TmaMap, tma_load_2d

static_assert(!ELEM_FP32, "the token kernel streams 16-bit weights (fp16 or bf16)");
static_assert(MROWS >= 1 && MROWS <= 4, "MROWS is 1 to 4: the input of every GEMM sits in shared memory");
static_assert(NC == 32 * 8, "NC is 256: a warp's 32 lanes read one box row, 8 elements (16 bytes) each");
static_assert(KC % CONSUMER_WARPS == 0, "each consumer warp takes KC / CONSUMER_WARPS rows of a box");
static_assert(KC <= 256, "a TMA box has at most 256 rows");
static_assert(KMAX % KC == 0, "KMAX is a multiple of KC: the input is zero-padded to whole boxes");

#define CONSUMERS (CONSUMER_WARPS * 32)
#define THREADS (CONSUMERS + 32)  // + the producer warp
#define TILE_BYTES (KC * NC * 2)
#define RING_BYTES (STAGES * TILE_BYTES)
#define ACT_BYTES (MROWS * KMAX * 2)
#define SUM_BYTES (CONSUMER_WARPS * MROWS * NC * 4)  // each warp's column sums
#define CONSUMER_BAR 1  // the named barrier of the consumer warps

// One GEMM of the token as the host packs it (rooflinecli/gpu/token.py): 48 bytes.
struct TokenGemm {
    int n, k;
    int src;          // the GEMM whose output is A (its first M*K elements); -1: the token input x
    int zero[4];      // workspaces zeroed once this GEMM is counted (-1: none): no later GEMM reads them
    int pad;
    long long ws;     // offset in floats of this GEMM's M x N float32 workspace (16-byte aligned)
    elem_t* out;      // its M x N output C
};
static_assert(sizeof(TokenGemm) == 48, "the host packs 48-byte records");

__device__ __forceinline__ unsigned int smem_u32(const void* p) {
    return static_cast<unsigned int>(__cvta_generic_to_shared(p));
}

// Every consumer thread waits until `counter` holds all blocks of this launch (thread 0 polls
// with acquire; the others synchronise with it).
__device__ __forceinline__ void wait_for_all(const unsigned int* counter, unsigned int target) {
    if (threadIdx.x == 0) {
        while (static_cast<int>(ld_acquire_gpu(counter) - target) < 0) {
        }
    }
    bar_sync(CONSUMER_BAR, CONSUMERS);
}

// This block's share [len b / P, len (b+1) / P) of a workspace of `len` floats.
__device__ __forceinline__ void share_of(int len, int& lo, int& hi) {
    lo = static_cast<int>(static_cast<long long>(len) * blockIdx.x / gridDim.x);
    hi = static_cast<int>(static_cast<long long>(len) * (blockIdx.x + 1) / gridDim.x);
}

// The block's sums of column block cb into the workspace: each warp leaves its MROWS x NC
// partial sums in its slab of shared memory (no shared atomics: fp32 ones are a CAS loop here),
// the consumers add the slabs up four columns a thread and reduce them into L2, 16 bytes at a
// time where the four columns are in range and aligned.
__device__ __forceinline__ void add_out(const float (&acc)[MROWS][8], float* sum, float* wsg,
                                        int n, int cb, int tid) {
    const int warp = tid / 32, lane = tid % 32;
#pragma unroll
    for (int m = 0; m < MROWS; ++m) {
        float4* mine = reinterpret_cast<float4*>(sum + (warp * MROWS + m) * NC + lane * 8);
        mine[0] = make_float4(acc[m][0], acc[m][1], acc[m][2], acc[m][3]);
        mine[1] = make_float4(acc[m][4], acc[m][5], acc[m][6], acc[m][7]);
    }
    bar_sync(CONSUMER_BAR, CONSUMERS);
    for (int i = tid; i < MROWS * (NC / 4); i += CONSUMERS) {
        const int m = i / (NC / 4), c = (i % (NC / 4)) * 4, col = cb * NC + c;
        float v0 = 0.0f, v1 = 0.0f, v2 = 0.0f, v3 = 0.0f;
#pragma unroll
        for (int w = 0; w < CONSUMER_WARPS; ++w) {
            const float4 s = *reinterpret_cast<const float4*>(sum + (w * MROWS + m) * NC + c);
            v0 += s.x;
            v1 += s.y;
            v2 += s.z;
            v3 += s.w;
        }
        float* dst = wsg + static_cast<long long>(m) * n + col;
        if (col + 4 <= n && (reinterpret_cast<unsigned long long>(dst) & 15) == 0) {
            red_add_v4_f32(dst, v0, v1, v2, v3);
        } else {
            const float v[4] = {v0, v1, v2, v3};
            for (int e = 0; e < 4; ++e)
                if (col + e < n) atomicAdd(dst + e, v[e]);
        }
    }
}

// This block's share of each workspace a GEMM's record lists, zeroed for the next token.
__device__ __forceinline__ void zero_listed(const TokenGemm& d, const TokenGemm* gemms, float* ws,
                                            int tid) {
    for (int z = 0; z < 4; ++z) {
        if (d.zero[z] < 0) continue;
        const TokenGemm e = gemms[d.zero[z]];
        int lo, hi;
        share_of(MROWS * e.n, lo, hi);
        for (int i = lo + tid; i < hi; i += CONSUMERS) ws[e.ws + i] = 0.0f;
    }
}

// The input from a workspace (K a multiple of 4): four elements a thread per load, INPUT_LOADS
// loads issued before any is used, each rounded to elem_t and stored as 8 bytes.
#define INPUT_LOADS 8
__device__ __forceinline__ void load_input(const float* a_src, elem_t* act, int k, int kp, int tid) {
    for (int base = tid * 4; base < MROWS * kp; base += CONSUMERS * 4 * INPUT_LOADS) {
        float4 v[INPUT_LOADS];
#pragma unroll
        for (int l = 0; l < INPUT_LOADS; ++l) {
            const int i = base + l * CONSUMERS * 4, m = i / kp, kk = i % kp;
            v[l] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (i < MROWS * kp && kk < k) v[l] = __ldcg(reinterpret_cast<const float4*>(a_src + m * k + kk));
        }
#pragma unroll
        for (int l = 0; l < INPUT_LOADS; ++l) {
            const int i = base + l * CONSUMERS * 4, m = i / kp, kk = i % kp;
            if (i < MROWS * kp) {
                const unsigned int lo = elem_from_float(v[l].x) | (static_cast<unsigned int>(elem_from_float(v[l].y)) << 16);
                const unsigned int hi = elem_from_float(v[l].z) | (static_cast<unsigned int>(elem_from_float(v[l].w)) << 16);
                *reinterpret_cast<uint2*>(act + m * KMAX + kk) = make_uint2(lo, hi);
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
decode_token(const TokenGemm* __restrict__ gemms, int count, const TmaMap* __restrict__ maps,
             const elem_t* __restrict__ x, float* ws, unsigned int* sync) {
    extern __shared__ unsigned char smem_raw[];
    // the ring at a 128-byte boundary (TMA's alignment for an unswizzled box)
    unsigned char* ring = smem_raw + ((128u - (smem_u32(smem_raw) & 127u)) & 127u);
    elem_t* act = reinterpret_cast<elem_t*>(ring + RING_BYTES);
    float* sum = reinterpret_cast<float*>(ring + RING_BYTES + ACT_BYTES);
    unsigned long long* full = reinterpret_cast<unsigned long long*>(ring + RING_BYTES + ACT_BYTES + SUM_BYTES);
    unsigned long long* empty = full + STAGES;
    unsigned int* launches = reinterpret_cast<unsigned int*>(empty + STAGES);

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_u32(full + s), 1);
            mbar_init(smem_u32(empty + s), CONSUMER_WARPS);
        }
        fence_mbarrier_init();
        *launches = ld_acquire_gpu(sync);  // launches finished before this one
    }
    __syncthreads();
    const unsigned int target = (*launches + 1u) * gridDim.x;
    unsigned int* counter = sync + 1;

    if (warp == CONSUMER_WARPS) {  // the producer: this block's runs of every GEMM, in order
        if (lane == 0) {
            int slot = 0;
            unsigned int phase = 0;
            for (int g = 0; g < count; ++g) {
                const int n = gemms[g].n, k = gemms[g].k;
                const int nk = (k + KC - 1) / KC, units = ((n + NC - 1) / NC) * nk;
                int u0, u1;
                share_of(units, u0, u1);
                int cb = u0 / nk, kc = u0 % nk;  // the unit's column block and K chunk, stepped
                for (int u = u0; u < u1; ++u) {
                    mbar_wait(smem_u32(empty + slot), phase ^ 1u);  // the consumers are done with it
                    mbar_arrive_expect_tx(smem_u32(full + slot), TILE_BYTES);
                    tma_load_2d(smem_u32(ring + slot * TILE_BYTES), maps + g, smem_u32(full + slot),
                                cb * NC, kc * KC);
                    if (++kc == nk) {
                        kc = 0;
                        ++cb;
                    }
                    if (++slot == STAGES) {
                        slot = 0;
                        phase ^= 1u;
                    }
                }
            }
        }
        return;
    }

    int slot = 0;
    unsigned int phase = 0;
    for (int g = 0; g < count; ++g) {
        const TokenGemm d = gemms[g];
        const int kp = (d.k + KC - 1) / KC * KC;
        if (g > 0) wait_for_all(counter + g - 1, target);
        // the input, MROWS x K, rounded as a stored C would be; zeros from K to the next box.
        // It is on the critical path (the ring is full by now): 16-byte loads, INPUT_LOADS of
        // them in flight per thread, where K keeps every row's start 16-byte aligned
        const float* a_src = d.src >= 0 ? ws + gemms[d.src].ws : nullptr;
        if (a_src != nullptr && d.k % 4 == 0) {
            load_input(a_src, act, d.k, kp, tid);
        } else {
            for (int i = tid; i < MROWS * kp; i += CONSUMERS) {
                const int m = i / kp, kk = i % kp;
                elem_t v = elem_from_float(0.0f);
                if (kk < d.k) v = a_src ? elem_from_float(__ldcg(a_src + m * d.k + kk)) : x[m * d.k + kk];
                act[m * KMAX + kk] = v;
            }
        }
        bar_sync(CONSUMER_BAR, CONSUMERS);

        const int nk = kp / KC, units = ((d.n + NC - 1) / NC) * nk;
        int u0, u1;
        share_of(units, u0, u1);
        float acc[MROWS][8];
#pragma unroll
        for (int m = 0; m < MROWS; ++m)
#pragma unroll
            for (int j = 0; j < 8; ++j) acc[m][j] = 0.0f;
        int cb = u0 / nk, kc = u0 % nk;  // the unit's column block and K chunk, stepped
        for (int u = u0; u < u1; ++u) {
            if (kc == nk) {  // a column block done (the same unit for every warp)
                add_out(acc, sum, ws + d.ws, d.n, cb, tid);
                bar_sync(CONSUMER_BAR, CONSUMERS);  // the slabs read before they are written again
#pragma unroll
                for (int m = 0; m < MROWS; ++m)
#pragma unroll
                    for (int j = 0; j < 8; ++j) acc[m][j] = 0.0f;
                kc = 0;
                ++cb;
            }
            const int k0 = kc++ * KC;
            mbar_wait(smem_u32(full + slot), phase);
            const unsigned char* tile = ring + slot * TILE_BYTES;
#pragma unroll
            for (int i = 0; i < KC / CONSUMER_WARPS; ++i) {
                const int r = warp + CONSUMER_WARPS * i;
                float f[8];
                unpack16(*reinterpret_cast<const uint4*>(tile + r * (NC * 2) + lane * 16), f);
#pragma unroll
                for (int m = 0; m < MROWS; ++m) {
                    const float a = elem_to_float(act[m * KMAX + k0 + r]);
#pragma unroll
                    for (int j = 0; j < 8; ++j) acc[m][j] = fmaf(a, f[j], acc[m][j]);
                }
            }
            __syncwarp();
            if (lane == 0) mbar_arrive(smem_u32(empty + slot));
            if (++slot == STAGES) {
                slot = 0;
                phase ^= 1u;
            }
        }
        if (u1 > u0) add_out(acc, sum, ws + d.ws, d.n, cb, tid);  // the run's last column block
        bar_sync(CONSUMER_BAR, CONSUMERS);  // every consumer's additions issued
        if (tid == 0) {
            __threadfence();
            atomicAdd(counter + g, 1u);  // this block's share of GEMM g is in its workspace
        }
        // bookkeeping while the other blocks finish GEMM g (the whole grid finished GEMM g - 1:
        // nothing reads these workspaces again this token); the last GEMM's after the end
        if (g < count - 1) zero_listed(d, gemms, ws, tid);
        int lo, hi;
        if (g > 0) {  // the previous GEMM, complete in its workspace: written out as its C
            const TokenGemm p = gemms[g - 1];
            share_of(MROWS * p.n, lo, hi);
            for (int i = lo + tid; i < hi; i += CONSUMERS) p.out[i] = elem_from_float(__ldcg(ws + p.ws + i));
        }
    }
    // the last GEMM, once every block has added its share: written out as its C; once every
    // block has (one more counter), the workspaces the last GEMM's record lists are zeroed:
    // the launch leaves every workspace zero, as it found them
    wait_for_all(counter + count - 1, target);
    {
        const TokenGemm p = gemms[count - 1];
        int lo, hi;
        share_of(MROWS * p.n, lo, hi);
        for (int i = lo + tid; i < hi; i += CONSUMERS) p.out[i] = elem_from_float(__ldcg(ws + p.ws + i));
    }
    bar_sync(CONSUMER_BAR, CONSUMERS);
    if (tid == 0) {
        __threadfence();
        atomicAdd(counter + count, 1u);
    }
    wait_for_all(counter + count, target);
    zero_listed(gemms[count - 1], gemms, ws, tid);
    // every block has read sync[0] (it counted itself in the last counter after): one more launch
    if (blockIdx.x == 0 && tid == 0) atomicAdd(sync, 1u);
}
