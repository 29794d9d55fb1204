"""`roofline show`: re-render any results document (run or model) as a table and a chart."""

from __future__ import annotations

from typing import Any

import click

from rooflinecli import results
from rooflinecli.core import roofs
from rooflinecli.errors import RooflineError
from rooflinecli.options import (
    chart_option,
    columns_option,
    format_option,
    place_on_roofs,
    roofs_option,
    want_chart,
)
from rooflinecli.present import View
from rooflinecli.present import table as report
from rooflinecli.present import terminal_chart as chart


def title(doc: dict[str, Any], recs: list[dict[str, Any]]) -> str:
    """Heading of one shape's table: the shape, the GPU and the roof it is placed under."""
    spec, device, r0 = doc.get("spec") or {}, doc.get("device"), recs[0]
    where = (
        f"model on {spec.get('display_name', '?')} ({spec.get('name', '?')})"
        if device is None
        else f"on {device.get('name', '?')} (spec {spec.get('name', '?')})"
    )
    text = f"GEMM {r0['m']}x{r0['n']}x{r0['k']} {r0['dtype']} {where}"
    per_row = roofs.per_row_roofs(recs)
    if per_row:
        return f"{text}: {per_row}"
    if r0.get("peak_tflops"):
        # a run can be placed against another roof set; a model always stands under the spec's
        shown = {**r0, "roof_set": (r0.get("roof_set") or "datasheet") if device else None}
        text += ": " + roofs.title(shown, spec.get("memory_bandwidth_gbs"))
    return text


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
    if report.is_app(doc):
        if roof_set != "datasheet" or calibration:
            raise RooflineError(
                "a `profile app` document was placed under this GPU's roofs when it was "
                "profiled (its `roofs` say which): --roofs and --calibration do not apply"
            )
        show_app(doc, fmt, draw)
        return
    if doc.get("device") is not None:
        doc = place_on_roofs(doc, roof_set, calibration)
    columns = report.MODEL if doc.get("device") is None else report.RUN
    if doc.get("command") == "run llm":  # two weight GEMMs can share a shape: name the GEMM
        columns = report.LLM
    report.select(columns, view)  # an unknown --columns name: one line, now
    out = report.console()
    if fmt in ("json", "csv"):
        report.emit(doc, fmt, columns, out=out)
        return
    if not doc["records"]:
        raise RooflineError(f"{path} holds no records")
    shapes = list(dict.fromkeys((r["m"], r["n"], r["k"]) for r in doc["records"]))
    for i, shape in enumerate(shapes):
        recs = [r for r in doc["records"] if (r["m"], r["n"], r["k"]) == shape]
        if fmt == "markdown" and i:
            out.file.write("\n")
        report.emit(
            {**doc, "records": recs}, fmt, columns, title=title(doc, recs), out=out, view=view
        )
    if draw:
        text = chart.render(doc)
        out.file.write(f"\n```text\n{text}```\n" if fmt == "markdown" else f"\n{text}")


def show_app(doc: dict[str, Any], fmt: str, want_chart: bool) -> None:
    """A `profile app` document: one row per kernel and grid, the notes, the chart."""
    out = report.console()
    if fmt in ("json", "csv"):
        report.emit(doc, fmt, report.APP_COLUMNS, out=out)
        return
    report.emit(doc, fmt, report.APP_COLUMNS, title=report.app_title(doc), out=out)
    for line in report.app_notes(doc):
        out.file.write(line + "\n")
    if want_chart:
        try:
            text = chart.render(doc)
        except RooflineError as exc:  # nothing with FLOPs: a table without a chart
            out.file.write(f"(no chart: {exc.message})\n")
            return
        out.file.write(f"\n```text\n{text}```\n" if fmt == "markdown" else f"\n{text}")
