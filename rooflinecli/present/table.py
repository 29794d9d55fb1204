"""The writers of every format: records (a DataFrame) as a rich table, Markdown, CSV; the column
sets of each kind of table. Which of them a command writes, for its --format, is
rooflinecli.present.output's to decide; nothing else prints results. Every name in a cell, a
title or a caption is text, never markup: a rich table gets rich.text.Text, Markdown and CSV
cells go through rooflinecli.names (escaped; a CSV text cell that a spreadsheet would run is
neutralised), JSON stays JSON.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rooflinecli import lazy, names, results
from rooflinecli.present import (
    FORMATS,  # noqa: F401  (the one list, re-exported)
    View,
    boxed,
)
from rooflinecli.present.columns import (
    APP_COLUMNS,
    ATTENTION_MODEL,
    COMPARE_COLUMNS,
    DRY_RUN_COLUMNS,
    GATE_COLUMNS,
    GPU_COLUMN,
    LEFT_FIELDS,
    LLM,
    LLM_COLUMNS,
    MODEL,
    MODEL_COLUMNS,
    NAME_FIELDS,
    OPTIONAL_FIELDS,
    RUN,
    RUN_COLUMNS,
    TEXT_FIELDS,
    Column,
    ColumnSet,
    Rows,
    ai,
    app_notes,
    app_title,
    cell,
    fixed,
    integer,
    is_app,
    missing,
    pct,
    present,
    sci,
    select,
    text,
    with_gpu,
)
from rooflinecli.present.markup import (
    _cell,
    _records_columns,
    frame,
    html,
    html_rows,
    html_table,
    markdown,
    markdown_rows,
    markdown_table,
    records_markdown,
)

__all__ = [  # the column sets, cell formats and markup writers, re-exported from their modules
    "NAME_FIELDS",
    "frame",
    "html",
    "html_rows",
    "html_table",
    "markdown",
    "markdown_rows",
    "markdown_table",
    "records_markdown",
    "APP_COLUMNS",
    "ATTENTION_MODEL",
    "COMPARE_COLUMNS",
    "Column",
    "ColumnSet",
    "DRY_RUN_COLUMNS",
    "GATE_COLUMNS",
    "GPU_COLUMN",
    "LEFT_FIELDS",
    "LLM",
    "LLM_COLUMNS",
    "MODEL",
    "MODEL_COLUMNS",
    "OPTIONAL_FIELDS",
    "RUN",
    "RUN_COLUMNS",
    "Rows",
    "TEXT_FIELDS",
    "ai",
    "app_notes",
    "app_title",
    "cell",
    "fixed",
    "integer",
    "is_app",
    "missing",
    "pct",
    "present",
    "sci",
    "select",
    "text",
    "with_gpu",
]

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console
    from rich.table import Table
else:
    pd = lazy.Module("pandas")  # imported on first use: `roofline --help` never pays for it


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
    """One place that makes consoles. NO_COLOR is honoured by rich; a terminal narrower than
    MIN_WIDTH, and a pipe, get the width _width() says."""
    stream = sys.stderr if stderr else sys.stdout
    wide = _tty_width() if stream.isatty() else _width()
    return _console_class()(file=stream, width=wide, highlight=False, soft_wrap=False, emoji=False)


# The narrowest width the tool writes for: a terminal or COLUMNS below it gets it (the terminal
# wraps what is wider), and so does a pipe without COLUMNS
MIN_WIDTH = 80


def _tty_width() -> int | None:
    """A terminal's width as rich finds it (COLUMNS, else the terminal's), or MIN_WIDTH where
    that is narrower; None: rich's own."""
    import shutil

    return None if shutil.get_terminal_size((MIN_WIDTH, 24)).columns >= MIN_WIDTH else MIN_WIDTH


def _width() -> int:
    """The width of a console on a stream that is not a terminal (a pipe, a file): COLUMNS
    where it is a width of at least MIN_WIDTH (a whole number up to 10,000), else MIN_WIDTH; a
    bad COLUMNS is ignored, as rich ignores it on a terminal."""
    value = os.environ.get("COLUMNS", "").strip()
    if value.isdigit() and MIN_WIDTH <= int(value) <= 10_000:
        return int(value)
    return MIN_WIDTH


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


