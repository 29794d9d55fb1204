"""`roofline model llm` and `roofline run llm`: an LLM's decode step on the roofline.

`model llm` is arithmetic (rooflinecli.core.llm): where the FLOPs of one token go, and where each
weight GEMM sits on the roofline at a batch. `run llm` times those exact GEMM shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from rooflinecli import api, files, results
from rooflinecli.core import llm
from rooflinecli.errors import GateFailure, RooflineError
from rooflinecli.options import (
    DTYPES,
    SIZE,
    chart_option,
    columns_option,
    extra_stage_option,
    format_option,
    gpus_option,
    max_noise_option,
    output_option,
    spec_option,
    split_list,
)
from rooflinecli.present import View, decode_step, table
from rooflinecli.present.output import chart_wanted, emit, live

F = TypeVar("F", bound=Callable[..., Any])
Column = tuple[str, str, Callable[[Any], str]]


def preset_options(f: F) -> F:
    """--preset NAME|PATH and the size flags that override it."""
    flags = [
        ("--vocab", "vocab", "Vocabulary size (LM head outputs)."),
        ("--ffn", "ffn", "FFN inner size."),
        ("--head-dim", "head_dim", "Dimension of one attention head."),
        ("--kv-heads", "kv_heads", "K/V heads (fewer than --heads: grouped-query attention)."),
        ("--heads", "heads", "Query heads."),
        ("--layers", "layers", "Transformer layers."),
        ("--d-model", "d_model", "Model width."),
    ]
    for flag, dest, text in flags:
        f = click.option(flag, dest, type=SIZE, default=None, help=f"{text} Overrides the preset.")(
            f
        )
    return click.option(
        "--preset",
        default="llama-7b",
        show_default=True,
        metavar="NAME|PATH",
        help="Model: a shipped preset (llama-7b, llama-3-8b) or a TOML file of the same keys.",
    )(f)


def _preset(name: str, sizes: dict[str, int | None]) -> llm.Preset:
    return llm.resolve(name).override(**sizes)


def parse_list(text: str, option: str, limit: int = 1 << 20) -> list[int]:
    """'512,2048,4096' -> [512, 2048, 4096]: positive whole numbers, duplicates dropped."""
    values: list[int] = []
    for token in split_list(text, option):
        try:
            v = int(token)
        except ValueError:
            raise RooflineError(f"{option}: {token!r} is not a whole number") from None
        if not 1 <= v <= limit:
            raise RooflineError(f"{option}: {v} is outside 1..{limit}")
        if v not in values:
            values.append(v)
    return values


@click.command("llm")
@gpus_option()
@preset_options
@click.option(
    "--context", "context_arg", default="2048", show_default=True, metavar="LIST",
    help="Positions attended, the new token included: one, or a list (512,2048,4096).",
)  # fmt: skip
@click.option(
    "--batch", "batch_arg", default=None, metavar="LIST",
    help="Tokens decoded together (1,8,64,512): each weight GEMM on the roofline at these batches.",
)  # fmt: skip
@click.option(
    "--dtype", type=click.Choice(DTYPES), default="fp16", show_default=True,
    help="Element type of weights and activations; picks the roof (Tensor Cores for 16-bit).",
)  # fmt: skip
@spec_option
@format_option
@output_option
def model_llm(
    preset: str,
    context_arg: str,
    batch_arg: str | None,
    dtype: str,
    spec_arg: str | None,
    fmt: str,
    output: str | None,
    force: bool,
    **sizes: int | None,
) -> None:
    """Where the FLOPs of one decoded token go; with --batch, each weight GEMM on the roofline.

    A FLOP share is not a time share: with --batch, the time each operation needs at the roofs
    is shown beside its FLOP share.
    """
    p = _preset(preset, sizes)
    contexts = parse_list(context_arg, "--context", 1 << 24)
    if batch_arg is None:
        doc = api.model_llm(p, contexts, dtype)
        report = decode_step.flops_report(doc, p, contexts)
    else:
        batches = parse_list(batch_arg, "--batch")
        spec, why = api.default_spec(spec_arg)
        doc = api.model_llm(p, contexts, dtype, spec, batches)
        report = decode_step.gemms_report(doc, p, contexts, batches, spec, why, dtype)
    if output:
        files.write_output(output, results.dumps(doc), force=force)
    emit(report, fmt)


@click.command("llm")
@preset_options
@click.option(
    "--batch", "batch_arg", default="1,16,256", show_default=True, metavar="LIST",
    help="Tokens decoded together: M of every weight GEMM.",
)  # fmt: skip
@click.option(
    "--gemms", "gemm_arg", default=None, metavar="LIST",
    help="Only these weight GEMMs: qkv, o_proj, ffn_gate, ffn_up, ffn_down, lm_head (default all).",
)  # fmt: skip
@click.option(
    "--stages", "stage_list", default=None, metavar="LIST",
    help="Comma-separated stages (default: all of the dtype), or 'best': per GEMM shape, the "
    "stage of the GPU's tune table (docs/dispatch.md). The reference always runs.",
)  # fmt: skip
@extra_stage_option("Also run your own kernel (see examples/my_gemm.toml).")
@click.option(
    "--dtype", type=click.Choice(DTYPES), default="fp16", show_default=True, help="Element type."
)
@spec_option
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random inputs.")
@click.option(
    "--budget-ms", type=click.FloatRange(1, 60000), default=400.0, show_default=True,
    help="GPU time of timed repeats per stage and shape.",
)  # fmt: skip
@max_noise_option
@click.option("--no-flush", is_flag=True, help="Do not flush the L2 between repeats.")
@chart_option
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
@format_option
@columns_option
@output_option
def run_llm(
    preset: str,
    batch_arg: str,
    gemm_arg: str | None,
    stage_list: str | None,
    extra_stages: tuple[str, ...],
    dtype: str,
    spec_arg: str | None,
    seed: int,
    budget_ms: float,
    max_noise: float | None,
    no_flush: bool,
    chart_flag: bool | None,
    quiet: bool,
    fmt: str,
    view: View,
    output: str | None,
    force: bool,
    **sizes: int | None,
) -> None:
    """Time the weight GEMMs of one decode step at each batch, and place them on the roofline."""
    from rooflinecli import plan
    from rooflinecli.gpu.timer import Timing
    from rooflinecli.present.progress import progress

    model = _preset(preset, sizes)
    batches = parse_list(batch_arg, "--batch")
    table.select(table.LLM, view)  # an unknown --columns name: one line, before any work
    draw = chart_wanted(chart_flag, fmt, table.console().is_terminal)
    gemms = llm.weight_gemms(model)
    if gemm_arg:
        wanted = split_list(gemm_arg, "--gemms")
        known = [g.name for g in gemms]
        bad = [g for g in wanted if g not in known]
        if bad or not wanted:
            raise RooflineError(
                f"unknown GEMM {', '.join(bad) or '(none)'}; known: {', '.join(known)}"
            )
        gemms = [g for g in gemms if g.name in wanted]
    shapes = list(dict.fromkeys(g.shape(b) for b in batches for g in gemms))
    p = plan.llm_plan(shapes, stage_list, dtype, extra_stages)
    api.compile_user_stages(p.user_stages, api.target_arch()[0], dtype)  # one line, before any GPU

    timing = Timing(budget_ms=budget_ms, flush_l2=not no_flush, max_noise_pct=max_noise)
    with progress(not quiet and live(fmt)) as tick:
        doc = api.run_llm(
            model, gemms, batches, p.chosen, spec_arg, dtype, seed, timing, progress=tick,
            settings={"extra_stages": [s.toml_path for s in p.user_stages]}, picks=p.picks,
            work=p.work, **p.document_fields(),
        )  # fmt: skip
    if output:
        files.write_output(output, results.dumps(doc), force=force)
    emit(decode_step.run_report(doc, model, gemms, batches, view, draw, p.picks), fmt)
    failed = [r["stage"] for r in doc["records"] if r.get("verified") is False]
    if failed:
        raise GateFailure(f"verification failed: {', '.join(sorted(set(failed)))}")
