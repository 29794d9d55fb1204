"""The FP8 GEMM stages (kernels/32_wgmma_fp8.cu): their parameters, launch geometry, compile
options and the shape rules of the FP8 contract. Pure Python: no CuPy.

The FP8 contract differs from the GEMM registry's (rooflinecli/stages/gemm.py), hence a list of
its own here, as attention has:

    extern "C" __global__ void gemm_wgmma_fp8(int M, int N, int K, float alpha,
        const u8* A, const u8* B, float beta, out_t* C,
        const float* scale_a, const float* scale_b, TmaMap tma_a, TmaMap tma_b
        [, TmaMap tma_c])

tma_a's boxes are BM rows x BK, tma_b's BN / CLUSTER_M rows x BK (a pair of blocks loads half of
B each and multicasts it); stages with TMA_C=1 take tma_c too, over C in boxes of 64 x 64
(their TMA-store epilogue).

A is M x K row-major FP8 codes (e4m3 or e5m2), B is given as N x K (K-major: how models store
weights, and what 8-bit wgmma and cuBLASLt's FP8 path read), scale_a and scale_b are float32
per-tensor scales in device memory, C (M x N, row-major, bf16 or fp16) is
alpha * scale_a * scale_b * A B^T + beta * C; beta == 0 never reads C.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from rooflinecli.core import waves
from rooflinecli.core.fp8 import SCALINGS
from rooflinecli.errors import RooflineError

FILE = "32_wgmma_fp8.cu"
ENTRY = "gemm_wgmma_fp8"
# stage 34: the swapped product at decode batches (weights on the instruction's 64-row side)
SWAP_FILE = "34_wgmma_fp8_swapab.cu"
SWAP_ENTRY = "gemm_wgmma_fp8_swapab"
SWAP_M = (1, 64)  # the batches it is built for: BM = 8 .. 64 rows of A per tile
# stage 58: the decode GEMV on warp-level Tensor Cores (mma.sync m16n8k32, weights straight into
# registers), for the same batches
GEMV_FILE = "58_gemv_fp8.cu"
GEMV_ENTRY = "gemv_fp8"
GEMV_M = (1, 64)
GEMV_SPAN = 64  # its promotion: each 64-byte chunk's two MMAs summed into FP32 registers
FILES = (FILE, SWAP_FILE, GEMV_FILE)  # the sources of the FP8 contract
ARCH = "sm_90a"  # wgmma and setmaxnreg
FORMATS = ("e4m3", "e5m2")
OUTPUTS = ("bf16", "fp16")
TMA_MULTIPLE = 16  # K and N (see check_shape)
# the kernel's -DSCALES for each layout of the scales (rooflinecli.core.fp8.SCALINGS)
SCALES_DEFINE: Mapping[str, int] = MappingProxyType({"tensor": 0, "row": 1, "block": 2})
EPI_STAGING_BYTES = 2 * 64 * 64 * 2  # TMA_C: two 8 KiB buffers of 64 x 64 16-bit C per consumer
C_BOX = (64, 64)  # TMA_C: the C map's box, columns x rows (a consumer's 64 rows x 128 bytes)
# the K one 8-bit wgmma adds (m64nNk32) and the span of K the Tensor Cores' reduced-precision
# sums cover in a k-block of BK
WGMMA_K = 32
MIN_CC = 90  # wgmma: Hopper
# the tile widths stage 32 builds (m64nBNk32): 128 and 256, and the widths between that can make
# a shape's tile count fill the SMs (DeepGEMM steps BLOCK_N by 16); TMA_C wants whole 64 columns
TILE_WIDTHS = (128, 160, 192, 224, 256)
# what `roofline tune` varies: the grouped tile order's group of rows
TUNE_SPACE: Mapping[str, tuple[int, ...]] = MappingProxyType({"GROUP_M": (4, 8, 16)})
# stage 34's: the batch tile, the weight rows per tile (64 per consumer), the shortest K range,
# and whether the grid is a whole number of blocks per tile (EVEN: Stage.persistent_even)
SWAP_TUNE_SPACE: Mapping[str, tuple[int, ...]] = MappingProxyType(
    {"BM": (8, 16, 32, 64), "BN": (64, 128, 256), "SK_MIN": (2, 4, 8), "EVEN": (0, 1)}
)

# stage 58's: the batch rows and weight rows per block, warps per block, chunks in flight
GEMV_TUNE_SPACE: Mapping[str, tuple[int, ...]] = MappingProxyType(
    {"BM": (8, 16, 32), "BN": (16, 32), "NUM_THREADS": (128, 256, 512), "KU": (2, 4, 8)}
)

# cuBLASLt's two accumulation modes (the registry's references, rooflinecli/stages/gemm.py): a
# stage is held to the one whose sums match its own
PROMOTED_REFERENCE = "cublaslt_fp8"  # FP32 promotion (fast accumulation off)
FAST_REFERENCE = "cublaslt_fp8_fast"  # use_fast_accum: one reduced-precision sum over all of K


def accumulation_text(span: int | None, overlapped: bool = False) -> str:
    """What sums promoted every `span` of K (None: never) do, in a record's words."""
    if span is None:
        return "one Tensor Core accumulator over all of K (reduced precision, not promoted)"
    return f"Tensor Core sums promoted into FP32 every {span} of K" + (
        ", each promotion under the next group's WGMMAs" if overlapped else ""
    )


