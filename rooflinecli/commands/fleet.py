"""`roofline merge` and `roofline fleet`: many GPUs' documents as one, and the GPU that falls
behind its fleet (rooflinecli.core.fleet holds the rule; docs/fleet.md says why)."""

from __future__ import annotations

import math
from typing import Any

import click

from rooflinecli import files, results
from rooflinecli.commands import examples
from rooflinecli.errors import GateFailure, Inconclusive, RooflineError
from rooflinecli.options import force_option, format_option
from rooflinecli.present import output, table


def _load_all(paths: tuple[str, ...]) -> list[tuple[str, dict[str, Any]]]:
    return [(p, results.load(p)) for p in paths]


@click.command(
    "merge",
    epilog=examples(
        "roofline merge node1.json node2.json -o fleet.json",
        "roofline merge node*.json -o fleet.json --force",
    ),
)
@click.argument("paths", nargs=-1, required=True, metavar="DOC...", type=click.Path(dir_okay=False))
@click.option("--output", "-o", "out", metavar="FLEET.json|-", required=True,
              help="Where the fleet document goes; - for standard output.")  # fmt: skip
@force_option
@format_option
def merge(paths: tuple[str, ...], out: str, force: bool, fmt: str) -> None:
    """Combine results documents into one fleet document.

    Each record keeps the GPU it ran on (index, UUID, serial, PCI bus id, power limit, clocks)
    and the host and rank that ran it; older schemas are upgraded as they are read. A GPU's
    record that two documents both hold (one document merged twice) is refused.
    """
    files.check_output(out, force=force)
    merged = results.merge(_load_all(paths))
    files.write_output(out, results.dumps(merged), force=force)
    fl = merged["fleet"]
    per: dict[str, dict[str, Any]] = {}
    for r in merged["records"]:
        gpu = r["gpu"] or {}
        row = per.setdefault(str(r["gpu_label"]), {
            "gpu": r["gpu_label"], "model": gpu.get("name"), "uuid": gpu.get("uuid"),
            "serial": gpu.get("serial"), "records": 0})  # fmt: skip
        row["records"] += 1
    summary = list(per.values())
    columns = MERGE_COLUMNS
    title = (
        f"{len(paths)} document(s), {fl['gpus']} GPU(s) of {len(fl['models'])} model(s), "
        f"{len(merged['records'])} record(s)"
    )
    if out == files.STDOUT:
        return  # the document is standard output
    parts: list[output.Part] = [output.Rows(summary, columns, title=title)]
    output.emit(output.of_rows(summary, columns, parts, {"output": out, **fl}), fmt)


MERGE_COLUMNS: list[table.Column] = [
    ("gpu", "GPU", str),
    ("model", "model", str),
    ("uuid", "UUID", str),
    ("serial", "serial", str),
    ("records", "records", table.integer),
]

CARD_COLUMNS: list[table.Column] = [
    ("gpu", "GPU", str),
    ("model", "model", str),
    ("rows", "rows", table.integer),
    ("slowdown_pct", "vs median %", table.cell(lambda v: f"{v:+.2f}")),
    ("z", "robust z", table.fixed(2)),
    ("verdict", "verdict", str),
]
ROW_COLUMNS: list[table.Column] = [
    ("gpu", "GPU", str),
    ("stage", "stage", str),
    ("shape", "shape", str),
    ("dtype", "dtype", str),
    ("time_ms", "time ms", table.fixed(4)),
    ("ratio", "vs median", table.fixed(4)),
    ("z", "robust z", table.fixed(2)),
]


def _num(v: float) -> float | None:
    return None if math.isnan(v) else round(v, 4)


@click.command(
    "fleet",
    epilog=examples("roofline fleet fleet.json", "roofline fleet node*.json --threshold 3 --rows"),
)
@click.argument("paths", nargs=-1, required=True, metavar="DOC...", type=click.Path(dir_okay=False))
@click.option(
    "--threshold",
    type=click.FloatRange(0, min_open=True),
    default=None,
    metavar="Z",
    help="Flag a GPU whose robust z is above this (default: 3).",
)
@click.option("--rows", "show_rows", is_flag=True,
              help="Also each GPU on each stage and shape, with the row's robust z.")  # fmt: skip
@format_option
def fleet_command(
    paths: tuple[str, ...], threshold: float | None, show_rows: bool, fmt: str
) -> None:
    """Find the GPU that falls behind its fleet (exit 1 when one does).

    DOC: a fleet document (`roofline merge`, `run --gpus`), or several documents, merged as
    read. Per stage and shape, each GPU's time against the median of the GPUs of its model; per
    GPU, the median of those log-ratios; across GPUs, a robust z-score (median and MAD x 1.4826,
    the MAD never below the card-to-card spread of docs/fleet.md). A GPU above the threshold
    and at least 2% slower than the median is flagged: exit 1, for a Slurm prolog or a CI gate.
    Exit 3 when no model has 3 GPUs to compare.
    """
    from rooflinecli.core import attention, fleet

    loaded = _load_all(paths)
    if len(loaded) == 1 and results.is_fleet(loaded[0][1]):
        doc = loaded[0][1]
    else:
        doc = results.merge(loaded)
    if not doc["records"]:
        raise RooflineError(f"{paths[0]} holds no records")
    z = fleet.THRESHOLD if threshold is None else threshold
    groups = fleet.analyse(doc["records"], threshold=z)
    cards = [
        {"gpu": c.gpu, "model": c.model, "rows": c.rows, "slowdown_pct": _num(c.slowdown_pct),
         "z": _num(c.z), "flagged": c.flagged,
         "verdict": "FALLS BEHIND" if c.flagged else ("-" if math.isnan(c.z) else "ok")}
        for g in groups for c in g.cards
    ]  # fmt: skip
    rows = []
    for g in groups:
        for r in g.rows:
            shape = (
                attention.label(dict(zip(attention.SHAPE_FIELDS, r.shape[1:], strict=True)))
                if r.shape and r.shape[0] == "attention"
                else "x".join(str(d) for d in r.shape)
            )
            rows.append({"gpu": r.gpu, "stage": r.stage, "shape": shape, "dtype": r.dtype,
                         "time_ms": r.time_ms, "ratio": r.ratio, "z": r.z})  # fmt: skip
    said = fleet.verdict(groups, z)
    scales = ", ".join(f"{g.model}: {100 * g.scale:.2f}%" for g in groups if g.conclusive)
    parts: list[output.Part] = [
        output.Rows(
            cards, CARD_COLUMNS, title=f"GPUs against their fleet's median ({scales or 'no scale'})"
        ),
    ]
    if show_rows:
        parts.append(output.Rows(rows, ROW_COLUMNS, title="Each GPU on each stage and shape"))
    parts.append(output.Line(said, gap=True))
    payload = {
        "verdict": said, "threshold": z, "spread": fleet.SPREAD,
        "min_slowdown_pct": fleet.MIN_SLOWDOWN_PCT,
        "groups": [{"model": g.model, "conclusive": g.conclusive, "scale": g.scale,
                    "cards": [c for c in cards if c["model"] == g.model]} for g in groups],
        "rows": rows,
    }  # fmt: skip
    output.emit(output.of_rows(cards, CARD_COLUMNS, parts, payload), fmt)
    if any(c["flagged"] for c in cards):
        raise GateFailure(said)
    if not any(g.conclusive for g in groups):
        raise Inconclusive(said)
