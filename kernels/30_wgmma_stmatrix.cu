// Stage 30: stage 28 with an epilogue that stages the whole tile (stmatrix), and fast.cu's
// habits around it (fast.cu kernels 11 and 12, "Outperforming cuBLAS on H100": the same tiles,
// 2x1 clusters, a 3-deep ring). Stage 28 hands C to the TMA store engine 64 columns at a time
// through two 8 KiB buffers per consumer: four rounds of shared stores per tile, each behind two
// named barriers and a wait for the store two chunks back, while the tensor cores' work stops.
// Here each consumer owns four 8 KiB buffers, the whole 64 x 256 of its tile:
//   * one wait at the start of the epilogue (the previous tile's stores have had a whole main
//     loop to read their buffers), one barrier;
//   * stmatrix.x4 writes four 8 x 8 blocks of 16-bit C per instruction: the fragment a thread
//     holds after WGMMA is exactly the register stmatrix takes; the 128-byte swizzle per chunk
//     keeps each matrix's 8 row addresses in 8 bank groups, and the TMA store reads it as before;
//   * one fence and barrier, then the leader issues the four chunk stores and commits once.
// The ring loses a stage to pay for it: 3 x 48 KiB + 2 x 32 KiB of staging + 1 KiB = 209 KiB.
// With 3 slots a consumer waits for its own batch (IN_FLIGHT=0: wait_group 0) and frees its
// slot at once, the other consumer's batch keeping the tensor cores busy; IN_FLIGHT=1 is stage
// 28's release (one batch in flight, two slots held per consumer). The WGMMAs take slot 0's
// descriptors plus constant offsets (smem_desc_add) instead of rebuilding both from the address
// for every WGMMA, and a slot is released once per consumer warpgroup (WG_RELEASE=1), as
// CUTLASS's TMA pipeline counts its consumers. A step that verifies but did not pay against
// stage 28 (the results pages in docs/ hold the figures). The rest is stage 28's.
#ifndef BM
#error "BM (rows of the C tile) must be given as -DBM=..."
#endif
#ifndef BN
#error "BN (columns of the C tile) must be given as -DBN=..."
#endif
#ifndef BK
#error "BK (depth of one K step) must be given as -DBK=..."
#endif
#ifndef STAGES
#error "STAGES (shared-memory tiles in the ring) must be given as -DSTAGES=..."
#endif
#ifndef GROUP_M
#define GROUP_M 16
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 2  // 1: no cluster (stage 26's loads)
#endif
#ifndef WG_RELEASE
#define WG_RELEASE 1  // one arrival per consumer warpgroup releases a slot (0: one per warp)
#endif
#ifndef IN_FLIGHT
#define IN_FLIGHT 0  // WGMMA batches a consumer leaves running while it waits for the next slice
#endif
#ifndef LAG
#define LAG 2  // K slices consumer 1 starts behind consumer 0 (0: in step, as stage 27)
#endif

#include "ptx_sm80.cuh"  // elem_t (-DELEM_BF16=1: bf16), pack2, to_float
#include "sm70/named_barrier.cuh"  // bar_arrive, bar_sync
#include "sm90/cluster.cuh"        // cluster_sync
#include "sm90/fence.cuh"          // fence_proxy_async
#include "sm90/mbarrier.cuh"       // fence_mbarrier_init, mbar_init, mbar_wait
#include "sm90/setmaxnreg.cuh"     // setmaxnreg_dec, setmaxnreg_inc
#include "sm90/stmatrix.cuh"       // stmatrix_x4
#include "sm90/tma.cuh"            // TmaMap, TMA loads and stores, bulk groups
#include "sm90/wgmma.cuh"          // wgmma_commit, wgmma_fence, wgmma_m64nNk16, wgmma_wait
#include "sm90/wgmma_desc.cuh"     // smem_desc_add, smem_desc_k_sw128, smem_desc_mn_sw128
#include "gemm/tile_order.cuh"      // grouped_cluster_origin
#include "gemm/wgmma_pipeline.cuh"  // load_slice, release_slot

typedef unsigned int u32;
typedef unsigned long long u64;

