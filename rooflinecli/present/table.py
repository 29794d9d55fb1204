"""The reporting layer: records (a DataFrame) to a rich table, CSV, Markdown or the JSON document.

Commands hand their records here; nothing else prints results.
"""

from __future__ import annotations

import functools
import math
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rooflinecli import lazy, results
from rooflinecli.present import FORMATS  # noqa: F401  (the one list, re-exported)

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console
    from rich.table import Table
else:
    pd = lazy.Module("pandas")  # imported on first use: `roofline --help` never pays for it


def missing(v: Any) -> bool:
    """None or NaN: a field that does not apply, shown as '-'."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def cell(render: Callable[[Any], str]) -> Callable[[Any], str]:
    """A column formatter: '-' for a missing value, `render(v)` otherwise, and the value as
    text when it is not of the kind `render` expects (load() refuses such documents)."""

    def fmt(v: Any) -> str:
        if missing(v):
            return "-"
        try:
            return render(v)
        except (TypeError, ValueError):
            return str(v)

    return fmt


def fixed(digits: int) -> Callable[[Any], str]:
    return cell(lambda v: f"{v:,.{digits}f}")


def pct(digits: int = 1) -> Callable[[Any], str]:
    return cell(lambda v: f"{v:.{digits}f}%")


integer = cell(lambda v: f"{int(v):,}")
sci = cell(lambda v: f"{float(v):.3e}")
text = cell(str)
ai = cell(lambda v: f"{v:,.2f}" if v < 100 else f"{v:,.1f}")  # FLOP/byte
_verified = cell(lambda v: "yes" if bool(v) else "FAILED")


# (field, header, formatter)
Column = tuple[str, str, Callable[[Any], str]]

RUN_COLUMNS: list[Column] = [
    ("stage", "stage", str),
    ("time_ms", "time ms", fixed(3)),
    ("tflops", "TFLOP/s", fixed(2)),
    ("pct_of_reference", "% ref", fixed(1)),
    ("pct_of_peak", "% peak", fixed(1)),
    ("ai_ideal", "AI ideal", ai),
    ("ai_instruction", "AI instr", ai),
    ("roof", "roof", str),
    ("attainable_tflops", "attain TF/s", fixed(1)),
    ("pct_of_roof", "% roof", fixed(1)),
    ("registers", "regs", integer),
    ("smem_bytes", "smem B", integer),
    ("spill_bytes", "spill B", integer),
    ("occupancy_pct", "occ %", fixed(0)),
    ("sm_clock_mhz", "SM MHz", integer),
    ("verified", "verified", _verified),
]
# shown only when some record has a value (older documents, and runs without nvidia-smi, lack it)
OPTIONAL_FIELDS = frozenset({"sm_clock_mhz"})


def present(columns: list[Column], df: pd.DataFrame) -> list[Column]:
    """The columns minus optional ones that no row fills."""
    return [
        c
        for c in columns
        if c[0] not in OPTIONAL_FIELDS or (c[0] in df.columns and df[c[0]].notna().any())
    ]


# `roofline profile app`: one row per kernel and grid (rooflinecli/profile_app.py)
APP_COLUMNS: list[Column] = [
    ("label", "kernel [grid]", str),
    ("launches", "launches", integer),
    ("time_ms", "median ms", fixed(3)),
    ("time_ms_total", "total ms", fixed(3)),
    ("work", "work", str),
    ("tflops", "TFLOP/s", fixed(2)),
    ("gbs_dram", "DRAM GB/s", fixed(0)),
    ("ai_dram", "AI DRAM", ai),
    ("ai_l2", "AI L2", ai),
    ("ai_l1", "AI L1", ai),
    ("ai_smem", "AI smem", ai),
    ("binding_level", "bound by", str),
    ("attainable_tflops", "attain TF/s", fixed(1)),
    ("pct_of_roof", "% roof", fixed(1)),
]
LEFT_FIELDS = ("stage", "roof", "label", "work", "binding_level")


def is_app(doc: dict[str, Any]) -> bool:
    """A `roofline profile app` document (records are kernels, not GEMM stages)."""
    return doc.get("command") == "profile app"


def app_title(doc: dict[str, Any]) -> str:
    argv = " ".join((doc.get("program") or {}).get("argv") or ["?"])
    if len(argv) > 80:
        argv = argv[:77] + "..."
    device = (doc.get("device") or {}).get("name", "?")
    roofs = doc.get("roofs") or {}
    return (
        f"Kernels of `{argv}` under Nsight Compute on {device} "
        f"(spec {(doc.get('spec') or {}).get('name', '?')}, {roofs.get('name', '?')} roofs)"
    )


def app_notes(doc: dict[str, Any]) -> list[str]:
    """What the table cannot say: roofs not calibrated, counts ncu could not make, levels
    without an intensity. One line each, distinct reasons once."""
    out = [f"  {n}" for n in (doc.get("roofs") or {}).get("notes") or []]
    code = (doc.get("program") or {}).get("exit_code")
    if code:
        out.append(f"  the program exited with {code}")
    seen: dict[tuple[str, str], list[str]] = {}
    for r in doc["records"]:
        for key, what in (
            ("flops_note", "FLOPs"),
            ("roof_note", "roof"),
            ("ai_dram_note", "AI DRAM"),
            ("ai_l2_note", "AI L2"),
            ("ai_l1_note", "AI L1"),
            ("ai_smem_note", "AI smem"),
        ):
            text = r.get(key)
            if text and not (key.startswith("ai_") and text == "no FLOPs counted"):
                seen.setdefault((what, str(text)), []).append(str(r.get("label") or r["stage"]))
    for (what, text), who in seen.items():
        names = ", ".join(who) if len(who) <= 3 else f"{', '.join(who[:3])} and {len(who) - 3} more"
        out.append(f"  {names}: {what}: {text}")
    return out


MODEL_COLUMNS: list[Column] = [
    ("stage", "stage", str),
    ("flops", "FLOPs", sci),
    ("bytes_ideal", "bytes ideal", sci),
    ("ai_ideal", "AI ideal", ai),
    ("ai_instruction", "AI instr", ai),
    ("ridge_point", "ridge", ai),
    ("roof", "roof", str),
    ("attainable_tflops", "attain TF/s", fixed(1)),
    ("attainable_instruction_tflops", "attain@instr", fixed(2)),
]


@functools.cache
def _console_class() -> type[Console]:
    from rich.console import Console  # rich loads when something is printed, not at start-up

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            """`roofline ... | head`: the reader left, which is no failure (rich exits 1 here)."""
            self.quiet = True
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise SystemExit(0)

    return _Console


def console(stderr: bool = False) -> Console:
    """One place that makes consoles. NO_COLOR is honoured by rich; pipes get a wide table."""
    stream = sys.stderr if stderr else sys.stdout
    wide = None if stream.isatty() else int(os.environ.get("COLUMNS", "200"))
    return _console_class()(file=stream, width=wide, highlight=False, soft_wrap=False, emoji=False)


# A nested object in a CSV row becomes one column per key, named prefix_key (params -> param_BM).
FLAT_PREFIX = {"params": "param", "counters": "counter"}


def plain(v: Any) -> str:
    """A value as plain text: lists joined with ', ', objects as k=v; never a Python repr."""
    if isinstance(v, dict):
        return " ".join(f"{k}={plain(x)}" for k, x in v.items())
    if isinstance(v, list | tuple):
        return ", ".join(plain(x) for x in v)
    return "" if missing(v) else str(v)


def tidy(row: dict[str, Any]) -> dict[str, Any]:
    """One CSV row: a nested object becomes columns of its own (params -> param_BM, ...),
    a list is joined plainly; JSON output keeps the nesting."""
    out: dict[str, Any] = {}
    for key, v in row.items():
        if isinstance(v, dict):
            prefix = FLAT_PREFIX.get(key, key)
            for sub, x in tidy(v).items():
                out[f"{prefix}_{sub}"] = x
        elif isinstance(v, list | tuple):
            out[key] = plain(v)
        else:
            out[key] = v
    return out


def csv_text(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    """The one writer of CSV: tidy rows (no dict or list reprs), whole numbers stay whole."""
    tidied = [tidy(r) for r in rows]
    df = pd.DataFrame(tidied, columns=None if tidied else columns, dtype=object)
    return str(df.to_csv(index=False))


def frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame([results.complete_record(r) for r in records])


def _cell(row: pd.Series, field: str, fmt: Callable[[Any], str]) -> str:
    v = row.get(field)
    if missing(v):
        return "-" if field != "stage" else ""
    return fmt(v)


def table(
    df: pd.DataFrame, columns: list[Column], title: str | None = None, caption: str | None = None
) -> Table:
    from rich.table import Table

    t = Table(title=title, caption=caption, title_justify="left", caption_justify="left")
    present = [c for c in columns if c[0] in df.columns]
    for field, header, _ in present:
        t.add_column(header, justify="left" if field in LEFT_FIELDS else "right")
    for _, row in df.iterrows():
        t.add_row(*[_cell(row, f, fmt) for f, _, fmt in present])
    return t


def markdown_table(
    title: str | None, headers: list[str], left: list[bool], rows: list[list[str]]
) -> str:
    """The one writer of Markdown tables: a `### title` line, then the table (cells escaped).
    No title only where the caller writes its own heading right above (the gate summary)."""
    head = "| " + " | ".join(headers) + " |"
    sep = "|" + "|".join("---" if x else "---:" for x in left) + "|"
    body = ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    lines = [f"### {title}", ""] if title else []
    return "\n".join([*lines, head, sep, *body]) + "\n"


def markdown(df: pd.DataFrame, columns: list[Column], title: str | None = None) -> str:
    present = [c for c in columns if c[0] in df.columns]
    return markdown_table(
        title,
        [h for _, h, _ in present],
        [f in LEFT_FIELDS for f, _, _ in present],
        [[_cell(row, f, fmt) for f, _, fmt in present] for _, row in df.iterrows()],
    )


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
    columns = present(columns, df)
    con = out or console()
    if fmt == "json":
        con.file.write(results.dumps(doc))
    elif fmt == "csv":
        con.file.write(csv_text([results.complete_record(r) for r in doc["records"]]))
    elif fmt == "markdown":
        con.file.write(markdown(df, columns, title=title))
    else:
        con.print(table(df, columns, title=title, caption=caption))
        for note in notes(doc["records"]):
            con.print(note)


def notes(records: list[dict[str, Any]]) -> list[str]:
    """One line per record that failed or was skipped, or is slower than the stage before it,
    so a table row is never unexplained."""
    out = []
    prev: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in records:
        key = (r.get("dtype"), r.get("m"), r.get("n"), r.get("k"))
        before = prev.get(key)
        if r.get("kind") == "stage" and r.get("tflops"):
            if before and r["tflops"] < before["tflops"]:
                why = r.get("slower_because") or "no reason recorded"
                out.append(f"  {r['stage']} is slower than {before['stage']}: {why}")
            prev[key] = r
        if r.get("error"):
            out.append(f"  {r['stage']} {r['m']}x{r['n']}x{r['k']}: {r['error']}")
        elif r.get("verified") is False:
            out.append(
                f"  {r['stage']} {r['m']}x{r['n']}x{r['k']}: FAILED verification "
                f"(relative error {r.get('rel_error')!s}); its speed is not reported"
            )
    held = [r for r in records if r.get("clock_limited_by")]
    if held:
        limits = sorted({x.strip() for r in held for x in str(r["clock_limited_by"]).split(",")})
        sets = {str(r.get("roof_set") or "datasheet") for r in records}
        own = "(--roofs clock: at each row's)"
        if any(x.startswith("clock ") for x in sets):
            tail = "each row's roofs are taken at that clock"
        elif sets == {"datasheet"}:
            tail = f"% peak is against the datasheet's boost-clock peak {own}"
        else:
            tail = f"the roofs are taken at one clock for every row {own}"
        out.append(
            f"  SM clock held down while timing ({', '.join(limits)}) in {len(held)} of "
            f"{len(records)} rows: the SM MHz column is its mean; {tail}"
        )
    return out


# Comparisons and gate verdicts (`roofline compare`, `roofline gate`): rows, not result records.


_ratio = cell(lambda v: f"{v:.3f}x")
_change = cell(lambda v: f"{v:+.1f}%")
_band = cell(lambda v: f"±{v:.1f}%")


COMPARE_COLUMNS: list[Column] = [
    ("stage", "stage", str),
    ("workload", "workload", str),  # only `run llm` rows have one; the column shows only then
    ("shape", "shape", str),
    ("dtype", "dtype", str),
    ("a_tflops", "A TFLOP/s", fixed(2)),
    ("b_tflops", "B TFLOP/s", fixed(2)),
    ("tflops_ratio", "B/A TFLOP/s", _ratio),
    ("a_time_ms", "A ms", fixed(3)),
    ("b_time_ms", "B ms", fixed(3)),
    ("time_ratio", "B/A time", _ratio),
]

GATE_COLUMNS: list[Column] = [
    ("stage", "stage", str),
    ("workload", "workload", str),
    ("shape", "shape", str),
    ("dtype", "dtype", str),
    ("baseline_tflops", "baseline TFLOP/s", fixed(2)),
    ("tflops", "current TFLOP/s", fixed(2)),
    ("change_pct", "change", _change),
    ("noise_pct", "noise", _band),
    ("verdict", "verdict", str),
    ("reason", "reason", str),
]

TEXT_FIELDS = (
    "stage", "workload", "roof", "shape", "dtype", "verdict", "reason",
    "path", "format", "source", "device", "title",
)  # fmt: skip


def text_table(
    df: pd.DataFrame, columns: list[Column], title: str | None = None, caption: str | None = None
) -> Table:
    """table(), with every text column (TEXT_FIELDS) left-justified."""
    t = table(df, columns, title=title, caption=caption)
    present = [c for c in columns if c[0] in df.columns]
    for col, (field, _, _) in zip(t.columns, present, strict=True):
        if field in TEXT_FIELDS:
            col.justify = "left"
    return t


def emit_rows(
    rows: list[dict[str, Any]],
    fmt: str,
    columns: list[Column],
    title: str | None = None,
    caption: str | None = None,
    payload: Any = None,
    out: Console | None = None,
) -> None:
    """Print rows that are not result records in one of FORMATS; json prints `payload` or rows."""
    con = out or console()
    df = pd.DataFrame(rows, columns=[c[0] for c in columns] if not rows else None)
    if fmt == "json":
        data: Any = rows if payload is None else payload
        con.file.write(results.dumps(data))
    elif fmt == "csv":
        con.file.write(csv_text(rows, [c[0] for c in columns]))
    elif fmt == "markdown":
        con.file.write(markdown_rows(rows, columns, title=title))
    else:
        con.print(text_table(df, columns, title=title, caption=caption))


def emit_written(
    row: dict[str, Any], fmt: str, columns: list[Column], line: str, title: str
) -> None:
    """What a command says about a file it wrote: `line` as the table format, else `row`."""
    if fmt == "table":
        console().file.write(f"{line}\n")
    else:
        emit_rows([row], fmt, columns, title=title, payload=row)


def markdown_rows(
    rows: list[dict[str, Any]], columns: list[Column], title: str | None = None
) -> str:
    """markdown() for rows that are not result records: text columns (TEXT_FIELDS) left."""
    df = pd.DataFrame(rows, columns=[c[0] for c in columns] if not rows else None)
    present = [c for c in columns if c[0] in df.columns]
    return markdown_table(
        title,
        [h for _, h, _ in present],
        [f in TEXT_FIELDS for f, _, _ in present],
        [[_cell(row, f, fmt) for f, _, fmt in present] for _, row in df.iterrows()],
    )


def scaling(records: list[dict[str, Any]]) -> pd.DataFrame:
    """TFLOP/s per stage (rows) per shape (columns), in run order: the sweep's summary."""
    df = frame(records)
    df["shape"] = [f"{m}x{n}x{k}" for m, n, k in zip(df["m"], df["n"], df["k"], strict=True)]
    order = list(dict.fromkeys(df["shape"]))
    stages_in_order = list(dict.fromkeys(df["stage"]))
    pivot = df.pivot_table(index="stage", columns="shape", values="tflops", aggfunc="first")
    return pivot.reindex(index=stages_in_order, columns=order)


def emit_scaling(records: list[dict[str, Any]], fmt: str, out: Console | None = None) -> None:
    pivot = scaling(records)
    con = out or console()
    fmt_cell = fixed(2)
    headers = ["stage", *[str(c) for c in pivot.columns]]
    rows = [[str(idx), *[fmt_cell(v) for v in row]] for idx, row in pivot.iterrows()]
    title = "TFLOP/s per stage and shape"
    if fmt == "markdown":
        con.file.write(markdown_table(title, headers, [h == "stage" for h in headers], rows))
        return
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for h in headers:
        t.add_column(h, justify="left" if h == "stage" else "right")
    for r in rows:
        t.add_row(*r)
    con.print(t)
