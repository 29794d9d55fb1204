"""The attention job: `run attention` on the GPU here. `run(request)` takes an AttentionRequest;
`run_attention(...)` is the same call with its values spelled out, for scripts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rooflinecli import results
from rooflinecli.api.common import timing_settings
from rooflinecli.api.requests import AttentionProblem, AttentionRequest, Output, Timed


def run(request: AttentionRequest) -> dict[str, Any]:
    """Verify, time (interleaved with PyTorch's SDPA flash and cuDNN backends, when PyTorch is
    importable) and place every attention stage at every shape (rooflinecli.core.attention.Shape)
    on the GPU here: the results document (rooflinecli.gpu.attention does the work)."""
    from rooflinecli.gpu import attention
    from rooflinecli.gpu.timer import Timing, method_text

    p, timed, out = request
    timing = timed.timing or Timing()
    device, spec, records, torch_info = attention.run_attention(
        p.shapes, p.stages, p.spec_arg, p.dtype, timed.seed, timing, out.progress, p.references,
        work=p.work,
    )  # fmt: skip
    settings = {
        **timing_settings(timed.seed, timing),
        "timing": "each stage interleaved with the PyTorch references, round by round, "
        "alternating which goes first; every repeat kept (samples_ms); the median reported",
        "check": "float32 attention of the same rounded inputs computed by CuPy on the GPU "
        "(every element of O), output poisoned with NaN first; the first launch and the last "
        "timed launch checked",
        "tolerance_rule": attention.tolerance_rule(p.dtype),
        "timing_method": method_text(timing),
        "references": "PyTorch scaled_dot_product_attention under sdpa_kernel(FLASH_ATTENTION) "
        "and sdpa_kernel(CUDNN_ATTENTION), on the same device buffers"
        if torch_info
        else "none (PyTorch not importable, fp32, or --no-references)",
        "torch": torch_info,
    }
    return results.new_document(
        spec.to_dict(), device, records, command=out.command,
        environment=results.environment(), settings=settings, **dict(out.fields or {}),
    )  # fmt: skip


def run_attention(
    shapes: list[Any],
    stages: list[Any],
    spec_arg: str | None = None,
    *,
    dtype: str = "fp16",
    seed: int = 0,
    timing: Any = None,
    progress: Callable[..., None] | None = None,
    references: bool = True,
    command: str = "run attention",
    work: list[tuple[Any, list[tuple[Any, str | None]]]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """run(AttentionRequest(...)) with its values spelled out; `extra`: more top-level fields
    of the document."""
    problem = AttentionProblem(shapes, stages, spec_arg, dtype, references, work)
    return run(AttentionRequest(problem, Timed(seed, timing), Output(command, progress, extra)))