constexpr int CONSUMERS = BM / 64;                  // consumer warpgroups, 64 rows each
constexpr int NUM_THREADS = 128 * (1 + CONSUMERS);  // + the producer warpgroup
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
constexpr int A_BYTES = BM * BK * 2;
constexpr int STAGE_BYTES = A_BYTES + BN * BK * 2;
constexpr int B_BOX_COLS = 64;            // columns of B per TMA box: one 128-byte swizzle row
constexpr int B_BOX_BYTES = BK * 128;     // a box: BK rows (k) of 128 bytes
constexpr int B_BOXES = BN / B_BOX_COLS;  // boxes per B tile, side by side along N
constexpr int MY_B_BOXES = B_BOXES / CLUSTER_M;  // boxes this block loads (and multicasts)
constexpr int B_TRANS = 1;                // wgmma imm-trans-b: B is N-major in shared memory
constexpr int RING_BYTES = STAGES * STAGE_BYTES;
constexpr int EPI_COLS = 64;                        // a staged chunk: 64 rows x one 128-byte row
constexpr int EPI_CHUNK_BYTES = 64 * EPI_COLS * 2;  // 8 KiB
constexpr int EPI_CHUNKS = BN / EPI_COLS;           // buffers per consumer: its whole 64 x BN
constexpr int EPI_BYTES = CONSUMERS * EPI_CHUNKS * EPI_CHUNK_BYTES;
constexpr int GROUP_C = GROUP_M / CLUSTER_M > 0 ? GROUP_M / CLUSTER_M : 1;  // in cluster rows

static_assert(BK == 64, "A: one tile row is one 128-byte swizzle row of 64 two-byte elements");
static_assert(BN == 128 || BN == 256, "the WGMMA below is m64n128k16 or m64n256k16 (BN wide)");
static_assert(BN % B_BOX_COLS == 0, "B arrives in whole boxes of 64 columns (128-byte swizzle)");
static_assert(BM % 64 == 0 && BM <= 256 && BK <= 256, "TMA boxes are at most 256 rows");
static_assert(BN % 16 == 0, "stmatrix.x4 stores 16 columns (two 8 x 8 blocks wide) at a time");
static_assert(CONSUMERS <= 2, "consumers use named barriers 1 .. CONSUMERS (and the registers)");
static_assert(CLUSTER_M == 1 || CLUSTER_M == 2, "a cluster is one block or a pair of row tiles");
static_assert(IN_FLIGHT == 0 || IN_FLIGHT == 1, "a consumer holds its slice's slot, or two");
static_assert(LAG >= 0 && LAG < STAGES,
              "consumer 0 issues LAG slices alone: the ring must hold them and one more");
static_assert(B_BOXES % CLUSTER_M == 0, "each block of a pair loads a whole number of B boxes");
static_assert(A_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0 && B_BOX_BYTES % 1024 == 0,
              "tiles and B boxes stay 1024-byte aligned (the swizzle atom; descriptor base 0)");
static_assert((B_BOX_BYTES >> 4) < (1 << 14), "the descriptor's LBO field holds 14 bits of 16 B");
static_assert(RING_BYTES + EPI_BYTES + 1024 <= 227 * 1024,
              "ring + staging (+ alignment) must fit in 227 KiB");
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536,
              "setmaxnreg: the warpgroups' registers must fit in the SM's 64K");

// BN = 128 (m64n128k16, 64 accumulators a consumer thread): twice the tiles of BN = 256, for
// shapes whose 128 x 256 tiles leave SMs idle or a last wave nearly empty
#define WGMMA wgmma_m64nNk16<BN, B_TRANS>

// WG_RELEASE=1: only warp 0 of each consumer warpgroup releases a slot (release_slot in
// gemm/wgmma_pipeline.cuh), as CUTLASS's TMA pipeline counts its consumers; WG_RELEASE=0 is stage
// 28's arrival from every warp (4x the arrivals, half of them remote with a pair, and the producer
// waits for the last of them). The empty barriers count the releasing warps.
constexpr int RELEASERS = WG_RELEASE ? 1 : 4;  // warps of a consumer warpgroup that arrive

