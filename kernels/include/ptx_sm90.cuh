// ptx_sm90.cuh: every PTX wrapper of the Hopper stages at once. Each operation has a header of
// its own, in the manner of CuTe's arch layer (one file per operation and architecture, each
// wrapper named after the instruction it wraps): sm90/ holds the Hopper instructions (wgmma and
// setmaxnreg need the sm_90a target), sm89/ and sm70/ those the Hopper stages use that older
// targets have too. Stage files include the headers of what they use; this one is for user stages and probes
// that want them all (NVRTC gets -I kernels/include). Shared-memory operands (tiles, mbarriers)
// are 32-bit shared-window addresses (__cvta_generic_to_shared). -DELEM_BF16=1 selects the bf16
// forms of the wgmma instructions; otherwise fp16.
#ifndef ROOFLINE_PTX_SM90_CUH
#define ROOFLINE_PTX_SM90_CUH

#include "sm70/flags.cuh"          // ld.acquire / st.release at gpu scope: flags between blocks
#include "sm70/globaltimer.cuh"    // %globaltimer: one nanosecond clock for every SM
#include "sm70/ld_global_cg.cuh"   // ld.global.cg kept in order (another grid's output)
#include "sm70/named_barrier.cuh"  // bar.sync / bar.arrive with an id and a thread count
#include "sm89/mma_fp8.cuh"         // mma.sync m16n8k32 on e4m3 / e5m2 inputs (from registers)
#include "sm90/cluster.cuh"        // mapa, arrivals on a peer's mbarrier, the cluster barrier
#include "sm90/fence.cuh"          // fence.proxy.async
#include "sm90/griddepcontrol.cuh" // griddepcontrol.wait / .launch_dependents (PDL)
#include "sm90/mbarrier.cuh"       // mbarrier init, arrive (expect_tx), try_wait.parity
#include "sm90/red.cuh"            // red.global.add.v4.f32
#include "sm90/setmaxnreg.cuh"     // setmaxnreg.dec / .inc
#include "sm90/stmatrix.cuh"       // stmatrix.x4
#include "sm90/tma.cuh"            // TmaMap, cp.async.bulk.tensor loads and stores, bulk groups
#include "sm90/wgmma.cuh"          // wgmma.mma_async shapes, fence, commit, wait
#include "sm90/wgmma_desc.cuh"     // wgmma's shared-memory matrix descriptors
#include "sm90/wgmma_fp8.cuh"      // wgmma.mma_async ...k32 on e4m3 / e5m2 inputs

#endif  // ROOFLINE_PTX_SM90_CUH
