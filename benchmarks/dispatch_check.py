"""How well a tune table's picks carry to shapes it was not made from, from committed documents
alone (no GPU): the class's geomean pick against the wave model (docs/dispatch.md).

    python benchmarks/dispatch_check.py benchmarks/results/*.json.gz

Two checks, each over the 16-bit and FP8 records of the grid's documents
(tune-dispatch-grid-*.json.gz), per GPU:

* Leave one shape out: for each class and each of its grid shapes, the table is made
  (rooflinecli.stages.dispatch.winners) from the class's other shapes, and the shape left out
  is resolved with it (dispatch.resolve), once with the class's geomean pick alone and once
  with the wave model's candidates. Each pick is scored by the speed against the reference its
  stage measured at that shape, in the same run as the others.
* Shapes off the grid: the table is made from every grid shape, and the shapes of the other
  documents of that GPU that measured several stages at one shape (not `--stages best` runs)
  are resolved with it; a shape counts where both picks were measured there, each by its best
  speed against the reference over the documents that measured it (each ratio from its run).
* The same shapes with a table made from another GPU's grid, as a GPU with no table of its own
  runs them: the wave model weighs that table's candidates on this GPU's spec.

A pick that was not measured at the shape (the class's other shapes chose a stage not run
there) leaves the shape out of both columns. Prints one Markdown table per check, by GPU and by
the class's rows: decode batches (M <= 64) and tile GEMMs (M > 64).
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from dataclasses import replace

import seed_dispatch  # benchmarks/: the records a table is made from

from rooflinecli.stages import dispatch

Shape = tuple[int, int, int]


def _records(docs: list[str]) -> tuple[list, list]:
    """(grid records, other records), each (record, document, device): of the records a table
    may be made from (seed_dispatch.read), the verified stages' with a ratio."""
    grid, other = [], []
    for r, name, device, in_grid in seed_dispatch.read(docs):
        if r.get("kind") != "stage" or r.get("verified") is not True:
            continue
        if not r.get("pct_of_reference") or r["stage"].split("@")[0] not in dispatch.gemm.BY_NAME:
            continue
        (grid if in_grid else other).append((r, name, device))
    return grid, other


def _measured(found: list, shape: Shape, dtype: str) -> dict[str, float]:
    """Stage name -> its best % of the reference at the shape."""
    out: dict[str, float] = {}
    for r, _doc, _dev in found:
        if (r["m"], r["n"], r["k"]) == shape and r["dtype"] == dtype:
            out[r["stage"]] = max(out.get(r["stage"], 0.0), r["pct_of_reference"])
    return out


def _picks(entry: dispatch.Entry, shape: Shape, device: str) -> tuple[str, str]:
    """(the class's geomean pick, the wave model's pick) at the shape."""
    plain = dispatch.Table(device, "check", (replace(entry, candidates=()),))
    model = dispatch.Table(device, "check", (entry,))
    return (
        dispatch.resolve(*shape, entry.dtype, [plain], device).stage.name,
        dispatch.resolve(*shape, entry.dtype, [model], device).stage.name,
    )


def _group(device: str, shape: Shape) -> str:
    rows = "M <= 64" if shape[0] <= dispatch.DECODE_M_TOP else "M > 64"
    return f"{device} | {rows}"


def leave_one_out(grid: list) -> dict[str, list[tuple[float, float, float]]]:
    by: dict[tuple[str, str, str], list] = defaultdict(list)
    for r, doc, dev in grid:
        by[(dev, r["dtype"], dispatch.class_of(r["m"], r["n"], r["k"]))].append((r, doc, dev))
    out: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for (dev, dtype, _cls), found in sorted(by.items()):
        shapes = sorted({(r["m"], r["n"], r["k"]) for r, _d, _v in found})
        for x in shapes if len(shapes) > 1 else ():
            rest = [(r, d) for r, d, _v in found if (r["m"], r["n"], r["k"]) != x]
            entries = dispatch.winners(rest)
            if len(entries) != 1:
                continue
            got = _measured(found, x, dtype)
            plain, model = _picks(entries[0], x, dev)
            if plain in got and model in got:
                out[_group(dev, x)].append((got[plain], got[model], max(got.values())))
    return out


def off_grid(grid: list, other: list) -> dict[str, list[tuple[float, float, float]]]:
    tables: dict[tuple[str, str, str], dispatch.Entry] = {}
    for dev in {d for _r, _doc, d in grid}:
        for e in dispatch.winners([(r, d) for r, d, v in grid if v == dev]):
            tables[(dev, e.dtype, e.shape_class)] = e
    out: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    shapes = sorted({(v, r["dtype"], (r["m"], r["n"], r["k"])) for r, _d, v in other})
    for dev, dtype, y in shapes:
        entry = tables.get((dev, dtype, dispatch.class_of(*y)))
        if entry is None:
            continue
        got = _measured([x for x in other if x[2] == dev], y, dtype)
        if len(got) < 2:
            continue
        plain, model = _picks(entry, y, dev)
        if plain in got and model in got:
            out[_group(dev, y)].append((got[plain], got[model], max(got.values())))
    return out


def borrowed(grid: list, other: list) -> dict[str, list[tuple[float, float, float]]]:
    """The shapes off the grid of one GPU, resolved with a table made from another GPU's grid
    (what a GPU with no table of its own runs): the wave model weighs the other GPU's
    candidates on this GPU's spec."""
    out: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    made = {d for _r, _doc, d in grid}
    for dev in sorted({d for _r, _doc, d in other}):
        for src in sorted(made - {dev}):
            tables = {
                (e.dtype, e.shape_class): e
                for e in dispatch.winners([(r, d) for r, d, v in grid if v == src])
            }
            mine = [x for x in other if x[2] == dev]
            for dtype, y in sorted({(r["dtype"], (r["m"], r["n"], r["k"])) for r, _d, _v in mine}):
                entry = tables.get((dtype, dispatch.class_of(*y)))
                got = _measured(mine, y, dtype)
                if entry is None or len(got) < 2:
                    continue
                table = dispatch.Table(src, "check", (entry,), borrowed=True)
                plain = replace(table, entries=(replace(entry, candidates=()),))
                picks = [dispatch.resolve(*y, dtype, [t], dev).stage.name for t in (plain, table)]
                if all(p in got for p in picks):
                    group = f"{dev} with the {src}'s table | " + _group(dev, y).split(" | ")[1]
                    out[group].append((got[picks[0]], got[picks[1]], max(got.values())))
    return out


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def table(title: str, rows: dict[str, list[tuple[float, float, float]]]) -> str:
    lines = [
        f"{title}: geomean of % of the reference at each shape, of the pick each rule makes",
        "",
        "| GPU | rows | shapes | the class's geomean pick | the wave model "
        "| the fastest measured |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for group, got in sorted(rows.items()):
        plain, model, best = (_geomean([g[i] for g in got]) for i in range(3))
        lines.append(f"| {group} | {len(got)} | {plain:.1f} | {model:.1f} | {best:.1f} |")
    return "\n".join(lines)


def main(docs: list[str]) -> str:
    grid, other = _records(docs)
    return (
        table("Leave one grid shape out", leave_one_out(grid))
        + "\n\n"
        + table("Shapes off the grid", off_grid(grid, other))
        + "\n\n"
        + table("Shapes off the grid, another GPU's table", borrowed(grid, other))
        + "\n"
    )


if __name__ == "__main__":
    sys.stdout.write(main(sys.argv[1:]) if sys.argv[1:] else __doc__ or "")
