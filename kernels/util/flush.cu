// The timer's L2 flush by reading (rooflinecli/gpu/timer.py, flusher): every block reads its
// share of a buffer twice the L2's size, 16 bytes a load, and one thread of the grid writes a
// sum that depends on every value read, so no load can be left out. Built in the run's parallel
// prebuild beside the stages.
#define THREADS 256

extern "C" __global__ void __launch_bounds__(THREADS)
flush_read(const float4* __restrict__ buf, unsigned long long n4, float* __restrict__ sink) {
    float acc = 0.0f;
    for (unsigned long long i = blockIdx.x * (unsigned long long)THREADS + threadIdx.x; i < n4;
         i += (unsigned long long)gridDim.x * THREADS) {
        const float4 v = buf[i];
        acc += v.x + v.y + v.z + v.w;
    }
    // never true for a buffer of finite values: the write exists so the reads are kept
    if (acc == -1.0e38f) *sink = acc;
}
