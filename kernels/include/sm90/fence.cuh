// sm90/fence.cuh: the proxy fence between a thread's ordinary shared-memory writes and the async
// proxy (TMA, wgmma) that reads them (sm_90).
#pragma once

// fence.proxy.async.shared::cta: this thread's ordinary shared-memory writes become visible to
// the async proxy (TMA stores, wgmma operand reads).
__device__ __forceinline__ void fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
