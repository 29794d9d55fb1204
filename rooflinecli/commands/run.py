"""`roofline run`: verify, time and place every stage on the GPU this runs on."""

from __future__ import annotations

from typing import Any

import click

from rooflinecli import files, results
from rooflinecli.commands import LazyGroup
from rooflinecli.errors import RooflineError
from rooflinecli.options import (
    FINITE,
    SIZE,
    attention_shape,
    attention_shape_options,
    chart_option,
    check_sweep,
    columns_option,
    dtype_option,
    extra_stage_option,
    fail_unverified,
    format_option,
    gemm_dtype_option,
    gpus_option,
    max_shapes_option,
    output_option,
    parse_shapes,
    place_on_roofs,
    roofs_option,
    spec_option,
    split_list,
    timing_of,
    timing_options,
)
from rooflinecli.present import View, document, output, table
from rooflinecli.present.output import chart_wanted, emit, live
from rooflinecli.present.progress import progress
from rooflinecli.stages import attention, gemm


@click.group(
    cls=LazyGroup,
    lazy={
        "llm": (
            "rooflinecli.commands.llm",
            "run_llm",
            "Time the weight GEMMs of one decode step at each batch, and place them on the "
            "roofline.",
        )
    },
)
def run() -> None:
    """Run stages on the GPU (verify, time, place on the roofline)."""


def _dry_run(p: Any, arch: str, why: str, spec_arg: str | None, fmt: str) -> None:
    """`run gemm --dry-run`: what would run, compiled for `arch`; no GPU touched."""
    from rooflinecli import api
    from rooflinecli.stages import compiler
    from rooflinecli.stages.inspect import check_arch

    check_arch(arch)
    spec, spec_why = api.default_spec(spec_arg)
    if p.picks is not None:  # every pick at every shape, as before the tune table was planned
        chosen = [*{x.stage.name: x.stage for x in p.picks.values()}.values(), *p.chosen]
        rows = api.dry_run_gemm(p.shapes, chosen, arch, p.dtype, spec)
    else:
        chosen = p.chosen
        rows = api.dry_run_gemm(p.shapes, chosen, arch, p.dtype, spec, work=p.work)
    nvrtc = compiler.nvrtc_version()
    compiled = sum(1 for s in chosen if not s.reference)
    title = (
        f"Dry run: {compiled} stage(s) x {len(p.shapes)} shape(s), {p.dtype}, compiled for "
        f"{arch} ({why}; NVRTC {nvrtc}), grids for {spec.name} ({spec_why}); nothing ran"
    )
    skipped = p.document_fields()
    payload = {"command": "run gemm --dry-run", "arch": arch, "nvrtc": nvrtc, "rows": rows,
               **skipped}  # fmt: skip
    columns = table.DRY_RUN_COLUMNS
    parts = [output.Rows(rows, columns, title=title), *document.skipped_line(skipped)]
    emit(output.of_rows(rows, columns, parts, payload), fmt)


