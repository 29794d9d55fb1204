// B (K x N, row-major, the contract) -> Bt (N x K, row-major): the conversion a stage that
// reads B K-major (b_layout "nk") needs. The runner queues it inside the stage's timed launch,
// so its time is charged to the stage. Any element of 2 or 4 bytes (ELEM_BYTES).
//
// 32 x 32 tiles through shared memory: a warp reads 32 consecutive elements of a row of B and
// writes 32 consecutive elements of a row of Bt; the +1 column keeps the transposed reads of
// the tile free of bank conflicts.
#ifndef ELEM_BYTES
#define ELEM_BYTES 2
#endif
#if ELEM_BYTES == 2
typedef unsigned short elem_t;
#else
typedef unsigned int elem_t;
#endif

#define TILE 32
#define ROWS_PER_PASS 8
static_assert(TILE % ROWS_PER_PASS == 0, "each thread moves TILE / ROWS_PER_PASS elements");

extern "C" __global__ void __launch_bounds__(TILE * ROWS_PER_PASS)
transpose(int rows, int cols, const elem_t* __restrict__ in, elem_t* __restrict__ out) {
    __shared__ elem_t tile[TILE][TILE + 1];
    const int c0 = blockIdx.x * TILE, r0 = blockIdx.y * TILE;
    for (int i = threadIdx.y; i < TILE; i += ROWS_PER_PASS) {
        const int r = r0 + i, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[i][threadIdx.x] = in[(long long)r * cols + c];
    }
    __syncthreads();
    for (int i = threadIdx.y; i < TILE; i += ROWS_PER_PASS) {
        const int c = c0 + i, r = r0 + threadIdx.x;  // out row c, column r
        if (c < cols && r < rows) out[(long long)c * rows + r] = tile[threadIdx.x][i];
    }
}