class Fp8Stage(NamedTuple):
    """An FP8 stage's geometry (a NamedTuple, not a dataclass: the registry builds these at import,
    and each dataclass costs start-up, as rooflinecli.present.View says)."""

    name: str
    what: str
    params: Mapping[str, int] = MappingProxyType({})
    math: str = "QGMMA"  # the SASS of 8-bit wgmma: QGMMA.64xNx32.F32.E4M3.E4M3
    file: str = FILE  # the source: stage 32, stage 34 (SWAP_FILE) or stage 58 (GEMV_FILE)
    # BN -> the ring depth that goes with it, for a stage that takes its tile width from the
    # shape (rooflinecli.stages.gemm.Stage.for_shape); empty for a fixed width
    widths: Mapping[int, Mapping[str, int]] = MappingProxyType({})

    @property
    def swapped(self) -> bool:
        """Stage 34: C^T = B A^T, BN rows of the weights by BM of the batch, stream-K."""
        return self.file == SWAP_FILE

    @property
    def gemv(self) -> bool:
        """Stage 58: BN weight rows by BM of the batch per block on mma.sync, warps splitting K,
        no TMA, no shared-memory ring."""
        return self.file == GEMV_FILE

    @property
    def consumers(self) -> int:
        """Consumer warpgroups: 64 rows of the tile each, or (PINGPONG) two taking turns; in the
        swapped product, 64 rows of the weights each."""
        if self.swapped:
            return self.params["BN"] // 64
        return 2 if self.params.get("PINGPONG") else self.params["BM"] // 64

    @property
    def threads(self) -> int:
        if self.gemv:
            return self.params["NUM_THREADS"]
        return 128 * (1 + self.consumers)  # + the producer warpgroup

    @property
    def cluster_m(self) -> int:
        """Blocks per cluster along M (CLUSTER_M=2: a pair sharing B by TMA multicast)."""
        return int(self.params.get("CLUSTER_M", 1))

    @property
    def b_box_rows(self) -> int:
        """Rows of B (N x K) one block loads per K slice: its share of the BN rows."""
        return self.params["BN"] // self.cluster_m

    @property
    def tma_c(self) -> bool:
        """The TMA-store epilogue: the kernel takes a map over C."""
        return bool(self.params.get("TMA_C"))

    @property
    def ring_stages(self) -> int:
        """Slices in the ring: STAGES, or (stage 34) as many as RING_KIB holds, at most
        MAX_STAGES, as the kernel works it out."""
        p = self.params
        if not self.swapped:
            return p["STAGES"]
        per = (p["BM"] + p["BN"]) * p["BK"]
        return min(p.get("MAX_STAGES", 16), p.get("RING_KIB", 200) * 1024 // per)

    @property
    def smem_bytes(self) -> int:
        """The ring, TMA_C's staging after it, and the 1024-byte alignment."""
        p = self.params
        if self.gemv:
            return 0  # its warps' partial tiles are static shared memory
        if self.swapped:
            return self.ring_stages * (p["BM"] + p["BN"]) * p["BK"] + 1024
        staging = self.consumers * EPI_STAGING_BYTES if self.tma_c else 0
        return p["STAGES"] * (p["BM"] + p["BN"]) * p["BK"] + staging + 1024

    @property
    def promote_span(self) -> int | None:
        """The K a reduced-precision Tensor Core sum spans before it is added in FP32, or None
        when one accumulator spans all of K."""
        if self.gemv:
            return GEMV_SPAN
        p = self.params.get("PROMOTE", 0)
        return p * self.params["BK"] if p else None

    @property
    def accumulation(self) -> str:
        """What the stage's sums do, in a record's words."""
        if self.swapped:
            return "one Tensor Core accumulator over each block's range of K, ranges added in FP32"
        return accumulation_text(self.promote_span, bool(self.params.get("PROMOTE_ASYNC")))

    @property
    def paired_reference(self) -> str:
        """The cuBLASLt mode the stage is held to: the one whose accumulation matches."""
        return PROMOTED_REFERENCE if self.promote_span else FAST_REFERENCE

    def grid(self, m: int, n: int, sm_count: int | None = None) -> tuple[int, int, int]:
        """One block per tile (grid x along N, y along M); PERSISTENT=1: one block per SM (at
        most MAX_BLOCKS where that is set), at most one per tile, each walking tiles blockIdx.x,
        + gridDim.x, ... With CLUSTER_M=2 a whole number of pairs, each walking cluster tiles
        (2 BM x BN; a pair's second row tile past M still runs, storing nothing)."""
        p, c = self.params, self.cluster_m
        tiles_n, tiles_m = -(-n // p["BN"]), -(-m // p["BM"])
        if self.gemv:  # a block per strip of BN weight rows and BM batch rows
            return (tiles_n, tiles_m, 1)
        if self.swapped:  # one block per SM, each a range of the stream-K line
            if sm_count is None:
                raise RooflineError(f"stage {self.name} is stream-K: its grid needs the SMs")
            tiles, even = tiles_n * tiles_m, bool(p.get("EVEN"))
            return (waves.persistent_blocks(tiles, sm_count, fill=True, even=even), 1, 1)
        if p.get("PERSISTENT"):
            if sm_count is None:
                raise RooflineError(f"stage {self.name} is persistent: its grid needs the SMs")
            cap = min(sm_count, p.get("MAX_BLOCKS") or sm_count)
            return (waves.persistent_blocks(-(-tiles_m // c) * c * tiles_n, cap, c), 1, 1)
        return (tiles_n, tiles_m, 1)

    def scaling_refusal(self, scaling: str) -> str | None:
        """Why the stage cannot apply scales laid out as `scaling`, or None. Per tensor and per
        row and column every stage 32 build can (in the epilogue); DeepGEMM's blocks need the
        sum of every 128 of K promoted under its own scales (PROMOTE=1) and a tile one block of
        B wide (BN = 128); stage 34 takes per-tensor scales only; stage 58 every layout (its
        promotion every 64 of K lies inside one 128-wide block)."""
        if scaling not in SCALINGS:
            return f"FP8 scaling {scaling!r}: one of {', '.join(SCALINGS)}"
        if scaling == "tensor" or self.gemv:
            return None
        if self.swapped:
            return f"{self.name} takes per-tensor scales only"
        p = self.params
        if scaling == "block" and (p.get("PROMOTE") != 1 or p["BN"] != 128):
            return (
                f"{self.name} cannot apply 128 x 128 block scales: they need each 128 of K "
                "promoted under its own scales (PROMOTE=1) on 128-column tiles"
            )
        return None

    def defines(
        self, fp8_format: str = "e4m3", out: str = "bf16", scaling: str = "tensor"
    ) -> dict[str, int | str]:
        if fp8_format not in FORMATS:
            raise RooflineError(f"FP8 format {fp8_format!r}: one of {', '.join(FORMATS)}")
        if out not in OUTPUTS:
            raise RooflineError(f"FP8 output type {out!r}: one of {', '.join(OUTPUTS)}")
        why = self.scaling_refusal(scaling)
        if why:
            raise RooflineError(why)
        scales = {"SCALES": SCALES_DEFINE[scaling]} if scaling != "tensor" else {}
        return {
            **self.params,
            "ELEM_BF16": int(out == "bf16"),
            "FP8_E5M2": int(fp8_format == "e5m2"),
            **scales,
        }

    def launch(
        self, m: int, n: int, sm_count: int | None = None
    ) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        """(grid, block, dynamic shared bytes) for an M x N output."""
        return self.grid(m, n, sm_count), (self.threads, 1, 1), self.smem_bytes

    def workspace_bytes(self, blocks: int) -> int:
        """Stage 34's scratch for `blocks` blocks: per block and consumer one fp32 64 x BM
        partial, then a 4-byte flag each (zeroed once; the kernel puts its flags back to 0).
        Stage 32 needs none."""
        if not self.swapped:
            return 0
        per = blocks * self.consumers
        return per * 64 * self.params["BM"] * 4 + per * 4

    @property
    def a_box_rows(self) -> int:
        """Rows of A (M x K) one TMA box holds: BM."""
        return self.params["BM"]

    # the stage contract (rooflinecli.stages.contract.KernelStage)
    @property
    def kind(self) -> str:
        return "fp8"

    @property
    def source(self) -> str:
        return self.file

    @property
    def entry(self) -> str:
        return GEMV_ENTRY if self.gemv else SWAP_ENTRY if self.swapped else ENTRY

    @property
    def min_cc(self) -> int:
        return MIN_CC

    @property
    def kernel_dtypes(self) -> tuple[str, ...]:
        return ("fp8",)

    @property
    def param_sets(self) -> Mapping[str, Mapping[str, int]]:
        return MappingProxyType({"": self.params})

    @property
    def tune_space(self) -> Mapping[str, tuple[int, ...]]:
        if self.gemv:
            return GEMV_TUNE_SPACE
        return SWAP_TUNE_SPACE if self.swapped else TUNE_SPACE

    def refusal_for(self, problem: Any) -> str | None:
        """check_shape() of the problem (M, N, K), as its one line."""
        try:
            check_shape(*problem)
        except RooflineError as exc:
            return exc.message
        return None

    def launch_for(
        self, problem: Any, sm_count: int | None = None
    ) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        """launch() of the problem (M, N, K)."""
        m, n, _k = problem
        return self.launch(m, n, sm_count)

    def with_params(self, **overrides: int) -> Fp8Stage:
        return self._replace(params=MappingProxyType({**self.params, **overrides}))


_BASE = {"BM": 128, "BK": 128, "GROUP_M": 8}
# the widths the TMA-store epilogue stores in whole 64-column chunks, each with the deepest ring
# that fits 227 KiB beside the epilogue's staging: slots of 128-byte rows, so the same for FP8 at
# BK = 128 and for stage 26's 16-bit tiles at BK = 64 (rooflinecli/stages/gemm.py)
TMA_C_WIDTHS = MappingProxyType(
    {128: MappingProxyType({"STAGES": 6}), 192: MappingProxyType({"STAGES": 4}),
     256: MappingProxyType({"STAGES": 4})}
)  # fmt: skip

# In ladder order, but the last is the one `--stages best` runs where the tune table has no FP8
# entry (rooflinecli/stages/dispatch.py): the stage measured best on hardware, so a stage not
# measured ahead of it (the TMA-store epilogue and the pairs, so far) comes before it
FP8_STAGES: tuple[Fp8Stage, ...] = (
    Fp8Stage(
        "wgmma_fp8",
        "FP8 e4m3 WGMMA m64n256k32 (QGMMA) on stage 25's warp-specialised TMA pipeline, both "
        "operands K-major; one accumulator over all of K (the Tensor Cores' reduced precision)",
        MappingProxyType({**_BASE, "BN": 256, "STAGES": 4}),
    ),
    Fp8Stage(
        "wgmma_fp8_n128",
        "wgmma_fp8 with BN = 128 (m64n128k32) and a 6-deep ring: more blocks at mid-size shapes",
        MappingProxyType({**_BASE, "BN": 128, "STAGES": 6}),
    ),
    Fp8Stage(
        "wgmma_fp8_promote",
        "wgmma_fp8_n128 adding its Tensor Core sums into FP32 registers every 4 k-blocks "
        "(512 of K), as DeepGEMM does",
        MappingProxyType({**_BASE, "BN": 128, "STAGES": 6, "PROMOTE": 4}),
    ),
    Fp8Stage(
        "wgmma_fp8_promote_async",
        "wgmma_fp8_promote with two register sets taking turns: a group's promotion (its FP32 "
        "adds) runs while the next group's WGMMAs do, instead of waiting for the Tensor Cores "
        "to drain",
        MappingProxyType({**_BASE, "BN": 128, "STAGES": 6, "PROMOTE": 4, "PROMOTE_ASYNC": 1}),
    ),
    Fp8Stage(
        "wgmma_fp8_pingpong",
        "persistent, the two consumer warpgroups on alternate 64 x 256 tiles in turn (named "
        "barriers hand over the mainloop): one stores its tile while the other keeps the Tensor "
        "Cores busy; 5-deep ring of 40 KiB slices",
        MappingProxyType(
            {**_BASE, "BM": 64, "BN": 256, "STAGES": 5, "PERSISTENT": 1, "PINGPONG": 1}
        ),
    ),
    Fp8Stage(
        "wgmma_fp8_tma_store",
        "wgmma_fp8_persistent with the TMA-store epilogue of stages 26-29: C staged in 2 x 8 KiB "
        "of 128-byte swizzled shared memory per consumer, stored by the copy engine while the "
        "next tile's main loop runs",
        MappingProxyType({**_BASE, "BN": 256, "STAGES": 4, "PERSISTENT": 1, "TMA_C": 1}),
    ),
    Fp8Stage(
        "wgmma_fp8_cluster_promote",
        "wgmma_fp8_cluster at BN = 128 with DeepGEMM's promotion every 4 k-blocks: a pair of "
        "blocks shares B by TMA multicast, the TMA-store epilogue stores the FP32 sums",
        MappingProxyType(
            {**_BASE, "BN": 128, "STAGES": 6, "PERSISTENT": 1, "PROMOTE": 4}
            | {"CLUSTER_M": 2, "TMA_C": 1, "MAX_BLOCKS": 128}
        ),
    ),
    Fp8Stage(
        "wgmma_fp8_cluster",
        "wgmma_fp8_tma_store in 2x1 clusters (stage 27's pairs): the blocks on row tiles 2i, "
        "2i+1 each load half of B's 256 rows and the TMA multicasts it to both, so L2 sends a "
        "block 16 + 16 KiB per k-block, not 16 + 32; at most 128 blocks, whole pairs",
        MappingProxyType(
            {**_BASE, "BN": 256, "STAGES": 4, "PERSISTENT": 1}
            | {"CLUSTER_M": 2, "TMA_C": 1, "MAX_BLOCKS": 128}
        ),
    ),
    Fp8Stage(
        "wgmma_fp8_fill",
        "wgmma_fp8_tma_store taking its tile width from the shape: of BN = 128, 192 and 256, the "
        "one whose tiles do the most work on the SMs, wave fill weighed by the tile's intensity "
        "(DeepGEMM's choice of BLOCK_N), so that no class of shapes is held to one width",
        MappingProxyType({**_BASE, "BN": 256, "STAGES": 4, "PERSISTENT": 1, "TMA_C": 1}),
        widths=TMA_C_WIDTHS,
    ),
    Fp8Stage(
        "wgmma_fp8_cluster_fill",
        "wgmma_fp8_cluster taking its tile width from the shape as wgmma_fp8_fill does, over the "
        "pairs' 128 blocks",
        MappingProxyType(
            {**_BASE, "BN": 256, "STAGES": 4, "PERSISTENT": 1}
            | {"CLUSTER_M": 2, "TMA_C": 1, "MAX_BLOCKS": 128}
        ),
        widths=TMA_C_WIDTHS,
    ),
    Fp8Stage(
        "wgmma_fp8_blockscale",
        "DeepGEMM's accumulation: wgmma_fp8_n128 promoting every k-block (128 of K) into FP32, "
        "which is where 128 x 128 block scales (per row of A and 128 of K, per 128 x 128 block "
        "of B) are applied; per-tensor and per-row scales too",
        MappingProxyType({**_BASE, "BN": 128, "STAGES": 6, "PROMOTE": 1}),
    ),
    Fp8Stage(
        "wgmma_fp8_swapab",
        "decode batches (M <= 64): stage 31's swap on FP8, C^T = B A^T with 64 weight rows on "
        "the QGMMA's 64-row side and BM rows of the batch on its N side (m64nBMk32), both "
        "operands K-major as they arrive; pure stream-K over every SM, fp32 partials met "
        "through a workspace",
        MappingProxyType({"BM": 8, "BN": 128, "BK": 128, "SK_MIN": 4, "EVEN": 0}),
        file=SWAP_FILE,
    ),
    Fp8Stage(
        "gemv_fp8",
        "decode batches (M <= 64) on warp-level Tensor Cores: stage 53's split-K GEMV on FP8, "
        "16 weight rows by 8 of the batch per mma.sync m16n8k32, the weights streamed straight "
        "into registers (16 bytes a lane, no TMA, no ring), each 64 of K promoted into FP32; "
        "Hopper widens the FP8 operands to fp16 for the MMA",
        MappingProxyType({"BM": 8, "BN": 16, "NUM_THREADS": 256, "KU": 4}),
        math="HMMA",
        file=GEMV_FILE,
    ),
    Fp8Stage(
        "wgmma_fp8_persistent",
        "wgmma_fp8 on a persistent grid (one block per SM walks the tiles in grouped order): "
        "the next tile's loads overlap this tile's epilogue",
        MappingProxyType({**_BASE, "BN": 256, "STAGES": 4, "PERSISTENT": 1}),
    ),
)

FP8_BY_NAME: dict[str, Fp8Stage] = {s.name: s for s in FP8_STAGES}


def of_registry(stage: Any) -> Fp8Stage:
    """The FP8 geometry of a registry entry (rooflinecli/stages/gemm.py) of an FP8 source (stage
    32, 34 or 58), a variant's parameters and name included."""
    return Fp8Stage(
        stage.name,
        stage.what,
        MappingProxyType(dict(stage.params)),
        file=stage.file,
        widths=getattr(stage, "widths", MappingProxyType({})),
    )


def check_shape(m: int, n: int, k: int) -> None:
    """The FP8 contract's shape rule, refused in one line: K is a multiple of 16 because TMA
    reads A's and B's rows in multiples of 16 bytes, N because cuBLASLt's FP8 path (the
    reference) requires it, as would a TMA store of C's rows."""
    if min(m, n, k) < 1:
        raise RooflineError(f"FP8 GEMM {m}x{n}x{k}: M, N and K must be positive")
    bad = [f"{name} = {v}" for name, v in (("K", k), ("N", n)) if v % TMA_MULTIPLE]
    if bad:
        raise RooflineError(
            f"FP8 GEMM {m}x{n}x{k}: {' and '.join(bad)} not a multiple of {TMA_MULTIPLE} "
            "(TMA rows of 16-byte multiples; cuBLASLt FP8 needs it too)"
        )
