"""Seed the shipped tune table of a GPU (dispatch/<gpu>.toml) from committed documents.

    python benchmarks/seed_dispatch.py "NVIDIA H200" h200-sxm benchmarks/results/*.json.gz \
        > dispatch/h200-sxm.toml
    python benchmarks/seed_dispatch.py --grid-only "NVIDIA H100 80GB HBM3" h100-sxm5 \
        benchmarks/results/*.json.gz > dispatch/h100-sxm5.toml

The records of the documents measured on that device go through the same choice as
`roofline tune dispatch` (rooflinecli.stages.dispatch.winners): per dtype and shape the fastest
verified stage; per class, the stage with the highest geometric mean of its speed against the
reference over the class's shapes it runs (among those verified at all of them; else the stage
that won the most shapes). The grid's documents (tune-dispatch-grid-*.json.gz, made by
benchmarks/shapes.sh grid) decide every class they measure, with the wave model's candidates
in a class above 64 rows (docs/dispatch.md); the other documents only the classes the grid
leaves out, without candidates. Records of `--stages best` runs (they carry dispatch_class) are
verdicts on the table, never candidates for it, and so are fleet documents (several GPUs'
records of the same rows, merged); FP8 records count from the grid's documents alone
(benchmarks/gemm_fp8.sh grid). Each entry names what it came from.

--grid-only: the grid's documents alone. The classes the grid leaves out then have no entry, and
`--stages best` takes the class's entry of a table made on another GPU of the same
architecture. This is for a GPU whose only other documents are ladders at one or two square
shapes a class: the H100's, whose 4096^3 and 8192^3 would otherwise decide the classes of
M > 1024 for every N and K.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rooflinecli import paths
from rooflinecli.stages import dispatch

HEADER = """The default tune table of the {device}, shipped in the wheel: `--stages best` takes the
entry of a shape's class (docs/dispatch.md); the user's own table, written by
`roofline tune dispatch`, wins where it has the class. Made by benchmarks/seed_dispatch.py from
the committed documents (benchmarks/results/): per class, the verified stage with the highest
geomean of % of the reference over the class's shapes it runs; the grid's documents
(tune-dispatch-grid-*.json.gz: benchmarks/shapes/grid.txt, made by benchmarks/shapes.sh grid)
decide the classes they measure, the other documents the rest; `from` names the documents and
measurements. Classes no document measured have no entry: their shapes take the class's entry
of a table made on another GPU of the same architecture, else the nearest class's."""


GRID_ONLY = """
Seeded with --grid-only: from the grid's documents alone; the classes they leave out take the
entries of a table made on another GPU of the same architecture."""

GRID = "tune-dispatch-grid-"  # the documents of the grid (benchmarks/shapes.sh grid)


def read(docs: list[str]) -> list[tuple[dict, str, str | None, bool]]:
    """The records a table may be made from: (record, document name, its GPU, whether the
    document is the grid's), the SM count filled in from the document's spec where a record made
    before records said it lacks it (the wave model's candidates need it)."""
    out = []
    for name in docs:
        doc = paths.read_json(name, "results file")
        if "profile" in doc.get("command", ""):
            continue
        if "fleet" in doc:  # GPUs measured beside each other (roofline merge): not candidates
            continue
        device = (doc.get("device") or {}).get("name")
        in_grid = Path(name).name.startswith(GRID)
        sms = (doc.get("spec") or {}).get("sm_count")
        # a `--stages best` record measures the table's pick: a verdict on the table, not a
        # candidate for it (the held-out set's document must not feed the table it judges)
        out += [
            (r if r.get("sm_count") or not sms else {**r, "sm_count": sms}, Path(name).name,
             device, in_grid)
            for r in doc["records"]
            if "dispatch_class" not in r
        ]  # fmt: skip
    return out


def main(device: str, spec: str, docs: list[str], grid_only: bool = False) -> None:
    grid: list[tuple[dict, str]] = []
    other: list[tuple[dict, str]] = []
    for r, name, made_on, in_grid in read(docs):
        if made_on != device or (grid_only and not in_grid):
            continue
        # FP8 records count from the grid's documents only (benchmarks/gemm_fp8.sh grid): the
        # other FP8 documents verify many stages at one shape a class, too little to pick a
        # class's stage from (`--stages best` takes the registry's last FP8 stage elsewhere)
        if in_grid or r.get("dtype") != "fp8":
            (grid if in_grid else other).append((r, name))
    # the grid's classes from the grid alone; the classes it does not measure from the rest,
    # without the wave model's candidates: those documents measured one shape a class or so
    # (ladders at large squares, the tc sets), too little to weigh the stages' waves by
    entries = dispatch.winners(grid)
    have = {(e.dtype, e.shape_class) for e in entries}
    rest = dispatch.winners(other, candidates=False)
    entries += [e for e in rest if (e.dtype, e.shape_class) not in have]
    entries.sort(key=lambda e: (e.dtype, e.shape_class))
    header = HEADER.format(device=device) + (GRID_ONLY if grid_only else "")
    sys.stdout.write(dispatch.to_toml(device, spec, entries, header))


if __name__ == "__main__":
    args = sys.argv[1:]
    only = "--grid-only" in args
    args = [a for a in args if a != "--grid-only"]
    main(args[0], args[1], args[2:], grid_only=only)
