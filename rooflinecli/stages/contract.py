"""The one stage contract: what every stage of every kind says of itself, so that one registry
(rooflinecli.stages.registry) lists them all and every page about them is generated from it.

A stage is one kernels/NN_technique.cu (its `source`; several stages may share one file, each
with its own parameters) and one entry of its kind's list. The kinds differ in their problem and
so in their kernel's arguments:

- `gemm` (rooflinecli.stages.gemm.Stage): C = alpha A B + beta C; the problem is (M, N, K);
- `fp8` (rooflinecli.stages.fp8.Fp8Stage): the FP8 contract (B given N x K, per-tensor scales);
  the problem is (M, N, K);
- `attention` (rooflinecli.stages.attention.AttentionStage): the forward pass; the problem is
  (Shape, dtype);
- `token` (rooflinecli.stages.token.TokenStage): a decode token's chain of GEMMs in one launch;
  the problem is (dtype, batch, [(M, N, K), ...]).

Each kind's class implements KernelStage below: its name, source and entry point, what it shows,
the element types it is built for, the math it issues, the lowest compute capability it runs on,
its compile-time parameters, what `roofline tune` may vary, why it refuses a problem, and how it
is launched for one. Pure Python: no CuPy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

KINDS = ("gemm", "fp8", "attention", "token")


@runtime_checkable
class KernelStage(Protocol):
    """A stage of any kind, as the registry and the pages about stages see it."""

    @property
    def kind(self) -> str:
        """One of KINDS."""
        ...

    @property
    def name(self) -> str: ...

    @property
    def what(self) -> str:
        """What the stage shows: one line, the technique it demonstrates."""
        ...

    @property
    def source(self) -> str:
        """Its file under kernels/ (NN_technique.cu)."""
        ...

    @property
    def entry(self) -> str | None:
        """The extern "C" kernel it launches (a stage of several kernels: the first)."""
        ...

    @property
    def math(self) -> str:
        """The SASS instruction of its inner loop (FFMA, HMMA, HGMMA, QGMMA)."""
        ...

    @property
    def min_cc(self) -> int:
        """The lowest compute capability it runs on (major * 10 + minor)."""
        ...

    @property
    def kernel_dtypes(self) -> tuple[str, ...]:
        """The element types it is built for."""
        ...

    @property
    def param_sets(self) -> Mapping[str, Mapping[str, int]]:
        """Its compile-time parameters (-D values), by variant: "" where it has one set, else
        the label of each (attention: one per head dimension, "d64", "d128")."""
        ...

    @property
    def tune_space(self) -> Mapping[str, tuple[int, ...]]:
        """The parameters `roofline tune` may vary, with their values (empty: none)."""
        ...

    def refusal_for(self, problem: Any) -> str | None:
        """Why it cannot run its kind's problem (module docstring), in one line, or None."""
        ...

    def launch_for(self, problem: Any, sm_count: int | None = None) -> Any:
        """How it is launched for its kind's problem: (grid, block, dynamic shared bytes), or
        for a stage of several kernels each one's launch in order."""
        ...