def _csv_row(row: dict[str, Any]) -> dict[str, Any]:
    """A tidy row for CSV: every text cell, and every column name, through names.csv_cell (no
    formula a spreadsheet would run); numbers stay numbers."""
    return {
        names.csv_cell(k): names.csv_cell(v) if isinstance(v, str) else v for k, v in row.items()
    }


def csv_text(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    """The one writer of CSV: tidy rows (no dict or list reprs), whole numbers stay whole, text
    cells neutralised (names.csv_cell)."""
    tidied = [_csv_row(tidy(r)) for r in rows]
    df = pd.DataFrame(tidied, columns=None if tidied else columns, dtype=object)
    return str(df.to_csv(index=False))


# Columns that name what a row is: never cut with an ellipsis. When the table is too wide even
# with every other header wrapped, they fold onto more lines instead (never below NAME_FLOOR).
NAME_FLOOR = 12  # NAME_FIELDS: rooflinecli.present.columns
# Columns of sentences: their cells may wrap at spaces like a header
PROSE_FIELDS = frozenset({"status", "reason", "error", "counters_reason", "limited_by"})


def _span(widths: Sequence[int]) -> int:
    """Terminal columns a rich table of these content widths takes: each column's two spaces
    of padding, and the n + 1 rules of the box."""
    return sum(widths) + 3 * len(widths) + 1


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=1)


def fit(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    name_cols: Sequence[bool],
    width: int,
    prose: Sequence[bool] | None = None,
) -> list[int]:
    """Content width of each column so the table spans at most `width` terminal columns.

    Natural widths when they fit. Otherwise headers, and the cells of prose columns, wrap at
    their spaces ("time ms" over two lines), the most room first; then, if that makes it fit,
    the name columns fold their text onto more lines (never narrower than NAME_FLOOR). A number
    or a name is never cut: past that point the table is wider than `width` (print_table) and
    the terminal wraps it."""
    prose = prose or [False] * len(headers)
    cells = [[str(r[i]) for r in rows] for i in range(len(headers))]
    natural = [max([len(h), *map(len, c)]) for h, c in zip(headers, cells, strict=True)]
    least = [
        max([_longest_word(h), *map(_longest_word if wraps else len, c)])
        for h, c, wraps in zip(headers, cells, prose, strict=True)
    ]
    widths = list(natural)
    excess = _span(widths) - width
    for i in sorted(range(len(widths)), key=lambda i: natural[i] - least[i], reverse=True):
        if excess <= 0:
            break
        if name_cols[i]:
            continue
        cut = min(excess, widths[i] - least[i])
        widths[i] -= cut
        excess -= cut
    room = sum(max(0, widths[i] - NAME_FLOOR) for i in range(len(widths)) if name_cols[i])
    if 0 < excess <= room:  # folding the names makes it fit (else they stay on one line)
        for i in range(len(widths)):
            if excess > 0 and name_cols[i]:
                cut = min(excess, max(0, widths[i] - NAME_FLOOR))
                widths[i] -= cut
                excess -= cut
    return widths


