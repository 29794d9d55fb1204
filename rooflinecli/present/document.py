"""A run or model document as `show` (and `run attention`) prints it: one table per shape, each
titled by its shape, GPU and roofs, then the terminal chart."""

from __future__ import annotations

from typing import Any

from rooflinecli.core import attention, roofs
from rooflinecli.present import View, table, terminal_chart


def title(doc: dict[str, Any], recs: list[dict[str, Any]]) -> str:
    """Heading of one shape's table: the shape, the GPU and the roof it is placed under."""
    spec, device, r0 = doc.get("spec") or {}, doc.get("device"), recs[0]
    where = (
        f"model on {spec.get('display_name', '?')} ({spec.get('name', '?')})"
        if device is None
        else f"on {device.get('name', '?')} (spec {spec.get('name', '?')})"
    )
    if r0.get("op") == "attention":
        text = f"Attention {attention.label(r0)} {r0['dtype']} {where}"
    else:
        text = f"GEMM {r0['m']}x{r0['n']}x{r0['k']} {r0['dtype']} {where}"
    per_row = roofs.per_row_roofs(recs)
    if per_row:
        return f"{text}: {per_row}"
    if r0.get("peak_tflops"):
        # a run can be placed against another roof set; a model always stands under the spec's
        shown = {**r0, "roof_set": (r0.get("roof_set") or "datasheet") if device else None}
        text += ": " + roofs.title(shown, spec.get("memory_bandwidth_gbs"))
    return text


def tables(doc: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The tables `show` prints (the report's page too): one per shape, each with its title."""
    shapes = list(dict.fromkeys(roofs.shape_key(r) for r in doc["records"]))
    out = []
    for shape in shapes:
        recs = [r for r in doc["records"] if roofs.shape_key(r) == shape]
        out.append((title(doc, recs), recs))
    return out


def columns_of(doc: dict[str, Any]) -> table.ColumnSet:
    if doc.get("device") is None:
        if doc.get("command") == "model attention":
            return table.ATTENTION_MODEL
        return table.MODEL
    if doc.get("command") == "run llm":  # two weight GEMMs can share a shape: name the GEMM
        return table.LLM
    return table.RUN


def render(doc: dict[str, Any], fmt: str, view: View, draw: bool) -> None:
    """A run or model document as `show` prints it: one table per shape, then the chart."""
    columns = columns_of(doc)
    table.select(columns, view)  # an unknown --columns name: one line, now
    out = table.console()
    if fmt in ("json", "csv"):
        table.emit(doc, fmt, columns, out=out)
        return
    for i, (heading, recs) in enumerate(tables(doc)):
        if fmt == "markdown" and i:
            out.file.write("\n")
        table.emit({**doc, "records": recs}, fmt, columns, title=heading, out=out, view=view)
    if draw:
        text = terminal_chart.render(doc)
        out.file.write(terminal_chart.block(text, fmt) if fmt == "markdown" else f"\n{text}")
