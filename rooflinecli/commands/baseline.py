"""`roofline baseline`: keep a verified run as the reference the CI gate compares against."""

from __future__ import annotations

from typing import Any

import click

from rooflinecli import files, results
from rooflinecli.commands import examples
from rooflinecli.errors import RooflineError
from rooflinecli.options import force_option, format_option
from rooflinecli.present import gate, output, table

SAVED_COLUMNS: list[table.Column] = [
    ("path", "baseline", str),
    ("source", "from", str),
    ("records", "records", table.integer),
    ("device", "device", str),
]


def _clean(rec: dict[str, Any]) -> bool:
    """Verified and timed; a measure() record timed; or a stage skipped (not run, with why)."""
    timed = rec.get("tflops") is not None
    if rec.get("verified") is True:
        return timed
    if rec.get("verified") is None:
        return timed if rec.get("kind") == "user" else not timed and bool(rec.get("error"))
    return False


@click.group()
def baseline() -> None:
    """Verified runs kept as baselines for `roofline gate`."""


@baseline.command(
    "save",
    epilog=examples(
        "roofline baseline save current.json benchmarks/baseline.json",
        "roofline baseline save current.json benchmarks/baseline.json --force",
    ),
)
@click.argument("src", metavar="RESULTS.json", type=click.Path(dir_okay=False))
@click.argument("dst", metavar="BASELINE.json", type=click.Path(dir_okay=False))
@force_option
@format_option
def save(src: str, dst: str, force: bool, fmt: str) -> None:
    """Save a run as the new baseline: it must be a GPU run with every stage verified.

    A stage skipped at a shape it refuses (not run, with its reason) may stay: the gate skips it
    on both sides. measure() records carry no verification: timed is enough for them.
    """
    files.check_output(dst, force=force, make_folder=True)
    doc = results.load(src)
    gate.require_run(doc, src)
    if not doc["records"]:
        raise RooflineError(f"{src} holds no records")
    records = gate.index(doc, src)  # one record per identity
    bad = [k.label for k, r in records.items() if not _clean(r)]
    if bad:
        raise RooflineError(
            f"{src} is not a clean run: not verified or not timed: {', '.join(bad)}"
        )
    files.write_output(dst, results.file_text(doc), force=force, make_folder=True)
    n, device = len(doc["records"]), gate.describe(doc)
    row = {"path": dst, "source": src, "records": n, "device": device}
    line = f"saved {dst}: {n} record{'s' if n != 1 else ''} from {src} ({device})"
    output.written(row, fmt, SAVED_COLUMNS, line, title=f"baseline saved: {dst}")