def table(
    df: Rows | pd.DataFrame,
    columns: list[Column],
    title: str | None = None,
    caption: str | None = None,
    width: int | None = None,
    *,
    name_fields: frozenset[str] = NAME_FIELDS,
    prose_fields: frozenset[str] = PROSE_FIELDS,
    left_fields: Sequence[str] = LEFT_FIELDS,
) -> Table:
    """A rich table of `columns` (those df has). With `width` (the console's), every column gets
    a width from fit(): names whole, headers wrapped before anything is cut; print it with
    print_table(), which lets a table that cannot fit be wider than the console. The fields
    that name a row, hold sentences or go left default to NAME_FIELDS, PROSE_FIELDS and
    LEFT_FIELDS (names and left fields are left-justified)."""
    from rich.table import Table

    t = Table(
        title=names.rich_text(title) if title else None,
        caption=names.rich_text(caption) if caption else None,
        title_justify="left",
        caption_justify="left",
    )
    present = [c for c in columns if c[0] in df.columns]
    rows = [[names.plain(_cell(row, f, fmt)) for f, _, fmt in present] for _, row in df.iterrows()]
    name_cols = [f in name_fields for f, _, _ in present]
    prose = [f in prose_fields for f, _, _ in present]
    widths = fit([h for _, h, _ in present], rows, name_cols, width, prose) if width else None
    for i, (field, header, _) in enumerate(present):
        longest = max((len(r[i]) for r in rows), default=0)
        t.add_column(
            header,
            justify="left" if name_cols[i] or field in left_fields else "right",
            overflow="fold",  # a value that must be cut folds onto the next line, whole
            no_wrap=name_cols[i] and (widths is None or widths[i] >= longest),
            width=widths[i] if widths else None,
        )
    for r in rows:
        t.add_row(*map(names.rich_text, r))  # text, never markup: `[/bold]` is a name
    if widths is not None:
        t.min_width = _span(widths)  # what print_table() needs at least
    return t


def split(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    lead: int = 1,
    prose: Sequence[bool] | None = None,
) -> list[list[int]]:
    """The columns (indexes) of the tables that show these within `width` terminal columns.

    One table when they fit it, headers and prose cells wrapped at their spaces (fit()). Else
    several, each led by the first `lead` columns (what names a row, whole) and holding as many
    of the others, in order, as fit beside them at their natural widths: nothing wrapped. No
    cell is cut and no number split over lines: a column too wide even beside the lead alone
    gets a table of its own, where it wraps, or is wider than `width` (print_table)."""
    prose = prose or [False] * len(headers)
    lead = min(lead, len(headers))
    cells = [[str(r[i]) for r in rows] for i in range(len(headers))]
    natural = [max([len(h), *map(len, c)]) for h, c in zip(headers, cells, strict=True)]
    least = [
        max([_longest_word(h), *map(_longest_word if wraps else len, c)])
        for h, c, wraps in zip(headers, cells, prose, strict=True)
    ]
    least[:lead] = natural[:lead]  # never folded
    if _span(least) <= width:
        return [list(range(len(headers)))]
    parts: list[list[int]] = []
    part = list(range(lead))
    for i in range(lead, len(headers)):
        if len(part) > lead and _span([natural[j] for j in [*part, i]]) > width:
            parts.append(part)
            part = list(range(lead))
        part.append(i)
    parts.append(part)
    return parts


def print_fitted(
    con: Console,
    df: Rows | pd.DataFrame,
    columns: list[Column],
    title: str | None = None,
    caption: str | None = None,
    *,
    lead: int = 1,
    name_fields: frozenset[str] = NAME_FIELDS,
    prose_fields: frozenset[str] = PROSE_FIELDS,
    left_fields: Sequence[str] = LEFT_FIELDS,
) -> None:
    """`columns` of df as one table that fits the console, or as several (split()), each led
    by the first `lead` columns: the title above the first, the caption under the last (both
    wrapped to the console, not to a narrow table's width)."""
    present = [c for c in columns if c[0] in df.columns]
    rows = [[names.plain(_cell(row, f, fmt)) for f, _, fmt in present] for _, row in df.iterrows()]
    prose = [f in prose_fields for f, _, _ in present]
    parts = split([h for _, h, _ in present], rows, con.width, lead, prose)
    if title:  # wrapped to the console, not to the table's width
        say(con, title, indent=0, style="table.title")
    for part in parts:
        t = table(
            df, [present[i] for i in part], width=con.width, name_fields=name_fields,
            prose_fields=prose_fields, left_fields=left_fields,
        )  # fmt: skip
        print_table(con, t)
    if caption:
        say(con, caption, indent=0)


