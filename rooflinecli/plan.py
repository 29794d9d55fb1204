"""The run plan: what `run gemm`, `run llm` and `run attention` will do, decided before the GPU.

A plan resolves the stages asked for (`--stages`, the dtype's ladder, `--extra-stage`), the tuned
tile parameters (`--tuned`), the tune table's pick per shape (`--stages best`), and the shape
refusals, each decided once. It says per shape which stages run (the runner's work list), what is
left out of the tables and why (stages nobody named that cannot run a shape: one summary line,
not a row each), and which reference everything is timed beside. Stages named on the command
line that cannot run a shape are an error here (`run gemm`, `run attention`) or a skipped row
(`run llm`, whose GEMM shapes come from the model).

The device's name, where tuned tiles or the tune table need it, is asked for once: nvidia-smi for
a dry run, the GPU itself for a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rooflinecli.errors import RooflineError
from rooflinecli.stages import fp8, gemm

Shape = Any  # (M, N, K), or a rooflinecli.core.attention.Shape


@dataclass(frozen=True)
class Skip:
    """A stage nobody named, left out at a shape it cannot run (rooflinecli.stages Refusal)."""

    stage: str
    shape: str  # the shape's label: 4096x4096x4096, or attention's
    why: str
    kind: str  # what such stages are, for the summary: "decode stages"
    because: str  # why they were left out, for the summary: "they run at M = 1..64"

    def to_dict(self) -> dict[str, str]:
        return {"stage": self.stage, "shape": self.shape, "reason": self.why,
                "kind": self.kind, "because": self.because}  # fmt: skip


@dataclass
class RunPlan:
    """One run: per shape the stages to run (with the refusal recorded, where a named stage
    cannot run it on the way), the reference they are timed beside, what was left out."""

    dtype: str
    shapes: list[Shape]
    stages: list[Any]  # the stages asked for, in order, tuned tiles applied; no reference
    reference: Any | None  # the library reference (GEMM); attention's are PyTorch's, the runner's
    work: list[tuple[Shape, list[tuple[Any, str | None]]]]
    skipped: list[Skip] = field(default_factory=list)
    picks: dict[tuple[int, int, int], Any] | None = None  # --stages best: the pick per shape
    device_name: str | None = None  # where tuned tiles or the tune table asked for it
    user_stages: list[Any] = field(default_factory=list)  # --extra-stage, compiled first
    kind: str = "gemm"  # the problem kind (gemm_kind): "gemm", or "fp8"

    @property
    def chosen(self) -> list[Any]:
        """The stages and the reference, last (what `gemm.select` returns)."""
        return [*self.stages, *([self.reference] if self.reference is not None else [])]

    @property
    def steps(self) -> int:
        return sum(len(items) for _shape, items in self.work)

    def document_fields(self) -> dict[str, Any]:
        """What a results document says of the plan: the stages left out, if any."""
        return {"skipped": [s.to_dict() for s in self.skipped]} if self.skipped else {}


def gemm_label(shape: tuple[int, int, int]) -> str:
    return "x".join(map(str, shape))


def device_name(dry_run: bool, option: str, what: str) -> str:
    """The GPU's name, for `option` to take its `what`: nvidia-smi's on a dry run, else the
    GPU's own (CuPy)."""
    from rooflinecli.gpu.device import info, smi_device_name

    name = smi_device_name() if dry_run else info()["name"]
    if name is None:
        raise RooflineError(f"{option}: no GPU detected (nvidia-smi) to take its {what}")
    return str(name)


def picks_for(
    shapes: Sequence[tuple[int, int, int]], dtype: str, name: str
) -> dict[tuple[int, int, int], Any]:
    """`--stages best`: per shape, the stage of the tune tables of the device named, as
    rooflinecli.stages.dispatch resolves it (a Pick: stage, class, table)."""
    from rooflinecli.stages import dispatch

    tables = dispatch.tables_for(name)
    return {shape: dispatch.resolve(*shape, dtype, tables, name) for shape in shapes}


