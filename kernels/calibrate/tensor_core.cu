// Calibration (rooflinecli/gpu/calibrate.py): the FP16 Tensor Core roofs, f32 accumulate,
// operands that never change (the loop measures issue rate, not data movement). One source, two
// kernels, each compiled when its -D defines are given:
//   NACC (calibrate.MMA_SYNC_NACC): tc_mma_sync, mma.sync m16n8k16 on register operands, NACC
//     independent accumulators per warp (sm_80+);
//   WG_N, KSTEPS (calibrate.WGMMA_N, WGMMA_KSTEPS): tc_wgmma, wgmma.mma_async m64nWG_Nk16 with A
//     and B from shared memory (sm_90a); one warpgroup per block issues KSTEPS wgmmas on the same
//     accumulators, commits, waits: the accumulators stay in registers throughout.
#include "ptx_sm80.cuh"
#include "sm90/fence.cuh"       // fence_proxy_async
#include "sm90/wgmma.cuh"       // wgmma fence, commit, wait and its m64nNk16 shapes
#include "sm90/wgmma_desc.cuh"  // WgmmaSwizzle, smem_desc

// Operand bits: halves of magnitude in [2^-7, 2^-6), mixed signs, from a hash of the index:
// never zero (zeros run faster), sums stay far from overflow.
__device__ __forceinline__ unsigned int half_bits(unsigned int i) {
    const unsigned int h = i * 2654435761u;
    return 0x2000u | ((h >> 12) & 0x3ffu) | ((h >> 6) & 0x8000u);
}
__device__ __forceinline__ unsigned int half2_bits(unsigned int i) {
    return half_bits(2u * i) | (half_bits(2u * i + 1u) << 16);
}

#ifdef NACC
extern "C" __global__ void __launch_bounds__(256)
tc_mma_sync(int iters, float sentinel, float* __restrict__ out) {
    const unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int a[4] = {half2_bits(8u * t), half2_bits(8u * t + 1u), half2_bits(8u * t + 2u),
                               half2_bits(8u * t + 3u)};
    const unsigned int b0 = half2_bits(8u * t + 4u), b1 = half2_bits(8u * t + 5u);
    float acc[NACC][4];
#pragma unroll
    for (int j = 0; j < NACC; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int j = 0; j < NACC; ++j) mma_m16n8k16(acc[j], a, b0, b1);
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < NACC; ++j) s += (acc[j][0] + acc[j][1]) + (acc[j][2] + acc[j][3]);
    if (s == sentinel) out[t] = s;
}
#endif

#ifdef WG_N
#ifndef KSTEPS
#error "KSTEPS (wgmmas per commit) must be given as -DKSTEPS=..."
#endif
#if WG_N == 256
#define WGMMA wgmma_m64n256k16
#elif WG_N == 128
#define WGMMA wgmma_m64n128k16
#else
#error "WG_N: ptx_sm90.cuh wraps wgmma m64n128k16 and m64n256k16"
#endif
// No swizzle: 8x8 core matrices of 128 contiguous bytes; K-adjacent ones 128 bytes apart (the
// leading byte offset), M/N-adjacent ones 256 bytes apart (the stride byte offset).
#define A_BYTES (64 * 16 * 2)
#define B_BYTES (WG_N * 16 * 2)
extern "C" __global__ void __launch_bounds__(128)
tc_wgmma(int iters, float sentinel, float* __restrict__ out) {
    __shared__ __align__(1024) unsigned short tile[(A_BYTES + B_BYTES) / 2];
    for (int i = threadIdx.x; i < (A_BYTES + B_BYTES) / 2; i += blockDim.x)
        tile[i] = (unsigned short)half_bits((unsigned int)i + 977u * blockIdx.x);
    fence_proxy_async();  // ordinary stores, read next by the tensor cores (the async proxy)
    __syncthreads();
    const unsigned int base = (unsigned int)__cvta_generic_to_shared(tile);
    const unsigned long long da = smem_desc(base, 128, 256, WgmmaSwizzle::none);
    const unsigned long long db = smem_desc(base + A_BYTES, 128, 256, WgmmaSwizzle::none);
    float d[WG_N / 2];
#pragma unroll
    for (int i = 0; i < WG_N / 2; ++i) d[i] = 0.0f;
    for (int it = 0; it < iters; ++it) {
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < KSTEPS; ++k) WGMMA(d, da, db, 1);
        wgmma_commit();
        wgmma_wait<0>();
    }
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < WG_N / 2; ++i) s += d[i];
    if (s == sentinel) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
#endif
