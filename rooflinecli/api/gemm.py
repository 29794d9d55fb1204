"""The GEMM job: `run gemm` (and the GEMMs of `run llm` and `tune`) on the GPU here, and what it
would run without one (`--dry-run`). `run(request)` takes a GemmRequest; `run_gemm(...)` is the
same call with its values spelled out, for scripts (benchmarks/)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rooflinecli import results
from rooflinecli.api.common import compile_user_stages, timing_settings
from rooflinecli.api.requests import GemmProblem, GemmRequest, Output, Timed
from rooflinecli.core.specs import Spec
from rooflinecli.errors import RooflineError


def run(request: GemmRequest) -> dict[str, Any]:
    """Verify, time (interleaved with the reference) and place every stage at every shape on
    the GPU here: the results document. The problem kind (GemmProblem.kind) chooses the runner
    of the one loop: rooflinecli.gpu.runner (gemm) or rooflinecli.gpu.fp8 (fp8). With `picks`
    (--stages best), each shape runs its own pick and the reference of `stages` only."""
    from rooflinecli.gpu.timer import Timing

    p, timed, out = request
    timing = timed.timing or Timing()
    fields = dict(out.fields or {})
    stages, work = p.stages, p.work
    if p.picks is not None:  # --stages best: each shape with its own pick, beside the reference
        stages = [s for s in stages if s.reference]
        if work is None:
            work = [(shape, [(p.picks[shape].stage, None)]) for shape in p.shapes]
        best = "best: one stage per shape from the tune table"
        fields["settings"] = {**fields.get("settings", {}), "stages": best}
    device, spec, records = _run_kind(p._replace(stages=stages, work=work), timed.seed, timing,
                                      out.progress)  # fmt: skip
    if p.picks is not None:
        for r in records:
            pick = p.picks.get((r["m"], r["n"], r["k"]))
            if pick is not None and r.get("kind") != "reference" and r["stage"] == pick.stage.name:
                r.update(pick.fields())
    settings = _settings(p, timed.seed, timing, fields.pop("settings", {}))
    return results.new_document(
        spec.to_dict(), device, records, command=out.command,
        environment=results.environment(), settings=settings, **fields,
    )  # fmt: skip


def _run_kind(p: GemmProblem, seed: int, timing: Any, progress: Any) -> Any:
    """(device, spec, records) from the runner of the problem's kind."""
    if p.kind == "fp8":
        from rooflinecli.gpu import fp8

        return fp8.run_gemm(p.shapes, p.stages, p.spec_arg, p.alpha, seed, timing, progress,
                            p.work, p.fp8_format, p.fp8_scaling)  # fmt: skip
    from rooflinecli.gpu import runner

    return runner.run_gemm(p.shapes, p.stages, p.spec_arg, p.alpha, p.beta, seed, timing,
                           progress=progress, dtype=p.dtype, work=p.work)  # fmt: skip


def _settings(p: GemmProblem, seed: int, timing: Any, more: dict[str, Any]) -> dict[str, Any]:
    """What the document says of how the run was timed and checked (and `more`), for the
    problem's kind."""
    from rooflinecli.gpu.timer import method_text

    settings = {
        **timing_settings(seed, timing),
        "timing": "each stage interleaved with the reference, round by round, alternating which "
        "goes first; every repeat kept (samples_ms); the median reported",
        "timing_method": method_text(timing),
        "check": "float64 product of the same inputs (cuBLAS DGEMM via cupy.matmul), output "
        "poisoned first; the first launch and the last timed launch checked",
        "tolerance_rule": _tolerance_rule(p.dtype),
        **more,
    }
    if p.kind == "fp8":
        from rooflinecli.core.fp8 import tolerance_rule
        from rooflinecli.gpu.fp8 import CHECK, CONTRACT

        settings.update(
            timing="each stage interleaved with both cuBLASLt FP8 modes (torch._scaled_mm: "
            "default, promoted; use_fast_accum, not promoted), round by round, alternating which "
            "goes first; compared with the mode whose accumulation matches the stage's; every "
            "repeat kept (samples_ms); the median reported",
            check=CHECK,
            tolerance_rule=tolerance_rule(None) + " (unpromoted; promoted stages: their span)",
            fp8_format=p.fp8_format,
            **CONTRACT,
        )
    return settings


def _tolerance_rule(dtype: str) -> str:
    from rooflinecli.gpu import runner

    return runner.tolerance_rule(dtype)