// C = alpha * D (+ beta * C) for a warpgroup's 64 x BN block at (row0, col0) through the TMA
// store engine. Chunk q (columns 64q .. 64q+63) has buffer q: row r at r * 128 bytes, its 16-byte
// piece jj (columns 8jj .. 8jj+7) at piece jj ^ (r % 8), the 128-byte swizzle TMA applies by
// address bits (buffers are 1024-byte aligned). stmatrix.x4 per 16 columns J: matrix mm holds
// rows 8 (mm % 2) .. +7 and columns 16J + 8 (mm / 2) .. +7 of the warp's 16 rows; register mm of
// a thread is its accumulator pair there (row g + 8h, columns 2t, 2t + 1 of 8-column group j =
// 2J + mm / 2, h = mm % 2), and lane l gives the address of row l % 8 of matrix l / 8.
__device__ __forceinline__ void store_tile_stmatrix(const float (&d)[BN / 2], const TmaMap* map,
                                                    const elem_t* C, int M, int N, int row0,
                                                    int col0, float alpha, float beta, u32 bufs,
                                                    int bar_id, bool leader) {
    if (row0 >= M) return;  // this warpgroup's rows are all outside C (uniform over it)
    const int lane = threadIdx.x % 32, w = (threadIdx.x / 32) % 4;
    const int g = lane / 4, t = lane % 4;
    const int mi = lane / 8, ri = lane % 8;        // the row address this lane gives
    const int r_addr = 16 * w + 8 * (mi % 2) + ri;  // its row in the 64-row block (r_addr % 8 = ri)
    // the previous tile's stores have read every buffer (a whole main loop ago)
    if (leader) bulk_wait_read<0>();
    bar_sync(bar_id, 128);
#pragma unroll
    for (int J = 0; J < BN / 16; ++J) {
        u32 v[4];
#pragma unroll
        for (int mm = 0; mm < 4; ++mm) {
            const int j = 2 * J + mm / 2, h = mm % 2;
            float v0 = alpha * d[4 * j + 2 * h], v1 = alpha * d[4 * j + 2 * h + 1];
            if (beta != 0.0f) {  // beta == 0: C is never read
                const int row = row0 + 16 * w + g + 8 * h, col = col0 + 8 * j + 2 * t;
                if (row < M && col < N) {  // N is even: col + 1 < N too
                    // ld.global.cg (L2): not the read-only path, C is written in this kernel
                    const u32 old = __ldcg(reinterpret_cast<const unsigned int*>(
                        C + static_cast<size_t>(row) * N + col));
                    v0 = fmaf(beta, to_float(static_cast<elem_t>(old & 0xffffu)), v0);
                    v1 = fmaf(beta, to_float(static_cast<elem_t>(old >> 16)), v1);
                }
            }
            v[mm] = pack2(v0, v1);
        }
        const int jj = (2 * J + mi / 2) % 8;  // 16-byte piece of this lane's row, chunk J / 4
        const u32 addr = bufs + (J / 4) * EPI_CHUNK_BYTES + r_addr * 128 + ((jj ^ ri) << 4);
        stmatrix_x4(addr, v[0], v[1], v[2], v[3]);
    }
    fence_proxy_async();  // each writer: its stores visible to the copy engine ...
    bar_sync(bar_id, 128);  // ... all writers done before the leader hands the tile over
    if (leader) {
#pragma unroll
        for (int q = 0; q < EPI_CHUNKS; ++q) {
            const int c0 = col0 + EPI_COLS * q;
            if (c0 < N) tma_store_2d(map, bufs + q * EPI_CHUNK_BYTES, c0, row0);  // clipped to C
        }
        bulk_commit();
    }
}

