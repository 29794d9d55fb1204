"""`roofline compare`: two results documents side by side, with B/A ratios."""

from __future__ import annotations

from typing import Any

import click

from rooflinecli import results
from rooflinecli.commands import examples
from rooflinecli.options import format_option
from rooflinecli.present import gate, output, table


def _who(doc: dict[str, Any], path: str) -> str:
    device = doc.get("device")
    if device is None:
        return f"{path} (model, spec {(doc.get('spec') or {}).get('name', '?')})"
    return f"{path} ({gate.describe(doc)})"


@click.command(
    epilog=examples(
        "roofline compare before.json after.json",
        "roofline compare run-a100.json run-h100.json --format markdown",
    ),
)
@click.argument("a_path", metavar="A.json", type=click.Path(dir_okay=False))
@click.argument("b_path", metavar="B.json", type=click.Path(dir_okay=False))
@format_option
def compare(a_path: str, b_path: str, fmt: str) -> None:
    """Two runs side by side, with B/A ratios.

    Records pair up by stage, shape and dtype; B/A of TFLOP/s above 1 and of time below 1 mean
    B is faster.
    """
    a, b = results.load(a_path), results.load(b_path)
    rows = gate.compare_rows(a, b, where=(a_path, b_path))
    columns = table.COMPARE_COLUMNS
    parts: list[output.Part] = [
        # the table's heading written as text: long paths neither wrap nor read as markup
        output.Line(f"A: {_who(a, a_path)}", markdown=False),
        output.Line(f"B: {_who(b, b_path)}", markdown=False),
        output.Rows(
            rows,
            columns,
            title=f"A: {_who(a, a_path)}; B: {_who(b, b_path)}",
            caption="B/A TFLOP/s above 1: B is faster. B/A time below 1: B is faster.",
            heading="",
        ),
    ]
    payload = {"a": a_path, "b": b_path, "rows": rows}
    output.emit(output.of_rows(rows, columns, parts, payload), fmt)
