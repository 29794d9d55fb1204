// Stage 52: decode GEMM with in-block split-K. Stage 51 gives a thread 8 columns and 16-byte
// loads but leaves N / 8 threads for the whole GPU. Here a block owns a strip of BN columns of C
// and ALL of K, and its threads split K among themselves: the grid keeps N / BN blocks but each
// has NUM_THREADS threads streaming B. The partial sums meet in registers (warp shuffles) and
// shared memory; no workspace, no atomics, one launch. Decode reads each weight once per token,
// so what counts is bytes of B in flight per SM (Little's law: bandwidth x loaded latency): a
// thread loads its 8 columns of KSTEP rows of B per step (128 bytes at KU = 8 in any dtype), so
// a block keeps NUM_THREADS x 128 B in flight. The step's loads must all be issued before its
// first FFMA: MIN_BLOCKS = 1 gives ptxas the registers to do so (tests/test_decode.py checks).
// Thread layout (c fastest, so neighbouring lanes read neighbouring 16 bytes of a row of B):
//   tid = (g * RG + rg) * TPR + c; c < TPR = BN / VEC picks 8 columns of the strip; rg < RG =
//   BM / TM is the row group (the lanes that differ only in rg load the same B address in one
//   request, so B is read once per block); g < KSPLIT picks the K steps: rows k0 = g * KSTEP ..,
//   then every KSPLIT * KSTEP rows, all groups sweeping K together.
// A thread holds TM rows x 8 columns of accumulators; rows per thread are picked per block (1, 2,
// 4 .. TM, the smallest power of two that covers its rows), so M = 1 runs the 1-row code.
// Any M, N, K: 16-byte loads need N % (16 / sizeof(T)) == 0 (and K likewise for A), else the same
// loop runs on scalar loads; the K tail takes scalar loads; columns past N and rows past M are
// computed from clamped addresses and never stored. fp16/bf16 convert as in stage 50.
#include "gemm/gemv_splitk.cuh"  // the tile: BM, TM, BN, KU, NUM_THREADS, MIN_BLOCKS

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MIN_BLOCKS)
gemv_splitk(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
            const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C) {
    // one partial tile per warp, declared here once (not per instantiation of the tile code)
    __shared__ __align__(16) float red[WARPS][BM][BN];
    const SplitkBlock blk = splitk_block(M);  // the row blocks of a strip run side by side
    // 16-byte loads: rows of B (k * N) and of A (m * K) start on 16 bytes, and so do the buffers
    const unsigned long long ab = reinterpret_cast<unsigned long long>(A) |
                                  reinterpret_cast<unsigned long long>(B);
    const bool vec = N % PER16 == 0 && K % PER16 == 0 && ab % 16 == 0;
    splitk_pick_rows<TM>(blk.need, vec, M, N, K, alpha, A, B, beta, C, blk.mb, blk.n0, blk.rows,
                         red);
}
