// Calibration (rooflinecli/gpu/calibrate.py): the FP32 SIMT roof. CHAINS independent fmaf
// chains per thread, UNROLL steps per loop iteration (-D defines: calibrate.FP32_CHAINS,
// FP32_UNROLL).
#ifndef CHAINS
#error "CHAINS (independent FMA chains per thread) must be given as -DCHAINS=..."
#endif
#ifndef UNROLL
#error "UNROLL (FMA steps per loop iteration) must be given as -DUNROLL=..."
#endif
extern "C" __global__ void __launch_bounds__(256)
fp32_fma(int iters, float b, float c, float sentinel, float* __restrict__ out) {
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float x[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) x[j] = (float)(tid & 1023) * 1e-3f + (float)j;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
#pragma unroll
            for (int j = 0; j < CHAINS; ++j) x[j] = fmaf(x[j], b, c);
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) s += x[j];
    if (s == sentinel) out[tid] = s;  // never true: keeps every chain alive
}
