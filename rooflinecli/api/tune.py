"""The tune job: a stage's tile parameters (`tune gemm`) or the best stage per shape class
(`tune dispatch`) searched on the GPU here, each through the GEMM job."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rooflinecli.api.gemm import run_gemm
from rooflinecli.api.requests import TuneRequest
from rooflinecli.errors import RooflineError


def dispatch(request: TuneRequest) -> dict[str, Any]:
    """`roofline tune dispatch`: every stage of the dtype (or `stage_list`) at every shape; per
    class the stage with the best geomean against the reference (dispatch.winners), and in a
    class of tile GEMMs the wave model's candidates, go into the user's tune table of this GPU
    (what `--stages best` reads first). The document's `dispatch` says what was saved where."""
    from rooflinecli.gpu.timer import Timing
    from rooflinecli.stages import dispatch, gemm

    r = request
    dtype = str(r.dtype)
    chosen = gemm.select(r.stage_list, dtype)
    doc = run_gemm(
        r.shapes, chosen, r.spec_arg, dtype=dtype, timing=Timing(budget_ms=r.budget_ms),
        progress=r.progress, command="tune dispatch",
    )  # fmt: skip
    created = str(doc.get("created", ""))[:10]
    entries = dispatch.winners((rec, f"tune dispatch {created}") for rec in doc["records"])
    saved = dispatch.save_user(doc["device"]["name"], entries) if entries else None
    doc["dispatch"] = {
        "saved_to": str(saved) if saved else None,
        "picks": [dispatch.entry_dict(e) for e in entries],
    }
    return doc


def gemm(request: TuneRequest) -> dict[str, Any]:
    """Every variant of a stage's tune_space that compiles without spills, verified and timed
    beside the reference at m x n x k (n, k default to m) in `dtype` (default: the stage's
    first); the fastest verified
    one is saved for `run gemm --tuned`. The document's `tune` says which won, which were
    dropped and where the winner went."""
    from rooflinecli.gpu import device, tune
    from rooflinecli.gpu.timer import Timing
    from rooflinecli.stages import gemm

    stage_name, dtype = str(request.stage), request.dtype
    if stage_name not in gemm.BY_NAME:
        known = ", ".join(gemm.BY_NAME)
        raise RooflineError(f"unknown stage {stage_name!r}; known: {known}")
    stage = gemm.BY_NAME[stage_name]
    dtype = dtype or stage.dtype
    if dtype not in stage.all_dtypes:
        raise RooflineError(
            f"stage {stage_name} builds for {', '.join(stage.all_dtypes)}, not {dtype}"
        )
    dev = device.info()
    keep, dropped = tune.candidates(stage, dev["arch"])
    if not keep:
        raise RooflineError(f"no variant of {stage_name} compiles without spills")
    chosen = [*keep, gemm.reference_for(dtype)]
    doc = run_gemm(
        request.shapes[:1],
        chosen,
        request.spec_arg,
        dtype=dtype,
        timing=Timing(budget_ms=request.budget_ms),
        progress=request.progress,
        command="tune gemm",
    )
    win = tune.best(doc["records"])
    saved = tune.save_winner(dev["name"], stage_name, win["params"]) if win else None
    doc["tune"] = {
        "stage": stage_name,
        "dropped": dropped,
        "winner": win and win["stage"],
        "saved_to": str(saved) if saved else None,
    }
    return doc


def tune_dispatch(
    shapes: list[tuple[int, int, int]],
    dtype: str,
    spec_arg: str | None,
    budget_ms: float,
    stage_list: str | None = None,
    progress: Callable[..., None] | None = None,
) -> dict[str, Any]:
    """dispatch(TuneRequest(...)) with its values spelled out."""
    return dispatch(TuneRequest(shapes, dtype, spec_arg, budget_ms, None, stage_list, progress))


def tune_gemm(
    stage_name: str,
    m: int,
    spec_arg: str | None,
    budget_ms: float,
    progress: Callable[..., None] | None = None,
    dtype: str | None = None,
    n: int | None = None,
    k: int | None = None,
) -> dict[str, Any]:
    """gemm(TuneRequest(...)) with its values spelled out (n, k default to m)."""
    shape = (m, n or m, k or m)
    return gemm(TuneRequest([shape], dtype, spec_arg, budget_ms, stage_name, None, progress))
