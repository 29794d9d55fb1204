"""The stage registry: the one list of GEMM stages; CLI choices, docs/stages.md and tests read it.

A stage is one kernels/NN_technique.cu plus one entry here: its entry point, dtype, tile
parameters (passed to NVRTC as -DNAME=value compile-time constants), launch geometry and the
arithmetic intensity it achieves by construction. Every kernel honours one contract:

    extern "C" __global__ void ENTRY(int M, int N, int K, float alpha,
                                     const T* A, const T* B, float beta, T* C)

row-major A (MxK), B (KxN), C (MxN); beta == 0 never reads C. Pure Python: no CuPy.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from types import MappingProxyType
from typing import Any, NamedTuple

from rooflinecli.core import waves
from rooflinecli.core.model import DTYPE_BYTES, thread_tile_intensity
from rooflinecli.errors import RooflineError
from rooflinecli.stages import fp8

# Instructions that only some NVRTC targets have, and the stage sources that use them. NVRTC 13
# refuses `wgmma.fence` for sm_100a and sm_120 and `setmaxnreg.dec` for sm_120; a GPU of compute
# capability 9.0 or more is not enough (a B200 is 10.0, an RTX 5090 12.0). A matrix test compiles
# every Tensor Core stage for sm_100a and sm_120 and holds this table to what NVRTC does.
ARCH_ONLY: dict[str, tuple[str, ...]] = {
    "wgmma": ("sm_90a",),
    "setmaxnreg": ("sm_90a", "sm_100a"),
}
ARCH_ONLY_BY_FILE: dict[str, tuple[str, ...]] = {
    "23_mma_tma_ws.cu": ("setmaxnreg",),
    "24_wgmma_tma.cu": ("wgmma",),
    "33_wgmma_swapab_ld.cu": ("wgmma",),
    **{
        f: ("wgmma", "setmaxnreg")
        for f in (
            "25_wgmma_ws.cu", "26_wgmma_persistent.cu", "27_wgmma_cluster.cu",
            "28_wgmma_stagger.cu", "29_wgmma_streamk.cu", "30_wgmma_stmatrix.cu",
            "43_attn_wgmma.cu",
        )
    },
}  # fmt: skip


def cannot_run(stage: Any, arch: str) -> str | None:
    """Why a stage (GEMM or attention) cannot run on a GPU whose NVRTC target is `arch` (sm_89,
    sm_90a, sm_100a, ...), or None: its compute capability is too low, or it uses an instruction
    the target lacks. Every runner and the dry run skip it with this reason; the rest run."""
    if getattr(stage, "reference", False):
        return None
    digits = arch.removeprefix("sm_").rstrip("a")
    if not digits.isdigit():
        raise RooflineError(f"bad --arch {arch!r}: expected e.g. sm_80, sm_90a")
    if int(digits) < stage.min_cc:
        return f"needs compute capability {stage.min_cc / 10:.1f}"
    for instr in ARCH_ONLY_BY_FILE.get(str(stage.file or ""), ()):
        targets = ARCH_ONLY[instr]
        if arch not in targets:
            return f"uses {instr}, which only {' and '.join(targets)} has (not {arch})"
    return None


class Refusal(NamedTuple):
    """Why a stage cannot run a shape: in full (`why`, what a skipped record says), and in the
    words a summary of many such skips uses: what the stages are and why they were left out
    ("decode stages", "they run at M = 1..64")."""

    why: str
    kind: str
    because: str


@dataclass(frozen=True)
class Stage:
    """One rung of the ladder: a kernels/ file's entry point with its parameters and geometry
    (or, reference=True, the vendor library it is measured against)."""

    name: str
    what: str  # one line: the technique this stage demonstrates
    dtype: str
    chapter: int  # the chapter of the column it belongs to (the stage table shows it)
    # the math instruction it runs on, which its SASS must hold (a test reads the cubin) and
    # which compute roof places it: FFMA (SIMT, CUDA cores), HMMA (mma.sync, warp-level Tensor
    # Cores), HGMMA (wgmma, warpgroup Tensor Cores), QGMMA (8-bit wgmma: FP8), or "library" for
    # the vendor reference
    math: str
    file: str | None = None  # kernels/ file; None for the library reference
    entry: str | None = None  # extern "C" kernel name in that file
    params: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    threads: tuple[int, int] = (16, 16)  # blockDim (x, y)
    tile: tuple[int, int] = (16, 16)  # C rows x cols one block computes
    x_is_row: bool = False  # grid.x / threadIdx.x walk rows of C instead of columns
    min_cc: int = 50  # lowest compute capability (major*10 + minor) it runs on
    smem_bytes: int = 0  # dynamic shared memory per block
    ai_global: float | None = None  # FLOP per byte requested from global memory, by construction
    ai_shared: float | None = None  # FLOP per byte requested from shared memory, by construction
    reference: bool = False  # the vendor library: the yardstick, not a stage of ours
    # why this stage can be slower than the one listed before it (shown under the table)
    slower_because: str = ""
    # every dtype the source builds for (-DELEM_BF16=1 for bf16; -DELEM_FP32=1 for fp32 when the
    # source also builds a 16-bit type)
    dtypes: tuple[str, ...] = ()
    needs_multiple: int = 1  # the dimensions in multiple_of must be multiples of this (1: any)
    multiple_of: str = "MNK"  # which of M, N, K needs_multiple binds; other shapes are refused
    b_layout: str = "kn"  # "kn": B row-major KxN (the contract); "nk": B given as its transpose
    # persistent kernels launch at most this many blocks per SM and loop over the output tiles
    persistent_blocks_per_sm: int = 0
    # ... and at most this many blocks in all (0: no cap; e.g. whole clusters that fit the GPCs)
    persistent_max_blocks: int = 0
    # blocks per thread-block cluster on consecutive row tiles: along grid y, whose rows are
    # rounded up to a multiple; a persistent grid (x only) is a whole number of clusters (the
    # kernel's __cluster_dims__ needs whole clusters)
    cluster_rows: int = 1
    # a persistent grid of the whole cap even when there are fewer tiles (stream-K splits them)
    persistent_fill: bool = False
    # ... of a whole number of blocks per tile instead, where the tiles fit the cap: tiles x
    # (cap // tiles) blocks, so the line's equal ranges cut each tile alike and no block's
    # range runs from one tile into the next
    persistent_even: bool = False
    # blocks along grid z per output tile (split-K: each takes one run of K tiles)
    grid_z: int = 1
    # bytes of global scratch the kernel takes as one more argument (after any tensor maps),
    # given (M, N, K, blocks in the grid): the runner allocates it zeroed once, and the kernel
    # leaves it as it found it (e.g. stream-K's partial tiles and flags); None: no workspace
    workspace_bytes: Callable[[int, int, int, int], int] | None = field(default=None, compare=False)
    # per-architecture overrides of params (e.g. {"sm_80": {"BN": 128}}): data, not code
    arch_params: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    # values `roofline tune` tries per parameter; combinations the kernel's static_asserts
    # reject, or that spill, are skipped
    tune_space: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    # the rows of C (M) the stage is built for, or None for any: a decode stage streams B once
    # per BM rows of C, so outside its range it refuses the shape (it stays correct for any M)
    m_range: tuple[int, int] | None = None
    # a stage that runs the same tiles at any row pitch, and the params it takes over from this
    # one: where this stage refuses a shape for its pitch (N or K no multiple of needs_multiple),
    # `--stages best` runs that one in its place (rooflinecli/stages/dispatch.py)
    any_pitch: str = ""
    any_pitch_params: tuple[str, ...] = ()
    # the dimensions (of "NK") that must be multiples of 16 bytes of the element for its 16-byte
    # loads of B: otherwise it streams B on scalar loads, correct but slow, and `--stages best`
    # runs its any-pitch twin in its place
    vector_rows: str = ""
    # launched with programmatic dependent launch (cuLaunchKernelEx, programmatic stream
    # serialization): it may start while the kernel before it on the stream drains
    pdl: bool = False
    # rebuilds the entry from other params (tile, threads, intensities follow the params)
    rebuild: Callable[[Mapping[str, int]], Stage] | None = field(default=None, compare=False)
    # a stage that chooses its tile width per shape: BN -> the params that go with it (its ring
    # depth); the run launches the width whose tiles do the most work on the SMs (for_shape)
    widths: Mapping[int, Mapping[str, int]] = field(default_factory=dict)

    def with_params(self, overrides: Mapping[str, int]) -> Stage:
        """The same stage with some parameters changed; geometry recomputed."""
        if not overrides:
            return self
        unknown = set(overrides) - set(self.params)
        if unknown:
            raise RooflineError(
                f"stage {self.name} has no parameter(s) {', '.join(sorted(unknown))}"
            )
        merged = {**self.params, **overrides}
        if self.rebuild is None:
            if merged != dict(self.params):  # its threads and tile would not follow them
                fixed = ", ".join(f"{k}={v}" for k, v in self.params.items())
                raise RooflineError(
                    f"stage {self.name} runs with fixed parameters ({fixed}): its launch does "
                    "not follow other values"
                )
            return self
        new = self.rebuild(merged)
        return replace(
            new, arch_params=self.arch_params, tune_space=self.tune_space, widths=self.widths
        )

    @property
    def build_key(self) -> tuple[str, tuple[tuple[str, int], ...]]:
        """What one compiled kernel is: the stage's name and its parameters, in order."""
        return self.name, tuple(sorted(self.params.items()))

    @property
    def width_keys(self) -> frozenset[str]:
        """The params the shape chooses (BN and what goes with it), none for a fixed width."""
        if not self.widths:
            return frozenset()
        return frozenset({"BN", *(k for extra in self.widths.values() for k in extra)})

    def for_shape(self, m: int, n: int, sm_count: int) -> Stage:
        """The stage as it runs an M x N output on `sm_count` SMs: a stage with `widths` takes
        the tile width whose tiles do the most work on its blocks (core/waves.fill_width: wave
        fill weighed by the tile's intensity; a persistent grid's blocks, else the SMs), its name
        unchanged and its record's params the ones it launched; any other stage as it is."""
        if not self.widths:
            return self
        slots = sm_count * max(self.persistent_blocks_per_sm, 1)
        if self.persistent_max_blocks:
            slots = min(slots, self.persistent_max_blocks)
        widths = tuple(sorted(self.widths))
        bn = waves.fill_width(m, n, self.tile[0], widths, slots, self.cluster_rows)
        change = {"BN": bn, **self.widths[bn]}
        if all(self.params.get(k) == v for k, v in change.items()):
            return self
        return replace(self.with_params(change), name=self.name)

    def for_arch(self, arch: str) -> Stage:
        """Parameters for an NVRTC target: sm_90a takes sm_90's entry when it has none."""
        key = arch if arch in self.arch_params else arch.rstrip("a")
        return self.with_params(self.arch_params.get(key, {}))

    def variants(self) -> Iterator[Stage]:
        """Every combination of tune_space values (the registry's params first)."""
        yield self
        keys = list(self.tune_space)
        for combo in itertools.product(*(self.tune_space[k] for k in keys)):
            change = dict(zip(keys, combo, strict=True))
            if all(self.params.get(k) == v for k, v in change.items()):
                continue
            try:
                yield self.with_params(change)
            except (KeyError, ValueError, ZeroDivisionError, RooflineError):
                continue  # a combination the geometry cannot express

    @property
    def sass_claims(self) -> tuple[str, ...]:
        """The math instruction its SASS must hold (`math`); none for the library reference.
        A test checks the cubin."""
        if self.reference:
            return ()
        return (self.math,)

    @property
    def all_dtypes(self) -> tuple[str, ...]:
        return self.dtypes or (self.dtype,)

    # the stage contract (rooflinecli.stages.contract.KernelStage)
    @property
    def kind(self) -> str:
        return "fp8" if self.file in fp8.FILES else "gemm"

    @property
    def source(self) -> str:
        return self.file or ""

    @property
    def kernel_dtypes(self) -> tuple[str, ...]:
        return self.all_dtypes

    @property
    def param_sets(self) -> Mapping[str, Mapping[str, int]]:
        return MappingProxyType({"": self.params})

    def refusal_for(self, problem: Any) -> str | None:
        """refuses() of the problem (M, N, K)."""
        m, n, k = problem
        return self.refuses(m, n, k)

    def launch_for(
        self, problem: Any, sm_count: int | None = None
    ) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        """launch() of the problem (M, N, K)."""
        m, n, _k = problem
        return self.launch(m, n, sm_count)

    @property
    def ai_instruction(self) -> float | None:
        """Intensity by load instruction at the level nearest the registers (the seed's 0.25)."""
        return self.ai_shared if self.ai_shared is not None else self.ai_global

    def launch(
        self, m: int, n: int, sm_count: int | None = None
    ) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        """(grid, block, dynamic shared bytes) for an MxN output. A persistent stage gets
        min(tiles, blocks per SM x SMs) blocks along x and walks the tiles itself."""
        rows, cols = self.tile
        gm, gn = -(-m // rows), -(-n // cols)
        if self.persistent_blocks_per_sm:
            if not sm_count:
                raise RooflineError(f"stage {self.name} is persistent: it needs the SM count")
            c = self.cluster_rows  # a pair's second row tile past M still runs (stores nothing)
            cap = self.persistent_blocks_per_sm * sm_count
            if self.persistent_max_blocks:
                cap = min(cap, self.persistent_max_blocks)
            tiles = -(-gm // c) * c * gn
            blocks = waves.persistent_blocks(
                tiles, cap, c, self.persistent_fill, self.persistent_even
            )
            return (blocks, 1, 1), (self.threads[0], self.threads[1], 1), self.smem_bytes
        gm = -(-gm // self.cluster_rows) * self.cluster_rows
        grid = (gm, gn, self.grid_z) if self.x_is_row else (gn, gm, self.grid_z)
        if grid[1] > 65535:
            raise RooflineError(f"stage {self.name}: output too large for its grid ({m}x{n})")
        return grid, (self.threads[0], self.threads[1], 1), self.smem_bytes

    def defines(self, dtype: str | None = None) -> list[str]:
        # bf16 out: the bf16 stages, and the FP8 stages' output (e4m3 in; rooflinecli/gpu/fp8.py
        # builds the other formats and outputs)
        extra = ["-DELEM_BF16=1"] if dtype == "bf16" or self.dtype == "fp8" else []
        if dtype == "fp32" and len(self.all_dtypes) > 1:  # one source for fp32 and 16-bit types
            extra = ["-DELEM_FP32=1"]
        return [f"-D{k}={v}" for k, v in self.params.items()] + extra

    def scalar_at(self, n: int, k: int, dtype: str) -> bool:
        """Whether this stage falls back to scalar loads at this pitch (vector_rows)."""
        per16 = 16 // DTYPE_BYTES[dtype]
        return any({"N": n, "K": k}[d] % per16 != 0 for d in self.vector_rows)

    def refuses(self, m: int, n: int, k: int) -> str | None:
        """Why this stage cannot run the shape, or None."""
        refusal = self.refusal(m, n, k)
        return refusal.why if refusal else None

    def refusal(self, m: int, n: int, k: int) -> Refusal | None:
        """refuses(), with the words a summary of such skips uses."""
        q = self.needs_multiple
        dims = {"M": m, "N": n, "K": k}
        if q > 1 and any(dims[d] % q for d in self.multiple_of):
            which = ", ".join(self.multiple_of)
            return Refusal(
                f"{self.name} needs {which} multiples of {q} (got {m}x{n}x{k})",
                "stages",
                f"they need {which} multiples of {q}",
            )
        if self.m_range is not None and not self.m_range[0] <= m <= self.m_range[1]:
            lo, hi = self.m_range
            return Refusal(
                f"{self.name} is a decode stage for M = {lo}..{hi} (got M = {m}): it streams B "
                "once per few rows of C; a GEMM stage suits this shape",
                "decode stages",
                f"they run at M = {lo}..{hi}",
            )
        return None


def _thread_tile(tm: int, tn: int, slower_because: str = "") -> Stage:
    return Stage(
        name=f"thread_tile_{tm}x{tn}",
        what=f"each thread computes a {tm}x{tn} tile of C: {tm + tn} loads feed {tm * tn} FMAs",
        dtype="fp32",
        chapter=10,
        math="FFMA",
        file="03_thread_tile.cu",
        entry="gemm_thread_tile",
        params=MappingProxyType({"TM": tm, "TN": tn}),
        tile=(16 * tm, 16 * tn),
        ai_global=thread_tile_intensity(tm, tn, DTYPE_BYTES["fp32"]),
        slower_because=slower_because,
    )


_FP32 = DTYPE_BYTES["fp32"]


def _simt(
    name: str,
    what: str,
    file: str,
    entry: str,
    params: dict[str, int],
    per_thread: tuple[int, int],
    threads: tuple[int, int] | None = None,
    slower_because: str = "",
) -> Stage:
    """A chapter-11 SIMT SGEMM stage: BM x BN block tile, per_thread = results per thread (rows,
    columns); threads defaults to (NUM_THREADS, 1). By construction, per k the block loads
    BM + BN floats from global memory for BM*BN FMAs, and a thread loads rows + columns floats
    from shared memory for rows*columns FMAs."""
    bm, bn = params["BM"], params["BN"]
    return Stage(
        name=name,
        what=what,
        dtype="fp32",
        chapter=11,
        math="FFMA",
        file=file,
        entry=entry,
        params=MappingProxyType(dict(params)),
        threads=threads if threads is not None else (params["NUM_THREADS"], 1),
        tile=(bm, bn),
        ai_global=thread_tile_intensity(bm, bn, _FP32),
        ai_shared=thread_tile_intensity(per_thread[0], per_thread[1], _FP32),
        slower_because=slower_because,
    )


def _warptile(name: str, what: str, file: str, entry: str, p: dict[str, int]) -> Stage:
    """Stages 08-09: a warp's 32 lanes x WMITER x WNITER sub-tiles of TM x TN cover WM x WN."""
    p = {**p, "NUM_THREADS": (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32}  # a warp per tile
    wmiter = (p["WM"] * p["WN"]) // (32 * p["TM"] * p["TN"] * p["WNITER"])
    if wmiter < 1:
        raise ValueError("a warp tile smaller than its 32 lanes' sub-tiles")
    per_thread = (wmiter * p["TM"], p["WNITER"] * p["TN"])
    stage = _simt(name, what, file, entry, p, per_thread=per_thread)
    return replace(stage, rebuild=lambda q: _warptile(name, what, file, entry, dict(q)))


def _multistage(p: dict[str, int]) -> Stage:
    """Stage 10: stage 09's warp tiling fed by a STAGES-deep cp.async pipeline in dynamic shared
    memory: per slot a transposed A tile (BK x (BM + 4) floats) and a B tile (BK x BN)."""
    stage = _warptile(
        "multistage",
        "warp tiling fed by a cp.async pipeline: STAGES K tiles in flight in dynamic shared "
        "memory, double-buffered fragments, 1 barrier/tile",
        "10_multistage.cu",
        "gemm_multistage",
        p,
    )
    smem = p["STAGES"] * p["BK"] * (p["BM"] + 4 + p["BN"]) * _FP32
    return replace(stage, smem_bytes=smem, min_cc=80, rebuild=lambda q: _multistage(dict(q)))


def _spread_copies(p: dict[str, int]) -> Stage:
    """Stage 11: stage 10's pipeline and tiles, its copies spread one per k-step and a grouped
    block order (GROUP_M rows of tiles per group); the same slots in shared memory."""
    # the hot loop's SASS for the registry's tiles (NVRTC 13.5, sm_90a; the kernel's header)
    sass = " (2048 FFMA of 2224 instructions)" if (p["BK"], p["COPY_STEP"]) == (16, 4) else ""
    stage = _warptile(
        "spread_copies",
        f"stage 10's cp.async copies spread over the k-steps ({p['COPY_STEP']} per step, not a "
        f"burst after the barrier), an interior loop without edge code{sass}, grouped block "
        "order",
        "11_spread_copies.cu",
        "gemm_spread_copies",
        p,
    )
    smem = p["STAGES"] * p["BK"] * (p["BM"] + 4 + p["BN"]) * _FP32
    return replace(stage, smem_bytes=smem, min_cc=80, rebuild=lambda q: _spread_copies(dict(q)))


def _serpentine_ffma(p: dict[str, int]) -> Stage:
    """Stage 12: stage 11's loop with its FFMAs in serpentine order (SERPENTINE=1: odd rows of
    the thread tile walk their columns backwards, so the B operand repeats at each turn and
    ptxas marks it .reuse), in 128 x 128 blocks of 4 warps, MIN_BLOCKS per SM. PAIR_LANES=1
    pairs the lanes for the shared-memory return path (n, n^1 share A, n, n^2 share B)."""
    pairing = ", lanes paired for 2-cycle LDS.128" if p["PAIR_LANES"] else ""
    stage = _warptile(
        "serpentine_ffma",
        "stage 11's loop with its FFMAs in serpentine order (odd rows walk back, so each turn "
        "reuses a B register: 91% of the loop's FFMAs flag a .reuse operand, stage 11's 78%), in "
        f"{p['BM']}x{p['BN']} blocks, {p['MIN_BLOCKS']} per SM, {p['STAGES']} stages{pairing}",
        "12_serpentine_ffma.cu",
        "gemm_serpentine_ffma",
        p,
    )
    smem = p["STAGES"] * p["BK"] * (p["BM"] + 4 + p["BN"]) * _FP32
    return replace(stage, smem_bytes=smem, min_cc=80, rebuild=lambda q: _serpentine_ffma(dict(q)))


def _simt_streamk_workspace(bm: int, bn: int) -> Callable[[int, int, int, int], int]:
    """Stage 13's scratch: per block one fp32 BM x BN partial tile, then one 4-byte flag per
    block; only the stream-K workers whose range starts inside a tile use theirs."""

    def nbytes(m: int, n: int, k: int, blocks: int) -> int:
        return blocks * (bm * bn * 4 + 4)

    return nbytes


# stage 12's registry parameters, which stage 13 starts from
_STAGE12: Mapping[str, int] = MappingProxyType(
    {
        "BM": 128,
        "BN": 128,
        "BK": 16,
        "WM": 64,
        "WN": 64,
        "WNITER": 2,
        "TM": 4,
        "TN": 4,
        "NUM_THREADS": 128,
        "STAGES": 3,
        "COPY_STEP": 2,
        "GROUP_M": 8,
        "MIN_BLOCKS": 2,
        "PAIR_LANES": 0,
        "SERPENTINE": 1,
    }
)


def _simt_streamk(p: dict[str, int]) -> Stage:
    """Stage 13: stage 12's loop and tiles on a persistent grid of exactly the resident blocks
    (MIN_BLOCKS per SM); the tiles past the last full wave (SK_WAVES - 1 waves more) are cut
    along K over every block (STREAMK=1) and summed through a workspace with per-worker flags."""
    split = (
        f"the tiles past the last full wave{' and one wave more' if p['SK_WAVES'] == 2 else ''}"
        if p["SK_WAVES"] <= 2
        else f"the last {p['SK_WAVES']} waves' tiles"
    )
    what = (
        f"stage 12 on a persistent grid ({p['MIN_BLOCKS']} blocks per SM) with a stream-K tail: "
        f"{split} are one run of K tiles cut evenly over every block; cut tiles are summed in "
        "fp32 through a workspace (per-worker flags), so no SM idles in the last wave"
        if p["STREAMK"]
        else f"stage 12 on a persistent grid ({p['MIN_BLOCKS']} blocks per SM), whole tiles only "
        "(STREAMK=0: the control with a ragged last wave)"
    )
    stage = _warptile(
        "simt_streamk", what, "13_serpentine_streamk.cu", "gemm_serpentine_streamk", p
    )
    smem = p["STAGES"] * p["BK"] * (p["BM"] + 4 + p["BN"]) * _FP32
    return replace(
        stage,
        smem_bytes=smem,
        min_cc=80,
        persistent_blocks_per_sm=p["MIN_BLOCKS"],
        persistent_fill=True,
        workspace_bytes=_simt_streamk_workspace(p["BM"], p["BN"]),
        rebuild=lambda q: _simt_streamk(dict(q)),
        # measured (gemm-fp32-{4096,8192}-simtsk.json, each beside cuBLAS in one run)
        slower_because="the persistent grid costs more than the ragged last wave it removes: "
        "whole tiles only (STREAMK=0) it is already 3% slower than stage 12 (96.2% of cuBLAS "
        "at 4096^3 against 99.3%; 254 registers, the tile schedule walked in shared memory), "
        "and cutting the tail along K takes another 2% (94.2%)",
    )


def _tensor_core(
    name: str,
    what: str,
    file: str,
    params: dict[str, int],
    threads: tuple[int, int],
    shared_tile: tuple[int, int],
    **extra: Any,
) -> Stage:
    """A chapter-12/13 Tensor Core stage: FP16 and BF16 from one source, a BM x BN block tile.
    Without TMA in params: mma.sync (HMMA, sm_80+), cp.async loads. With TMA: tiles come
    through tensor maps (sm_90), and the stage is a chapter-13 WGMMA one (HGMMA, sm_90a) unless
    `extra` says math="HMMA" (stage 23: TMA feeding mma.sync). Every one reads B as the contract
    gives it (K x N row-major, b_layout "kn"). Per k a block loads BM + BN 2-byte elements for
    BM*BN MACs; `shared_tile` is the warp's (or warpgroup's) tile fed from shared memory."""
    tma = "TMA" in params
    fields: dict[str, Any] = {
        "dtype": "fp16",
        "dtypes": ("fp16", "bf16"),
        "chapter": 13 if tma else 12,
        "math": "HGMMA" if tma else "HMMA",
        "min_cc": 90 if tma else 80,
        # TMA row strides are whole 16-byte units: A's rows are K long, B's and C's N; M is free
        "needs_multiple": 8 if tma else 1,
        "multiple_of": "NK" if tma else "MNK",
        "b_layout": "kn",
        **extra,
    }
    return Stage(
        name=name,
        what=what,
        file=file,
        entry=f"gemm_{name}",
        params=MappingProxyType(dict(params)),
        threads=threads,
        tile=(params["BM"], params["BN"]),
        ai_global=thread_tile_intensity(params["BM"], params["BN"], DTYPE_BYTES["fp16"]),
        ai_shared=thread_tile_intensity(*shared_tile, DTYPE_BYTES["fp16"]),
        **fields,
    )


def _mma_multistage(p: dict[str, int]) -> Stage:
    """Stage 22: a warp per WM x WN tile, STAGES K tiles of BM x BK (A) and BK x BN (B) in
    dynamic shared memory; threads and shared memory follow the params (`roofline tune`)."""
    warps = (p["BM"] // p["WM"]) * (p["BN"] // p["WN"])
    stage = _tensor_core(
        "mma_multistage",
        f"cp.async {p['STAGES']}-stage pipeline, {p['BM']}x{p['BN']} block, {warps} warps of "
        f"{p['WM']}x{p['WN']}, grouped block order",
        "22_mma_multistage.cu",
        p,
        threads=(warps * 32, 1),
        shared_tile=(p["WM"], p["WN"]),
        smem_bytes=p["STAGES"] * (p["BM"] * p["BK"] + p["BK"] * p["BN"]) * 2,
        tune_space=MappingProxyType(
            {"BM": (128, 256), "BN": (128, 256), "BK": (32, 64), "STAGES": (3, 4, 5)}
        ),
    )
    return replace(stage, rebuild=lambda q: _mma_multistage(dict(q)))


def _mma_tma_ws(p: dict[str, int]) -> Stage:
    """Stage 23: stage 22's warp tiles fed by TMA from a producer warpgroup; consumers come in
    warpgroups of 4 warps; a ring of STAGES (BM + BN) x BK tiles, 1 KiB of alignment slack."""
    consumers = (p["BM"] // p["WM"]) * (p["BN"] // p["WN"])
    stage = _tensor_core(
        "mma_tma_ws",
        f"mma.sync fed by TMA: a producer warpgroup, {consumers} consumer warps of "
        f"{p['WM']}x{p['WN']}, an mbarrier ring, no block barrier",
        "23_mma_tma_ws.cu",
        p,
        threads=(32 * consumers + 128, 1),
        shared_tile=(p["WM"], p["WN"]),
        smem_bytes=p["STAGES"] * (p["BM"] + p["BN"]) * p["BK"] * 2 + 1024,
        chapter=12,
        math="HMMA",  # mma.sync; TMA makes it sm_90 only
        tune_space=MappingProxyType(
            {
                "BM": (128, 256),
                "BN": (128, 256),
                "STAGES": (3, 4),
                "TMA_C": (0, 1),
                "CLUSTER_M": (1, 2),
            }
        ),
    )
    return replace(
        stage, rebuild=lambda q: _mma_tma_ws(dict(q)), cluster_rows=p.get("CLUSTER_M", 1)
    )


def _split_k_workspace(bm: int, bn: int, split: int) -> Callable[[int, int, int, int], int]:
    """Stage 24's split-K scratch: per output tile two 4-byte counters (the runs' tickets and
    the slots written; padded to 16 bytes in all), then SPLIT_K - 1 fp32 slots of BM x BN."""

    def nbytes(m: int, n: int, k: int, blocks: int) -> int:
        tiles = blocks // split
        return 4 * ((2 * tiles + 3) & ~3) + (split - 1) * tiles * bm * bn * 4

    return nbytes


def _wgmma_tma(p: dict[str, int]) -> Stage:
    """Stage 24: BM / 64 warpgroups (BM 64 or 128) on a BM x 128 tile, a ring of STAGES tiles
    (1 KiB of alignment slack); SPLIT_K > 1 cuts K into that many runs along grid z, their fp32
    sums met in a workspace (few output tiles: 1000x1016 is 64 of 128 x 128 on 132 SMs)."""
    split = p.get("SPLIT_K", 1)
    what = "WGMMA m64n128k16 (HGMMA) on 128B-swizzled tiles loaded by TMA onto mbarriers"
    if p["BM"] != 128 or split != 1:
        what += f", {p['BM']}x{p['BN']} tiles" + (f", K split {split} ways" if split > 1 else "")
    stage = _tensor_core(
        "wgmma_tma",
        what,
        "24_wgmma_tma.cu",
        p,
        threads=(p["BM"] // 64 * 128, 1),  # a warpgroup per 64 rows
        shared_tile=(64, p["BN"]),
        smem_bytes=p["STAGES"] * (p["BM"] + p["BN"]) * p["BK"] * 2 + 1024,
        grid_z=split,
        workspace_bytes=_split_k_workspace(p["BM"], p["BN"], split) if split > 1 else None,
        # few tiles: halve them (BM 64), cut K (SPLIT_K), or fit two blocks an SM (3 stages)
        tune_space=MappingProxyType({"BM": (128, 64), "SPLIT_K": (1, 2, 3), "STAGES": (4, 3)}),
    )
    return replace(stage, rebuild=lambda q: _wgmma_tma(dict(q)))


def _persistent_smem(p: Mapping[str, int]) -> int:
    """Shared memory of the persistent WGMMA stages (26-29): the ring of STAGES (BM + BN) x BK
    two-byte tiles, two 64x64 staging buffers per consumer for the TMA store, 1 KiB alignment."""
    return p["STAGES"] * (p["BM"] + p["BN"]) * p["BK"] * 2 + 2 * 2 * 64 * 64 * 2 + 1024


def _wgmma_persistent(p: dict[str, int]) -> Stage:
    """Stage 26: one block per SM walks the BM x BN tiles (BN 256, or 128: m64n128k16, twice the
    tiles where 128 x 256 ones leave SMs idle); shared memory follows BN and STAGES."""
    stage = _tensor_core(
        "wgmma_persistent",
        f"persistent: one block per SM walks the {p['BM']}x{p['BN']} tiles, the ring runs on "
        "across tiles, TMA-store epilogue",
        "26_wgmma_persistent.cu",
        p,
        threads=(3 * 128, 1),  # producer + 2 consumer warpgroups
        shared_tile=(64, p["BN"]),
        smem_bytes=_persistent_smem(p),
        persistent_blocks_per_sm=1,
        tune_space=MappingProxyType(
            {"GROUP_M": (8, 16), "TMA_C": (0, 1), "BN": (256, 128), "STAGES": (4, 6)}
        ),
    )
    return replace(stage, rebuild=lambda q: _wgmma_persistent(dict(q)))


def _wgmma_persistent_fill(p: dict[str, int]) -> Stage:
    """Stage 26 taking its tile width from the shape (Stage.for_shape): at 512 x 12288 its
    128 x 192 tiles make 256 in 1.94 waves where 128 x 256 ones make 192 in 1.45."""
    return replace(
        _wgmma_persistent(p),
        name="wgmma_persistent_fill",
        what="stage 26 taking its tile width from the shape: of BN = 128, 192 and 256, the one "
        "whose tiles do the most work on the SMs, wave fill weighed by the tile's intensity "
        "(DeepGEMM's choice of BLOCK_N), so that no class of shapes is held to one width",
        widths=fp8.TMA_C_WIDTHS,  # the TMA-store epilogue's widths and rings
        tune_space=MappingProxyType({"GROUP_M": (8, 16), "TMA_C": (0, 1)}),  # not the width
        rebuild=lambda q: _wgmma_persistent_fill(dict(q)),
    )


def _wgmma_cluster(p: dict[str, int]) -> Stage:
    """Stage 27: stage 26 with pairs of blocks (CLUSTER_M=2) on consecutive row tiles sharing
    B through TMA multicast; the persistent grid is at most MAX_BLOCKS blocks (0: one per SM)."""
    pair = p["CLUSTER_M"] > 1
    a_kib, b_kib = p["BM"] * p["BK"] * 2 // 1024, p["BN"] * p["BK"] * 2 // 1024  # per K step
    stage = _tensor_core(
        "wgmma_cluster",
        "2x1 clusters: a pair of persistent blocks on row tiles 2i, 2i+1 loads half of B each "
        f"and the TMA multicasts it to both (L2 sends {a_kib + b_kib // 2} KiB per K step, not "
        f"{a_kib + b_kib})"
        if pair
        else "stage 26 on a capped persistent grid (CLUSTER_M=1: no multicast)",
        "27_wgmma_cluster.cu",
        p,
        threads=(3 * 128, 1),  # producer + 2 consumer warpgroups
        shared_tile=(64, p["BN"]),
        smem_bytes=_persistent_smem(p),
        persistent_blocks_per_sm=1,
        persistent_max_blocks=p["MAX_BLOCKS"],
        cluster_rows=p["CLUSTER_M"],
        # one GPU call tries the pair against no pair, on 128 blocks (fast.cu's grid) or 132
        tune_space=MappingProxyType({"CLUSTER_M": (1, 2), "MAX_BLOCKS": (128, 132)}),
    )
    return replace(stage, rebuild=lambda q: _wgmma_cluster(dict(q)))


def _wgmma_stagger(p: dict[str, int]) -> Stage:
    """Stage 28: stage 27 with consumer warpgroup 1 LAG K slices behind consumer 0, so each
    one's epilogue runs while the other issues WGMMAs."""
    stage = replace(
        _wgmma_cluster({k: v for k, v in p.items() if k != "LAG"}),
        name="wgmma_stagger",
        what=f"stage 27 with the consumers {p['LAG']} K slices apart: one's epilogue overlaps "
        "the other's WGMMAs, which then have the tensor cores to themselves",
        file="28_wgmma_stagger.cu",
        entry="gemm_wgmma_stagger",
        params=MappingProxyType(dict(p)),
        tune_space=MappingProxyType({"LAG": (0, 1, 2, 3), "CLUSTER_M": (1, 2), "BN": (256, 128)}),
    )
    return replace(stage, rebuild=lambda q: _wgmma_stagger(dict(q)))


def _wgmma_stmatrix(p: dict[str, int]) -> Stage:
    """Stage 30: stage 28 whose consumers stage their whole 64 x BN block of C at once with
    stmatrix (four 64-column buffers each) and hand it to the TMA store in one group; the ring
    drops to STAGES=3 to make room, and a consumer frees each slot as soon as its WGMMAs are
    done (IN_FLIGHT=0), so the producer still has two slots to fill ahead."""
    stage = replace(
        _wgmma_stagger(p),
        name="wgmma_stmatrix",
        what="stage 28 with a whole-tile epilogue: stmatrix stages each consumer's 64x"
        f"{p['BN']} block in one pass (one wait, two barriers, where stage 28 had eight), the TMA "
        f"stores go out together; a {p['STAGES']}-deep ring makes room",
        file="30_wgmma_stmatrix.cu",
        entry="gemm_wgmma_stmatrix",
        smem_bytes=p["STAGES"] * (p["BM"] + p["BN"]) * p["BK"] * 2
        + (p["BM"] // 64) * p["BN"] * 64 * 2
        + 1024,
        params=MappingProxyType(dict(p)),
        tune_space=MappingProxyType(
            {"LAG": (0, 1, 2), "CLUSTER_M": (1, 2), "IN_FLIGHT": (0, 1), "WG_RELEASE": (0, 1)}
        ),
        slower_because="the ring stage it gives up costs more than the epilogue saves: at "
        "8192^3 bf16 it ran at 96.9% of cuBLAS where stage 28 ran at 100.8%, 98.7% without the "
        "cluster (CLUSTER_M=1), in the same rounds (benchmarks/probes/h200-findings.json); its "
        "tensor pipe is busy 93% of the time against 97.5% for fast.cu's kernel 12 (ncu), which "
        "made this change on the same 3-deep ring and reached 102.3%",
    )
    return replace(stage, rebuild=lambda q: _wgmma_stmatrix(dict(q)))


def _streamk_workspace(bm: int, bn: int) -> Callable[[int, int, int, int], int]:
    """Stage 29's scratch: per block, one fp32 64 x BN partial tile and one 4-byte flag per
    consumer warpgroup (BM / 64 of them); only the stream-K workers use theirs."""

    def nbytes(m: int, n: int, k: int, blocks: int) -> int:
        return blocks * (bm // 64) * (64 * bn * 4 + 4)

    return nbytes


def _wgmma_streamk(p: dict[str, int]) -> Stage:
    """Stage 29: stage 28 without clusters on every SM, the tiles past the last full wave split
    along K over all blocks (stream-K), partial tiles summed through a global workspace."""
    stage = _tensor_core(
        "wgmma_streamk",
        "data-parallel waves plus a stream-K tail: the tiles past the last full wave are one run "
        "of K slices cut evenly over every SM; cut tiles are summed in fp32 through a workspace "
        "(per-tile flags), so no SM idles in the last wave",
        "29_wgmma_streamk.cu",
        p,
        threads=(128 * (1 + p["BM"] // 64), 1),  # producer + a consumer warpgroup per 64 rows
        shared_tile=(64, p["BN"]),
        smem_bytes=_persistent_smem(p),
        persistent_blocks_per_sm=1,
        persistent_max_blocks=p["MAX_BLOCKS"],
        persistent_fill=True,
        workspace_bytes=_streamk_workspace(p["BM"], p["BN"]),
        # STREAMK=0 (whole tiles only, on every SM) measures what the tail costs beside it
        # BN 128: twice the tiles (m64n128k16), so fewer of them are cut at a small shape
        tune_space=MappingProxyType(
            {"STREAMK": (1, 0), "LAG": (1, 2), "GROUP_M": (16, 8), "BN": (256, 128)}
        ),
    )
    return replace(stage, rebuild=lambda q: _wgmma_streamk(dict(q)))


def _swapab_stages(p: Mapping[str, int]) -> int:
    """Stage 31's ring depth, as the kernel works it out: as many slices (BN + BM rows of BK
    two-byte elements) as fit in RING_KIB KiB, at most MAX_STAGES."""
    stage_bytes = (p["BN"] + p["BM"]) * p["BK"] * 2
    return min(p["MAX_STAGES"], p["RING_KIB"] * 1024 // stage_bytes)


def _swapab_workspace(bm: int, bn: int) -> Callable[[int, int, int, int], int]:
    """Stage 31's scratch: per block and consumer warpgroup (BN / 64 of them) one fp32 64 x BM
    partial block, then one 4-byte flag each."""

    def nbytes(m: int, n: int, k: int, blocks: int) -> int:
        return blocks * (bn // 64) * (64 * bm * 4 + 4)

    return nbytes


def _wgmma_swapab(p: dict[str, int]) -> Stage:
    """Stage 31: C^T = B^T A^T on WGMMA (64 columns of B fill the instruction's 64-row side,
    BM rows of A its N side), pure stream-K over every SM, a ring as deep as shared memory
    allows (the kernel's own formula: _swapab_stages)."""
    stages = _swapab_stages(p)
    wn = p.get("WN", 64)
    stage = _tensor_core(
        "wgmma_swapab",
        f"skinny M: A and B swapped (C^T = B^T A^T, m64n{p['BM']}k16 HGMMA with B's 64 "
        f"columns as the 64-row side), {p['BM']}x{p['BN']} tiles of C, pure stream-K over "
        f"every SM (fp32 partials met through a workspace), a TMA ring of {stages} slices"
        + (f", {wn} columns per consumer warpgroup" if wn != 64 else "")
        + (", workers add into the owner's sum (red.global.add)" if p.get("RED") else ""),
        "31_wgmma_swapab.cu",
        p,
        threads=(128 * (1 + p["BN"] // wn), 1),  # producer + a consumer warpgroup per WN columns
        shared_tile=(p["BM"], 64),
        smem_bytes=stages * (p["BN"] + p["BM"]) * p["BK"] * 2 + 1024,
        persistent_blocks_per_sm=1,
        persistent_fill=True,
        workspace_bytes=_swapab_workspace(p["BM"], p["BN"]),
        # WN 128 (two 64-column groups a consumer): 128x256 tiles on three warpgroups, half
        # the re-reads of A per byte of B that 128x128 tiles make at M = 65-512; RED 1: a cut
        # tile's owner reads one sum, not a partial per worker (a tile cut over many blocks)
        tune_space=MappingProxyType(
            {
                "BM": (8, 16, 32, 64, 128, 256),
                "BN": (64, 128, 256),
                "SK_MIN": (4, 16),
                "WN": (64, 128),
                "RED": (0, 1),
            }
        ),
        # stage 33 in the same rows (its 128 columns and two producers: four consumers of 64
        # columns beside its producers leave too few registers); BM 256 takes 128 (stage 33
        # holds at most 128 rows beside two producers)
        any_pitch="wgmma_swapab_ld",
        any_pitch_params=("BM",),
    )
    return replace(stage, rebuild=lambda q: _wgmma_swapab(dict(q)))


def _wgmma_swapab_ld(p: dict[str, int]) -> Stage:
    """Stage 33: stage 31 fed by its producer warpgroups' own aligned loads (shuffled and
    funnel-shifted into the 128-byte swizzle) instead of TMA, so any row pitch runs: N and K
    need not be multiples of 8."""
    stages = _swapab_stages(p)
    stage = _tensor_core(
        "wgmma_swapab_ld",
        f"stage 31 for any shape: {p['PRODUCERS']} producer warpgroup(s) load the tiles (aligned "
        "16-byte loads, shfl and funnel shift for a row that starts off a 16-byte boundary, "
        f"zeros past the edges) into its swizzled ring of {stages} slices; m64n{p['BM']}k16 "
        f"HGMMA, {p['BM']}x{p['BN']} tiles, pure stream-K",
        "33_wgmma_swapab_ld.cu",
        p,
        threads=(128 * (p["PRODUCERS"] + p["BN"] // 64), 1),
        shared_tile=(p["BM"], 64),
        smem_bytes=stages * (p["BN"] + p["BM"]) * p["BK"] * 2 + 1024,
        persistent_blocks_per_sm=1,
        persistent_fill=True,
        workspace_bytes=_swapab_workspace(p["BM"], p["BN"]),
        # WGMMA without TMA: sm_90a, every shape (the producers read any pitch)
        chapter=13,
        math="HGMMA",
        min_cc=90,
        needs_multiple=1,
        multiple_of="MNK",
        tune_space=MappingProxyType(
            {"BM": (8, 16, 32, 64, 128), "BN": (64, 128), "PRODUCERS": (1, 2)}
        ),
    )
    return replace(stage, rebuild=lambda q: _wgmma_swapab_ld(dict(q)))


# Chapter 14: decode. M = batch (1..64) rows of activations times each weight matrix: every weight
# is read once per token, so these stages are bound by streaming B from HBM; their ideal bytes
# are the model's (A, B, C once), so % of roof is their share of HBM bandwidth. One source builds
# fp32, fp16 and bf16 (-DELEM_FP32=1 / -DELEM_BF16=1); 16-bit inputs accumulate in fp32 (FFMA).
_DECODE_DTYPES = ("fp16", "bf16", "fp32")
_DECODE_M = (1, 64)
_VEC = 8  # columns of C a thread owns in stages 31-32: one 16-byte load of fp16/bf16, two of fp32


def _fp8(s: fp8.Fp8Stage) -> Stage:
    """A stage of the FP8 contract in the registry (kernels/32_wgmma_fp8.cu, 34 and 58: A M x K,
    B N x K, per-tensor float32 scales, bf16 out; rooflinecli/stages/fp8.py), QGMMA math (stage
    58: HMMA), K and N multiples of 16 (TMA rows), B given as N x K."""
    p = s.params
    bm, bn = p["BM"], p["BN"]
    swap = s.swapped  # stage 34: one block per SM on a stream-K line, a workspace
    return Stage(
        name=s.name,
        what=s.what,
        dtype="fp8",
        chapter=13,
        math=s.math,
        file=s.source,
        entry=s.entry,
        params=p,
        threads=(s.threads, 1),
        tile=(bm, bn),
        min_cc=s.min_cc,
        smem_bytes=s.smem_bytes,
        # FLOPs per byte of a BM x BN tile's k-block, 1-byte A and B: 2 BM BN BK / ((BM+BN) BK)
        ai_global=2.0 * bm * bn / (bm + bn),
        needs_multiple=fp8.TMA_MULTIPLE,
        multiple_of="NK",
        b_layout="nk",
        persistent_blocks_per_sm=1 if p.get("PERSISTENT") or swap else 0,
        persistent_max_blocks=p.get("MAX_BLOCKS", 0),
        persistent_fill=swap,
        persistent_even=bool(p.get("EVEN")),
        workspace_bytes=partial(_fp8_workspace, s) if swap else None,
        m_range=fp8.SWAP_M if swap else fp8.GEMV_M if s.gemv else None,
        cluster_rows=s.cluster_m,
        tune_space=s.tune_space,
        rebuild=partial(_fp8_rebuild, s),
        widths=s.widths,
    )


def _fp8_workspace(s: fp8.Fp8Stage, m: int, n: int, k: int, blocks: int) -> int:
    return s.workspace_bytes(blocks)


def _fp8_rebuild(s: fp8.Fp8Stage, merged: Mapping[str, int]) -> Stage:
    return _fp8(s._replace(params=MappingProxyType(dict(merged))))


def _decode(name: str, what: str, file: str, params: dict[str, int], **fields: Any) -> Stage:
    """A decode stage (chapter 14, FFMA, unless `fields` says otherwise) for M = 1..64; by load
    instruction its per-thread tile (`per_thread`: rows x columns of C) loads rows + columns
    2-byte elements per k (ai_global is given for the primary dtype, fp16)."""
    rows, cols = fields.pop("per_thread")
    return Stage(
        name=name,
        what=what,
        file=file,
        params=MappingProxyType(dict(params)),
        ai_global=thread_tile_intensity(rows, cols, DTYPE_BYTES["fp16"]),
        m_range=fields.pop("m_range", _DECODE_M),
        **{
            "entry": name,
            "dtype": "fp16",
            "dtypes": _DECODE_DTYPES,
            "chapter": 14,
            "math": "FFMA",
            **fields,
        },
    )


# The decode stages whose 16-byte loads need rows on 16 bytes: at other pitches they run on scalar
# loads, and `--stages best` runs stage 59, which streams any pitch with 16-byte loads, instead
_ANY_PITCH: dict[str, Any] = {"vector_rows": "NK", "any_pitch": "gemv_shift"}


def _gemv_vector(p: dict[str, int]) -> Stage:
    """Stage 51: a thread owns 8 columns and TM rows of C and walks all of K."""
    stage = _decode(
        "gemv_vector",
        f"16-byte loads along N: a thread owns 8 columns x {p['TM']} rows of C and walks all "
        "of K; A's rows by broadcast",
        "51_gemv_vector.cu",
        p,
        per_thread=(p["TM"], _VEC),
        threads=(p["NUM_THREADS"], 1),
        tile=(p["TM"], p["NUM_THREADS"] * _VEC),
        slower_because="each thread walks all of K, so the GPU holds only N / 8 threads (512 at "
        "N = 4096: 16 warps on 8 SMs); bytes in flight, not load width, bound a stream from HBM",
    )
    return replace(stage, rebuild=lambda q: _gemv_vector(dict(q)))


def _gemv_splitk(p: dict[str, int], name: str = "gemv_splitk", **extra: Any) -> Stage:
    """Stage 52: a block owns BN columns and BM rows of C and all of K; its NUM_THREADS threads
    split K, each loading KU rows of B per step (KU / 2 for fp32: 128 bytes either way); a
    thread holds TM rows x 8 columns, BM / TM row groups share each load of B."""
    what = (
        f"in-block split-K: a block owns {p['BN']} columns and all of K, its {p['NUM_THREADS']} "
        f"threads split K and reduce through shuffles and shared memory; "
        f"{p['NUM_THREADS'] * p['KU'] * 16 // 1024} KiB of B in flight per block"
    )
    if p["BM"] > p["TM"]:
        what = (
            f"register blocking over M: {p['BM']} rows of C per block, {p['TM']} per thread, "
            f"{p['BM'] // p['TM']} row groups issue each load of B together (one request), "
            f"{p['NUM_THREADS']} threads split K"
        )
    stage = _decode(
        name,
        what,
        "52_gemv_splitk.cu",
        p,
        entry="gemv_splitk",
        per_thread=(p["TM"], _VEC),
        threads=(p["NUM_THREADS"], 1),
        tile=(p["BM"], p["BN"]),
        tune_space=MappingProxyType(
            {"BN": (32, 64), "KU": (8, 16), "NUM_THREADS": (256, 512), "MIN_BLOCKS": (1, 2)}
        ),
        **extra,
        **_ANY_PITCH,
    )
    return replace(stage, rebuild=lambda q: _gemv_splitk(dict(q), name, **extra))


def _gemv_shift(p: dict[str, int]) -> Stage:
    """Stage 59: stage 52's tile at any pitch; each row's 8 columns come from the two aligned
    16-byte pieces that hold them, shifted by the row's offset (kernels/59_gemv_shift.cu)."""
    stage = _decode(
        "gemv_shift",
        f"decode at any pitch: stage 52's in-block split-K ({p['BN']} columns, {p['BM']} rows "
        "of C per block), each row's 8 columns of a thread from the two aligned 16-byte pieces "
        "that hold them, joined by funnel shifts by the row's offset; A's rows likewise",
        "59_gemv_shift.cu",
        p,
        entry="gemv_shift",
        per_thread=(p["TM"], _VEC),
        threads=(p["NUM_THREADS"], 1),
        tile=(p["BM"], p["BN"]),
        slower_because="where rows start on 16 bytes it is stage 52 plus a second load per "
        "piece (from L1) and 16 integer instructions per 16 bytes",
        tune_space=MappingProxyType({"BM": (4, 8), "BN": (16, 32, 64), "NUM_THREADS": (256, 512)}),
    )
    return replace(stage, rebuild=lambda q: _gemv_shift(dict(q)))


def _gemv_pdl(p: dict[str, int]) -> Stage:
    """Stage 56: stage 52 under programmatic dependent launch; PDL_WAIT and PDL_SIGNAL place
    griddepcontrol.wait and .launch_dependents (kernels/56_gemv_pdl.cu)."""
    wait = {0: "waits at entry", 1: "issues its first step of B, then waits"}[p["PDL_WAIT"]]
    if p.get("PDL_PF"):
        wait = wait.replace(", then", f" and prefetches {p['PDL_PF']} more into L2, then")
    signal = {
        0: "signals the next kernel at entry",
        1: "signals once that step is issued",
        2: "signals after its weight stream",
        3: "signals only by exiting",
    }[p["PDL_SIGNAL"]]
    stage = _decode(
        "gemv_pdl",
        f"stage 52 under programmatic dependent launch: in a chain a kernel starts while the "
        f"previous one drains; it {wait} for the previous output (A), and {signal}",
        "56_gemv_pdl.cu",
        p,
        per_thread=(p["TM"], _VEC),
        threads=(p["NUM_THREADS"], 1),
        tile=(p["BM"], p["BN"]),
        min_cc=90,
        pdl=True,
        **_ANY_PITCH,
        slower_because="alone (no kernel before it) it is stage 52 plus two instructions; "
        "what it shows is in a chain, where a dependent's blocks take SM slots and bandwidth "
        "from the kernel still running",
        tune_space=MappingProxyType(
            {
                "PDL_WAIT": (0, 1),
                "PDL_SIGNAL": (0, 1, 2, 3),
                "PDL_PF": (0, 2),
                "NUM_THREADS": (256, 512),
                "MIN_BLOCKS": (1, 2),
            }
        ),
    )
    return replace(stage, rebuild=lambda q: _gemv_pdl(dict(q)))


def _gemv_wmma(p: dict[str, int]) -> Stage:
    """Stage 53: stage 52's in-block split-K on Tensor Cores (WMMA 16x16x16, FP16/BF16 only).
    Per warp a region of dynamic shared memory holds its KW x BN slice of B and BM x KW of A
    (row strides padded by 8 elements), or at the end its BM x BN FP32 partial tile, whichever
    is larger, rounded up to 128 bytes: the same formula as the kernel's SMEM_BYTES."""
    bm, bn, kw = p["BM"], p["BN"], p["KW"]
    stage_bytes = (kw * (bn + 8) + bm * (kw + 8)) * 2
    per_warp = -(-max(stage_bytes, bm * bn * 4) // 128) * 128
    stage = _decode(
        "gemv_wmma",
        f"decode on Tensor Cores: stage 52's split-K over warps feeding WMMA 16x16x16 (HMMA) "
        f"from shared memory, {bm} rows of A per block (M padded to 16)",
        "53_gemv_wmma.cu",
        p,
        per_thread=(bm, bn),  # per warp: per k, BM elements of A and BN of B feed BM*BN MACs
        dtypes=("fp16", "bf16"),
        slower_because="at M <= 4 every byte of B takes a detour through shared memory (a "
        "store and an ldmatrix) that the SIMT stages skip; bf16 WMMA loads its row-major B "
        "fragment with generic loads and movmatrix",
        chapter=12,
        math="HMMA",
        min_cc=80,
        **{**_ANY_PITCH, "vector_rows": "N"},  # A's loads fall back on their own
        threads=(p["NUM_THREADS"], 1),
        tile=(bm, bn),
        smem_bytes=(p["NUM_THREADS"] // 32) * per_warp,
        tune_space=MappingProxyType(
            {"BM": (16, 32, 64), "KW": (32, 64), "NUM_THREADS": (256, 512), "MIN_BLOCKS": (1, 2)}
        ),
    )
    return replace(stage, rebuild=lambda q: _gemv_wmma(dict(q)))


def _streamk_gemv_workspace(tm: int, bn: int) -> Callable[[int, int, int, int], int]:
    """Stage 54's scratch: M x N fp32 partial sums, then one 4-byte counter per tile (TM rows x
    BN columns of C)."""

    def nbytes(m: int, n: int, k: int, blocks: int) -> int:
        return 4 * (m * n + -(-m // tm) * -(-n // bn))

    return nbytes


def _gemv_streamk(p: dict[str, int]) -> Stage:
    """Stage 54: a persistent grid cuts the line of (row block, strip, U rows of K) units into
    equal shares, one per block; partial sums of a cut strip meet in an fp32 workspace."""
    stage = _decode(
        "gemv_streamk",
        f"stream-K decode: {p['BLOCKS_PER_SM']} persistent blocks per SM share the rows of B "
        f"equally, each thread issues {p['U']} 16-byte loads of B before its first FMA "
        f"({p['NUM_THREADS'] * p['U'] * 16 // 1024} KiB per block in flight); cut strips are "
        "summed in an fp32 workspace by the block that completes them",
        "54_gemv_streamk.cu",
        p,
        per_thread=(p["TM"], _VEC),
        threads=(p["NUM_THREADS"], 1),
        tile=(p["TM"], p["BN"]),
        persistent_blocks_per_sm=p["BLOCKS_PER_SM"],
        persistent_fill=True,
        workspace_bytes=_streamk_gemv_workspace(p["TM"], p["BN"]),
        **_ANY_PITCH,
        # 64 variants, those that spill dropped (PIPE = 1 doubles B's registers). At 64 registers
        # (256 threads x 4 blocks) ptxas interleaves a pass's loads with its FMAs (3 of 9 issued
        # before the first FFMA); kept to be measured
        tune_space=MappingProxyType(
            {
                "U": (8, 16),
                "NUM_THREADS": (128, 256),
                "BLOCKS_PER_SM": (2, 4),
                "BN": (256, 512),
                "L2PF": (0, 1),
                "PIPE": (0, 1),
            }
        ),
    )
    return replace(stage, rebuild=lambda q: _gemv_streamk(dict(q)))


def _gemv_streamk_mma(p: dict[str, int]) -> Stage:
    """Stage 55: stage 54's stream-K shares of B, the math on mma.sync m16n8k16 (HMMA) fed by a
    STAGES-deep cp.async pipeline; per slot BK x (BN + 8) of B and 16 x (BK + 8) of A, the same
    formula as the kernel's SMEM_BYTES."""
    smem = p["STAGES"] * (p["BK"] * (p["BN"] + 8) + 16 * (p["BK"] + 8)) * 2
    flight = (p["STAGES"] - 1) * p["BK"] * p["BN"] * 2 // 1024
    stage = _decode(
        "gemv_streamk_mma",
        f"stream-K decode on Tensor Cores: {p['BLOCKS_PER_SM']} persistent blocks per SM share "
        f"the units (16 rows of C x {p['BN']} columns x {p['BK']} rows of K) equally; cp.async "
        f"keeps {p['STAGES'] - 1} units ({flight} KiB of B) in flight per block, mma.sync "
        "m16n8k16 from ldmatrix(.trans); cut strips meet in an fp32 workspace",
        "55_gemv_streamk_mma.cu",
        p,
        per_thread=(16, p["BN"]),  # per block and k: 16 rows of A and BN of B feed 16*BN MACs
        dtypes=("fp16", "bf16"),
        chapter=12,
        math="HMMA",  # like stage 53
        min_cc=80,
        threads=(p["NUM_THREADS"], 1),
        tile=(16, p["BN"]),
        smem_bytes=smem,
        persistent_blocks_per_sm=p["BLOCKS_PER_SM"],
        **_ANY_PITCH,
        persistent_fill=True,
        workspace_bytes=_streamk_gemv_workspace(16, p["BN"]),
        # 36 combinations, 18 that fit in shared memory (the static_assert drops the rest):
        # 32 to 160 KiB of B in flight per SM
        tune_space=MappingProxyType(
            {"BN": (128, 256), "BK": (32, 64, 128), "STAGES": (4, 6, 8), "BLOCKS_PER_SM": (1, 2)}
        ),
    )
    return replace(stage, rebuild=lambda q: _gemv_streamk_mma(dict(q)))


STAGES: tuple[Stage, ...] = (
    Stage(
        name="naive_xcol",
        what="one thread per C element, threadIdx.x -> column: B loads coalesced",
        dtype="fp32",
        chapter=10,
        math="FFMA",
        file="01_naive_xcol.cu",
        entry="gemm_naive_xcol",
        ai_global=thread_tile_intensity(1, 1, DTYPE_BYTES["fp32"]),
    ),
    Stage(
        name="naive_xrow",
        what="one thread per C element, threadIdx.x -> row: a warp's A loads are K*4 bytes apart",
        dtype="fp32",
        chapter=10,
        math="FFMA",
        file="02_naive_xrow.cu",
        entry="gemm_naive_xrow",
        x_is_row=True,
        ai_global=thread_tile_intensity(1, 1, DTYPE_BYTES["fp32"]),
        slower_because="the seed's point: a warp's 32 A addresses are K*4 bytes apart, so each "
        "load touches 32 sectors instead of 2; same instructions, ~8x the memory traffic",
    ),
    _thread_tile(4, 4),
    _thread_tile(
        8,
        8,
        slower_because="64 accumulators + 16 operands need ~140 registers: one block of 256 "
        "threads per SM (12.5% occupancy), too few warps to hide global loads (exercise 3)",
    ),
    _simt(
        "smem_tile",
        "32x32 block tile in shared memory, one thread per C element: global loads reused 32x",
        "04_smem_tile.cu",
        "gemm_smem_tile",
        {"BM": 32, "BN": 32, "BK": 32},
        threads=(32, 32),
        per_thread=(1, 1),
        slower_because="one result per thread: every FMA still loads 2 floats, now from shared "
        "memory (0.25 FLOP/B there) plus barriers; the register tile of the stage before reuses "
        "each load 4x. Chapter 11 restarts the ladder from here with register tiles on top",
    ),
    _simt(
        "blocktile_1d",
        "each thread computes 8 results in a column: one shared B load feeds 8 FMAs",
        "05_blocktile_1d.cu",
        "gemm_blocktile_1d",
        {"BM": 64, "BN": 64, "BK": 8, "TM": 8, "NUM_THREADS": 64 * 64 // 8},
        per_thread=(8, 1),
    ),
    _simt(
        "blocktile_2d",
        "128x128 block tile, 8x8 per thread: 16 shared loads feed 64 FMAs",
        "06_blocktile_2d.cu",
        "gemm_blocktile_2d",
        {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8, "NUM_THREADS": 256},
        per_thread=(8, 8),
    ),
    _simt(
        "vectorized",
        "float4 global loads, A transposed in shared memory, LDS.128 operand reads",
        "07_vectorized.cu",
        "gemm_vectorized",
        {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8, "NUM_THREADS": 256},
        per_thread=(8, 8),
    ),
    _warptile(
        "warptile",
        "warp tiles of 64x64, 8x16 per thread as 4x4 sub-tiles: conflict-free shared memory",
        "08_warptile.cu",
        "gemm_warptile",
        {
            "BM": 128,
            "BN": 128,
            "BK": 16,
            "WM": 64,
            "WN": 64,
            "WNITER": 4,
            "TM": 4,
            "TN": 4,
            "NUM_THREADS": 128,
        },
    ),
    replace(
        _warptile(
            "double_buffer",
            "warp tiling + double-buffered shared memory fed by register-staged loads: "
            "1 barrier/tile",
            "09_double_buffer.cu",
            "gemm_double_buffer",
            {
                "BM": 128,
                "BN": 256,
                "BK": 8,
                "WM": 64,
                "WN": 64,
                "WNITER": 4,
                "TM": 4,
                "TN": 4,
                "NUM_THREADS": 256,
                "MIN_BLOCKS": 1,
            },
        ),
        # `roofline tune gemm --stage double_buffer` tries these (NUM_THREADS follows)
        tune_space=MappingProxyType(
            {"BM": (64, 128), "BN": (128, 256), "BK": (8, 16), "WN": (32, 64)}
        ),
    ),
    replace(
        _multistage(
            {
                "BM": 128,
                "BN": 256,
                "BK": 16,
                "WM": 64,
                "WN": 64,
                "WNITER": 4,
                "TM": 4,
                "TN": 4,
                "NUM_THREADS": 256,
                "STAGES": 3,
            }
        ),
        # `roofline tune gemm --stage multistage` tries these (NUM_THREADS, smem_bytes follow)
        tune_space=MappingProxyType({"BN": (128, 256), "BK": (8, 16), "STAGES": (3, 4)}),
    ),
    replace(
        _spread_copies(
            {
                "BM": 128,
                "BN": 256,
                "BK": 16,
                "WM": 64,
                "WN": 64,
                "WNITER": 4,
                "TM": 4,
                "TN": 4,
                "NUM_THREADS": 256,
                "STAGES": 3,
                "COPY_STEP": 4,
                "GROUP_M": 8,
            }
        ),
        # `roofline tune gemm --stage spread_copies` tries these (NUM_THREADS, smem_bytes follow)
        tune_space=MappingProxyType({"BK": (8, 16, 32), "STAGES": (3, 4), "COPY_STEP": (2, 4, 12)}),
    ),
    replace(
        _serpentine_ffma(dict(_STAGE12)),
        # `roofline tune gemm --stage serpentine_ffma` tries these (NUM_THREADS, smem_bytes follow);
        # benchmarks/gemm_fp32_ladder.sh (step serpentine) times the block shapes and the
        # controls; STAGES 3 and PAIR_LANES 0 won gemm-fp32-4096-serpentine-unpaired.json.gz
        tune_space=MappingProxyType({"BK": (8, 16, 32), "STAGES": (3, 4), "WNITER": (2, 4)}),
    ),
    replace(
        # stage 12's tiles and loop, on a persistent grid with a stream-K tail
        _simt_streamk({**_STAGE12, "STREAMK": 1, "SK_WAVES": 1, "SK_MIN": 8}),
        # STREAMK=0 (whole tiles on the same persistent grid) measures what the cut tail gives;
        # benchmarks/gemm_fp32_ladder.sh times both and SK_WAVES 2 beside stage 12 and cuBLAS
        tune_space=MappingProxyType({"STREAMK": (1, 0), "SK_WAVES": (1, 2), "STAGES": (3, 4)}),
    ),
    Stage(
        name="cublas",
        what="cuBLAS SGEMM (cublasSgemm, FP32 compute, no TF32): the reference",
        dtype="fp32",
        chapter=10,
        math="library",
        reference=True,
    ),
    # Chapter 12-13: Tensor Cores. FP16/BF16 in, FP32 accumulate, C in the input type. ai_global:
    # per k a BM x BN block loads BM + BN 2-byte elements for BM*BN MACs; ai_shared: the same
    # for the warp tile (mma.sync: WM + WN elements through ldmatrix/LDS for WM*WN MACs).
    _tensor_core(
        "mma_sync",
        "mma.sync m16n8k16 (HMMA) from shared memory: 64x64 block, 4 warps of 32x32",
        "20_mma_sync.cu",
        {"BM": 64, "BN": 64, "BK": 32, "WM": 32, "WN": 32},
        threads=(4 * 32, 1),  # 4 warps
        shared_tile=(32, 32),
    ),
    _tensor_core(
        "mma_ldmatrix",
        "ldmatrix (.trans for B) from XOR-swizzled shared tiles: 128x128 block, 8 warps",
        "21_mma_ldmatrix.cu",
        {"BM": 128, "BN": 128, "BK": 32, "WM": 64, "WN": 32},
        threads=(8 * 32, 1),  # 8 warps
        shared_tile=(64, 32),
    ),
    # 256x128 (4 x 2 warps): the tile `roofline tune gemm --stage mma_multistage` picks at 8192^3
    _mma_multistage(
        {"BM": 256, "BN": 128, "BK": 32, "WM": 64, "WN": 64, "STAGES": 4, "GROUP_M": 8}
    ),
    _mma_tma_ws(
        # what `roofline tune gemm --stage mma_tma_ws` picks at 8192^3: GROUP_M 16, 3 stages and
        # the TMA-store epilogue; CLUSTER_M 2 (B multicast to a pair of blocks) is off: it was
        # slower (docs/results.md)
        {"BM": 128, "BN": 256, "BK": 64, "WM": 64, "WN": 64, "STAGES": 3, "GROUP_M": 16}
        | {"TMA": 1, "TMA_C": 1, "CLUSTER_M": 1}
    ),
    # WGMMA stages read both operands from shared memory in the tensor cores (ai_shared: per k a
    # warpgroup's 64 rows of A and BN rows of B for 64*BN MACs); TMA loads need tensor maps
    # (params TMA=1: rooflinecli/gpu/tma.extra_args). B is row-major K x N (b_layout "kn"), read
    # N-major from shared memory (wgmma imm-trans-b): no transpose is charged to these stages.
    _wgmma_tma({"BM": 128, "BN": 128, "BK": 64, "STAGES": 4, "GROUP_M": 8, "TMA": 1, "SPLIT_K": 1}),
    _tensor_core(
        "wgmma_ws",
        "warp-specialized: TMA producer + 2 WGMMA consumer warpgroups, setmaxnreg, 128x256",
        "25_wgmma_ws.cu",
        {"BM": 128, "BN": 256, "BK": 64, "STAGES": 4, "GROUP_M": 8, "TMA": 1},
        threads=(3 * 128, 1),  # producer + 2 consumer warpgroups
        shared_tile=(64, 256),
        smem_bytes=4 * (128 * 64 + 256 * 64) * 2 + 1024,
        slower_because="on small shapes its 128x256 tiles are too few to fill 132 SMs "
        "(1000^3: 32 tiles); a persistent grid or smaller tiles would fix it",
    ),
    _wgmma_persistent(
        {"BM": 128, "BN": 256, "BK": 64, "STAGES": 4, "GROUP_M": 16, "TMA": 1, "TMA_C": 1}
    ),
    _wgmma_persistent_fill(
        {"BM": 128, "BN": 256, "BK": 64, "STAGES": 4, "GROUP_M": 16, "TMA": 1, "TMA_C": 1}
    ),
    _wgmma_cluster(
        {"BM": 128, "BN": 256, "BK": 64, "STAGES": 4, "GROUP_M": 16, "TMA": 1, "TMA_C": 1}
        | {"CLUSTER_M": 2, "MAX_BLOCKS": 128}
    ),
    _wgmma_stagger(
        {"BM": 128, "BN": 256, "BK": 64, "STAGES": 4, "GROUP_M": 16, "TMA": 1, "TMA_C": 1}
        | {"CLUSTER_M": 2, "MAX_BLOCKS": 128, "LAG": 2}
    ),
    _wgmma_streamk(
        {"BM": 128, "BN": 256, "BK": 64, "STAGES": 4, "GROUP_M": 16, "TMA": 1, "TMA_C": 1}
        | {"MAX_BLOCKS": 0, "LAG": 1, "STREAMK": 1, "SK_MIN": 8}
    ),
    _wgmma_stmatrix(
        {"BM": 128, "BN": 256, "BK": 64, "STAGES": 3, "GROUP_M": 16, "TMA": 1, "TMA_C": 1}
        | {"CLUSTER_M": 2, "MAX_BLOCKS": 128, "LAG": 2, "IN_FLIGHT": 0, "WG_RELEASE": 1}
    ),
    # skinny and medium M (an LLM's batch times its weights): A and B swapped, stream-K on every SM
    _wgmma_swapab(
        {"BM": 64, "BN": 128, "BK": 64, "RING_KIB": 200, "MAX_STAGES": 12, "SK_MIN": 4}
        | {"WN": 64, "RED": 0, "TMA": 1}
    ),
    # ... and for any shape: the producers' loads where a tensor map cannot describe a matrix
    _wgmma_swapab_ld(
        {"BM": 64, "BN": 128, "BK": 64, "RING_KIB": 200, "MAX_STAGES": 12, "SK_MIN": 4}
        | {"PRODUCERS": 2}
    ),
    Stage(
        name="cublas_hgemm",
        what="cuBLAS GEMM (cublasGemmEx, FP16/BF16 in and out, FP32 compute, tensor-op "
        "algorithms): the reference",
        dtype="fp16",
        dtypes=("fp16", "bf16"),
        chapter=12,
        math="library",
        reference=True,
    ),
    Stage(
        name="cublaslt_fp8",
        what="cuBLASLt FP8 GEMM (torch._scaled_mm: e4m3 A M x K, B N x K, per-tensor float32 "
        "scales, bf16 out): the reference of the FP8 stages (rooflinecli/stages/fp8.py)",
        dtype="fp8",
        chapter=12,
        math="library",
        reference=True,
        b_layout="nk",
    ),
    Stage(
        name="cublaslt_fp8_fast",
        what="cuBLASLt FP8 GEMM as cublaslt_fp8, with use_fast_accum: the Tensor Cores' "
        "reduced-precision sums over all of K, not promoted (the accumulation of the unpromoted "
        "FP8 stages)",
        dtype="fp8",
        chapter=12,
        math="library",
        reference=True,
        b_layout="nk",
    ),
    # the FP8 stages (kernels/32_wgmma_fp8.cu; their geometry and contract: stages/fp8.py)
    *(_fp8(s) for s in fp8.FP8_STAGES),
    # Chapter 14: decode, M = 1..64 (the batch of a decoding LLM) x the weights: bound by HBM.
    _decode(
        "gemv_naive",
        "decode, one thread per C element: a warp reads 32 neighbouring elements of a row of B "
        "per k, a block is 128 columns of one row of C",
        "50_gemv_naive.cu",
        {"NUM_THREADS": 128},
        per_thread=(1, 1),
        threads=(128, 1),
        tile=(1, 128),
        slower_because="one scalar load of B per warp per k and N / 128 blocks (32 at N = 4096): "
        "far too few bytes in flight to stream HBM; M rows of C read B M times",
    ),
    _gemv_vector({"TM": 4, "NUM_THREADS": 64}),
    _gemv_splitk({"BM": 2, "TM": 2, "BN": 32, "KU": 8, "NUM_THREADS": 512, "MIN_BLOCKS": 1}),
    _gemv_splitk(
        {"BM": 16, "TM": 4, "BN": 32, "KU": 8, "NUM_THREADS": 256, "MIN_BLOCKS": 2},
        "gemv_multirow",
        slower_because="its 4 row groups load the same bytes of B, so a block has 8 KiB of "
        "distinct B in flight (gemv_splitk: 64 KiB), each element of B is converted 4 times, and "
        "at M <= 4 three row groups compute rows past M (clamped, never stored)",
    ),
    _gemv_wmma({"BM": 16, "BN": 32, "KW": 64, "NUM_THREADS": 256, "MIN_BLOCKS": 2}),
    _gemv_streamk(
        {"TM": 1, "BN": 256, "U": 16, "NUM_THREADS": 256, "BLOCKS_PER_SM": 2, "L2PF": 0, "PIPE": 0}
    ),
    _gemv_streamk_mma({"BN": 128, "BK": 64, "STAGES": 5, "NUM_THREADS": 256, "BLOCKS_PER_SM": 2}),
    _gemv_pdl(
        {
            "BM": 2,
            "TM": 2,
            "BN": 32,
            "KU": 8,
            "NUM_THREADS": 512,
            "MIN_BLOCKS": 1,
            "PDL_WAIT": 1,
            "PDL_SIGNAL": 2,
            "PDL_PF": 0,
        }
    ),
    _gemv_shift({"BM": 4, "TM": 4, "BN": 32, "KU": 8, "NUM_THREADS": 512, "MIN_BLOCKS": 1}),
)

BY_NAME: dict[str, Stage] = {s.name: s for s in STAGES}


def stage_names(dtype: str | None = None, include_reference: bool = True) -> list[str]:
    return [
        s.name
        for s in STAGES
        if (dtype is None or dtype in s.all_dtypes) and (include_reference or not s.reference)
    ]


def reference_for(dtype: str) -> Stage:
    for s in STAGES:
        if s.reference and dtype in s.all_dtypes:
            return s
    raise RooflineError(f"no reference stage for dtype {dtype}")


def select(names: str | None, dtype: str) -> list[Stage]:
    """--stages a,b,c (or every stage of the dtype); the dtype's reference always comes along.
    An item may name a variant as `roofline tune` and the records do, stage@P=V,Q=W: the
    stage with those parameters, named so (the items after '@' that hold '=' are its params)."""
    if names is None or names.strip() in ("", "all"):
        chosen = [s for s in STAGES if dtype in s.all_dtypes and not s.reference]
    else:
        chosen = []
        for stage in named(names, dtype):
            if stage not in chosen and not stage.reference:
                chosen.append(stage)
    chosen.append(reference_for(dtype))
    return chosen


def named(names: str, dtype: str | None, option: str = "--stages") -> list[Stage]:
    """The stages and variants (stage@P=V,Q=W) a comma list names, in its order; with a dtype,
    each must build for it. Errors name `option`."""
    out = []
    for item in _items(names, option):
        name, _, spec = item.partition("@")
        if name not in BY_NAME:
            raise RooflineError(f"unknown stage {name!r}; known: {', '.join(stage_names(dtype))}")
        stage = BY_NAME[name]
        if dtype is not None and dtype not in stage.all_dtypes:
            have = "/".join(stage.all_dtypes)
            raise RooflineError(f"stage {name} is {have}, not {dtype} (use --dtype)")
        out.append(_variant(stage, spec, item, option) if spec else stage)
    return out


def built_for(chosen: list[Stage], ms: Iterable[int]) -> list[Stage]:
    """The default ladder for these rows of C: the stages without every M out of their
    `m_range` (decode stages at a GEMM's M leave the table rather than fill it with rows that
    say they were skipped). Stages asked for by name are never dropped: the caller decides."""
    rows = list(ms)
    return [
        s
        for s in chosen
        if s.reference or s.m_range is None or any(s.m_range[0] <= m <= s.m_range[1] for m in rows)
    ]


def _items(names: str, option: str) -> list[str]:
    """'a,b@P=1,Q=2,c' -> ['a', 'b@P=1,Q=2', 'c']: an item holding '=' but no '@' continues the
    variant before it."""
    items: list[str] = []
    for raw in names.split(","):
        item = raw.strip()
        if not item:  # as options.split_list says it (stages cannot import the CLI)
            raise RooflineError(f"{option}: empty item in {names!r}")
        if "=" in item and "@" not in item:
            if not items or "@" not in items[-1]:
                raise RooflineError(f"{option}: {item!r} follows no stage@P=V variant")
            items[-1] += "," + item
        else:
            items.append(item)
    return items


def _variant(stage: Stage, spec: str, item: str, option: str) -> Stage:
    """stage with the params of 'P=V,Q=W', named stage@<the params that differ> (as tune names)."""
    params: dict[str, int] = {}
    for pair in spec.split(","):
        key, eq, value = pair.partition("=")
        try:
            params[key.strip()] = int(value)
        except ValueError:
            eq = ""
        if not eq or not key.strip():
            raise RooflineError(f"{option}: {item!r}: write stage@P=V,Q=W with integer values")
    try:
        variant = stage.with_params(params)
    except (KeyError, ValueError, ZeroDivisionError) as exc:
        raise RooflineError(f"{option}: {item!r}: the geometry cannot express it ({exc})") from None
    changed = {k: v for k, v in variant.params.items() if stage.params.get(k) != v}
    if not changed:
        return stage
    name = stage.name + "@" + ",".join(f"{k}={v}" for k, v in changed.items())
    # the params given are final: no per-arch entry may override them later (for_arch)
    return replace(variant, name=name, arch_params=MappingProxyType({}))
