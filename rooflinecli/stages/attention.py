"""The attention stages: the one list of them (beside the GEMM registry, rooflinecli.stages.gemm).
CLI choices, tests, the device script and docs derive from ATTENTION_STAGES.

A stage is one kernels/4N_attn_*.cu plus one entry here. Every fused stage exports one kernel:

    extern "C" __global__ void ENTRY(int batch, int heads, int kv_heads, int seq, float scale,
                                     int causal, const elem_t* Q, const elem_t* K,
                                     const elem_t* V, elem_t* O [, TMA maps if tma])

Q, O [B, H, N, HEAD_DIM] and K, V [B, H_kv, N, HEAD_DIM] row-major; query head h reads KV
head h / (H / H_kv); grid (ceil(N / block_m), B*H), block (threads), `smem_bytes` of dynamic
shared memory, all per head dimension (`configs`; HEAD_DIM is passed as -DHEAD_DIM, the
config's params as -DNAME=value). A stage of several kernels (the naive one) lists them in
`kernels`, each with its own block and grid rule, and names a `workspace` every kernel gets
as an eleventh argument: one launch path for all. Pure Python: no CuPy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from rooflinecli.core.attention import Shape
from rooflinecli.core.elements import element
from rooflinecli.errors import RooflineError
from rooflinecli.stages.gemm import Refusal


@dataclass(frozen=True)
class Config:
    """One head dimension's build: -D params, threads per block, query rows per block (the
    grid's x), dynamic shared memory in bytes."""

    params: Mapping[str, int]
    threads: int
    block_m: int
    smem_bytes: int
    # spill stores ptxas may report for this build (tests/test_attention_stages.py holds every
    # build to it): 0 except where a measured gain was worth a few spilled bytes, said beside it
    spill_allowance_bytes: int = 0


@dataclass(frozen=True)
class Kernel:
    """One kernel of a multi-kernel stage. grid "query_tiles": (ceil(N / rows), B*H, 1);
    "score_tiles": (ceil(N / cols), ceil(N / rows), B*H), a tile of the N x N scores each."""

    entry: str
    block: tuple[int, int]
    rows: int
    grid: str = "query_tiles"
    cols: int = 0


GRIDS = ("query_tiles", "score_tiles")


@dataclass(frozen=True)
class Launch:
    entry: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem_bytes: int


