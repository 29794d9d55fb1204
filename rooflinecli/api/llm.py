"""The LLM job: the weight GEMMs of one decode step timed at each batch through the GEMM job,
and per stage the microseconds of a whole token."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rooflinecli.api import gemm
from rooflinecli.api.requests import GemmProblem, GemmRequest, LlmProblem, LlmRequest, Output, Timed


def run(request: LlmRequest) -> dict[str, Any]:
    """Time the weight GEMMs of one decode step at each batch (the GEMM job at their shapes):
    one record per stage, GEMM and batch (keyed by its workload), and per stage the
    microseconds of a whole token. With `picks` each shape runs its pick, and the per-token
    rows are `best` (the picks together), the reference and the roofs."""
    from rooflinecli import plan
    from rooflinecli.core import llm
    from rooflinecli.core.specs import from_dict

    p, timed, out = request
    preset, gemms, batches, stages, dtype, picks = (p.preset, p.gemms, p.batches, p.stages,
                                                    p.dtype, p.picks)  # fmt: skip
    by_shape: dict[tuple[int, int, int], list[tuple[Any, int]]] = {}
    for b in batches:
        for g in gemms:
            by_shape.setdefault(g.shape(b), []).append((g, b))
    # the problem kind of the dtype (fp8: FP8 weights and activations beside cuBLASLt's FP8 GEMM,
    # its shapes checked against the FP8 contract)
    kind = plan.gemm_kind(dtype, list(by_shape))
    problem = GemmProblem(list(by_shape), stages, p.spec_arg, dtype, kind=kind, picks=picks,
                          work=p.work)  # fmt: skip
    measured_doc = gemm.run(
        GemmRequest(problem, timed, Output("run gemm", out.progress, out.fields))
    )
    spec = from_dict(measured_doc["spec"])
    records: list[dict[str, Any]] = []
    for b in batches:
        for g in gemms:
            model_rec = llm.gemm_record(preset, g, b, spec, dtype)
            for r in measured_doc["records"]:
                if (r["m"], r["n"], r["k"]) != g.shape(b):
                    continue
                ok = r.get("verified") is True and r.get("time_ms")
                records.append(
                    {
                        **r,
                        "workload": model_rec["workload"],
                        "gemm": g.name,
                        "preset": preset.name,
                        "batch": b,
                        "count": g.count,
                        "crossing_batch": model_rec["crossing_batch"],
                        "time_us_per_token": g.count * r["time_ms"] * 1e3 / b if ok else None,
                        "allowed_us_per_token": model_rec["time_us_per_token"],
                    }
                )
    return {
        **measured_doc,
        "command": out.command,
        "preset": preset.to_dict(),
        "batches": batches,
        "gemms": [g.name for g in gemms],
        "per_token": llm.per_token(
            records,
            [llm.BEST, *(s.name for s in stages if s.reference)]
            if picks is not None
            else [s.name for s in stages],
            len(gemms),
            batches,
        ),
        "settings": {**measured_doc["settings"], **(p.settings or {})},
        "records": records,
    }


def run_llm(
    preset: Any,
    gemms: list[Any],
    batches: list[int],
    stages: list[Any],
    spec_arg: str | None,
    dtype: str,
    seed: int = 0,
    timing: Any = None,
    progress: Callable[..., None] | None = None,
    settings: dict[str, Any] | None = None,
    picks: dict[tuple[int, int, int], Any] | None = None,
    work: list[tuple[tuple[int, int, int], list[tuple[Any, str | None]]]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """run(LlmRequest(...)) with its values spelled out; `extra`: more top-level fields of the
    document."""
    problem = LlmProblem(preset, gemms, batches, stages, spec_arg, dtype, picks, work, settings)
    return run(LlmRequest(problem, Timed(seed, timing), Output("run llm", progress, extra)))
