"""`roofline plot`: the roofline of a results document as PNG, SVG or HTML (matplotlib)."""

from __future__ import annotations

import click

from rooflinecli import files, results
from rooflinecli.options import format_option
from rooflinecli.present import table as report

WROTE_COLUMNS: list[report.Column] = [
    ("path", "file", str),
    ("format", "format", str),
    ("records", "records", report.integer),
    ("title", "chart", str),
]


@click.command()
@click.argument("path", metavar="RESULTS.json", type=click.Path(dir_okay=False))
@click.option(
    "--output",
    "-o",
    required=True,
    metavar="FILE.png|svg|html",
    help="Image to write (format from the suffix), atomically.",
)
@format_option
def plot(path: str, output: str, fmt: str) -> None:
    """Roofline of a results document as an image.

    PNG, SVG, or HTML (the SVG in a minimal page), chosen by the suffix of -o. Needs the
    `plot` extra (matplotlib).
    """
    from rooflinecli.present import image as core  # matplotlib is imported only when drawing

    core.kind_of(output)
    files.check_output(output, document=False)
    doc = results.load(path)
    kind = core.save(doc, output)
    title = core.chart.title(doc)
    row = {"path": output, "format": kind, "records": len(doc["records"]), "title": title}
    line = f"wrote {output} ({kind}): {title}"
    report.emit_written(row, fmt, WROTE_COLUMNS, line, title=f"roofline plot {path}")
