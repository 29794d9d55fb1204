// sm90/griddepcontrol.cuh: programmatic dependent launch (sm_90). A kernel launched with the
// programmatic stream serialization attribute may start while the kernel before it on the stream
// still runs; these two instructions are how the pair hands over.
#pragma once

// griddepcontrol.wait: block this thread until every prerequisite grid has completed and its
// memory operations are visible. Reads of what the previous kernel wrote go after it. Without a
// programmatic dependency it returns at once.
__device__ __forceinline__ void griddepcontrol_wait() {
    asm volatile("griddepcontrol.wait;" ::: "memory");
}

// griddepcontrol.launch_dependents: this block no longer holds back the dependent grid's launch;
// the dependent starts once every block has signalled or exited. It orders nothing in memory:
// the dependent still waits (griddepcontrol_wait) for this grid's writes.
__device__ __forceinline__ void griddepcontrol_launch_dependents() {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