#if CLUSTER_M > 1
#define CLUSTER_DIMS __cluster_dims__(CLUSTER_M, 1, 1)  // blocks 2c, 2c+1 of the persistent grid
#else
#define CLUSTER_DIMS
#endif

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(NUM_THREADS, 1)
gemm_wgmma_stmatrix(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
                   const elem_t* __restrict__ B, float beta, elem_t* __restrict__ C,
                   const __grid_constant__ TmaMap tma_a, const __grid_constant__ TmaMap tma_b,
                   const __grid_constant__ TmaMap tma_c) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ __align__(8) u64 full_bar[STAGES], empty_bar[STAGES];
    // 128-byte swizzle repeats every 1024 bytes: tiles start on a 1024-byte boundary. The offset
    // is the same in both blocks of a pair (same kernel, same static shared memory), which the
    // multicast needs: it writes at the issuing block's offsets.
    const u32 base = (static_cast<u32>(__cvta_generic_to_shared(smem)) + 1023u) & ~1023u;
    const u32 full0 = static_cast<u32>(__cvta_generic_to_shared(full_bar));
    const u32 empty0 = static_cast<u32>(__cvta_generic_to_shared(empty_bar));
    const int tid = threadIdx.x, wg = tid / 128;
    const int rank = blockIdx.x % CLUSTER_M;  // %cluster_ctarank of a 1-D cluster along x
    const int cluster = blockIdx.x / CLUSTER_M, clusters = gridDim.x / CLUSTER_M;

    const int grid_m = (M + BM - 1) / BM, grid_n = (N + BN - 1) / BN;
    const int grid_cm = (grid_m + CLUSTER_M - 1) / CLUSTER_M;  // cluster rows
    const int num_tiles = grid_cm * grid_n;                    // cluster tiles
    const int ktiles = (K + BK - 1) / BK;

    if (tid == 0) {
        prefetch_tensormap(&tma_a);
        prefetch_tensormap(&tma_b);
        prefetch_tensormap(&tma_c);
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full0 + 8 * s, 1);  // the producer's arrive.expect_tx
            // one arrival per releasing consumer warp of every block the slot's B is multicast to
            mbar_init(empty0 + 8 * s, CONSUMERS * RELEASERS * CLUSTER_M);
        }
        fence_mbarrier_init();  // visible to TMA and to the peer block
    }
    if (CLUSTER_M > 1) {
        cluster_sync();  // the peer's barriers exist before anything is multicast to them
    } else {
        __syncthreads();
    }

    if (wg == 0) {
        // Producer warpgroup: one thread runs the copy loop over this pair's cluster tiles; `it`
        // counts K-slices across tiles (slot it % STAGES, use it / STAGES of the slot).
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) {
            u32 it = 0;
            for (int tile = cluster; tile < num_tiles; tile += clusters) {
                int m0, n0;
                grouped_cluster_origin<BM, BN, GROUP_C, CLUSTER_M>(tile, grid_cm, grid_n,
                                                                   rank, m0, n0);
                const bool load_a = m0 < M;  // a rank past M loads no A (uniform per tile)
                const u32 bytes = (load_a ? A_BYTES : 0) + B_BOXES * B_BOX_BYTES;
                for (int kt = 0; kt < ktiles; ++kt, ++it)  // A (unless past M), this block's B
                    load_slice<BM, BN, BK, STAGES, CLUSTER_M>(it, base, full0, empty0, &tma_a,
                                                              &tma_b, kt, m0, n0, rank, load_a,
                                                              bytes);
            }
        }
    } else {
        setmaxnreg_inc<CONSUMER_REGS>();
        const int c = wg - 1;  // consumer c computes rows 64c .. 64c+63 of each block tile
        const bool leader = tid % 128 == 0;  // issues this warpgroup's TMA stores
        const u32 bufs = base + RING_BYTES + c * EPI_CHUNKS * EPI_CHUNK_BYTES;
        float d[BN / 2];
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;  // defined once; each tile starts scale-d 0

        // slot 0's descriptors, k step 0: every WGMMA adds its slot's and step's offset to them
        const u64 desc_a = smem_desc_k_sw128(base + c * (64 * BK * 2));
        const u64 desc_b = smem_desc_mn_sw128(base + A_BYTES, B_BOX_BYTES);
        u32 it = 0;  // the producer's K-slice counter, followed slice by slice
        constexpr int STAGGER_BAR = 3;  // ids 1, 2: the consumers' epilogues
        if (LAG > 0 && c == 1) bar_sync(STAGGER_BAR, 256);  // consumer 0 has issued LAG slices
        for (int tile = cluster; tile < num_tiles; tile += clusters) {
            int m0, n0;
            grouped_cluster_origin<BM, BN, GROUP_C, CLUSTER_M>(tile, grid_cm, grid_n,
                                                               rank, m0, n0);
            for (int kt = 0; kt < ktiles; ++kt, ++it) {
                const u32 s = it % STAGES;
                mbar_wait(full0 + 8 * s, (it / STAGES) & 1);  // use it / STAGES has landed
                const u32 slot = s * STAGE_BYTES;
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)  // A: +32 bytes inside its rows; B: +16 rows
                    WGMMA(d, smem_desc_add(desc_a, slot + 32 * kk),
                          smem_desc_add(desc_b, slot + 16 * 128 * kk), (kt | kk) != 0);
                wgmma_commit();
                if (LAG > 0 && c == 0 && it == LAG - 1) bar_arrive(STAGGER_BAR, 256);  // once
                if (IN_FLIGHT == 0) {
                    wgmma_wait<0>();  // this slice's WGMMAs are done: its slot goes back now
                    release_slot<CLUSTER_M, WG_RELEASE != 0>(empty0 + 8 * s);
                } else {
                    wgmma_wait<1>();  // the batch of slice it-1 has completed: release its slot
                    if (kt >= 1)
                        release_slot<CLUSTER_M, WG_RELEASE != 0>(empty0 + 8 * ((it - 1) % STAGES));
                }
            }
            if (IN_FLIGHT != 0) {
                wgmma_wait<0>();
                // the tile's last slice: released here, refilled during the epilogue
                release_slot<CLUSTER_M, WG_RELEASE != 0>(empty0 + 8 * ((it - 1) % STAGES));
            }
            store_tile_stmatrix(d, &tma_c, C, M, N, m0 + 64 * c, n0, alpha, beta, bufs, 1 + c,
                                leader);
        }
        // fewer than LAG slices in all: consumer 0 never reached the arrival above
        if (LAG > 0 && c == 0 && it < LAG) bar_arrive(STAGGER_BAR, 256);
        if (leader) bulk_wait<0>();  // the staging buffers must outlive the stores reading them
    }
    // With a pair, the peer's consumers may still arrive on this block's empty barriers and its
    // producer multicast into this block's ring: neither block exits before both are done.
    if (CLUSTER_M > 1) cluster_sync();
}
