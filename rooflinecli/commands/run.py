"""`roofline run`: verify, time and place every stage on the GPU this runs on."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from rooflinecli.commands import LazyGroup, examples
from rooflinecli.errors import RooflineError
from rooflinecli.options import (
    ATTENTION_ASK,
    FINITE,
    GEMM_ASK,
    SIZE,
    Emit,
    GemmAsk,
    Roofs,
    attention_shape_options,
    attention_shapes,
    chart_option,
    columns_option,
    dtype_option,
    emits,
    extra_stage_option,
    format_option,
    gather,
    gemm_ask,
    gemm_dtype_option,
    gemm_request,
    gpus_option,
    max_shapes_option,
    output_option,
    roofs_option,
    spec_option,
    timing_options,
)
from rooflinecli.present import document, output, table
from rooflinecli.present.output import emit
from rooflinecli.present.progress import progress
from rooflinecli.stages import attention, gemm

if TYPE_CHECKING:
    from rooflinecli.api.requests import Timed


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


def _dry_run(p: Any, ask: GemmAsk, arch: str, why: str, spec_arg: str | None, fmt: str) -> None:
    """`run gemm --dry-run`: what would run, compiled for `arch`; no GPU touched."""
    from rooflinecli import api
    from rooflinecli.stages import compiler
    from rooflinecli.stages.inspect import check_arch

    check_arch(arch)
    spec, spec_why = api.default_spec(spec_arg)
    fp8 = (ask.fp8_format, ask.fp8_scaling)  # the FP8 stages built as the run builds them
    if p.picks is not None:  # every pick at every shape, as before the tune table was planned
        chosen = [*{x.stage.name: x.stage for x in p.picks.values()}.values(), *p.chosen]
        rows = api.dry_run_gemm(p.shapes, chosen, arch, p.dtype, spec, None, *fp8)
    else:
        chosen = p.chosen
        rows = api.dry_run_gemm(p.shapes, chosen, arch, p.dtype, spec, p.work, *fp8)
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


@run.command(
    "gemm",
    epilog=examples(
        "roofline run gemm --m 4096",
        "roofline run gemm --sizes 1024,4096 --dtype bf16 --stages best -o run.json",
    ),
)
@gpus_option()
@gather("ask", GEMM_ASK, gemm_ask)
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
@emits
def run_gemm(
    ask: GemmAsk,
    spec_arg: str | None,
    timed: Timed,
    dry_run: bool,
    arch: str | None,
    roofs: Roofs,
    emit: Emit,
) -> None:
    """Verify each stage against a float64 product, time it, and place it on the roofline."""
    from rooflinecli import api, plan

    table.select(table.RUN, emit.view)  # an unknown --columns name: one line, before any work
    draw = emit.chart(on_terminal=True)
    if arch and not dry_run:
        raise RooflineError("--arch goes with --dry-run (a run compiles for the GPU it runs on)")
    if dry_run and emit.output:
        raise RooflineError("--dry-run writes no results document: leave out --output")
    p = plan.gemm_plan(ask.shapes, ask.stage_list, ask.dtype, tuned=ask.tuned,
                       extra_stages=ask.extra_stages, dry_run=dry_run, beta=ask.beta,
                       fp8_format=ask.fp8_format, fp8_scaling=ask.fp8_scaling)  # fmt: skip
    target, why = api.target_arch(arch)
    if dry_run:
        _dry_run(p, ask, target, why, spec_arg, emit.fmt)
        return
    api.compile_user_stages(p.user_stages, target, ask.dtype)  # a compile error: one line, first
    with progress(emit.live()) as tick:
        doc = api.gemm.run(gemm_request(p, ask, spec_arg, timed, tick))
    doc = roofs.place(doc)
    emit.write(doc)
    output.emit(document.gemm_run(doc, ask.shapes, emit.view, draw, p.picks), emit.fmt)
    api.fail_unverified(doc)


@run.command(
    "attention",
    epilog=examples(
        "roofline run attention --batch 4 --heads 32 --seq 4096 --head-dim 128 --causal",
        "roofline run attention --shapes 1x16x16384x128,32x16x512x128 --dtype bf16",
    ),
)
@gpus_option()
@gather("shapes", ATTENTION_ASK, attention_shapes)
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
@emits
def run_attention(
    shapes: list[Any],
    stage_list: str | None,
    dtype: str,
    spec_arg: str | None,
    timed: Timed,
    no_references: bool,
    roofs: Roofs,
    emit: Emit,
) -> None:
    """Verify each attention stage against float32 attention, time it beside PyTorch's SDPA
    (flash and cuDNN backends, when PyTorch is installed), and place it on the roofline.
    """
    from rooflinecli import api, plan
    from rooflinecli.api.requests import AttentionProblem, AttentionRequest, Output

    table.select(table.RUN, emit.view)
    draw = emit.chart(on_terminal=True)
    p = plan.attention_plan(shapes, stage_list, dtype)
    problem = AttentionProblem(shapes, p.stages, spec_arg, dtype, not no_references, p.work)
    with progress(emit.live()) as tick:
        out = Output("run attention", tick, p.document_fields())
        doc = api.attention.run(AttentionRequest(problem, timed, out))
    doc = roofs.place(doc)
    emit.write(doc)
    output.emit(document.report(doc, emit.view, draw), emit.fmt)
    api.fail_unverified(doc)
