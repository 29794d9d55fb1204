// The runner's own buffers and checks on the GPU (rooflinecli/gpu/runner.py, Problem): random
// inputs, their float64 copies, the reference's alpha and beta, and the error of an output
// against the float64 reference. One program per element type (elem.cuh), built beside the
// stages in the run's parallel prebuild, so a first run compiles no kernel of the array
// library one after another.
//
// uniform: element i of stream `stream` of seed `seed` is a counter hash (SplitMix64's
//          finalizer) of (seed, stream, i), uniform in [-1, 1), rounded to the element type.
// widen:   elements to float64.
// axpby:   ref = alpha * ref (+ beta * c0 when c0 is not null).
// stats:   over x = ref (mode 0), got - ref (mode 1) or store(ref) - ref (mode 2, what storing
//          the exact product in the element type costs): out[0] += sum x^2, out[1] = max |x|
//          (the bits of a non-negative double order as its value), out[2] += elements of got
//          that are not finite (mode 1).
#include "elem.cuh"

#define THREADS 256
static_assert(THREADS % 32 == 0, "the block reduction works in whole warps");

__device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

extern "C" __global__ void __launch_bounds__(THREADS)
uniform(elem_t* __restrict__ out, unsigned long long n, unsigned long long seed,
        unsigned long long stream) {
    const unsigned long long base = mix64(seed * 0x9e3779b97f4a7c15ull + mix64(stream + 1));
    for (unsigned long long i = blockIdx.x * (unsigned long long)THREADS + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * THREADS) {
        const unsigned long long h = mix64(base + i * 0x9e3779b97f4a7c15ull);
        // the top 24 bits: a float in [0, 1) exactly, then [-1, 1)
        const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
        out[i] = elem_from_float(2.0f * u - 1.0f);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
widen(const elem_t* __restrict__ in, double* __restrict__ out, unsigned long long n) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)THREADS + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * THREADS)
        out[i] = static_cast<double>(elem_to_float(in[i]));
}

extern "C" __global__ void __launch_bounds__(THREADS)
axpby(double* __restrict__ ref, const double* __restrict__ c0, double alpha, double beta,
      unsigned long long n) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)THREADS + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * THREADS)
        ref[i] = alpha * ref[i] + (c0 != nullptr ? beta * c0[i] : 0.0);
}

extern "C" __global__ void __launch_bounds__(THREADS)
stats(const double* __restrict__ ref, const elem_t* __restrict__ got, int mode,
      unsigned long long n, double* __restrict__ out) {
    double sq = 0.0, mx = 0.0;
    unsigned int bad = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)THREADS + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * THREADS) {
        const double r = ref[i];
        double x = r;
        if (mode == 1) {
            const double g = static_cast<double>(elem_to_float(got[i]));
            if (!isfinite(g)) {
                ++bad;
                continue;
            }
            x = g - r;
        } else if (mode == 2) {
            x = static_cast<double>(elem_to_float(elem_from_float(static_cast<float>(r)))) - r;
        }
        sq += x * x;
        mx = fmax(mx, fabs(x));
    }
    for (int off = 16; off > 0; off >>= 1) {
        sq += __shfl_down_sync(0xffffffffu, sq, off);
        mx = fmax(mx, __shfl_down_sync(0xffffffffu, mx, off));
        bad += __shfl_down_sync(0xffffffffu, bad, off);
    }
    __shared__ double s_sq[THREADS / 32], s_mx[THREADS / 32];
    __shared__ unsigned int s_bad[THREADS / 32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        s_sq[warp] = sq;
        s_mx[warp] = mx;
        s_bad[warp] = bad;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < THREADS / 32; ++w) {
            sq += s_sq[w];
            mx = fmax(mx, s_mx[w]);
            bad += s_bad[w];
        }
        atomicAdd(&out[0], sq);
        atomicMax(reinterpret_cast<unsigned long long*>(&out[1]),
                  static_cast<unsigned long long>(__double_as_longlong(mx)));
        atomicAdd(&out[2], static_cast<double>(bad));
    }
}
