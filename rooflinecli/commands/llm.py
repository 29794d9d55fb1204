"""`roofline model llm` and `roofline run llm`: an LLM's decode step on the roofline.

`model llm` is arithmetic (rooflinecli.core.llm): where the FLOPs of one token go, and where each
weight GEMM sits on the roofline at a batch. `run llm` times those exact GEMM shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from rooflinecli import files, results
from rooflinecli.api import default_spec
from rooflinecli.core import llm, roofs
from rooflinecli.errors import GateFailure, RooflineError
from rooflinecli.options import (
    DTYPES,
    SIZE,
    chart_option,
    columns_option,
    extra_stage_option,
    format_option,
    max_noise_option,
    output_option,
    pick_line,
    spec_option,
    split_list,
    want_chart,
)
from rooflinecli.present import View, table, terminal_chart

F = TypeVar("F", bound=Callable[..., Any])
Column = tuple[str, str, Callable[[Any], str]]


_missing = table.missing
_fixed = table.fixed
_whole = table.integer
_ai = table.ai


def _never(v: Any) -> str:
    return "never" if _missing(v) else f"{int(v):,}"


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


def _shape(shape: tuple[int, int, int] | None, single: bool, context: int) -> str | None:
    if shape is None:
        return None
    parts = [str(d) if single or d != context else "ctx" for d in shape]
    return " x ".join(parts)


def _split_rows(p: llm.Preset, contexts: list[int]) -> tuple[list[dict[str, Any]], list[Column]]:
    """One row per operation, a subtotal row per group and a total; two columns per context."""
    splits = {c: llm.flop_split(p, c) for c in contexts}
    totals = {c: llm.group_totals(parts) for c, parts in splits.items()}
    first = splits[contexts[0]]
    rows: list[dict[str, Any]] = []
    for group in llm.GROUPS:
        for i, part in enumerate(first):
            if part.group != group:
                continue
            row: dict[str, Any] = {
                "stage": part.name,
                "count": part.count,
                "shape": _shape(part.shape, len(contexts) == 1, contexts[0]),
            }
            for c in contexts:
                flops = splits[c][i].flops
                row[f"gflop_{c}"] = flops / 1e9
                row[f"share_{c}"] = 100.0 * flops / totals[c]["total"]
            rows.append(row)
        rows.append(
            {"stage": group}
            | {f"gflop_{c}": totals[c][group] / 1e9 for c in contexts}
            | {f"share_{c}": 100.0 * totals[c][group] / totals[c]["total"] for c in contexts}
        )
    rows.append(
        {"stage": "total"}
        | {f"gflop_{c}": totals[c]["total"] / 1e9 for c in contexts}
        | {f"share_{c}": 100.0 for c in contexts}
    )
    columns: list[Column] = [
        ("stage", "part", str),
        ("count", "count", _whole),
        ("shape", "M x N x K", str),
    ]
    for c in contexts:
        columns += [
            (f"gflop_{c}", f"GFLOP ctx={c}", _fixed(4)),
            (f"share_{c}", f"% ctx={c}", _fixed(2)),
        ]
    return rows, columns


def _split_records(p: llm.Preset, contexts: list[int], dtype: str) -> list[dict[str, Any]]:
    out = []
    for c in contexts:
        parts = llm.flop_split(p, c)
        total = llm.group_totals(parts)["total"]
        for part in parts:
            m, n, k = part.shape if part.shape else (None, None, None)
            out.append(
                {
                    "stage": part.name,
                    "kind": "llm",
                    "dtype": dtype,
                    "m": m,
                    "n": n,
                    "k": k,
                    "flops": part.flops_each,
                    "workload": f"{p.name}:{part.name}:ctx{c}",
                    "preset": p.name,
                    "group": part.group,
                    "what": part.what,
                    "context": c,
                    "count": part.count,
                    "flops_per_token": part.flops,
                    "share_pct": 100.0 * part.flops / total,
                }
            )
    return out


GEMM_COLUMNS: list[Column] = [
    ("stage", "gemm", str),
    ("batch", "batch", _whole),
    ("count", "count", _whole),
    ("shape", "M x N x K", str),
    ("gflop", "GFLOP", _fixed(3)),
    ("mbytes", "MB", _fixed(1)),
    ("ai_ideal", "AI", _ai),
    ("roof", "roof", str),
    ("attainable_tflops", "attain TF/s", _fixed(1)),
    ("crossing_batch", "ridge at b", _never),
    ("time_us_per_token", "us/token", _fixed(1)),
]


def _share_rows(
    p: llm.Preset, context: int, batches: list[int], spec: Any, dtype: str
) -> tuple[list[dict[str, Any]], list[Column], list[dict[str, Any]], dict[int, float]]:
    """FLOP share and time share per operation (element-wise ones as 'other'), per batch."""
    by_batch = {b: llm.time_split(p, context, b, spec, dtype) for b in batches}
    rows: list[dict[str, Any]] = []
    first = by_batch[batches[0]]
    names: list[str] = []
    for group in llm.GROUPS:  # each operation, then its group; element-wise ones only as a group
        if group != llm.OTHER:
            names += [r["part"] for r in first if r["group"] == group]
        names.append(group)
    names.append("total")
    for name in names:

        def pick(rs: list[dict[str, Any]], name: str = name) -> list[dict[str, Any]]:
            if name == "total":
                return rs
            return [r for r in rs if r["part"] == name or r["group"] == name]

        row: dict[str, Any] = {
            "stage": name,
            "flop_share": sum(r["flop_share"] for r in pick(first)),
        }
        for b in batches:
            row[f"time_{b}"] = sum(r["time_share"] for r in pick(by_batch[b]))
        rows.append(row)
    columns: list[Column] = [("stage", "part", str), ("flop_share", "FLOP %", _fixed(2))]
    columns += [(f"time_{b}", f"time % b={b}", _fixed(2)) for b in batches]
    flat = [{"context": context, "batch": b, **r} for b in batches for r in by_batch[b]]
    totals = {b: sum(r["seconds_per_token"] for r in by_batch[b]) * 1e6 for b in batches}
    return rows, columns, flat, totals


def _print(rows: list[dict[str, Any]], columns: list[Column], fmt: str, **titles: Any) -> None:
    table.emit({"records": rows}, fmt, columns, **titles)


@click.command("llm")
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
        rows, columns = _split_rows(p, contexts)
        records = _split_records(p, contexts, dtype)
        doc = results.new_document(
            {}, None, records, command="model llm", preset=p.to_dict(), contexts=contexts,
            flop_counts={
                "rmsnorm_per_element": llm.RMSNORM_FLOPS_PER_ELEMENT,
                "silu_mul_per_element": llm.SILU_MUL_FLOPS_PER_ELEMENT,
                "softmax_per_score": llm.SOFTMAX_FLOPS_PER_SCORE,
                "rope_per_element": llm.ROPE_FLOPS_PER_ELEMENT,
                "residual_per_element": llm.RESIDUAL_FLOPS_PER_ELEMENT,
            },
        )  # fmt: skip
        if output:
            files.write_output(output, results.dumps(doc), force=force)
        if fmt in ("json", "csv"):
            table.emit(doc, fmt, columns)
            return
        title = f"FLOPs of one decoded token: {p.describe()}"
        caption = (
            "Batch 1; a multiply-add is 2 FLOPs; ctx = positions attended. Counted per element: "
            f"RMSNorm {llm.RMSNORM_FLOPS_PER_ELEMENT}, SiLU(gate)*up "
            f"{llm.SILU_MUL_FLOPS_PER_ELEMENT}, RoPE {llm.ROPE_FLOPS_PER_ELEMENT}, residual "
            f"{llm.RESIDUAL_FLOPS_PER_ELEMENT}; softmax {llm.SOFTMAX_FLOPS_PER_SCORE} per score."
        )
        _print(rows, columns, fmt, title=title, caption=caption)
        return

    batches = parse_list(batch_arg, "--batch")
    spec, why = default_spec(spec_arg)
    gemm_records = [
        llm.gemm_record(p, g, b, spec, dtype) for b in batches for g in llm.weight_gemms(p)
    ]
    shares = [_share_rows(p, c, batches, spec, dtype) for c in contexts]
    doc = results.new_document(
        spec.to_dict(), None, gemm_records, command="model llm", preset=p.to_dict(),
        contexts=contexts, batches=batches, shares=[row for s in shares for row in s[2]],
    )  # fmt: skip
    if output:
        files.write_output(output, results.dumps(doc), force=force)
    if fmt in ("json", "csv"):
        table.emit(doc, fmt, GEMM_COLUMNS)
        return
    r0 = gemm_records[0]
    rows = [
        {
            **r,
            "shape": f"{r['m']} x {r['n']} x {r['k']}",
            "gflop": r["flops"] / 1e9,
            "mbytes": r["bytes_ideal"] / 1e6,
        }
        for r in gemm_records
    ]
    title = (
        f"Weight GEMMs of {p.display_name}, {dtype} on {spec.display_name} ({spec.name}, {why}): "
        f"{roofs.title(r0)}"
    )
    caption = (
        "One call: M = batch (tokens decoded together), N = outputs, K = inputs; bytes: weights "
        "read once, activations in and out. ridge at b: the smallest batch that reaches the "
        "ridge point. us/token: the time the roofs allow all `count` calls, per token."
    )
    _print(rows, GEMM_COLUMNS, fmt, title=title, caption=caption)
    for context, (srows, scols, _flat, totals) in zip(contexts, shares, strict=True):
        if fmt == "markdown":
            click.echo("")
        allowed = ", ".join(f"b={b} {t:,.1f} us" for b, t in totals.items())
        _print(
            srows,
            scols,
            fmt,
            title=(
                f"A FLOP share is not a time share: {p.display_name} at context {context}, "
                f"{dtype} on {spec.name}"
            ),
            caption=(
                "time: each operation alone at min(peak, AI x bandwidth), one after another. "
                "Attention reads each sequence's K/V cache: batching does not amortize it. "
                f"The roofs allow per token: {allowed}."
            ),
        )


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
    from rooflinecli import api, plan
    from rooflinecli.gpu.timer import Timing
    from rooflinecli.present.progress import progress

    model = _preset(preset, sizes)
    batches = parse_list(batch_arg, "--batch")
    table.select(table.LLM, view)  # an unknown --columns name: one line, before any work
    draw = want_chart(chart_flag, fmt, table.console().is_terminal)
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
    picks = p.picks

    timing = Timing(budget_ms=budget_ms, flush_l2=not no_flush, max_noise_pct=max_noise)
    with progress(not quiet and fmt == "table") as tick:
        doc = api.run_llm(
            model, gemms, batches, p.chosen, spec_arg, dtype, seed, timing, progress=tick,
            settings={"extra_stages": [s.toml_path for s in p.user_stages]}, picks=picks,
            work=p.work, **p.document_fields(),
        )  # fmt: skip
    device, spec_name, per_token = doc["device"], doc["spec"]["name"], doc["per_token"]
    if output:
        files.write_output(output, results.dumps(doc), force=force)
    if fmt in ("json", "csv"):
        table.emit(doc, fmt, table.LLM)
    else:
        for b in batches:
            recs = [r for r in doc["records"] if r["batch"] == b]
            r0 = recs[0]
            if fmt == "markdown" and b != batches[0]:
                click.echo("")
            table.emit(
                {**doc, "records": recs},
                fmt,
                table.LLM,
                view=view,
                title=(
                    f"{model.display_name} weight GEMMs at batch {b}, {dtype} on {device['name']} "
                    f"(spec {spec_name}: {roofs.title(r0)})"
                ),
            )
            if picks is not None:
                for g in gemms:
                    click.echo(f"{g.name}: {pick_line(picks[g.shape(b)])}")
            if draw:
                terminal_chart.draw({**doc, "records": recs}, fmt, table.console())
        summary = table.skip_summary(doc.get("skipped"))
        if summary:
            click.echo(f"\n{summary}" if fmt == "markdown" else summary)
        if fmt == "markdown":
            click.echo("")
        columns: list[Column] = [("stage", "stage", str)]
        columns += [(f"us_b{b}", f"us/token b={b}", _fixed(1)) for b in batches]
        _print(
            per_token,
            columns,
            fmt,
            title=f"{model.display_name}: the {len(gemms)} weight GEMM(s) of one token, all layers",
            caption="Sum of count x time / batch; '-' where a stage did not run every shape.",
        )
    failed = [r["stage"] for r in doc["records"] if r.get("verified") is False]
    if failed:
        raise GateFailure(f"verification failed: {', '.join(sorted(set(failed)))}")