@dataclass(frozen=True)
class AttentionStage:
    name: str
    what: str  # one line: the technique
    file: str
    entry: str  # the contract's kernel (a multi-kernel stage: its first)
    dtypes: tuple[str, ...]
    configs: Mapping[int, Config]  # by head dimension
    min_cc: int = 50
    tma: bool = False  # tensor maps appended (rooflinecli.gpu.tma.attention_extra_args)
    slower_because: str = ""
    # the math instruction its SASS must hold (a test reads the cubin): FFMA (SIMT), HMMA
    # (mma.sync), HGMMA (wgmma)
    math: str = "FFMA"
    kernels: tuple[Kernel, ...] = ()  # empty: the contract's one kernel, `entry`
    # "scores_fp32": a [B, H, N, N] fp32 buffer passed to every kernel (S and P)
    workspace: str = ""
    reference: bool = False

    @property
    def materializes_scores(self) -> bool:
        return self.workspace == "scores_fp32"

    @property
    def entries(self) -> tuple[str, ...]:
        return tuple(k.entry for k in self.kernels) or (self.entry,)

    @property
    def head_dims(self) -> tuple[int, ...]:
        return tuple(sorted(self.configs))

    # the stage contract (rooflinecli.stages.contract.KernelStage)
    @property
    def kind(self) -> str:
        return "attention"

    @property
    def source(self) -> str:
        return self.file

    @property
    def kernel_dtypes(self) -> tuple[str, ...]:
        return self.dtypes

    @property
    def param_sets(self) -> Mapping[str, Mapping[str, int]]:
        return MappingProxyType({f"d{d}": self.configs[d].params for d in self.head_dims})

    @property
    def tune_space(self) -> Mapping[str, tuple[int, ...]]:
        return MappingProxyType({})  # `roofline tune` tunes GEMM stages

    def refusal_for(self, problem: Any) -> str | None:
        """refuses() of the problem (Shape, dtype)."""
        shape, dtype = problem
        return self.refuses(shape, dtype)

    def launch_for(self, problem: Any, sm_count: int | None = None) -> list[Launch]:
        """launches() of the problem (Shape, dtype): every kernel's, in order."""
        shape, _dtype = problem
        return self.launches(shape)

    def defines(self, dtype: str, head_dim: int) -> dict[str, int]:
        """-D values: the config's params, HEAD_DIM and the element type (elem.cuh)."""
        out = {**self.configs[head_dim].params, "HEAD_DIM": head_dim}
        define = element(dtype).define
        if define:
            out[define] = 1
        return out

    def refuses(self, shape: Shape, dtype: str) -> str | None:
        """Why this stage cannot run the shape and dtype, or None."""
        refusal = self.refusal(shape, dtype)
        return refusal.why if refusal else None

    def refusal(self, shape: Shape, dtype: str) -> Refusal | None:
        """refuses(), with the words a summary of such skips uses."""
        if dtype not in self.dtypes:
            return Refusal(
                f"{self.name} is {'/'.join(self.dtypes)}, not {dtype}",
                "stages",
                f"they are not built for {dtype}",
            )
        if shape.head_dim not in self.configs:
            dims = ", ".join(map(str, self.head_dims))
            return Refusal(
                f"{self.name} is built for head dim {dims}, not {shape.head_dim}",
                "stages",
                f"they are not built for head dim {shape.head_dim}",
            )
        if shape.batch * shape.heads > 65535:
            return Refusal(
                f"B*H = {shape.batch * shape.heads} exceeds the grid's 65,535",
                "stages",
                "B*H exceeds the grid's 65,535",
            )
        if self.materializes_scores and workspace_bytes(self, shape) > MAX_SCORES_BYTES:
            gib = workspace_bytes(self, shape) / 2**30
            most = f"{MAX_SCORES_BYTES / 2**30:.0f} GiB"
            return Refusal(
                f"{self.name} would write a {gib:.1f} GiB score matrix (at most {most})",
                "stages that write the score matrix",
                f"it would be over {most}",
            )
        return None

    def launches(self, shape: Shape) -> list[Launch]:
        """Every kernel launch of one forward pass, in order."""
        cfg = self.configs[shape.head_dim]
        bh, n = shape.batch * shape.heads, shape.seq
        if not self.kernels:
            grid = (-(-n // cfg.block_m), bh, 1)
            return [Launch(self.entry, grid, (cfg.threads, 1, 1), cfg.smem_bytes)]
        out = []
        for k in self.kernels:
            if k.grid == "score_tiles":
                grid = (-(-n // k.cols), -(-n // k.rows), bh)
            else:
                grid = (-(-n // k.rows), bh, 1)
            out.append(Launch(k.entry, grid, (k.block[0], k.block[1], 1), 0))
        return out


# the naive stage refuses shapes whose S would pass this (B2 H16 N8192: 8 GiB)
MAX_SCORES_BYTES = 16 * 2**30


def workspace_bytes(stage: AttentionStage, shape: Shape) -> int:
    if not stage.materializes_scores:
        return 0
    return 4 * shape.batch * shape.heads * shape.seq * shape.seq


def _fused_smem(block_m: int, block_n: int, head_dim: int) -> int:
    """Stage 41's dynamic shared memory (its SMEM_FLOATS): Q and K tiles with rows padded by one
    float, the V tile, the tile's probabilities with rows padded by one, all fp32."""
    return 4 * (
        block_m * (head_dim + 1) + block_n * (head_dim + 1) + block_n * head_dim
        + block_m * (block_n + 1)
    )  # fmt: skip


def _fused_config(
    head_dim: int, block_m: int = 64, block_n: int = 32, threads: int = 256
) -> Config:
    return Config(
        MappingProxyType(
            {"BLOCK_M": block_m, "BLOCK_N": block_n, "THREADS": threads, "MIN_BLOCKS": 2}
        ),
        threads,
        block_m,
        _fused_smem(block_m, block_n, head_dim),
    )


def _fa2_config(
    head_dim: int, block_m: int, block_n: int, warp_m: int, stages: int, **more: int
) -> Config:
    """Stage 42: a warp per WARP_M query rows; a ring of STAGES K and V tiles (BLOCK_N x D
    16-bit each), Q staged through the last one (its SMEM_BYTES formula)."""
    stage = 2 * block_n * head_dim * 2
    q = block_m * head_dim * 2
    q_in_smem = more.get("Q_IN_SMEM", 0)
    smem = stages * stage + (q if q_in_smem else max(0, q - stage))
    params = {"BLOCK_M": block_m, "BLOCK_N": block_n, "WARP_M": warp_m, "STAGES": stages}
    spills = more.pop("spill_allowance_bytes", 0)
    params |= {"MIN_BLOCKS": 1, "Q_IN_SMEM": 0} | more
    return Config(MappingProxyType(params), 32 * block_m // warp_m, block_m, smem, spills)


def _fa3_config(head_dim: int, block_n: int = 128, stages: int = 2) -> Config:
    """Stage 43: a producer and two consumer warpgroups, 128 query rows; Q and a ring of STAGES
    K and V tiles in 16 bits, 1 KiB of alignment slack (its SMEM_BYTES)."""
    smem = 128 * head_dim * 2 + 2 * stages * block_n * head_dim * 2 + 1024
    params = {"BLOCK_N": block_n, "STAGES": stages, "OVERLAP": 1, "PINGPONG": 1, "TMA_O": 0}
    return Config(MappingProxyType(params), 384, 128, smem)


_NAIVE = Config(MappingProxyType({}), 256, 8, 0)  # the launch shapes are per kernel (below)

ATTENTION_STAGES: tuple[AttentionStage, ...] = (
    AttentionStage(
        name="attn_naive",
        what="three kernels, S in memory: S = scale QK^T (fp32), softmax in place, O = PV; "
        "one thread per output element",
        file="40_attn_naive.cu",
        entry="attn_naive_scores",
        dtypes=("fp16", "bf16", "fp32"),
        configs=MappingProxyType({64: _NAIVE, 128: _NAIVE}),
        kernels=(
            Kernel("attn_naive_scores", (16, 16), rows=16, grid="score_tiles", cols=16),
            Kernel("attn_naive_softmax", (32, 8), rows=8),
            Kernel("attn_naive_pv", (64, 4), rows=4),
        ),
        workspace="scores_fp32",
    ),
    AttentionStage(
        name="attn_fused",
        what="FlashAttention-1 style on CUDA cores: 64 query rows per block, K/V tiles of 32 "
        "in shared memory, running max and sum per row, O in registers",
        file="41_attn_fused.cu",
        entry="attn_fused",
        dtypes=("fp16", "bf16", "fp32"),
        configs=MappingProxyType({64: _fused_config(64), 128: _fused_config(128)}),
    ),
    # Stages 42 and 43 were written by other authors against the contract; their configurations
    # here are the ones `bash benchmarks/probes.sh OUTDIR fa2 fa3` measured against the others
    AttentionStage(
        name="attn_fa2_mma",
        what="FlashAttention-2 on mma.sync m16n8k16: Q in registers, K/V streamed by cp.async "
        "through a swizzled ring, warps split over query rows, P kept in registers",
        file="42_attn_fa2_mma.cu",
        entry="attn_fa2_mma",
        dtypes=("fp16", "bf16"),
        min_cc=80,
        math="HMMA",
        configs=MappingProxyType(
            {
                64: _fa2_config(64, 128, 64, 32, 2, MIN_BLOCKS=2),
                # 4 warps of 32 rows with Q in shared memory: a third less ldmatrix traffic per
                # MMA than 8 warps of 16 rows with Q in registers; on the H200 (bf16, B.N =
                # 16384, N 512-16384) 1.09-1.17x of those, 88 bytes spilled (one local load a
                # tile): benchmarks/probes/h200-findings.json, fa2-tiles
                128: _fa2_config(
                    128, 128, 64, 32, 2, MIN_BLOCKS=2, Q_IN_SMEM=1, spill_allowance_bytes=128
                ),
            }
        ),
    ),
    AttentionStage(
        name="attn_wgmma",
        what="FlashAttention-3 style on Hopper: WGMMA + TMA, a producer warpgroup and two "
        "consumers in ping-pong, softmax overlapped with the next GEMM",
        file="43_attn_wgmma.cu",
        entry="attn_wgmma",
        dtypes=("fp16", "bf16"),
        min_cc=90,
        tma=True,
        math="HGMMA",
        # 176-key tiles at D = 128 (FlashAttention-3's): 648.8 against 634.5 TFLOP/s with 128 on
        # the H200 at B2 H16 N8192 bf16 (benchmarks/probes/h200-findings.json, fa3-key-tile)
        configs=MappingProxyType({64: _fa3_config(64), 128: _fa3_config(128, block_n=176)}),
    ),
)


ATTENTION_BY_NAME: dict[str, AttentionStage] = {s.name: s for s in ATTENTION_STAGES}


@dataclass(frozen=True)
class Reference:
    """A PyTorch scaled_dot_product_attention backend timed beside the stages."""

    name: str
    backend: str  # torch.nn.attention.SDPBackend member
    what: str
    dtypes: tuple[str, ...] = ("fp16", "bf16")
    reference: bool = True
    extra: Mapping[str, Any] = field(default_factory=dict)


REFERENCES: tuple[Reference, ...] = (
    Reference(
        "torch_flash",
        "FLASH_ATTENTION",
        "PyTorch scaled_dot_product_attention, flash backend (FlashAttention-2)",
    ),
    Reference(
        "torch_cudnn",
        "CUDNN_ATTENTION",
        "PyTorch scaled_dot_product_attention, cuDNN backend (cuDNN's fused attention)",
    ),
)


def stage_names(dtype: str | None = None) -> list[str]:
    return [s.name for s in ATTENTION_STAGES if dtype is None or dtype in s.dtypes]


def select(names: str | None, dtype: str) -> list[AttentionStage]:
    """--stages a,b (or every attention stage of the dtype)."""
    if names is None or names.strip() in ("", "all"):
        return [s for s in ATTENTION_STAGES if dtype in s.dtypes]
    chosen: list[AttentionStage] = []
    for raw in names.split(","):
        name = raw.strip()
        if not name:
            raise RooflineError(f"--stages: empty item in {names!r}")
        if name not in ATTENTION_BY_NAME:
            raise RooflineError(
                f"unknown attention stage {name!r}; known: {', '.join(stage_names())}"
            )
        stage = ATTENTION_BY_NAME[name]
        if dtype not in stage.dtypes:
            raise RooflineError(
                f"stage {name} is {'/'.join(stage.dtypes)}, not {dtype} (use --dtype)"
            )
        if stage not in chosen:
            chosen.append(stage)
    return chosen


def compile_stage(
    stage: AttentionStage,
    arch: str,
    dtype: str,
    head_dim: int,
    params: Mapping[str, int] | None = None,
) -> Any:
    """NVRTC to a cubin (cached) holding every kernel of the stage, for one dtype and head dim;
    `params` overrides some of the config's (a variant of its schedule: the tests' and tuning's;
    an override equal to the config's value builds, and finds in the cache, the stage itself)."""
    from rooflinecli.paths import data_dir
    from rooflinecli.stages import compiler

    if head_dim not in stage.configs:
        raise RooflineError(f"stage {stage.name} has no config for head dim {head_dim}")
    path = data_dir("kernels") / stage.file
    try:
        src = path.read_text()
    except OSError as exc:
        raise RooflineError(f"cannot read kernel source {path}: {exc.strerror}") from None
    label = f"{stage.name}-{dtype}-d{head_dim}"
    defines: dict[str, int | str] = {**stage.defines(dtype, head_dim), **(params or {})}
    return compiler.compile_source(src, label, stage.entry, arch, defines)
