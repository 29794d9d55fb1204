"""Every `--format` in one place: a command builds a Report (its tables, the lines under them,
its charts, and the document or rows that JSON and CSV carry) and hands it to `emit`, which
writes it as a table, Markdown, JSON or CSV. No command switches on the format itself (a test
reads the syntax tree); the writers of each format are rooflinecli.present.table's.

The parts of a Report, in the order they are written:

- Records: result records (a run, a model), as `show` prints them: the verdict under the table.
- Rows: rows that are not records (a comparison, the gate, a dry run).
- Frame: a plain table of a DataFrame (calibrate, inspect).
- Grid: a table of cells already formatted (specs).
- Scaling: TFLOP/s per stage and shape (a sweep).
- Line: a line under a table (a pick, a note); Markdown too unless it says otherwise.

Names in them are text, never markup or control codes (rooflinecli.names), in every format.
- Chart: the terminal roofline chart (a code block in Markdown).

Markdown puts a blank line before every table but the first.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from rooflinecli import names, results
from rooflinecli.present import View, table

if TYPE_CHECKING:
    from rich.console import Console

JSON, CSV, MARKDOWN, TABLE = "json", "csv", "markdown", "table"


class Records(NamedTuple):
    doc: dict[str, Any]
    columns: list[table.Column] | table.ColumnSet
    title: str | None = None
    caption: str | None = None
    view: View | None = None


class Rows(NamedTuple):
    rows: list[dict[str, Any]]
    columns: list[table.Column]
    title: str | None = None
    caption: str | None = None
    heading: str | None = None  # the table's title instead of `title` ("": none)


class Frame(NamedTuple):
    """A table that fits the console, or splits into several led by its first column
    (table.print_fitted): `prose` fields also wrap at spaces, `left` ones are left-justified."""

    df: Any  # a pandas DataFrame, or table.Rows
    columns: list[table.Column]
    title: str | None = None
    caption: str | None = None
    prose: tuple[str, ...] = ()
    left: tuple[str, ...] = ()


class Grid(NamedTuple):
    """Cells already formatted: one table, or several led by the first column where they do
    not fit the console (table.print_grid)."""

    title: str
    headers: list[str]
    cells: list[list[str]]
    left: list[bool]  # left-justified columns in the table (Markdown: every one)
    caption: str | None = None
    header: bool = True


class Scaling(NamedTuple):
    records: list[dict[str, Any]]


class Line(NamedTuple):
    text: str
    markdown: bool = True  # written in Markdown output too
    rich: bool = False  # printed by rich (wrapped to the console), not written as it is
    gap: bool = False  # in Markdown a blank line before it (a paragraph of its own)


class Chart(NamedTuple):
    doc: dict[str, Any]
    gap: bool = False  # a blank line before it in the table format
    fallback: bool = False  # no chart to draw: one line that says why, instead of an error


Part = Records | Rows | Frame | Grid | Scaling | Line | Chart
_TABLES = (Records, Rows, Frame, Grid, Scaling)


class Report(NamedTuple):
    """What a command writes. `json`: the object --format json writes (results.dumps), or its
    text as is; `csv`: the rows --format csv writes (table.csv_text), or its text as is;
    `markdown`: the whole Markdown output where it is not made of the parts (the gate's)."""

    parts: Sequence[Part]
    json: Any = None
    csv: Any = None
    csv_columns: list[str] | None = None
    markdown: str | None = None


def of_document(doc: dict[str, Any], parts: Sequence[Part]) -> Report:
    """A results document's report: JSON the document, CSV one row per record."""
    return Report(parts, json=doc, csv=[results.complete_record(r) for r in doc["records"]])


def of_rows(
    rows: list[dict[str, Any]], columns: list[table.Column], parts: Sequence[Part], payload: Any
) -> Report:
    """Rows that are not records: JSON `payload` (or the rows), CSV the rows."""
    json = rows if payload is None else payload
    return Report(parts, json=json, csv=rows, csv_columns=[c[0] for c in columns])


def emit(report: Report, fmt: str, out: Console | None = None) -> None:
    """Write `report` in one of FORMATS, on standard output (or `out`'s file). A console (rich)
    is made only for the parts that need one: a records table into a pipe is written without."""
    write = out.file.write if out is not None else sys.stdout.write
    if fmt == JSON:
        write(report.json if isinstance(report.json, str) else results.dumps(report.json))
    elif fmt == CSV:
        rows = report.csv
        write(rows if isinstance(rows, str) else table.csv_text(rows, report.csv_columns))
    elif fmt == MARKDOWN:
        if report.markdown is not None:
            write(report.markdown)
            return
        tables = 0
        for part in report.parts:
            if isinstance(part, _TABLES):
                if tables:
                    write("\n")
                tables += 1
            _markdown(part, write)
    else:
        made: list[Console] = [out] if out is not None else []

        def con() -> Console:
            if not made:
                made.append(table.console())
            return made[0]

        for part in report.parts:
            _table(part, con, write, out)


def _markdown(part: Part, write: Callable[[str], Any]) -> None:
    if isinstance(part, Records):
        write(table.records_markdown(part.doc, part.columns, part.title, part.view))
    elif isinstance(part, Rows):
        write(table.markdown_rows(part.rows, part.columns, title=part.title))
    elif isinstance(part, Frame):
        write(table.markdown(part.df, part.columns, title=part.title))
    elif isinstance(part, Grid):
        write(table.markdown_table(part.title, part.headers, [True] * len(part.headers),
                                   part.cells))  # fmt: skip
    elif isinstance(part, Scaling):
        headers, rows = _scaling(part.records)
        left = [h == "stage" for h in headers]
        write(table.markdown_table(SCALING_TITLE, headers, left, rows))
    elif isinstance(part, Line):
        if part.markdown:
            text = names.markdown(part.text)
            write(f"\n{text}\n" if part.gap else f"{text}\n")
    elif isinstance(part, Chart):  # a code block no name in it can close
        text, why = _chart(part)
        write(f"\n{names.markdown_code(text)}" if why is None else why)


def _table(
    part: Part, con: Callable[[], Console], write: Callable[[str], Any], out: Console | None
) -> None:
    """One part in the table format; a records table without `out` may be written without rich
    (rooflinecli.present.boxed draws the same characters)."""
    if isinstance(part, Records):
        table.print_records(part.doc, part.columns, part.title, part.caption, part.view, out)
    elif isinstance(part, Rows):
        console = con()
        title = part.title if part.heading is None else part.heading
        if title:  # wrapped to the console, not to the table's width
            table.say(console, title, indent=0, style="table.title")
        fields = [c[0] for c in part.columns]
        df = table.pd.DataFrame(part.rows, columns=fields if not part.rows else None)
        _fitted_rows(console, df, part.columns, part.caption)
    elif isinstance(part, Frame):
        table.print_fitted(
            con(), part.df, part.columns, title=part.title, caption=part.caption,
            prose_fields=table.PROSE_FIELDS | set(part.prose),
            left_fields=(*table.LEFT_FIELDS, *part.left),
        )  # fmt: skip
    elif isinstance(part, Grid):  # a spec's names are text, never markup
        table.print_grid(
            con(), part.title, part.headers, part.cells, part.left, part.caption, part.header
        )
    elif isinstance(part, Scaling):
        from rich.table import Table

        headers, rows = _scaling(part.records)
        t = Table(title=SCALING_TITLE, title_justify="left")
        for h in headers:
            t.add_column(h, justify="left" if h == "stage" else "right")
        for r in rows:
            t.add_row(*map(names.rich_text, r))
        con().print(t)
    elif isinstance(part, Line):
        if part.rich:
            table.echo(con(), part.text)
        elif len(part.text) > table.MIN_WIDTH and len(part.text) > con().width:
            table.say(con(), part.text, indent=0)  # wrapped at spaces (a path stays whole)
        else:
            write(f"{names.plain(part.text)}\n")
    elif isinstance(part, Chart):
        text, why = _chart(part)
        write(why if why is not None else f"\n{text}" if part.gap else text)


def _fitted_rows(
    console: Console, df: Any, columns: list[table.Column], caption: str | None
) -> None:
    """Rows as one table that fits the console, or, where even wrapped headers and prose do not
    let it, as several, each led by the columns that name a row (stage, shape, dtype), and one
    line that says so (table.split: no number is cut or split over lines)."""
    present = [c for c in columns if c[0] in df.columns]
    cells = [
        [names.plain(table._cell(row, f, fmt)) for f, _, fmt in present] for _, row in df.iterrows()
    ]
    lead = 0
    while lead < min(3, len(present) - 1) and present[lead][0] in ROW_NAMES:
        lead += 1
    prose = [f in table.PROSE_FIELDS for f, _, _ in present]
    parts = table.split([h for _, h, _ in present], cells, console.width, max(lead, 1), prose)
    for n, cols in enumerate(parts):
        last = n == len(parts) - 1
        t = table.text_table(
            df, [present[i] for i in cols], caption=caption if last else None, width=console.width
        )
        table.print_table(console, t)
    if len(parts) > 1:
        table.say(
            console,
            f"The table is split in {len(parts)} to fit {console.width} columns, each led by "
            f"{', '.join(h for _, h, _ in present[: max(lead, 1)])}.",
            indent=0,
        )


# the columns that name a row of a table of rows: each part of a split table is led by them
ROW_NAMES = frozenset({"stage", "workload", "shape", "dtype", "gpu_label", "name"})

SCALING_TITLE = "TFLOP/s per stage and shape"


def _scaling(records: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    pivot = table.scaling(records)
    cell = table.fixed(2)
    headers = ["stage", *[str(c) for c in pivot.columns]]
    return headers, [[str(idx), *[cell(v) for v in row]] for idx, row in pivot.iterrows()]


def _chart(part: Chart) -> tuple[str, str | None]:
    """(the chart, or the line said instead when there is none to draw and that may be)."""
    from rooflinecli.errors import RooflineError
    from rooflinecli.present import terminal_chart

    try:
        return terminal_chart.render(part.doc), None
    except RooflineError as exc:  # nothing with FLOPs: a table without a chart
        if not part.fallback:
            raise
        return "", f"(no chart: {names.plain(exc.message)})\n"


def written(
    row: dict[str, Any], fmt: str, columns: list[table.Column], line: str, title: str
) -> None:
    """What a command says about a file it wrote: `line` as the table format, else `row`."""
    if fmt == TABLE:
        table.console().file.write(f"{names.plain(line)}\n")
    else:
        emit(of_rows([row], columns, [Rows([row], columns, title=title)], row), fmt)


def draws_tables(fmt: str) -> bool:
    """Whether the format is read by people (a table, Markdown), not by programs."""
    return fmt in (TABLE, MARKDOWN)


def live(fmt: str) -> bool:
    """Whether progress may be drawn while the command works: under a table only."""
    return fmt == TABLE


def chart_wanted(flag: bool | None, fmt: str, default: bool = True) -> bool:
    """--chart/--no-chart against --format: a chart goes with a table or Markdown only; by
    default (no flag) with a table, where `default` says (a run: on a terminal)."""
    from rooflinecli.errors import RooflineError

    if flag and not draws_tables(fmt):
        raise RooflineError(f"--chart goes with --format table or markdown, not {fmt}")
    return fmt == TABLE and default if flag is None else flag
