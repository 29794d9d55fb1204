// sm90/cluster.cuh: thread-block clusters (sm_90): addresses in a peer block's shared memory,
// arrivals on a peer's mbarrier, and the cluster-wide barrier.
#pragma once

// mapa.shared::cluster: the address of the same shared-memory offset in block `rank` of the cluster.
__device__ __forceinline__ unsigned int mapa(unsigned int addr, unsigned int rank) {
    unsigned int remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
    return remote;
}
// mbarrier.arrive.shared::cluster: one arrival on the mbarrier at the same offset in block `rank`.
__device__ __forceinline__ void mbar_arrive_cluster(unsigned int bar, unsigned int rank) {
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(mapa(bar, rank)) : "memory");
}
// barrier.cluster.arrive.release: this thread arrives at the cluster barrier (its writes released).
__device__ __forceinline__ void cluster_arrive() {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
// barrier.cluster.wait.acquire: wait for every thread of the cluster to arrive (acquire theirs).
__device__ __forceinline__ void cluster_wait() {
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// Every thread of every block in the cluster meets here.
__device__ __forceinline__ void cluster_sync() {
    cluster_arrive();
    cluster_wait();
}
