"""`roofline model`: the analytic roofline picture, no GPU needed."""

from __future__ import annotations

from typing import Any

import click

from rooflinecli import api
from rooflinecli.commands import LazyGroup, examples
from rooflinecli.core import roofs
from rooflinecli.options import (
    FINITE,
    Emit,
    attention_shape_options,
    columns_option,
    dtype_option,
    emits,
    format_option,
    model_dtype_option,
    output_option,
    shape_options,
    spec_option,
)
from rooflinecli.present import output, table
from rooflinecli.present.output import Records, of_document


@click.group(
    cls=LazyGroup,
    lazy={
        "llm": (
            "rooflinecli.commands.llm",
            "model_llm",
            "Where the FLOPs of one decoded token go; with --batch, each weight GEMM on the "
            "roofline.",
        )
    },
)
def model() -> None:
    """Analytic roofline model (pure arithmetic, no GPU)."""


@model.command(
    "gemm",
    epilog=examples(
        "roofline model gemm --m 4096",
        "roofline model gemm --m 1 --n 4096 --k 4096 --dtype bf16 --spec h100-sxm5",
    ),
)
@shape_options
@model_dtype_option
@spec_option
@click.option("--alpha", type=FINITE, default=1.0, show_default=True)
@click.option("--beta", type=FINITE, default=0.0, show_default=True, help="Non-zero: C is read.")
@format_option
@columns_option
@output_option
@emits
def model_gemm(
    shape: tuple[int, int, int],
    dtype: str,
    spec_arg: str | None,
    alpha: float,
    beta: float,
    emit: Emit,
) -> None:
    """FLOPs, ideal bytes and intensity, by-instruction intensity, roof and attainable per stage."""
    m, n, k = shape
    view = emit.view
    table.select(table.MODEL, view)
    spec, why = api.default_spec(spec_arg)
    doc = api.model_gemm(m, n, k, dtype, spec, alpha, beta)
    records = doc["records"]
    emit.write(doc)  # files is loaded only with --output: `model` into a table needs it not
    first = records[0]
    title = (
        f"GEMM {m}x{n}x{k} {dtype}, model on {spec.display_name} ({spec.name}, {why}): "
        f"{roofs.title(first)}"
    )
    caption = (
        "AI ideal: every byte moved once (perfect caching). AI instr: what each load "
        "instruction feeds, if nothing were cached; attain@instr is the roof at that intensity."
    )
    output.emit(of_document(doc, [Records(doc, table.MODEL, title, caption, view)]), emit.fmt)


@model.command(
    "attention",
    epilog=examples(
        "roofline model attention --batch 1 --heads 32 --seq 8192 --head-dim 128 --causal",
        "roofline model attention --batch 8 --heads 32 --kv-heads 8 --seq 4096 --head-dim 128",
    ),
)
@attention_shape_options()
@dtype_option
@spec_option
@format_option
@columns_option
@output_option
@emits
def model_attention(shape: Any, dtype: str, spec_arg: str | None, emit: Emit) -> None:
    """FLOPs, bytes and intensity of attention, fused and unfused, and where each lands."""
    view = emit.view
    table.select(table.ATTENTION_MODEL, view)
    spec, why = api.default_spec(spec_arg)
    doc = api.model_attention(shape, dtype, spec)
    emit.write(doc)  # files is loaded only with --output
    first = doc["records"][0]
    title = (
        f"Attention {shape.label} {dtype}, model on {spec.display_name} ({spec.name}, {why}): "
        f"{roofs.title(first)}"
    )
    caption = (
        "FLOPs 4*B*H*N^2*D (halved when causal). fused: Q, K, V and O each moved once. "
        "unfused: S and P (fp32, B*H*N^2 each) also written and read once each."
    )
    parts = [Records(doc, table.ATTENTION_MODEL, title, caption, view)]
    output.emit(of_document(doc, parts), emit.fmt)