def print_grid(
    con: Console,
    title: str,
    headers: list[str],
    cells: list[list[str]],
    left: list[bool],
    caption: str | None = None,
    header: bool = True,
    lead: int = 1,
) -> None:
    """Cells already formatted as one table, or, where they do not fit the console, as several
    (split()), each led by the first `lead` columns, whole; cells are text, never markup."""
    from rich.table import Table

    parts = split(headers, cells, con.width, lead, [False] * len(headers))
    one = len(parts) == 1
    if not one:  # wrapped to the console, not to a narrow table's width
        say(con, title, indent=0, style="table.title")
    for part in parts:
        t = Table(
            title=names.rich_text(title) if one else None,
            caption=names.rich_text(caption) if one and caption else None,
            caption_justify="left",
            title_justify="left",
            show_header=header,
        )
        for i in part:
            t.add_column(headers[i], justify="left" if left[i] else "right")
        for row in cells:
            t.add_row(*(names.rich_text(row[i]) for i in part))
        con.print(t)
    if caption and not one:
        say(con, caption, indent=0)


def print_table(con: Console, t: Table) -> None:
    """Print a table from table(width=...): when even its narrowest layout is wider than the
    console, it is printed wider (the terminal wraps its lines) rather than cut."""
    need = t.min_width or 0
    if need <= con.width:
        con.print(t)
        return
    width = con.width
    con.width = need
    try:
        con.print(t)
    finally:
        con.width = width


def print_records(
    doc: dict[str, Any],
    columns: list[Column] | ColumnSet,
    title: str | None = None,
    caption: str | None = None,
    view: View | None = None,
    out: Console | None = None,
) -> None:
    """A document's records as a table, the verdict in words and notes on failures under it
    (rooflinecli.present.verdict). Without `out`, on standard output, it is written without
    rich where present.boxed draws the same characters."""
    from rooflinecli.present import verdict

    df, shown = _records_columns(doc["records"], columns, view)
    said = verdict.lines(doc["records"]) + [n.strip() for n in notes(doc["records"])]
    text = None if out is not None else _boxed(df, shown, title, caption, said)
    if text is not None:  # what rich would draw here, without loading rich
        sys.stdout.write(text)
        return
    con = out or console()
    if title:  # wrapped to the console, not to a compact table's width
        say(con, title, indent=0, style="table.title")
    print_table(con, table(df, shown, caption=caption, width=con.width))
    for line in said:
        say(con, line)


def _boxed(
    df: Rows | pd.DataFrame,
    columns: list[Column],
    title: str | None,
    caption: str | None,
    said: list[str],
) -> str | None:
    """emit()'s table format as rich prints it to standard output, when that is plain text and
    the table simple enough for rooflinecli.present.boxed; None: rich prints it."""
    if not boxed.colourless(sys.stdout):
        return None
    width = _width()
    present = [c for c in columns if c[0] in df.columns]
    rows = [[_cell(row, f, fmt) for f, _, fmt in present] for _, row in df.iterrows()]
    right = [not (f in NAME_FIELDS or f in LEFT_FIELDS) for f, _, _ in present]
    body = boxed.table([h for _, h, _ in present], rows, right, width, caption)
    if body is None:
        return None
    head = _wrapped(title, 0, width) if title else []
    tail = [x for line in said for x in _wrapped(line, 2, width)]
    if not all(map(boxed.prose, head + tail)):
        return None
    return "".join(f"{x}\n" for x in head) + body + "".join(f"{x}\n" for x in tail)


def _wrapped(text: str, indent: int, width: int) -> list[str]:
    """Prose wrapped to a console `width` wide, every line indented (say())."""
    pad = " " * indent
    wrap_at = max(20, width - indent)
    lines = textwrap.wrap(text, wrap_at, break_on_hyphens=False, break_long_words=False)
    return [pad + line for line in lines]


def echo(con: Console, text: str) -> None:
    """One message line on a console, wrapped there, as text: a name or a compiler's message in
    it is never read as rich markup (`[lambda() (instance 1)]`), nor a control code sent."""
    con.print(names.rich_text(text))


def say(con: Console, text: str, indent: int = 2, style: str = "") -> None:
    """Prose around a table: wrapped to the console (no trailing spaces), every line indented,
    as text (never read as rich markup)."""
    from rich.text import Text

    for line in _wrapped(names.plain(text), indent, con.width):
        con.print(Text(line, style=style), soft_wrap=True)


