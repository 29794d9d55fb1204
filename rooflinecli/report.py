"""The reporting layer: records (a DataFrame) to a rich table, CSV, Markdown or the JSON document.

Commands hand their records here; nothing else prints results.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from rooflinecli import results

FORMATS = ("table", "json", "csv", "markdown")


def _num(digits: int) -> Callable[[Any], str]:
    def fmt(v: Any) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "-"
        return f"{v:,.{digits}f}"

    return fmt


def _int(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{int(v):,}"


def _sci(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{float(v):.3e}"


def _verified(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return "yes" if bool(v) else "FAILED"


def _ai(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:,.2f}" if v < 100 else f"{v:,.1f}"


# (field, header, formatter)
Column = tuple[str, str, Callable[[Any], str]]

RUN_COLUMNS: list[Column] = [
    ("stage", "stage", str),
    ("time_ms", "time ms", _num(3)),
    ("tflops", "TFLOP/s", _num(2)),
    ("pct_of_reference", "% ref", _num(1)),
    ("pct_of_peak", "% peak", _num(1)),
    ("ai_ideal", "AI ideal", _ai),
    ("ai_instruction", "AI instr", _ai),
    ("roof", "roof", str),
    ("attainable_tflops", "attain TF/s", _num(1)),
    ("pct_of_roof", "% roof", _num(1)),
    ("registers", "regs", _int),
    ("spill_bytes", "spill B", _int),
    ("verified", "verified", _verified),
]

MODEL_COLUMNS: list[Column] = [
    ("stage", "stage", str),
    ("flops", "FLOPs", _sci),
    ("bytes_ideal", "bytes ideal", _sci),
    ("ai_ideal", "AI ideal", _ai),
    ("ai_instruction", "AI instr", _ai),
    ("ridge_point", "ridge", _ai),
    ("roof", "roof", str),
    ("attainable_tflops", "attain TF/s", _num(1)),
    ("attainable_instruction_tflops", "attain@instr", _num(2)),
]


def console(stderr: bool = False) -> Console:
    """One place that makes consoles. NO_COLOR is honoured by rich; pipes get a wide table."""
    stream = sys.stderr if stderr else sys.stdout
    wide = None if stream.isatty() else int(os.environ.get("COLUMNS", "200"))
    return Console(file=stream, width=wide, highlight=False, soft_wrap=False)


def frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame([results.complete_record(r) for r in records])


def _cell(row: pd.Series, field: str, fmt: Callable[[Any], str]) -> str:
    v = row.get(field)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-" if field != "stage" else ""
    return fmt(v)


def table(
    df: pd.DataFrame, columns: list[Column], title: str | None = None, caption: str | None = None
) -> Table:
    t = Table(title=title, caption=caption, title_justify="left", caption_justify="left")
    present = [c for c in columns if c[0] in df.columns]
    for field, header, _ in present:
        t.add_column(header, justify="left" if field in ("stage", "roof") else "right")
    for _, row in df.iterrows():
        t.add_row(*[_cell(row, f, fmt) for f, _, fmt in present])
    return t


def markdown(df: pd.DataFrame, columns: list[Column]) -> str:
    present = [c for c in columns if c[0] in df.columns]
    head = "| " + " | ".join(h for _, h, _ in present) + " |"
    sep = "|" + "|".join("---" if f in ("stage", "roof") else "---:" for f, _, _ in present) + "|"
    rows = [
        "| " + " | ".join(_cell(row, f, fmt) for f, _, fmt in present) + " |"
        for _, row in df.iterrows()
    ]
    return "\n".join([head, sep, *rows]) + "\n"


def emit(
    doc: dict[str, Any],
    fmt: str,
    columns: list[Column],
    title: str | None = None,
    caption: str | None = None,
    out: Console | None = None,
) -> None:
    """Print a results document in one of FORMATS."""
    df = frame(doc["records"])
    con = out or console()
    if fmt == "json":
        con.file.write(results.dumps(doc))
    elif fmt == "csv":
        con.file.write(df.to_csv(index=False))
    elif fmt == "markdown":
        con.file.write(markdown(df, columns))
    else:
        con.print(table(df, columns, title=title, caption=caption))
        for note in notes(doc["records"]):
            con.print(note)


def notes(records: list[dict[str, Any]]) -> list[str]:
    """One line per record that failed or was skipped, so a table row is never unexplained."""
    out = []
    for r in records:
        if r.get("error"):
            out.append(f"  {r['stage']} {r['m']}x{r['n']}x{r['k']}: {r['error']}")
        elif r.get("verified") is False:
            out.append(
                f"  {r['stage']} {r['m']}x{r['n']}x{r['k']}: FAILED verification "
                f"(relative error {r.get('rel_error')!s}); its speed is not reported"
            )
    return out
