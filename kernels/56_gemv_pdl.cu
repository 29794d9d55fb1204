// Stage 56: stage 52 under programmatic dependent launch (PDL). In a decode chain each GEMV's
// input is the previous one's output, but its weights are not: only the reads of A must wait.
// Launched with the programmatic stream serialization attribute, this kernel's blocks may start
// while the previous kernel drains; griddepcontrol.wait holds them before the first read of A
// (and before C is written), and griddepcontrol.launch_dependents lets the next kernel start.
// Where both go is a compile-time choice, because overlap is not free (a dependent's blocks take
// SM slots and bandwidth from the kernel still running):
//   PDL_WAIT   0: wait at entry; 1: issue the first step's loads of B (KSTEP x 16 B a thread,
//              into registers), and prefetch PDL_PF more steps of it into L2, then wait.
//   PDL_SIGNAL 0: signal at entry; 1: once the first step's loads of B are issued; 2: after the
//              main loop (the block's weight stream is done); 3: never (implicit at exit).
// Without the launch attribute both instructions return at once: the kernel is stage 52's.
// The rest is stage 52: a block owns BN columns and all of K, its threads split K, partial sums
// meet through shuffles and shared memory.
#ifndef PDL_WAIT
#error "PDL_WAIT (0: at entry, 1: after the first step's loads of B) must be given as -DPDL_WAIT=..."
#endif
#ifndef PDL_SIGNAL
#error "PDL_SIGNAL (0 entry, 1 first step, 2 after the loop, 3 never) must be given as -DPDL_SIGNAL=..."
#endif
#ifndef PDL_PF
#define PDL_PF 0  // steps of B past the first prefetched into L2 before the wait (PDL_WAIT 1)
#endif
static_assert(PDL_WAIT == 0 || PDL_WAIT == 1, "PDL_WAIT is 0 (entry) or 1 (after B's first step)");
static_assert(PDL_SIGNAL >= 0 && PDL_SIGNAL <= 3, "PDL_SIGNAL is 0, 1, 2 or 3");
static_assert(PDL_PF >= 0 && (PDL_PF == 0 || PDL_WAIT == 1),
              "L2 prefetch before the wait needs PDL_WAIT 1 (there is no before at 0)");

#include "ptx_sm80.cuh"             // prefetch.global.L2
#include "sm70/ld_global_cg.cuh"    // A's loads, kept after the wait
#include "sm90/griddepcontrol.cuh"  // griddepcontrol.wait, griddepcontrol.launch_dependents

// This thread's first step of B is issued (or it has none): signal (PDL_SIGNAL 1), then wait for
// the previous kernel before anything reads A (PDL_WAIT 1). Once per thread; then a no-op.
__device__ __forceinline__ void hand_over(bool& handed) {
    if (handed) return;
    handed = true;
#if PDL_SIGNAL == 1
    griddepcontrol_launch_dependents();
#endif
#if PDL_WAIT == 1
    griddepcontrol_wait();
#endif
}

// Stage 52's tile with the hand-over placed in it (gemm/gemv_splitk.cuh names the hooks)
#define GEMV_SPLITK_STATE bool handed = false;  // hand_over() done
#if PDL_PF > 0  // before the first hand-over, the next PDL_PF steps of this thread's B, into L2
#define GEMV_SPLITK_AFTER_B(bq, k0)                                                           \
    do {                                                                                      \
        if (!handed) {                                                                        \
            _Pragma("unroll") for (int p = 1; p <= PDL_PF; ++p) {                             \
                if (k0 + p * KSPLIT * KSTEP + KSTEP > K) break;                               \
                _Pragma("unroll") for (int u = 0; u < KSTEP; ++u)                             \
                _Pragma("unroll") for (int l = 0; l < LOADS; ++l)                             \
                prefetch_l2(bq + (p * KSPLIT * KSTEP + u) * ldb + piece[l]);                  \
            }                                                                                 \
        }                                                                                     \
        hand_over(handed);                                                                    \
    } while (0)
#else
#define GEMV_SPLITK_AFTER_B(bq, k0) hand_over(handed)
#endif
#define GEMV_SPLITK_BEFORE_A() hand_over(handed)
// A is the previous kernel's output: loads the compiler keeps after the wait (an __ldg may move)
#define GEMV_SPLITK_LOAD_A16(p) ld_global_cg_v4(p)
#if ELEM_FP32
#define GEMV_SPLITK_LOAD_A(p) ld_global_cg_f32(p)
#else
#define GEMV_SPLITK_LOAD_A(p) static_cast<elem_t>(ld_global_cg_u16(p))
#endif
#if PDL_SIGNAL == 2  // this thread's share of the weight stream is done
#define GEMV_SPLITK_AFTER_STREAM() griddepcontrol_launch_dependents()
#endif
#include "gemm/gemv_splitk.cuh"  // the tile: BM, TM, BN, KU, NUM_THREADS, MIN_BLOCKS

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MIN_BLOCKS)
gemv_pdl(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
            const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C) {
    // one partial tile per warp, declared here once (not per instantiation of the tile code)
    __shared__ __align__(16) float red[WARPS][BM][BN];
#if PDL_SIGNAL == 0
    griddepcontrol_launch_dependents();
#endif
#if PDL_WAIT == 0
    griddepcontrol_wait();
#endif
    const SplitkBlock blk = splitk_block(M);  // the row blocks of a strip run side by side
    // 16-byte loads: rows of B (k * N) and of A (m * K) start on 16 bytes, and so do the buffers
    const unsigned long long ab = reinterpret_cast<unsigned long long>(A) |
                                  reinterpret_cast<unsigned long long>(B);
    const bool vec = N % PER16 == 0 && K % PER16 == 0 && ab % 16 == 0;
    splitk_pick_rows<TM>(blk.need, vec, M, N, K, alpha, A, B, beta, C, blk.mb, blk.n0, blk.rows,
                         red);
}
