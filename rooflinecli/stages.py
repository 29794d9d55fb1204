"""The stage registry: the one list of GEMM stages. CLI choices, README and tests derive from it.

A stage is one kernels/NN_technique.cu plus one entry here: its entry point, dtype, tile
parameters (passed to NVRTC as -DNAME=value compile-time constants), launch geometry and the
arithmetic intensity it achieves by construction. Every kernel honours one contract:

    extern "C" __global__ void ENTRY(int M, int N, int K, float alpha,
                                     const T* A, const T* B, float beta, T* C)

row-major A (MxK), B (KxN), C (MxN); beta == 0 never reads C. Pure Python: no CuPy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from rooflinecli.errors import RooflineError
from rooflinecli.model import DTYPE_BYTES, thread_tile_intensity


@dataclass(frozen=True)
class Stage:
    name: str
    what: str  # one line: the technique this stage demonstrates
    dtype: str
    chapter: int
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

    @property
    def ai_instruction(self) -> float | None:
        """Intensity by load instruction at the level nearest the registers (the seed's 0.25)."""
        return self.ai_shared if self.ai_shared is not None else self.ai_global

    def launch(self, m: int, n: int) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        """(grid, block, dynamic shared bytes) for an MxN output."""
        rows, cols = self.tile
        gm, gn = -(-m // rows), -(-n // cols)
        grid = (gm, gn, 1) if self.x_is_row else (gn, gm, 1)
        if grid[1] > 65535:
            raise RooflineError(f"stage {self.name}: output too large for its grid ({m}x{n})")
        return grid, (self.threads[0], self.threads[1], 1), self.smem_bytes

    def defines(self) -> list[str]:
        return [f"-D{k}={v}" for k, v in self.params.items()]


def _thread_tile(tm: int, tn: int) -> Stage:
    return Stage(
        name=f"thread_tile_{tm}x{tn}",
        what=f"each thread computes a {tm}x{tn} tile of C: {tm + tn} loads feed {tm * tn} FMAs",
        dtype="fp32",
        chapter=10,
        file="03_thread_tile.cu",
        entry="gemm_thread_tile",
        params=MappingProxyType({"TM": tm, "TN": tn}),
        tile=(16 * tm, 16 * tn),
        ai_global=thread_tile_intensity(tm, tn, DTYPE_BYTES["fp32"]),
    )


STAGES: tuple[Stage, ...] = (
    Stage(
        name="naive_xcol",
        what="one thread per C element, threadIdx.x -> column: B loads coalesced",
        dtype="fp32",
        chapter=10,
        file="01_naive_xcol.cu",
        entry="gemm_naive_xcol",
        ai_global=thread_tile_intensity(1, 1, DTYPE_BYTES["fp32"]),
    ),
    Stage(
        name="naive_xrow",
        what="one thread per C element, threadIdx.x -> row: a warp's A loads are K*4 bytes apart",
        dtype="fp32",
        chapter=10,
        file="02_naive_xrow.cu",
        entry="gemm_naive_xrow",
        x_is_row=True,
        ai_global=thread_tile_intensity(1, 1, DTYPE_BYTES["fp32"]),
    ),
    _thread_tile(4, 4),
    _thread_tile(8, 8),
    Stage(
        name="cublas",
        what="cuBLAS SGEMM (cublasSgemm, FP32 compute, no TF32): the reference",
        dtype="fp32",
        chapter=10,
        reference=True,
    ),
)

BY_NAME: dict[str, Stage] = {s.name: s for s in STAGES}


def stage_names(dtype: str | None = None, include_reference: bool = True) -> list[str]:
    return [
        s.name
        for s in STAGES
        if (dtype is None or s.dtype == dtype) and (include_reference or not s.reference)
    ]


def reference_for(dtype: str) -> Stage:
    for s in STAGES:
        if s.reference and s.dtype == dtype:
            return s
    raise RooflineError(f"no reference stage for dtype {dtype}")


def select(names: str | None, dtype: str) -> list[Stage]:
    """--stages a,b,c (or every stage of the dtype); the dtype's reference always comes along."""
    if names is None or names.strip() in ("", "all"):
        chosen = [s for s in STAGES if s.dtype == dtype and not s.reference]
    else:
        chosen = []
        for raw in names.split(","):
            name = raw.strip()
            if not name:
                continue
            if name not in BY_NAME:
                raise RooflineError(
                    f"unknown stage {name!r}; known: {', '.join(stage_names(dtype))}"
                )
            stage = BY_NAME[name]
            if stage.dtype != dtype:
                raise RooflineError(f"stage {name} is {stage.dtype}, not {dtype} (use --dtype)")
            if stage not in chosen and not stage.reference:
                chosen.append(stage)
    chosen.append(reference_for(dtype))
    return chosen