def notes(records: list[dict[str, Any]]) -> list[str]:
    """One line per record that failed or was skipped and that the verdict does not speak for
    (rooflinecli.present.verdict), and one on a held-down clock, so a table row is never
    unexplained."""
    from rooflinecli.present.verdict import explains

    out = []
    for r in records:
        if explains(r):
            continue
        # here, not above: the chart module (and attention's) is no cost of a table that the
        # verdict explains in full (`model`)
        from rooflinecli.present.terminal_chart import shape_of

        shape = shape_of(r) if r.get("m") is not None or r.get("op") else "NonexNonexNone"
        if r.get("error"):
            out.append(f"  {r['stage']} {shape}: {r['error']}")
        elif r.get("verified") is False:
            out.append(
                f"  {r['stage']} {shape}: FAILED verification "
                f"(relative error {r.get('rel_error')!s}); its speed is not reported"
            )
    missed = [r for r in records if r.get("noise_target_met") is False]
    if missed:
        worst = max(missed, key=lambda r: r.get("noise_pct") or math.inf)
        noise = worst.get("noise_pct")
        out.append(
            f"  noise target not met in {len(missed)} of {len(records)} rows (the budget ran "
            f"out first): {', '.join(r['stage'] for r in missed)}; worst "
            + (f"{worst['stage']} at {noise:.2f}%" if noise is not None else worst["stage"])
            + " (--budget-ms for more repeats)"
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


def skip_summary(skipped: list[dict[str, Any]] | None) -> str | None:
    """One line for the stages a run left out where they cannot run the shape (a document's
    `skipped`, from rooflinecli.plan: nobody named them), by what they are and why: "25 decode
    stages skipped (5 at 5 shapes): they run at M = 1..64"."""
    if not skipped:
        return None
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for s in skipped:
        groups.setdefault((str(s.get("kind")), str(s.get("because"))), []).append(s)
    parts = []
    for (kind, because), items in groups.items():
        stages = len({str(s.get("stage")) for s in items})
        shapes = len({str(s.get("shape")) for s in items})
        where = f"{stages} at {shapes} shape{'s' if shapes != 1 else ''}"
        parts.append(f"{len(items)} {kind} skipped ({where}): {because}")
    return "; ".join(parts)


def text_table(
    df: pd.DataFrame,
    columns: list[Column],
    title: str | None = None,
    caption: str | None = None,
    width: int | None = None,
) -> Table:
    """table(), with every text column (TEXT_FIELDS) left-justified."""
    t = table(df, columns, title=title, caption=caption, width=width)
    present = [c for c in columns if c[0] in df.columns]
    for col, (field, _, _) in zip(t.columns, present, strict=True):
        if field in TEXT_FIELDS:
            col.justify = "left"
    return t


def scaling(records: list[dict[str, Any]]) -> pd.DataFrame:
    """TFLOP/s per stage (rows) per shape (columns), in run order: the sweep's summary."""
    recs = [results.complete_record(r) for r in records]
    df = pd.DataFrame(recs)
    from rooflinecli.present.terminal_chart import shape_of

    df["shape"] = [shape_of(r) if r.get("op") else f"{r['m']}x{r['n']}x{r['k']}" for r in recs]
    order = list(dict.fromkeys(df["shape"]))
    stages_in_order = _merged(
        [[str(r["stage"]) for r, s in zip(recs, df["shape"], strict=True) if s == shape]
         for shape in order]
    )  # fmt: skip
    pivot = df.pivot_table(index="stage", columns="shape", values="tflops", aggfunc="first")
    return pivot.reindex(index=stages_in_order, columns=order)


def _merged(runs: list[list[str]]) -> list[str]:
    """One order of the stages of every shape, each shape's order kept: a stage other shapes
    left out (rooflinecli.plan) or did not pick (--stages best) comes in its place, after the
    stages before it at its shape, else before those after it; the reference stays last."""
    order: list[str] = []
    for run in runs:
        for i, name in enumerate(run):
            if name in order:
                continue
            before = [x for x in run[:i] if x in order]
            after = [x for x in run[i + 1 :] if x in order]
            if before:
                order.insert(order.index(before[-1]) + 1, name)
            elif after:
                order.insert(order.index(after[0]), name)
            else:
                order.append(name)
    return order
