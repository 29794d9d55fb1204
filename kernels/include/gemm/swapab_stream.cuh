// gemm/swapab_stream.cuh: the stream-K line of the swapped WGMMA stages (31, 33, 34): C^T = B^T A^T
// in bm x (64 per consumer warpgroup) tiles of C, every tile's K slices one line cut into an
// equal range per block (at least sk_min slices a range); cut tiles met through an fp32
// workspace (a partial of 64 x bm per block and consumer, then one flag each), and the
// bounds-checked epilogue from the accumulators (any M and N). A consumer thread holds
// C[m0 + 8j + 2t + e][n0 + 16w + g + 8h] in d[4j + 2h + e].
#pragma once

#include "ptx_sm80.cuh"            // elem_t, pack2, to_float
#include "sm70/flags.cuh"          // ld.acquire / st.release: the stream-K flags
#include "sm70/named_barrier.cuh"  // bar.sync: a consumer warpgroup meets alone
#include "sm90/mbarrier.cuh"       // mbar_try_wait
#include "sm90/red.cuh"            // red.global.add.v4.f32: a worker's partial into the owner's

// mbar_wait with a deadline: a slot that never fills (a copy that never lands, a producer that
// never ran) fails the launch after about two seconds instead of hanging the GPU.
__device__ __forceinline__ void swap_wait(unsigned int bar, unsigned int parity) {
    if (mbar_try_wait(bar, parity)) return;
    const long long t0 = clock64();
    while (!mbar_try_wait(bar, parity))
        if (clock64() - t0 > 4000000000ll) __trap();
}

// This block's pieces (K slices k0 .. k1-1 of one tile): one range of the line of all tiles'
// slices. The producer and the consumers walk the same sequence.
struct SwapPiece {
    int tile, k0, k1;
};
template <int sk_min>
struct SwapRange {
    int ktiles, workers, per, extra, pos, end;

    __device__ SwapRange(int tiles, int ktiles_) : ktiles(ktiles_) {
        const int slices = tiles * ktiles;
        workers = max(1, min(static_cast<int>(gridDim.x), slices / sk_min));
        per = slices / workers;
        extra = slices % workers;
        const int b = blockIdx.x;
        pos = b < workers ? first_slice(b) : 0;
        end = b < workers ? first_slice(b + 1) : 0;
    }
    // worker w's first slice (w == workers: the end of the line)
    __device__ int first_slice(int w) const { return w * per + min(w, extra); }
    // the worker whose range holds slice s (first_slice's inverse)
    __device__ int worker_of(int s) const {
        const int big = extra * (per + 1);
        return s < big ? s / (per + 1) : extra + (s - big) / per;
    }
    __device__ bool take(SwapPiece& p) {
        if (pos >= end) return false;
        p.tile = pos / ktiles;
        p.k0 = pos - p.tile * ktiles;
        p.k1 = min(ktiles, p.k0 + (end - pos));
        pos += p.k1 - p.k0;
        return true;
    }
};

// A worker whose range starts inside a tile: its warpgroup's partial sums to its slot (float4
// j of thread t at j * 128 + t: whole lines, and the owner's thread t reads its own back), then
// the flag, after every thread of the warpgroup has written.
template <int bm>
__device__ __forceinline__ void swap_put_partial(const float (&d)[bm / 2], float* slot, unsigned int* flag,
                                                 int bar_id, bool leader) {
    float4* out = reinterpret_cast<float4*>(slot) + threadIdx.x % 128;
#pragma unroll
    for (int j = 0; j < bm / 8; ++j)  // st.global.cg: kept in L2, where the owner reads
        __stcg(out + 128 * j, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
    bar_sync(bar_id, 128);
    if (leader) {
        __threadfence();
        st_release_gpu(flag, 1u);
    }
}

// The owner of a cut tile: the partials of workers w0 .. w1-1 (their ranges start inside it)
// added to d. The first warp's lanes wait for the flags side by side (lane i: worker w0 + i)
// and put them back to 0 for the next launch (the host zeroed the workspace once; each worker
// sets its flag at most once a launch); after the warpgroup's barrier every thread reads its
// fragment of each partial from L2 (ld.global.cg).
template <int bm, int consumers>
__device__ __forceinline__ void swap_add_partials(float (&d)[bm / 2], const float* workspace,
                                                  unsigned int* flags, int w0, int w1, int c, int bar_id) {
    if (threadIdx.x % 128 < 32) {
        for (int w = w0 + static_cast<int>(threadIdx.x % 32); w < w1; w += 32) {
            unsigned int* flag = flags + w * consumers + c;
            for (unsigned int polls = 1; ld_acquire_gpu(flag) == 0u; ++polls) {
                // seconds without it: a worker never ran (all blocks resident?); fail, never hang
                if (polls == (1u << 22)) __trap();
                __nanosleep(64);
            }
            st_release_gpu(flag, 0u);
        }
    }
    bar_sync(bar_id, 128);  // the warpgroup sees what the lanes acquired
    for (int w = w0; w < w1; ++w) {
        const float* slot = workspace + static_cast<size_t>(w * consumers + c) * 64 * bm;
        const float4* in = reinterpret_cast<const float4*>(slot) + threadIdx.x % 128;
        constexpr int vecs = bm / 8, G = vecs < 8 ? vecs : 8;  // loads in flight at once
#pragma unroll
        for (int j0 = 0; j0 < vecs; j0 += G) {
            float4 p[G];
#pragma unroll
            for (int j = 0; j < G; ++j) p[j] = __ldcg(in + 128 * (j0 + j));
#pragma unroll
            for (int j = 0; j < G; ++j) {
                d[4 * (j0 + j)] += p[j].x;
                d[4 * (j0 + j) + 1] += p[j].y;
                d[4 * (j0 + j) + 2] += p[j].z;
                d[4 * (j0 + j) + 3] += p[j].w;
            }
        }
    }
}

// The reducing variant: a worker whose range starts inside a tile adds its partial straight into
// the owner's slot (red.global.add.v4.f32, in L2; the slot is zero) and counts itself in; the
// owner waits for `expect` workers, reads the one sum (not one partial per worker) and puts the
// slot and the count back to 0 for the next launch. A block owns at most one cut tile.
template <int bm>
__device__ __forceinline__ void swap_red_partial(const float (&d)[bm / 2], float* slot,
                                                 unsigned int* count, int bar_id, bool leader) {
    float* out = slot + 4 * (threadIdx.x % 128);
#pragma unroll
    for (int j = 0; j < bm / 8; ++j)
        red_add_v4_f32(out + 4 * 128 * j, d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]);
    bar_sync(bar_id, 128);
    if (leader) {
        __threadfence();
        atomicAdd(count, 1u);
    }
}

