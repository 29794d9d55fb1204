"""What a job is asked to do, built once from the shared options (rooflinecli.options) or by a
caller of the API: the problem, the timing settings, what the document says of itself.

NamedTuples (a frozen dataclass costs about 1 ms to create at start-up); `_replace` gives a
changed copy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

Progress = Callable[..., None]
Work = Sequence[tuple[Any, Sequence[tuple[Any, str | None]]]]


class Timed(NamedTuple):
    """How a run's inputs are made and its stages timed: the seed of the random inputs and a
    rooflinecli.gpu.timer.Timing (None: Timing(), the defaults)."""

    seed: int = 0
    timing: Any = None


class Output(NamedTuple):
    """What the job's results document says of itself, and who hears of its progress:
    `command` (the document's), `progress(label, total=steps)` as each stage and shape begins,
    `fields`: more top-level fields of the document (the plan's skips, settings)."""

    command: str
    progress: Progress | None = None
    fields: Mapping[str, Any] | None = None


class GemmProblem(NamedTuple):
    """The GEMMs to run: the shapes (M, N, K), the stages (the reference among them), the spec
    (--spec: a name, a TOML path, or None for the GPU's own), the element type, alpha and beta.
    `kind`: the problem kind the plan chose (rooflinecli.plan.gemm_kind: "gemm", or "fp8":
    FP8 A and B beside cuBLASLt's two modes, in `fp8_format`, their scales laid out as
    `fp8_scaling` says). `picks` (--stages best): each shape's pick; `work` (a RunPlan's): per
    shape, the stages to run and their refusals."""

    shapes: list[tuple[int, int, int]]
    stages: list[Any]
    spec_arg: str | None = None
    dtype: str = "fp32"
    alpha: float = 1.0
    beta: float = 0.0
    kind: str = "gemm"
    fp8_format: str = "e4m3"
    picks: dict[tuple[int, int, int], Any] | None = None
    work: Work | None = None
    fp8_scaling: str = "tensor"


class GemmRequest(NamedTuple):
    """`run gemm` (and the GEMMs of `run llm`, `tune`): the problem, its timing, its output."""

    problem: GemmProblem
    timed: Timed = Timed()
    output: Output = Output("run gemm")


class LlmProblem(NamedTuple):
    """The weight GEMMs (`gemms`, rooflinecli.core.llm) of one decode step of `preset` at each
    batch, the stages to run at their shapes (the reference among them), the spec, the element
    type, the plan's picks (--stages best) and work list over the GEMMs' shapes, and more
    settings for the document (`settings`)."""

    preset: Any
    gemms: list[Any]
    batches: list[int]
    stages: list[Any]
    spec_arg: str | None = None
    dtype: str = "fp16"
    picks: dict[tuple[int, int, int], Any] | None = None
    work: Work | None = None
    settings: Mapping[str, Any] | None = None


class LlmRequest(NamedTuple):
    """`run llm`: the problem, its timing, its output (the GEMM job's document fields)."""

    problem: LlmProblem
    timed: Timed = Timed()
    output: Output = Output("run llm")


class TuneRequest(NamedTuple):
    """`tune gemm` (`stage`: the stage whose tune_space is searched, at shapes[0]; dtype None:
    the stage's first) or `tune dispatch` (`stage_list`: the stages, default every one of the
    dtype), each stage timed for `budget_ms` on the GPU here (spec: `spec_arg`)."""

    shapes: list[tuple[int, int, int]]
    dtype: str | None = None
    spec_arg: str | None = None
    budget_ms: float = 200.0
    stage: str | None = None
    stage_list: str | None = None
    progress: Progress | None = None


class AttentionProblem(NamedTuple):
    """The attention shapes (rooflinecli.core.attention.Shape) and stages to run, the spec, the
    element type, whether PyTorch's SDPA references are timed beside them, and the plan's work
    list (per shape, the stages and their refusals)."""

    shapes: list[Any]
    stages: list[Any]
    spec_arg: str | None = None
    dtype: str = "fp16"
    references: bool = True
    work: Work | None = None


class AttentionRequest(NamedTuple):
    """`run attention`: the problem, its timing, its output."""

    problem: AttentionProblem
    timed: Timed = Timed()
    output: Output = Output("run attention")


class ChainProblem(NamedTuple):
    """`run llm --chain`: the token of `preset` at each batch (or, with `shape`, a chain of that
    one GEMM; M is the batch), the element type, the ways to run it, at most `layers` layers,
    a calibration document of the GPU (its HBM read roof), and the stages the chain does not
    run where the tune table picks them (`exclude`, default CHAIN_EXCLUDED)."""

    preset: Any
    batches: list[int]
    dtype: str
    spec_arg: str | None = None
    shape: tuple[int, int, int] | None = None
    ways: Sequence[str] = ("best", "cublas", "torch")
    layers: int | None = None
    calibration: dict[str, Any] | None = None
    exclude: dict[str, tuple[str, str]] | None = None


class ChainTiming(NamedTuple):
    """The chain's replays: untimed `warmup` per way, then `repeats` timed, from `seed`."""

    seed: int = 0
    warmup: int = 5
    repeats: int = 30


class ChainRequest(NamedTuple):
    """`run llm --chain`: the problem, its timing, and who hears of its progress (`log`)."""

    problem: ChainProblem
    timing: ChainTiming = ChainTiming()
    log: Callable[[str], None] | None = None