def _work(
    shapes: Sequence[Shape],
    stages: Sequence[Any],
    refusal: Any,  # (stage, shape) -> Refusal | None
    named: Iterable[Any],
    label: Any,  # shape -> its label
    raise_named: bool,
) -> tuple[list[tuple[Shape, list[tuple[Any, str | None]]]], list[Skip]]:
    """The work list and the skips: each refusal decided once. A named stage's refusal is an
    error (raise_named, in stage order) or a skipped row; another's leaves it out."""
    named_ids = {id(s) for s in named}
    refused = {(i, j): refusal(st, shape) for i, st in enumerate(stages) for j, shape in
               enumerate(shapes)}  # fmt: skip
    if raise_named:  # stages asked for by name must be able to run every shape asked for
        for (i, _j), why in refused.items():
            if why is not None and id(stages[i]) in named_ids:
                raise RooflineError(why.why)
    work: list[tuple[Shape, list[tuple[Any, str | None]]]] = []
    skipped: list[Skip] = []
    for j, shape in enumerate(shapes):
        items: list[tuple[Any, str | None]] = []
        for i, st in enumerate(stages):
            why = refused[(i, j)]
            if why is None or id(st) in named_ids:
                items.append((st, why.why if why else None))
            else:
                skipped.append(Skip(st.name, label(shape), why.why, why.kind, why.because))
        work.append((shape, items))
    return work, skipped


def gemm_kind(dtype: str, shapes: Iterable[tuple[int, int, int]]) -> str:
    """The problem kind of a GEMM run of `dtype`: "fp8" (A and B FP8 with per-tensor scales, B
    given as N x K, beside cuBLASLt's two modes; every shape checked against the FP8 contract
    here, the one place that checks it) or "gemm" (the dtype's stages beside its reference)."""
    if dtype != "fp8":
        return "gemm"
    from rooflinecli.stages.fp8 import check_shape

    for shape in shapes:
        check_shape(*shape)
    return "fp8"


def _fp8_refusals(
    dtype: str, fp8_format: str, fp8_scaling: str, beta: float, tuned: bool, user: bool
) -> None:
    """What --dtype fp8 refuses, one line each, before any work: beta != 0 (the timed
    comparison runs at beta = 0), --tuned and --extra-stage (no FP8 tuned tiles or user stages
    yet); --fp8-format and --fp8-scaling without it."""
    if dtype != "fp8":
        if fp8_format != "e4m3":
            raise RooflineError("--fp8-format goes with --dtype fp8")
        if fp8_scaling != "tensor":
            raise RooflineError("--fp8-scaling goes with --dtype fp8")
        return
    if beta != 0.0:
        raise RooflineError(
            "--dtype fp8 runs at beta = 0: torch._scaled_mm (the reference) takes a bias, not beta"
        )
    if tuned or user:
        raise RooflineError("--dtype fp8 takes neither --tuned nor --extra-stage yet")


def _gemm_refusal(stage: Any, shape: tuple[int, int, int]) -> Any:
    refusal = getattr(stage, "refusal", None)
    return refusal(*shape) if refusal is not None else None


def _scaled_refusal(scaling: str) -> Any:
    """_gemm_refusal, and for an FP8 stage the scales it cannot apply (--fp8-scaling)."""

    def refusal(stage: Any, shape: tuple[int, int, int]) -> Any:
        why = _gemm_refusal(stage, shape)
        if why is not None or stage.reference or getattr(stage, "kind", "") != "fp8":
            return why
        no = fp8.of_registry(stage).scaling_refusal(scaling)
        if no is None:
            return None
        return gemm.Refusal(no, "stages without these scales", f"--fp8-scaling {scaling}")

    return refusal


