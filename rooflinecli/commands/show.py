"""`roofline show`: re-render any results document (run or model) as a table and a chart."""

from __future__ import annotations

from typing import Any

import click

from rooflinecli import results
from rooflinecli.commands import Command, examples
from rooflinecli.errors import RooflineError
from rooflinecli.options import (
    Roofs,
    chart_option,
    columns_option,
    format_option,
    roofs_option,
)
from rooflinecli.present import View, document, table
from rooflinecli.present.output import (
    Chart,
    Line,
    Part,
    Records,
    chart_wanted,
    draws_tables,
    emit,
    of_document,
)


@click.command(
    cls=Command,
    epilog=examples(
        "roofline show benchmarks/results/gemm-fp32-4096-ladder.json.gz",
        "roofline show run.json --roofs derived --format markdown",
    ),
)
@click.argument("path", metavar="RESULTS.json", type=click.Path(dir_okay=False))
@format_option
@columns_option
@chart_option
@roofs_option
def show(path: str, fmt: str, view: View, chart_flag: bool | None, roofs: Roofs) -> None:
    """Re-render a results document: table, chart.

    Any results document, run or model (device null), as `run`/`model` show it, and its
    roofline chart in the terminal.
    """
    doc = results.load(path)
    draw = chart_wanted(chart_flag, fmt)
    if table.is_app(doc):
        if roofs.roof_set != "datasheet" or roofs.calibration:
            raise RooflineError(
                "a `profile app` document was placed under this GPU's roofs when it was "
                "profiled (its `roofs` say which): --roofs and --calibration do not apply"
            )
        show_app(doc, fmt, draw)
        return
    if doc.get("device") is not None:
        doc = roofs.place(doc)
    if not doc["records"] and draws_tables(fmt):
        raise RooflineError(f"{path} holds no records")
    emit(document.report(doc, view, draw), fmt)


def show_app(doc: dict[str, Any], fmt: str, want_chart: bool) -> None:
    """A `profile app` document: one row per kernel and grid, the notes, the chart. Kernels
    whose short names read the same are told apart (documents written before they were)."""
    from rooflinecli.core import kernel_names

    doc = {**doc, "records": kernel_names.relabel(doc["records"])}
    parts: list[Part] = [Records(doc, table.APP_COLUMNS, table.app_title(doc))]
    parts += [Line(line) for line in table.app_notes(doc)]
    if want_chart:
        parts.append(Chart(doc, gap=True, fallback=True))
    emit(of_document(doc, parts), fmt)
