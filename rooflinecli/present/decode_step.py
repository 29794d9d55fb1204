"""An LLM's decode step as `model llm` and `run llm` print it: where the FLOPs of one token go,
each weight GEMM on the roofline at a batch, the FLOP share beside the time share, and a run's
tables per batch with the microseconds of a whole token. Each function here builds the Report;
rooflinecli.present.output writes it in the --format asked for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rooflinecli.core import llm, roofs
from rooflinecli.present import View, output, table
from rooflinecli.present.document import pick_line, skipped_line

Column = tuple[str, str, Callable[[Any], str]]

_missing = table.missing
_fixed = table.fixed
_whole = table.integer
_ai = table.ai


def _never(v: Any) -> str:
    return "never" if _missing(v) else f"{int(v):,}"


def _shape(shape: tuple[int, int, int] | None, single: bool, context: int) -> str | None:
    if shape is None:
        return None
    parts = [str(d) if single or d != context else "ctx" for d in shape]
    return " x ".join(parts)


def split_rows(p: llm.Preset, contexts: list[int]) -> tuple[list[dict[str, Any]], list[Column]]:
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


def share_rows(
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


def flops_report(doc: dict[str, Any], p: llm.Preset, contexts: list[int]) -> output.Report:
    """`model llm`: the FLOPs of one decoded token, per operation, group and context."""
    rows, columns = split_rows(p, contexts)
    title = f"FLOPs of one decoded token: {p.describe()}"
    caption = (
        "Batch 1; a multiply-add is 2 FLOPs; ctx = positions attended. Counted per element: "
        f"RMSNorm {llm.RMSNORM_FLOPS_PER_ELEMENT}, SiLU(gate)*up "
        f"{llm.SILU_MUL_FLOPS_PER_ELEMENT}, RoPE {llm.ROPE_FLOPS_PER_ELEMENT}, residual "
        f"{llm.RESIDUAL_FLOPS_PER_ELEMENT}; softmax {llm.SOFTMAX_FLOPS_PER_SCORE} per score."
    )
    return output.of_document(doc, [output.Records({"records": rows}, columns, title, caption)])


def gemms_report(
    doc: dict[str, Any], p: llm.Preset, contexts: list[int], batches: list[int], spec: Any,
    why: str, dtype: str,
) -> output.Report:  # fmt: skip
    """`model llm --batch`: each weight GEMM on the roofline at each batch, then per context the
    FLOP share beside the time share the roofs allow."""
    gemm_records = doc["records"]
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
    parts: list[output.Part] = [output.Records({"records": rows}, GEMM_COLUMNS, title, caption)]
    for context in contexts:
        srows, scols, _flat, totals = share_rows(p, context, batches, spec, dtype)
        allowed = ", ".join(f"b={b} {t:,.1f} us" for b, t in totals.items())
        parts.append(
            output.Records(
                {"records": srows},
                scols,
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
        )
    return output.of_document(doc, parts)


def run_report(
    doc: dict[str, Any], p: llm.Preset, gemms: list[Any], batches: list[int], view: View,
    draw: bool, picks: dict[tuple[int, int, int], Any] | None = None,
) -> output.Report:  # fmt: skip
    """`run llm`: per batch the weight GEMMs' table (with --stages best each GEMM's pick under
    it) and its chart, the stages left out, then per stage the microseconds of a whole token."""
    device, spec_name, dtype = doc["device"], doc["spec"]["name"], doc["records"][0]["dtype"]
    parts: list[output.Part] = []
    for b in batches:
        recs = [r for r in doc["records"] if r["batch"] == b]
        title = (
            f"{p.display_name} weight GEMMs at batch {b}, {dtype} on {device['name']} "
            f"(spec {spec_name}: {roofs.title(recs[0])})"
        )
        parts.append(output.Records({**doc, "records": recs}, table.LLM, title, view=view))
        if picks is not None:
            parts += [output.Line(f"{g.name}: {pick_line(picks[g.shape(b)])}") for g in gemms]
        if draw:
            parts.append(output.Chart({**doc, "records": recs}))
    parts += skipped_line(doc)
    columns: list[Column] = [("stage", "stage", str)]
    columns += [(f"us_b{b}", f"us/token b={b}", _fixed(1)) for b in batches]
    parts.append(
        output.Records(
            {"records": doc["per_token"]},
            columns,
            title=f"{p.display_name}: the {len(gemms)} weight GEMM(s) of one token, all layers",
            caption="Sum of count x time / batch; '-' where a stage did not run every shape.",
        )
    )
    return output.of_document(doc, parts)
