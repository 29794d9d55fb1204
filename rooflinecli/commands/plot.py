"""`roofline plot`: the roofline of a results document as PNG, SVG or HTML (matplotlib)."""

from __future__ import annotations

import click

from rooflinecli import files, results
from rooflinecli.commands import examples
from rooflinecli.options import force_option, format_option
from rooflinecli.present import MAX_POINTS, document, table
from rooflinecli.present.output import written

WROTE_COLUMNS: list[table.Column] = [
    ("path", "file", str),
    ("format", "format", str),
    ("records", "records", table.integer),
    ("title", "chart", str),
]


@click.command(
    epilog=examples(
        "roofline plot benchmarks/results/gemm-fp32-4096-ladder.json.gz -o roofline.png",
        "roofline plot run.json -o roofline.html --calibration my-gpu.json",
    ),
)
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
@click.option(
    "--per-gpu",
    is_flag=True,
    help="A fleet document (`roofline merge`, `run --gpus`): one point per GPU per stage, "
    "named by its GPU (default: one per stage, the GPU of median time).",
)
@force_option
@format_option
def plot(
    path: str,
    output: str,
    calibration: str | None,
    by_instruction: bool,
    max_points: int,
    per_gpu: bool,
    force: bool,
    fmt: str,
) -> None:
    """Roofline of a results document as an image.

    PNG, SVG, or HTML (the SVG in a minimal page), chosen by the suffix of -o. Each record has
    a short id beside its point, explained in the legend below the chart. Needs the `plot`
    extra (matplotlib). At most 5,000 points unless --max-points says more.
    """
    from rooflinecli.present import image  # matplotlib is imported only when drawing

    image.kind_of(output)
    files.check_output(output, document=False, force=force)
    doc = document.fleet_points(results.load(path), per_gpu)
    from rooflinecli import api

    cal = api.load_calibration(calibration, doc)
    kind = image.save(doc, output, cal, by_instruction, max_points=max_points, force=force)
    title = image.title(doc)
    row = {"path": output, "format": kind, "records": len(doc["records"]), "title": title}
    line = f"wrote {output} ({kind}): {title}"
    written(row, fmt, WROTE_COLUMNS, line, title=f"roofline plot {path}")
