// B (K x N, row-major, the contract) -> Bt (N x K, row-major): the conversion a stage that
// reads B K-major (b_layout "nk") needs. The runner queues it inside the stage's timed launch,
// so its time is charged to the stage. Any element of 2 or 4 bytes (ELEM_BYTES).
//
// 64 x 64 tiles through shared memory, 256 threads: each thread first loads all of its
// TILE * TILE / 256 = 16 elements (16 loads in flight, enough to keep HBM busy), then stores
// them transposed. A warp reads 32 consecutive elements of a row of B and writes 32 consecutive
// elements of a row of Bt; the +1 column keeps the transposed reads of the tile conflict-free.
#ifndef ELEM_BYTES
#define ELEM_BYTES 2
#endif
#if ELEM_BYTES == 2
typedef unsigned short elem_t;
#else
typedef unsigned int elem_t;
#endif

#define TILE 64
#define THREADS_X 32
#define THREADS_Y 8
#define PER_THREAD (TILE * TILE / (THREADS_X * THREADS_Y))
static_assert(TILE % THREADS_X == 0 && TILE % THREADS_Y == 0, "threads tile the tile evenly");

extern "C" __global__ void __launch_bounds__(THREADS_X * THREADS_Y)
transpose(int rows, int cols, const elem_t* __restrict__ in, elem_t* __restrict__ out) {
    __shared__ elem_t tile[TILE][TILE + 1];
    const int c0 = blockIdx.x * TILE, r0 = blockIdx.y * TILE;
    const int tx = threadIdx.x, ty = threadIdx.y;
    elem_t v[PER_THREAD];
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {  // row ty + 8 * (j / 2), column tx + 32 * (j % 2)
        const int i = ty + THREADS_Y * (j / 2), c = c0 + tx + THREADS_X * (j % 2);
        const int r = r0 + i;
        v[j] = (r < rows && c < cols) ? __ldg(in + (long long)r * cols + c) : elem_t(0);
    }
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) tile[ty + THREADS_Y * (j / 2)][tx + THREADS_X * (j % 2)] = v[j];
    __syncthreads();
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {  // out row c0 + i, columns r0 + tx (+ 32)
        const int i = ty + THREADS_Y * (j / 2), r = r0 + tx + THREADS_X * (j % 2);
        const int c = c0 + i;
        if (c < cols && r < rows) out[(long long)c * rows + r] = tile[tx + THREADS_X * (j % 2)][i];
    }
}