def gemm_plan(
    shapes: list[tuple[int, int, int]],
    stage_list: str | None,
    dtype: str,
    *,
    tuned: bool = False,
    extra_stages: Sequence[str] = (),
    dry_run: bool = False,
    beta: float = 0.0,
    fp8_format: str = "e4m3",
    fp8_scaling: str = "tensor",
) -> RunPlan:
    """`run gemm`: the problem kind (gemm_kind: FP8's refusals and shape checks first), the
    stages asked for (default: the dtype's ladder, less the stages built for other rows of C
    than every shape's), user stages before the reference, tuned tiles, or per shape the tune
    table's pick (`best`)."""
    from rooflinecli.stages.userstage import load_user_stage

    _fp8_refusals(dtype, fp8_format, fp8_scaling, beta, tuned, bool(extra_stages))
    kind = gemm_kind(dtype, shapes)

    best = (stage_list or "").strip() == "best"
    chosen = [gemm.reference_for(dtype)] if best else gemm.select(stage_list, dtype)
    if not stage_list:  # the default ladder: only the stages built for these rows of C
        chosen = gemm.built_for(chosen, (m for m, _n, _k in shapes))
    if best and (tuned or extra_stages):
        raise RooflineError(
            "--stages best takes its stages from the tune table: leave out --tuned and "
            "--extra-stage"
        )
    user = []
    for path in extra_stages:
        stage = load_user_stage(path)
        if dtype not in stage.all_dtypes:
            raise RooflineError(
                f"{path}: stage {stage.name} is {stage.dtype}; run with --dtype {stage.dtype}"
            )
        user.append(stage)
    reference, ladder = chosen[-1], chosen[:-1] + user
    named = [*ladder] if stage_list and not best else user
    refusal = _gemm_refusal if fp8_scaling == "tensor" else _scaled_refusal(fp8_scaling)
    work, skipped = _work(shapes, ladder, refusal, named, gemm_label, raise_named=True)
    plan = RunPlan(dtype, list(shapes), ladder, reference, work, skipped, user_stages=user,
                   kind=kind)  # fmt: skip
    if tuned:
        from rooflinecli.gpu.tune import load_tuned

        plan.device_name = device_name(dry_run, "--tuned", "tuned tiles")
        winners = load_tuned(plan.device_name)
        swap = {id(s): s.with_params(winners[s.name]) for s in ladder if s.name in winners}
        plan.stages = [swap.get(id(s), s) for s in ladder]
        plan.work = [(shape, [(swap.get(id(s), s), why) for s, why in items])
                     for shape, items in work]  # fmt: skip
    if best:
        plan.device_name = device_name(dry_run, "--stages best", "table")
        plan.picks = picks_for(shapes, dtype, plan.device_name)
        plan.work = [(shape, [(plan.picks[shape].stage, None)]) for shape in shapes]
    return plan


def llm_plan(
    shapes: list[tuple[int, int, int]],
    stage_list: str | None,
    dtype: str,
    extra_stages: Sequence[str] = (),
) -> RunPlan:
    """`run llm`: the stages asked for (default: all of the dtype) at the weight GEMMs' shapes,
    user stages before the reference, or per shape the tune table's pick (`best`). A named
    stage that cannot run a shape is a skipped row (the shapes come from the model)."""
    from rooflinecli.stages.userstage import load_user_stage

    user = [load_user_stage(path) for path in extra_stages]
    for s in user:
        if s.dtype != dtype:
            raise RooflineError(
                f"stage {s.name} ({s.toml_path}) is {s.dtype}, not {dtype} (use --dtype)"
            )
    check_dtype(dtype, user)
    best = (stage_list or "").strip() == "best"
    if best and user:
        raise RooflineError(
            "--stages best takes its stages from the tune table: leave out --extra-stage"
        )
    chosen = [gemm.reference_for(dtype)] if best else gemm.select(stage_list, dtype)
    reference, ladder = chosen[-1], chosen[:-1] + user
    named = [*ladder] if stage_list and not best else user
    work, skipped = _work(shapes, ladder, _gemm_refusal, named, gemm_label, raise_named=False)
    plan = RunPlan(dtype, list(shapes), ladder, reference, work, skipped, user_stages=user)
    if best:
        plan.device_name = device_name(False, "--stages best", "table")
        plan.picks = picks_for(shapes, dtype, plan.device_name)
        plan.work = [(shape, [(plan.picks[shape].stage, None)]) for shape in shapes]
    return plan


def check_dtype(dtype: str, extra: Sequence[Any]) -> None:
    """One line, before any GPU work, when the registry cannot time this dtype yet."""
    have = sorted({d for s in gemm.STAGES if not s.reference for d in s.all_dtypes})
    hint = f"use --dtype {' or '.join(d for d in have if d != dtype) or 'fp32'}"
    try:
        gemm.reference_for(dtype)
    except RooflineError:
        raise RooflineError(
            f"no {dtype} reference in the stage registry yet, nothing to check against: {hint}"
        ) from None
    if not gemm.stage_names(dtype, include_reference=False) and not extra:
        raise RooflineError(f"no {dtype} stages in the registry yet: {hint}")


def attention_plan(shapes: list[Any], stage_list: str | None, dtype: str) -> RunPlan:
    """`run attention`: the attention stages asked for (default: all of the dtype) at every
    shape; the references are PyTorch's (the runner's, when PyTorch is importable)."""
    from rooflinecli.stages import attention

    chosen = attention.select(stage_list, dtype)
    work, skipped = _work(
        shapes,
        chosen,
        lambda st, shape: st.refusal(shape, dtype),
        chosen if stage_list else [],
        lambda shape: shape.label,
        raise_named=True,
    )
    return RunPlan(dtype, list(shapes), chosen, None, work, skipped)
