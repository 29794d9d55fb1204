"""`roofline report`: one self-contained HTML page of results documents (rooflinecli.present.report
makes it; plotly, the `report` extra, is imported only here, when a page is written)."""

from __future__ import annotations

import click

from rooflinecli import files, results
from rooflinecli.commands import examples
from rooflinecli.errors import RooflineError
from rooflinecli.options import force_option, format_option, tolerance_option
from rooflinecli.present import table
from rooflinecli.present.output import written

WROTE_COLUMNS: list[table.Column] = [
    ("path", "file", str),
    ("bytes", "bytes", table.integer),
    ("documents", "documents", table.integer),
    ("records", "records", table.integer),
]


@click.command(
    epilog=examples(
        "roofline report benchmarks/results/gemm-fp32-4096-ladder.json.gz -o report.html",
        "roofline report current.json --baseline baseline.json -o gate.html",
    ),
)
@click.argument("paths", metavar="RESULTS.json...", nargs=-1, type=click.Path(dir_okay=False))
@click.option(
    "--output",
    "-o",
    required=True,
    metavar="FILE.html",
    help="The page to write (atomically): self-contained, it opens offline.",
)
@click.option(
    "--calibration",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="A calibration from `roofline calibrate`: its measured roofs beside the datasheet's, "
    "and the measured roof set (default: the one cached for each document's GPU, if any).",
)
@click.option(
    "--baseline",
    "baseline_path",
    metavar="BASELINE.json",
    type=click.Path(dir_okay=False),
    default=None,
    help="Gate the (one) run against this baseline: the page shows the verdict per check and "
    "each stage's samples on both sides.",
)
@tolerance_option("With --baseline: allowed TFLOP/s loss, in percent (as `roofline gate`).")
@click.option(
    "--allow-mismatch",
    is_flag=True,
    help="With --baseline: compare against a baseline from another GPU, driver or CUDA.",
)
@force_option
@format_option
def report(
    paths: tuple[str, ...],
    output: str,
    calibration: str | None,
    baseline_path: str | None,
    tolerance: float,
    allow_mismatch: bool,
    force: bool,
    fmt: str,
) -> None:
    """One HTML page of results documents.

    Per document: the interactive roofline (hover a point, hide a series from the legend,
    switch the roof set or precision), the tables and verdict `show` prints, and the device,
    driver, CUDA, commit and command. Two documents: B compared with A, each stage's samples
    side by side; with --baseline, the gate's verdict per check instead. Every script and
    style is inside the page (Plotly's JavaScript too): it opens offline. Needs the `report`
    extra (plotly).
    """
    if not paths:
        raise RooflineError("give at least one results document: roofline report RUN.json -o FILE")
    if not output.lower().endswith((".html", ".htm")):
        raise RooflineError(f"the report is an HTML page: end {output} in .html")
    files.check_output(output, document=False, force=force)
    if baseline_path and len(paths) != 1:
        raise RooflineError("--baseline gates one run: give one results document with it")
    docs = [results.load(p) for p in paths]
    result = None
    base = None
    if baseline_path:
        from rooflinecli.present import gate

        base_doc = results.load(baseline_path)
        result = gate.evaluate(
            docs[0],
            base_doc,
            tolerance_pct=tolerance,
            allow_mismatch=allow_mismatch,
            where=(paths[0], baseline_path),
        )
        base = (baseline_path, base_doc)
    from rooflinecli import api

    size = api.write_report(output, list(paths), docs, calibration, result, base, force=force)
    records = sum(len(d["records"]) for d in docs) + (len(base[1]["records"]) if base else 0)
    count = len(docs) + (1 if base else 0)
    row = {"path": output, "bytes": size, "documents": count, "records": records}
    line = f"wrote {output} ({size / 1e6:.1f} MB): {count} document{'s' if count > 1 else ''}, "
    line += f"{records} records"
    written(row, fmt, WROTE_COLUMNS, line, title=f"roofline report {' '.join(paths)}")
