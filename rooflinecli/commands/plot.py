"""`roofline plot`: the roofline of a results document as PNG, SVG or HTML (matplotlib)."""

from __future__ import annotations

from typing import Any

import click

from rooflinecli import files, results
from rooflinecli.errors import RooflineError
from rooflinecli.options import format_option
from rooflinecli.present import MAX_POINTS, table
from rooflinecli.present.output import written

WROTE_COLUMNS: list[table.Column] = [
    ("path", "file", str),
    ("format", "format", str),
    ("records", "records", table.integer),
    ("title", "chart", str),
]


def load_calibration(path: str | None, doc: dict[str, Any]) -> dict[str, Any] | None:
    """The calibration named by --calibration, else the one cached for the document's device
    (`roofline calibrate` on it), else None. One of another GPU is refused."""
    from rooflinecli.gpu import calibrate  # the calibration cache: pure, no CuPy

    device = doc.get("device") or {}
    if path is None:
        if not device.get("name"):
            return None
        return calibrate.load_calibration(
            device["name"], device.get("driver"), device.get("clock_sm_max_mhz")
        )
    cal = calibrate.read_calibration(path)
    theirs = (cal.get("device") or {}).get("name")
    if device.get("name") and theirs != device["name"]:
        raise RooflineError(f"{path} calibrates {theirs}, the document ran on {device['name']}")
    spec = (doc.get("spec") or {}).get("name")
    if not device and cal.get("spec") and spec and cal["spec"] != spec:
        raise RooflineError(f"{path} calibrates spec {cal['spec']}, the document models {spec}")
    return cal


@click.command()
@click.argument("path", metavar="RESULTS.json", type=click.Path(dir_okay=False))
@click.option(
    "--output",
    "-o",
    required=True,
    metavar="FILE.png|svg|html",
    help="Image to write (format from the suffix), atomically.",
)
@click.option(
    "--calibration",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="A calibration file from `roofline calibrate`: its measured ceilings (HBM, L2, FP32, "
    "mma.sync, WGMMA) are drawn dashed beside the datasheet's (default: the one cached for "
    "the document's GPU, if any).",
)
@click.option(
    "--by-instruction/--no-by-instruction",
    default=True,
    show_default=True,
    help="Draw each measured record also at its by-instruction intensity (hollow marker).",
)
@click.option(
    "--max-points",
    type=click.IntRange(min=1),
    default=MAX_POINTS,
    show_default=True,
    help="Refuse a document with more points than this to draw (each placed record is a point, "
    "two with its by-instruction intensity): a plot costs about a millisecond and some 40 KB "
    "of memory a point, and its legend lists them all.",
)
@format_option
def plot(
    path: str,
    output: str,
    calibration: str | None,
    by_instruction: bool,
    max_points: int,
    fmt: str,
) -> None:
    """Roofline of a results document as an image.

    PNG, SVG, or HTML (the SVG in a minimal page), chosen by the suffix of -o. Each record has
    a short id beside its point, explained in the legend below the chart. Needs the `plot`
    extra (matplotlib). At most 5,000 points unless --max-points says more.
    """
    from rooflinecli.present import image  # matplotlib is imported only when drawing

    image.kind_of(output)
    files.check_output(output, document=False)
    doc = results.load(path)
    cal = load_calibration(calibration, doc)
    kind = image.save(doc, output, cal, by_instruction, max_points=max_points)
    title = image.title(doc)
    row = {"path": output, "format": kind, "records": len(doc["records"]), "title": title}
    line = f"wrote {output} ({kind}): {title}"
    written(row, fmt, WROTE_COLUMNS, line, title=f"roofline plot {path}")
