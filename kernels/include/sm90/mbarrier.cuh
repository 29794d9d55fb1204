// sm90/mbarrier.cuh: mbarriers, 8-byte barrier objects in shared memory (shared::cta addresses)
// that count arrivals and transaction bytes (sm_90 forms: expect_tx, try_wait.parity).
#pragma once

// mbarrier.init: a barrier that completes a phase after `count` arrivals (and the bytes expected).
__device__ __forceinline__ void mbar_init(unsigned int bar, unsigned int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// fence.mbarrier_init: barrier initialisations visible to the async proxy (TMA) and the cluster.
__device__ __forceinline__ void fence_mbarrier_init() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// mbarrier.arrive.expect_tx: one arrival that also announces `bytes` of TMA transactions the
// current phase must wait for.
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned int bar, unsigned int bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
                 : "memory");
}
// mbarrier.arrive: one arrival (release: this thread's prior accesses are done).
__device__ __forceinline__ void mbar_arrive(unsigned int bar) {
    asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}" ::"r"(bar)
                 : "memory");
}
// mbarrier.try_wait.parity: 1 once the phase with this parity has completed (acquire), else 0
// after a bounded wait.
__device__ __forceinline__ unsigned int mbar_try_wait(unsigned int bar, unsigned int parity) {
    unsigned int done;
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    return done;
}
// Wait until the phase with this parity has completed (acquire: e.g. the TMA's bytes are visible).
__device__ __forceinline__ void mbar_wait(unsigned int bar, unsigned int parity) {
    while (!mbar_try_wait(bar, parity)) {
    }
}