template <int bm>
__device__ __forceinline__ void swap_take_sum(float (&d)[bm / 2], float* slot, unsigned int* count,
                                              unsigned int expect, int bar_id) {
    if (threadIdx.x % 128 == 0) {
        for (unsigned int polls = 1; ld_acquire_gpu(count) != expect; ++polls) {
            if (polls == (1u << 22)) __trap();  // seconds: a worker never ran; fail, never hang
            __nanosleep(64);
        }
        st_release_gpu(count, 0u);  // every worker has counted itself in: none adds any more
    }
    bar_sync(bar_id, 128);  // the warpgroup sees what the leader acquired
    float4* in = reinterpret_cast<float4*>(slot) + threadIdx.x % 128;
    constexpr int vecs = bm / 8, G = vecs < 8 ? vecs : 8;  // loads in flight at once
#pragma unroll
    for (int j0 = 0; j0 < vecs; j0 += G) {
        float4 p[G];
#pragma unroll
        for (int j = 0; j < G; ++j) p[j] = __ldcg(in + 128 * (j0 + j));
#pragma unroll
        for (int j = 0; j < G; ++j) {
            d[4 * (j0 + j)] += p[j].x;
            d[4 * (j0 + j) + 1] += p[j].y;
            d[4 * (j0 + j) + 2] += p[j].z;
            d[4 * (j0 + j) + 3] += p[j].w;
            __stcg(in + 128 * (j0 + j), make_float4(0.0f, 0.0f, 0.0f, 0.0f));
        }
    }
}

// C = alpha * D (+ beta * C) for a consumer's 64 columns x BM rows at (m0, n0), one element at a
// time, bounds-checked: 8 lanes write 16 contiguous bytes of a row of C.
template <int bm>
__device__ __forceinline__ void swap_store(const float (&d)[bm / 2], elem_t* __restrict__ C, int M,
                                           int N, int m0, int n0, float alpha, float beta) {
    const int lane = threadIdx.x % 32, w = (threadIdx.x / 32) % 4;
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int n = n0 + 16 * w + g + 8 * h;
        if (n >= N) continue;
#pragma unroll
        for (int j = 0; j < bm / 8; ++j) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int m = m0 + 8 * j + 2 * t + e;
                if (m >= M) continue;
                const size_t idx = static_cast<size_t>(m) * N + n;
                float v = alpha * d[4 * j + 2 * h + e];
                if (beta != 0.0f) v = fmaf(beta, to_float(C[idx]), v);  // beta == 0: never read
                C[idx] = static_cast<elem_t>(pack2(v, 0.0f) & 0xffffu);
            }
        }
    }
}


// The end of this block's piece p of a tile, for its consumer group `group` of `groups` a block:
// a worker whose range started inside the tile leaves its partial in its slot and sets its flag
// (false: the tile's owner stores it); the owner of a cut tile adds the partials of the workers
// after it whose ranges start inside the tile (true: store C from d).
template <int bm, int groups, int sk_min>
__device__ __forceinline__ bool swap_finish_piece(float (&d)[bm / 2],
                                                  const SwapRange<sk_min>& range,
                                                  const SwapPiece& p, float* workspace,
                                                  unsigned int* flags, int group, int bar_id,
                                                  bool leader) {
    const int me = blockIdx.x;
    if (p.k0 > 0) {  // the range started inside this tile: its owner finishes it
        const int i = me * groups + group;
        swap_put_partial<bm>(d, workspace + static_cast<size_t>(i) * 64 * bm, flags + i, bar_id,
                             leader);
        return false;
    }
    if (p.k1 < range.ktiles) {  // owner of a cut tile: the workers after it hold the rest
        const int tile_end = (p.tile + 1) * range.ktiles;
        int w1 = me + 1;
        while (w1 < range.workers && range.first_slice(w1) < tile_end) ++w1;
        swap_add_partials<bm, groups>(d, workspace, flags, me + 1, w1, group, bar_id);
    }
    return true;
}