@run.command("gemm")
@gpus_option()
@click.option("--m", type=SIZE, default=None, help="Rows of C.")
@click.option("--n", type=SIZE, default=None, help="Columns of C (default: M).")
@click.option("--k", type=SIZE, default=None, help="Inner dimension (default: M).")
@click.option(
    "--sizes",
    default=None,
    metavar="LIST",
    help="Sweep: 1024,4096,127x333x65 (at most 2,000 shapes unless --max-shapes says more).",
)
@max_shapes_option
@click.option(
    "--stages",
    "stage_list",
    default=None,
    metavar="LIST",
    help="Comma-separated stages (default: all of the dtype), or 'best': per shape, the stage "
    "of the GPU's tune table (docs/dispatch.md). The reference always runs. An item "
    "stage@P=V,Q=W is the stage with those tile parameters (as `roofline tune` names them). "
    f"Stages: {', '.join(gemm.stage_names(include_reference=False))}.",
)
@gemm_dtype_option
@spec_option
@click.option("--alpha", type=FINITE, default=1.0, show_default=True)
@click.option("--beta", type=FINITE, default=0.0, show_default=True, help="Non-zero: C is read.")
@timing_options
@click.option("--tuned", is_flag=True, help="Use tile parameters saved by `roofline tune`.")
@extra_stage_option(
    "Your own kernel, described by a small TOML file, run and verified beside ours."
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="No GPU: compile every stage that would run with NVRTC, check each shape against the "
    "stages' limits, print what would run (grid, block, shared memory, registers, spills) and "
    "stop.",
)
@click.option(
    "--arch",
    default=None,
    metavar="SM",
    help="With --dry-run: the NVRTC target, e.g. sm_80 (default: the GPU nvidia-smi reports, "
    "else sm_90a).",
)
@chart_option
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
@roofs_option
@format_option
@columns_option
@output_option
def run_gemm(
    m: int | None,
    n: int | None,
    k: int | None,
    sizes: str | None,
    max_shapes: int,
    stage_list: str | None,
    dtype: str,
    fp8_format: str,
    spec_arg: str | None,
    alpha: float,
    beta: float,
    seed: int,
    budget_ms: float,
    repeats: int | None,
    max_noise: float | None,
    no_flush: bool,
    tuned: bool,
    extra_stages: tuple[str, ...],
    dry_run: bool,
    arch: str | None,
    chart_flag: bool | None,
    quiet: bool,
    roof_set: str,
    calibration: str | None,
    fmt: str,
    view: View,
    output: str | None,
    force: bool,
) -> None:
    """Verify each stage against a float64 product, time it, and place it on the roofline."""
    from rooflinecli import api, plan

    shapes = parse_shapes(m, n, k, sizes)
    check_sweep(shapes, max_shapes, "--sizes")
    fp8 = fp8_settings(dtype, fp8_format, beta, tuned, extra_stages, shapes)
    timing = timing_of(budget_ms, repeats, max_noise, no_flush)
    table.select(table.RUN, view)  # an unknown --columns name: one line, before any work
    draw = chart_wanted(chart_flag, fmt, table.console().is_terminal)
    if arch and not dry_run:
        raise RooflineError("--arch goes with --dry-run (a run compiles for the GPU it runs on)")
    if dry_run and output:
        raise RooflineError("--dry-run writes no results document: leave out --output")
    p = plan.gemm_plan(
        shapes, stage_list, dtype, tuned=tuned, extra_stages=extra_stages, dry_run=dry_run
    )
    target, why = api.target_arch(arch)
    if dry_run:
        _dry_run(p, target, why, spec_arg, fmt)
        return
    api.compile_user_stages(p.user_stages, target, dtype)  # a compile error: one line, first
    with progress(not quiet and live(fmt)) as tick:
        doc = api.run_gemm(
            shapes, p.chosen, spec_arg, dtype=dtype, alpha=alpha, beta=beta, seed=seed,
            timing=timing, progress=tick, picks=p.picks, work=p.work, **fp8,
            **p.document_fields(),
        )  # fmt: skip
    doc = place_on_roofs(doc, roof_set, calibration)
    if output:
        files.write_output(output, results.dumps(doc), force=force)
    emit(document.gemm_run(doc, shapes, view, draw, p.picks), fmt)
    fail_unverified(doc)


def fp8_settings(
    dtype: str,
    fp8_format: str,
    beta: float,
    tuned: bool,
    extra_stages: tuple[str, ...],
    shapes: list[tuple[int, int, int]],
) -> dict[str, Any]:
    """What --dtype fp8 passes on (its format), or its refusals, one line each, before any work:
    beta != 0 (the timed comparison runs at beta = 0), --tuned and --extra-stage (no FP8 tuned
    tiles or user stages yet), shapes outside the FP8 contract (K and N multiples of 16)."""
    if dtype != "fp8":
        if fp8_format != "e4m3":
            raise RooflineError("--fp8-format goes with --dtype fp8")
        return {}
    from rooflinecli.stages.fp8 import check_shape

    if beta != 0.0:
        raise RooflineError(
            "--dtype fp8 runs at beta = 0: torch._scaled_mm (the reference) takes a bias, not beta"
        )
    if tuned or extra_stages:
        raise RooflineError("--dtype fp8 takes neither --tuned nor --extra-stage yet")
    for shape in shapes:
        check_shape(*shape)
    return {"fp8_format": fp8_format}


