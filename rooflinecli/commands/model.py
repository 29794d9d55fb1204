"""`roofline model`: the analytic roofline picture, no GPU needed."""

from __future__ import annotations

import click

from rooflinecli import api, results
from rooflinecli.commands import LazyGroup
from rooflinecli.core import roofs
from rooflinecli.options import (
    FINITE,
    attention_shape,
    attention_shape_options,
    columns_option,
    dtype_option,
    format_option,
    model_dtype_option,
    output_option,
    resolve_shape,
    shape_options,
    spec_option,
)
from rooflinecli.present import View, table
from rooflinecli.present.output import Records, emit, of_document


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


@model.command("gemm")
@shape_options
@model_dtype_option
@spec_option
@click.option("--alpha", type=FINITE, default=1.0, show_default=True)
@click.option("--beta", type=FINITE, default=0.0, show_default=True, help="Non-zero: C is read.")
@format_option
@columns_option
@output_option
def model_gemm(
    m: int,
    n: int | None,
    k: int | None,
    dtype: str,
    spec_arg: str | None,
    alpha: float,
    beta: float,
    fmt: str,
    view: View,
    output: str | None,
    force: bool,
) -> None:
    """FLOPs, ideal bytes and intensity, by-instruction intensity, roof and attainable per stage."""
    m, n, k = resolve_shape(m, n, k)
    table.select(table.MODEL, view)
    spec, why = api.default_spec(spec_arg)
    doc = api.model_gemm(m, n, k, dtype, spec, alpha, beta)
    records = doc["records"]
    if output:
        from rooflinecli import files  # only with --output: `model` into a table needs none

        files.write_output(output, results.dumps(doc), force=force)
    first = records[0]
    title = (
        f"GEMM {m}x{n}x{k} {dtype}, model on {spec.display_name} ({spec.name}, {why}): "
        f"{roofs.title(first)}"
    )
    caption = (
        "AI ideal: every byte moved once (perfect caching). AI instr: what each load "
        "instruction feeds, if nothing were cached; attain@instr is the roof at that intensity."
    )
    emit(of_document(doc, [Records(doc, table.MODEL, title, caption, view)]), fmt)


@model.command("attention")
@attention_shape_options()
@dtype_option
@spec_option
@format_option
@columns_option
@output_option
def model_attention(
    batch: int,
    heads: int,
    seq: int,
    head_dim: int,
    kv_heads: int | None,
    causal: bool,
    dtype: str,
    spec_arg: str | None,
    fmt: str,
    view: View,
    output: str | None,
    force: bool,
) -> None:
    """FLOPs, bytes and intensity of attention, fused and unfused, and where each lands."""
    shape = attention_shape(batch, heads, seq, head_dim, kv_heads, causal)
    table.select(table.ATTENTION_MODEL, view)
    spec, why = api.default_spec(spec_arg)
    doc = api.model_attention(shape, dtype, spec)
    if output:
        from rooflinecli import files  # only with --output: `model` into a table needs none

        files.write_output(output, results.dumps(doc), force=force)
    first = doc["records"][0]
    title = (
        f"Attention {shape.label} {dtype}, model on {spec.display_name} ({spec.name}, {why}): "
        f"{roofs.title(first)}"
    )
    caption = (
        "FLOPs 4*B*H*N^2*D (halved when causal). fused: Q, K, V and O each moved once. "
        "unfused: S and P (fp32, B*H*N^2 each) also written and read once each."
    )
    emit(of_document(doc, [Records(doc, table.ATTENTION_MODEL, title, caption, view)]), fmt)
