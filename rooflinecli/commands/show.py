"""`roofline show`: re-render any results document (run or model) as a table and a chart."""

from __future__ import annotations

from typing import Any

import click

from rooflinecli import names, results
from rooflinecli.errors import RooflineError
from rooflinecli.options import (
    chart_option,
    columns_option,
    format_option,
    place_on_roofs,
    roofs_option,
    want_chart,
)
from rooflinecli.present import View, document, table, terminal_chart


@click.command()
@click.argument("path", metavar="RESULTS.json", type=click.Path(dir_okay=False))
@format_option
@columns_option
@chart_option
@roofs_option
def show(
    path: str, fmt: str, view: View, chart_flag: bool | None, roof_set: str, calibration: str | None
) -> None:
    """Re-render a results document: table, chart.

    Any results document, run or model (device null), as `run`/`model` show it, and its
    roofline chart in the terminal.
    """
    doc = results.load(path)
    draw = want_chart(chart_flag, fmt)
    if table.is_app(doc):
        if roof_set != "datasheet" or calibration:
            raise RooflineError(
                "a `profile app` document was placed under this GPU's roofs when it was "
                "profiled (its `roofs` say which): --roofs and --calibration do not apply"
            )
        show_app(doc, fmt, draw)
        return
    if doc.get("device") is not None:
        doc = place_on_roofs(doc, roof_set, calibration)
    if not doc["records"] and fmt not in ("json", "csv"):
        raise RooflineError(f"{path} holds no records")
    document.render(doc, fmt, view, draw)


def show_app(doc: dict[str, Any], fmt: str, want_chart: bool) -> None:
    """A `profile app` document: one row per kernel and grid, the notes, the chart. Kernels
    whose short names read the same are told apart (documents written before they were)."""
    from rooflinecli.core import kernel_names

    doc = {**doc, "records": kernel_names.relabel(doc["records"])}
    out = table.console()
    if fmt in ("json", "csv"):
        table.emit(doc, fmt, table.APP_COLUMNS, out=out)
        return
    table.emit(doc, fmt, table.APP_COLUMNS, title=table.app_title(doc), out=out)
    for line in table.app_notes(doc):
        out.file.write((names.markdown(line) if fmt == "markdown" else names.plain(line)) + "\n")
    if want_chart:
        try:
            text = terminal_chart.render(doc)
        except RooflineError as exc:  # nothing with FLOPs: a table without a chart
            out.file.write(f"(no chart: {names.plain(exc.message)})\n")
            return
        out.file.write(terminal_chart.block(text, fmt) if fmt == "markdown" else f"\n{text}")