def parse_attention_shapes(
    batch: int | None,
    heads: int | None,
    seq: int | None,
    head_dim: int | None,
    kv_heads: int | None,
    causal: bool,
    shapes: str | None,
) -> list[Any]:
    """--batch/--heads/--seq/--head-dim [--kv-heads], or --shapes BxHxNxD,BxHxKVxNxD,..."""
    one = (batch, heads, seq, head_dim)
    if shapes:
        if any(v is not None for v in (*one, kv_heads)):
            raise RooflineError(
                "give either --batch/--heads/--seq/--head-dim or --shapes, not both"
            )
        out = []
        for token in split_list(shapes, "--shapes"):
            parts = token.lower().split("x")
            if len(parts) not in (4, 5):
                raise RooflineError(f"bad shape {token!r}: write BxHxNxD or BxHxKVxNxD")
            try:
                dims = [SIZE.convert(p, None, None) for p in parts]
            except click.BadParameter as exc:
                raise RooflineError(f"bad shape {token!r}: {exc.format_message()}") from None
            b, h, *rest = dims
            kv = rest.pop(0) if len(rest) == 3 else h
            out.append(attention_shape(b, h, rest[0], rest[1], kv, causal))
        return out
    names = ("--batch", "--heads", "--seq", "--head-dim")
    missing = [n for n, v in zip(names, one, strict=True) if v is None]
    if missing:
        raise RooflineError(f"give {', '.join(missing)} (or --shapes BxHxNxD,...)")
    return [attention_shape(batch, heads, seq, head_dim, kv_heads, causal)]  # type: ignore[arg-type]


@run.command("attention")
@gpus_option()
@attention_shape_options(required=False)
@click.option(
    "--shapes",
    default=None,
    metavar="LIST",
    help="Sweep: BxHxNxD or BxHxKVxNxD, comma-separated (e.g. 32x16x512x128,1x16x16384x128); "
    "at most 2,000 shapes unless --max-shapes says more.",
)
@max_shapes_option
@click.option(
    "--stages",
    "stage_list",
    default=None,
    metavar="LIST",
    help="Comma-separated attention stages (default: all of the dtype). "
    f"Stages: {', '.join(attention.stage_names())}.",
)
@dtype_option
@spec_option
@timing_options
@click.option(
    "--no-references",
    is_flag=True,
    help="Do not time PyTorch's SDPA (flash and cuDNN backends) beside the stages.",
)
@chart_option
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
@roofs_option
@format_option
@columns_option
@output_option
def run_attention(
    batch: int | None,
    heads: int | None,
    seq: int | None,
    head_dim: int | None,
    kv_heads: int | None,
    causal: bool,
    shapes: str | None,
    max_shapes: int,
    stage_list: str | None,
    dtype: str,
    spec_arg: str | None,
    seed: int,
    budget_ms: float,
    repeats: int | None,
    max_noise: float | None,
    no_flush: bool,
    no_references: bool,
    chart_flag: bool | None,
    quiet: bool,
    roof_set: str,
    calibration: str | None,
    fmt: str,
    view: View,
    output: str | None,
    force: bool,
) -> None:
    """Verify each attention stage against float32 attention, time it beside PyTorch's SDPA
    (flash and cuDNN backends, when PyTorch is installed), and place it on the roofline."""
    from rooflinecli import api, plan

    wanted = parse_attention_shapes(batch, heads, seq, head_dim, kv_heads, causal, shapes)
    check_sweep(wanted, max_shapes, "--shapes")
    timing = timing_of(budget_ms, repeats, max_noise, no_flush)
    table.select(table.RUN, view)
    draw = chart_wanted(chart_flag, fmt, table.console().is_terminal)
    p = plan.attention_plan(wanted, stage_list, dtype)
    with progress(not quiet and live(fmt)) as tick:
        doc = api.run_attention(
            wanted, p.stages, spec_arg, dtype=dtype, seed=seed, timing=timing, progress=tick,
            references=not no_references, work=p.work, **p.document_fields(),
        )  # fmt: skip
    doc = place_on_roofs(doc, roof_set, calibration)
    if output:
        files.write_output(output, results.dumps(doc), force=force)
    emit(document.report(doc, view, draw), fmt)
    fail_unverified(doc)
