"""`roofline baseline`: keep a verified run as the reference the CI gate compares against."""

from __future__ import annotations

import click

from rooflinecli import gate, report, results
from rooflinecli.errors import RooflineError
from rooflinecli.options import force_option, format_option

SAVED_COLUMNS: list[report.Column] = [
    ("path", "baseline", str),
    ("source", "from", str),
    ("records", "records", report.integer),
    ("device", "device", str),
]


@click.group()
def baseline() -> None:
    """Verified runs kept as baselines for `roofline gate`."""


@baseline.command("save")
@click.argument("src", metavar="RESULTS.json", type=click.Path(dir_okay=False))
@click.argument("dst", metavar="BASELINE.json", type=click.Path(dir_okay=False))
@force_option
@format_option
def save(src: str, dst: str, force: bool, fmt: str) -> None:
    """Save a run as the new baseline: it must be a GPU run with every stage verified."""
    results.check_output(dst, force=force, make_folder=True)
    doc = results.load(src)
    gate.require_run(doc, src)
    if not doc["records"]:
        raise RooflineError(f"{src} holds no records")
    gate.index(doc, src)  # one record per stage and shape
    bad = [
        f"{r['stage']} {r['m']}x{r['n']}x{r['k']}"
        for r in doc["records"]
        if r.get("verified") is not True or r.get("tflops") is None
    ]
    if bad:
        raise RooflineError(
            f"{src} is not a clean run: not verified or not timed: {', '.join(bad)}"
        )
    results.write_output(dst, results.dumps(doc), force=force, make_folder=True)
    n, device = len(doc["records"]), gate.describe(doc)
    row = {"path": dst, "source": src, "records": n, "device": device}
    line = f"saved {dst}: {n} record{'s' if n != 1 else ''} from {src} ({device})"
    report.emit_written(row, fmt, SAVED_COLUMNS, line, title=f"baseline saved: {dst}")