def run_gemm(
    shapes: list[tuple[int, int, int]],
    stages: list[Any],
    spec_arg: str | None = None,
    *,
    dtype: str = "fp32",
    alpha: float = 1.0,
    beta: float = 0.0,
    seed: int = 0,
    timing: Any = None,
    progress: Callable[..., None] | None = None,
    command: str = "run gemm",
    picks: dict[tuple[int, int, int], Any] | None = None,
    work: list[tuple[tuple[int, int, int], list[tuple[Any, str | None]]]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """run(GemmRequest(...)) with its values spelled out: the problem kind is the dtype's
    (rooflinecli.plan.gemm_kind, which checks FP8 shapes), `fp8_format` and `fp8_scaling` among
    `extra`, the
    rest of `extra` top-level fields of the document. `progress(label, total=steps)` is called
    as each stage and shape begins."""
    from rooflinecli import plan

    fp8_format = str(extra.pop("fp8_format", "e4m3"))
    fp8_scaling = str(extra.pop("fp8_scaling", "tensor"))
    problem = GemmProblem(shapes, stages, spec_arg, dtype, alpha, beta,
                          plan.gemm_kind(dtype, shapes), fp8_format, picks, work,
                          fp8_scaling=fp8_scaling)  # fmt: skip
    return run(GemmRequest(problem, Timed(seed, timing), Output(command, progress, extra)))


def _is_fp8(stage: Any) -> bool:
    return getattr(stage, "kind", "") == "fp8" and not stage.reference


def _fp8_job(stage: Any, fp8_format: str, fp8_scaling: str) -> Any:
    """The build the FP8 runner launches for a registry stage (rooflinecli.gpu.fp8)."""
    from rooflinecli.gpu import fp8
    from rooflinecli.stages.fp8 import of_registry

    return fp8.build_job(of_registry(stage), fp8_format, "bf16", fp8_scaling)


def _dry_build(stage: Any, arch: str, dtype: str, fp8_format: str, fp8_scaling: str) -> Any:
    """The build a run launches for a stage (an FP8 stage's for its format and scales)."""
    from rooflinecli.stages import compiler

    if _is_fp8(stage):  # as the FP8 runner builds it
        return compiler.build(_fp8_job(stage, fp8_format, fp8_scaling))
    return compiler.compile_stage(stage, arch, dtype)


def dry_run_gemm(
    shapes: list[tuple[int, int, int]],
    stages: Sequence[Any],
    arch: str,
    dtype: str,
    spec: Spec,
    work: Sequence[tuple[tuple[int, int, int], Sequence[tuple[Any, str | None]]]] | None = None,
    fp8_format: str = "e4m3",
    fp8_scaling: str = "tensor",
) -> list[dict[str, Any]]:
    """What `run gemm` would run, without a GPU: every stage compiled by NVRTC for `arch`
    (cached), each shape checked against the stage's refusals, the launch it would get (grid,
    block, shared memory) and the compiler's registers and spills. One row per stage and shape;
    a stage that does not compile is a RooflineError (one line; a user stage's names its file).
    Persistent stages size their grid by the spec's SM count. `work` (a rooflinecli.plan
    RunPlan's): the stages of each shape and their refusals, as decided there; a stage it
    leaves out of a shape has no row there (nor a build, when it is left out of every one).
    An FP8 stage is compiled as the run builds it: for `fp8_format` and `fp8_scaling`, bf16 out."""
    from rooflinecli.stages import compiler
    from rooflinecli.stages.gemm import cannot_run

    planned = None
    if work is not None:
        planned = {(id(s), j): why for j, (_shape, items) in enumerate(work) for s, why in items}
    built_here = {sid for sid, _ in planned} if planned is not None else None
    # every build at once, in parallel processes (the loop below finds the cubins)
    wanted = [s for s in stages if built_here is None or id(s) in built_here]
    compiler.precompile([s for s in wanted if not _is_fp8(s)], arch, dtype)
    if arch == "sm_90a":  # the FP8 stages build for sm_90a only (cannot_run says so elsewhere)
        compiler.compile_many([_fp8_job(s, fp8_format, fp8_scaling) for s in wanted if _is_fp8(s)])
    rows: list[dict[str, Any]] = []
    for stage in stages:
        built = None
        at = [j for j in range(len(shapes)) if planned is None or (id(stage), j) in planned]
        if not stage.reference and not at:
            continue
        refusals = {j: planned[(id(stage), j)] for j in at} if planned is not None else None
        if not stage.reference:
            stage = stage.for_arch(arch)
        why_not = cannot_run(stage, arch)
        too_old = f"skipped: {why_not}" if why_not else None
        if not stage.reference and too_old is None:
            if getattr(stage, "toml_path", ""):
                compile_user_stages([stage], arch, dtype)  # its error names the file
            built = _dry_build(stage, arch, dtype, fp8_format, fp8_scaling)
        res = built.resources if built is not None else None
        for j, (m, n, k) in enumerate(shapes):
            if stage.reference:
                why = None
            elif refusals is not None:
                if j not in refusals:
                    continue  # the plan left it out here
                why = too_old or refusals[j]
            else:
                why = too_old or stage.refuses(m, n, k)
            row: dict[str, Any] = {"stage": stage.name, "shape": f"{m}x{n}x{k}", "dtype": dtype}
            row.update(grid=None, block=None, smem_bytes=None, registers=None, spill_bytes=None)
            if stage.reference:
                row["status"] = "library call"
            elif why:
                row["status"] = why if why.startswith("skipped") else f"skipped: {why}"
            else:
                shaped, built_at = stage, res
                if stage.widths and spec.sm_count:  # a tile width chosen by the shape
                    shaped = stage.for_shape(m, n, spec.sm_count)
                    row["params"] = dict(shaped.params)
                if shaped is not stage:  # ... and its own build
                    built_at = _dry_build(shaped, arch, dtype, fp8_format, fp8_scaling).resources
                _dry_launch(row, shaped, m, n, spec.sm_count, built_at)
            rows.append(row)
    return rows


def _dry_launch(row: dict[str, Any], stage: Any, m: int, n: int, sms: int | None, res: Any) -> None:
    """A dry-run row's launch (grid, block, shared memory) and the build's resources."""
    try:
        grid, block, smem = stage.launch(m, n, sms)
    except RooflineError as exc:
        row["status"] = f"skipped: {exc.message}"
        return
    row.update(
        grid="x".join(map(str, grid)),
        block="x".join(map(str, block)),
        smem_bytes=smem + (res.smem_static_bytes if res else 0),
        registers=res.registers if res else None,
        spill_bytes=res.spill_bytes if res else None,
        status="would run",
    )
