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
from rooflinecli.errors import RooflineError
from rooflinecli.options import (
    DTYPES,
    SIZE,
    chart_option,
    columns_option,
    extra_stage_option,
    fail_unverified,
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
    "--batch", "batch_arg", default=None, metavar="LIST",
    help="Tokens decoded together: M of every weight GEMM. [default: 1,16,256; with --chain "
    "1,16]",
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
@click.option(
    "--chain", "chain_flag", is_flag=True,
    help="Run one token's weight GEMMs as a dependent chain from CUDA graphs (each GEMM on the "
    "previous one's output), our --stages best picks beside cuBLAS and PyTorch, whole tokens "
    "timed interleaved (docs/chain.md). Batches 1..64, fp16 or bf16.",
)  # fmt: skip
@click.option(
    "--chain-shape", "chain_shape", default=None, metavar="MxNxK",
    help="With --chain: a chain of this one GEMM instead of the preset's token.",
)  # fmt: skip
@click.option(
    "--repeats", type=click.IntRange(1, 10000), default=30, show_default=True,
    help="With --chain: timed whole-token replays per way (after --warmup).",
)  # fmt: skip
@click.option(
    "--warmup", type=click.IntRange(0, 1000), default=5, show_default=True,
    help="With --chain: untimed replays per way first.",
)  # fmt: skip
@click.option(
    "--ways", "ways_arg", default="best,cublas,torch", show_default=True, metavar="LIST",
    help="With --chain: the ways to run the chain (best: our picks; best+pdl: the same with "
    "gemv_pdl, programmatic dependent launch, on every M = 1 GEMM; token: decode_token, the "
    "whole chain in one persistent launch, batch 1 to 4; cublas; torch: F.linear).",
)  # fmt: skip
@click.option(
    "--calibration", "calibration_path", type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="With --chain: a `roofline calibrate` file of this GPU, measured in the same run; the "
    "document records its HBM read roof and each way's share of it.",
)  # fmt: skip
@click.option(
    "--chain-layers", type=click.IntRange(1, 1024), default=None,
    help="With --chain: at most this many layers (fewer where the GPU's memory cannot hold "
    "them); the token time is scaled by the token's bytes over the bytes run.",
)  # fmt: skip
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
    chain_flag: bool,
    chain_shape: str | None,
    repeats: int,
    warmup: int,
    ways_arg: str,
    chain_layers: int | None,
    calibration_path: str | None,
    chart_flag: bool | None,
    quiet: bool,
    fmt: str,
    view: View,
    output: str | None,
    force: bool,
    **sizes: int | None,
) -> None:
    """Time the weight GEMMs of one decode step at each batch, and place them on the roofline.

    With --chain: the token as engines run it, each GEMM on the previous one's output, from a
    CUDA graph, ours beside cuBLAS and PyTorch."""
    from rooflinecli import plan
    from rooflinecli.gpu.timer import Timing
    from rooflinecli.present.progress import progress

    model = _preset(preset, sizes)
    if chain_flag or chain_shape:
        if not chain_flag:
            raise RooflineError("--chain-shape needs --chain")
        run_chain(model, batch_arg, gemm_arg, stage_list, extra_stages, dtype, spec_arg, seed,
                  chain_shape, repeats, warmup, ways_arg, chain_layers, chart_flag, fmt, view,
                  output, force, calibration=calibration_path)  # fmt: skip
        return
    if calibration_path:
        raise RooflineError("--calibration goes with --chain (it records the read roof there)")
    batches = parse_list(batch_arg or "1,16,256", "--batch")
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
    fail_unverified(doc)


def run_chain(
    model: llm.Preset, batch_arg: str | None, gemm_arg: str | None, stage_list: str | None,
    extra_stages: tuple[str, ...], dtype: str, spec_arg: str | None, seed: int,
    chain_shape: str | None, repeats: int, warmup: int, ways_arg: str,
    chain_layers: int | None, chart_flag: bool | None, fmt: str, view: View,
    output: str | None, force: bool, calibration: str | None = None,
) -> None:  # fmt: skip
    """`run llm --chain`: check the options (one line each, before any GPU work), run, emit."""
    from rooflinecli.core import chain
    from rooflinecli.present import document

    if stage_list is not None and stage_list.strip() != "best":
        raise RooflineError(
            "--chain runs --stages best (one stage per GEMM shape): leave out --stages"
        )
    if gemm_arg or extra_stages:
        raise RooflineError("--chain runs the whole token: leave out --gemms and --extra-stage")
    if dtype not in chain.CHAIN_DTYPES:
        raise RooflineError(f"--chain runs --dtype {' or '.join(chain.CHAIN_DTYPES)}, not {dtype}")
    ways = split_list(ways_arg, "--ways")
    bad = [w for w in ways if w not in api.CHAIN_WAYS]
    if bad:
        raise RooflineError(f"--ways: unknown {', '.join(bad)}; known: {', '.join(api.CHAIN_WAYS)}")
    shape = chain.parse_shape(chain_shape) if chain_shape else None
    if shape is not None and batch_arg is not None:
        raise RooflineError("--chain-shape gives M (the batch): leave out --batch")
    batches = parse_list(batch_arg or "1,16", "--batch", chain.MAX_BATCH)
    if shape is not None:
        chain.single(*shape)  # its bounds, now
    else:
        for b in batches:
            chain.build(model, b)
    draw = chart_wanted(chart_flag, fmt, table.console().is_terminal)
    cal = None
    if calibration:
        from rooflinecli.gpu import calibrate

        cal = calibrate.read_calibration(calibration)
    doc = api.run_chain(model, batches, dtype, spec_arg, seed=seed, warmup=warmup,
                        repeats=repeats, shape=shape, ways=ways, layers=chain_layers,
                        calibration=cal)  # fmt: skip
    if output:
        files.write_output(output, results.dumps(doc), force=force)
    emit(document.report(doc, view, draw), fmt)
    fail_unverified(doc)
