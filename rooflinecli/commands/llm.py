"""`roofline model llm` and `roofline run llm`: an LLM's decode step on the roofline.

`model llm` is arithmetic (rooflinecli.core.llm): where the FLOPs of one token go, and where each
weight GEMM sits on the roofline at a batch. `run llm` times those exact GEMM shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import click

from rooflinecli import api
from rooflinecli.commands import Command, examples
from rooflinecli.core import llm
from rooflinecli.errors import RooflineError
from rooflinecli.options import (
    DTYPES,
    MODEL_DTYPES,
    SIZE,
    Emit,
    chart_option,
    columns_option,
    emits,
    extra_stage_option,
    format_option,
    gather,
    gpus_option,
    max_noise_option,
    output_option,
    spec_option,
    split_list,
    timed,
)
from rooflinecli.present import decode_step, output, table

F = TypeVar("F", bound=Callable[..., Any])
Column = tuple[str, str, Callable[[Any], str]]

if TYPE_CHECKING:
    from rooflinecli.api.requests import Timed


def preset_options(f: F) -> F:
    """--preset NAME|PATH and the size flags that override it, handed to the command as
    `model` (an llm.Preset)."""
    flags = [
        ("--vocab", "vocab", "Vocabulary size (LM head outputs)."),
        ("--ffn", "ffn", "FFN inner size."),
        ("--head-dim", "head_dim", "Dimension of one attention head."),
        ("--kv-heads", "kv_heads", "K/V heads (fewer than --heads: grouped-query attention)."),
        ("--heads", "heads", "Query heads."),
        ("--layers", "layers", "Transformer layers."),
        ("--d-model", "d_model", "Model width."),
    ]
    f = gather("model", ("preset", *(dest for _flag, dest, _text in flags)), _preset)(f)
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


def _preset(preset: str, **sizes: int | None) -> llm.Preset:
    return llm.resolve(preset).override(**sizes)


class LlmAsk(NamedTuple):
    """What `run llm` was asked to run: --batch, --gemms, --stages, --extra-stage, --dtype."""

    batch_arg: str | None
    gemm_arg: str | None
    stage_list: str | None
    extra_stages: tuple[str, ...]
    dtype: str


LLM_ASK = LlmAsk._fields


class ChainAsk(NamedTuple):
    """--chain and the options that go with it."""

    chain_flag: bool
    chain_shape: str | None
    repeats: int
    warmup: int
    ways_arg: str
    chain_layers: int | None
    calibration_path: str | None


CHAIN_ASK = ChainAsk._fields


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


@click.command(
    "llm",
    cls=Command,
    epilog=examples(
        "roofline model llm --preset llama-3-8b --context 512,4096",
        "roofline model llm --batch 1,8,64 --spec h100-sxm5",
    ),
)
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
@emits
def model_llm(
    model: llm.Preset,
    context_arg: str,
    batch_arg: str | None,
    dtype: str,
    spec_arg: str | None,
    emit: Emit,
) -> None:
    """Where the FLOPs of one decoded token go; with --batch, each weight GEMM on the roofline.

    A FLOP share is not a time share: with --batch, the time each operation needs at the roofs
    is shown beside its FLOP share.
    """
    contexts = parse_list(context_arg, "--context", 1 << 24)
    if batch_arg is None:
        doc = api.model_llm(model, contexts, dtype)
        report = decode_step.flops_report(doc, model, contexts)
    else:
        batches = parse_list(batch_arg, "--batch")
        spec, why = api.default_spec(spec_arg)
        doc = api.model_llm(model, contexts, dtype, spec, batches)
        report = decode_step.gemms_report(doc, model, contexts, batches, spec, why, dtype)
    emit.write(doc)
    output.emit(report, emit.fmt)


@click.command(
    "llm",
    cls=Command,
    epilog=examples(
        "roofline run llm --preset llama-3-8b --batch 1,16,256 --stages best",
        "roofline run llm --chain --batch 1 --ways best,cublas,torch -o chain.json",
    ),
)
@preset_options
@gather("ask", LLM_ASK, LlmAsk)
@gather("timed", ("seed", "budget_ms", "max_noise", "no_flush"), timed)
@gather("chain", CHAIN_ASK, ChainAsk)
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
    "--dtype",
    type=click.Choice(MODEL_DTYPES),
    default="fp16",
    show_default=True,
    help="Element type (fp8: weights and activations e4m3 with per-tensor float32 scales, "
    "weights N x K, bf16 out, beside cuBLASLt's FP8 GEMM; not with --chain).",
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
    "whole chain in one persistent launch, batch 1 to 4; token+mma: the same on Tensor Cores, "
    "batch 1 to 16; cublas; torch: F.linear).",
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
@emits
def run_llm(
    model: llm.Preset,
    ask: LlmAsk,
    spec_arg: str | None,
    timed: Timed,
    chain: ChainAsk,
    emit: Emit,
) -> None:
    """Time the weight GEMMs of one decode step at each batch, and place them on the roofline.

    With --chain: the token as engines run it, each GEMM on the previous one's output, from a
    CUDA graph, ours beside cuBLAS and PyTorch.
    """
    from rooflinecli import plan
    from rooflinecli.api.requests import LlmProblem, LlmRequest, Output
    from rooflinecli.present.progress import progress

    if chain.chain_flag or chain.chain_shape:
        if not chain.chain_flag:
            raise RooflineError("--chain-shape needs --chain")
        _run_chain(model, ask, spec_arg, timed.seed, chain, emit)
        return
    if chain.calibration_path:
        raise RooflineError("--calibration goes with --chain (it records the read roof there)")
    batches = parse_list(ask.batch_arg or "1,16,256", "--batch")
    table.select(table.LLM, emit.view)  # an unknown --columns name: one line, before any work
    draw = emit.chart(on_terminal=True)
    gemms = _gemms(model, ask.gemm_arg)
    shapes = list(dict.fromkeys(g.shape(b) for b in batches for g in gemms))
    p = plan.llm_plan(shapes, ask.stage_list, ask.dtype, ask.extra_stages)
    api.compile_user_stages(p.user_stages, api.target_arch()[0], ask.dtype)  # one line, first
    settings = {"extra_stages": [s.toml_path for s in p.user_stages]}
    problem = LlmProblem(model, gemms, batches, p.chosen, spec_arg, ask.dtype, p.picks, p.work,
                         settings)  # fmt: skip
    with progress(emit.live()) as tick:
        out = Output("run llm", tick, p.document_fields())
        doc = api.llm.run(LlmRequest(problem, timed, out))
    emit.write(doc)
    output.emit(decode_step.run_report(doc, model, gemms, batches, emit.view, draw, p.picks),
                emit.fmt)  # fmt: skip
    api.fail_unverified(doc)


def _gemms(model: llm.Preset, gemm_arg: str | None) -> list[Any]:
    """The weight GEMMs of the preset, or those --gemms names (an unknown one: one line)."""
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
    return gemms


def _run_chain(
    model: llm.Preset, ask: LlmAsk, spec_arg: str | None, seed: int, c: ChainAsk, emit: Emit
) -> None:
    """`run llm --chain`: check the options (one line each, before any GPU work), run, emit."""
    from rooflinecli.api.requests import ChainProblem, ChainRequest, ChainTiming
    from rooflinecli.core import chain
    from rooflinecli.present import document

    if ask.stage_list is not None and ask.stage_list.strip() != "best":
        raise RooflineError(
            "--chain runs --stages best (one stage per GEMM shape): leave out --stages"
        )
    if ask.gemm_arg or ask.extra_stages:
        raise RooflineError("--chain runs the whole token: leave out --gemms and --extra-stage")
    if ask.dtype not in chain.CHAIN_DTYPES:
        raise RooflineError(
            f"--chain runs --dtype {' or '.join(chain.CHAIN_DTYPES)}, not {ask.dtype}"
        )
    ways = split_list(c.ways_arg, "--ways")
    bad = [w for w in ways if w not in api.CHAIN_WAYS]
    if bad:
        raise RooflineError(f"--ways: unknown {', '.join(bad)}; known: {', '.join(api.CHAIN_WAYS)}")
    shape = chain.parse_shape(c.chain_shape) if c.chain_shape else None
    if shape is not None and ask.batch_arg is not None:
        raise RooflineError("--chain-shape gives M (the batch): leave out --batch")
    batches = parse_list(ask.batch_arg or "1,16", "--batch", chain.MAX_BATCH)
    if shape is not None:
        chain.single(*shape)  # its bounds, now
    else:
        for b in batches:
            chain.build(model, b)
    draw = emit.chart(on_terminal=True)
    cal = None
    if c.calibration_path:
        from rooflinecli.gpu import calibrate

        cal = calibrate.read_calibration(c.calibration_path)
    problem = ChainProblem(model, batches, ask.dtype, spec_arg, shape, tuple(ways),
                           c.chain_layers, cal)  # fmt: skip
    doc = api.chain.run(ChainRequest(problem, ChainTiming(seed, c.warmup, c.repeats)))
    emit.write(doc)
    output.emit(document.report(doc, emit.view, draw), emit.fmt)
    api.fail_unverified(doc)
