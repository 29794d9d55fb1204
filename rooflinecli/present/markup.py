"""The Markdown and HTML writers: records (or rows that are not records) as a table, every cell
and title written as text through rooflinecli.names (the columns: rooflinecli.present.columns)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rooflinecli import lazy, names
from rooflinecli.present import View
from rooflinecli.present.columns import (
    LEFT_FIELDS,
    NAME_FIELDS,
    TEXT_FIELDS,
    Column,
    ColumnSet,
    Rows,
    missing,
    present,
    select,
)

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy.Module("pandas")


def frame(records: list[dict[str, Any]]) -> Rows:
    return Rows(records)


def _cell(row: Any, field: str, fmt: Callable[[Any], str]) -> str:
    v = row.get(field)
    if missing(v):
        return "-" if field != "stage" else ""
    return fmt(v)


def markdown_table(
    title: str | None, headers: list[str], left: list[bool], rows: list[list[str]]
) -> str:
    """The one writer of Markdown tables: a `### title` line, then the table (cells and title
    through names.markdown: a name's line break, pipe, `<script>` or `[link](...)` is text).
    No title only where the caller writes its own heading right above (the gate summary)."""
    head = "| " + " | ".join(headers) + " |"
    sep = "|" + "|".join("---" if x else "---:" for x in left) + "|"
    body = ["| " + " | ".join(names.markdown(c) for c in r) + " |" for r in rows]
    lines = [f"### {names.markdown(title)}", ""] if title else []
    return "\n".join([*lines, head, sep, *body]) + "\n"


def markdown(df: Rows | pd.DataFrame, columns: list[Column], title: str | None = None) -> str:
    present = [c for c in columns if c[0] in df.columns]
    return markdown_table(
        title,
        [h for _, h, _ in present],
        [f in NAME_FIELDS or f in LEFT_FIELDS for f, _, _ in present],
        [[_cell(row, f, fmt) for f, _, fmt in present] for _, row in df.iterrows()],
    )


def _records_columns(
    records: list[dict[str, Any]], columns: list[Column] | ColumnSet, view: View | None
) -> tuple[Rows, list[Column]]:
    """The records as rows, and the columns shown: a ColumnSet narrowed by `view` (compact by
    default), less the optional columns no row fills."""
    if isinstance(columns, ColumnSet):
        columns = select(columns, view)
    df = frame(records)
    return df, present(columns, df)


def records_markdown(
    doc: dict[str, Any],
    columns: list[Column] | ColumnSet,
    title: str | None = None,
    view: View | None = None,
) -> str:
    """A document's records as a Markdown table, the verdict in words under it (bullets)."""
    from rooflinecli.present import verdict

    df, shown = _records_columns(doc["records"], columns, view)
    text = markdown(df, shown, title=title)
    said = verdict.lines(doc["records"])
    if said:
        text += "\n" + "".join(f"- {names.markdown(line)}\n" for line in said)
    return text


def html_table(
    headers: list[str],
    left: list[bool],
    rows: list[list[str]],
    title: str | None = None,
    row_classes: list[str] | None = None,
) -> str:
    """The one writer of HTML tables (the report's page): every header and cell written as text
    (rooflinecli.names.html), text columns left, numbers right; `row_classes` (plain words of
    ours, never a name) style rows."""
    from rooflinecli import names

    def tr(cells: list[str], tag: str, cls: str = "") -> str:
        attr = f' class="{cls}"' if cls else ""
        tds = "".join(
            f'<{tag} class="{"l" if x else "r"}">{names.html(c)}</{tag}>'
            for c, x in zip(cells, left, strict=True)
        )
        return f"<tr{attr}>{tds}</tr>"

    out = [f'<p class="table-title">{names.html(title)}</p>'] if title else []
    out.append('<table class="records">')
    out.append(f"<thead>{tr(headers, 'th')}</thead>")
    out.append("<tbody>")
    classes = row_classes or [""] * len(rows)
    out += [tr(r, "td", c) for r, c in zip(rows, classes, strict=True)]
    out.append("</tbody></table>")
    return "\n".join(out) + "\n"


def html(df: Rows | pd.DataFrame, columns: list[Column], title: str | None = None) -> str:
    """markdown() as an HTML table: the same columns and cells."""
    present = [c for c in columns if c[0] in df.columns]
    return html_table(
        [h for _, h, _ in present],
        [f in NAME_FIELDS or f in LEFT_FIELDS for f, _, _ in present],
        [[_cell(row, f, fmt) for f, _, fmt in present] for _, row in df.iterrows()],
        title,
    )


def html_rows(
    rows: list[dict[str, Any]],
    columns: list[Column],
    title: str | None = None,
    row_classes: list[str] | None = None,
) -> str:
    """markdown_rows() as an HTML table: rows that are not result records (a gate's checks)."""
    present = [c for c in columns if any(c[0] in r for r in rows)] if rows else list(columns)
    return html_table(
        [h for _, h, _ in present],
        [f in TEXT_FIELDS for f, _, _ in present],
        [[_cell(row, f, fmt) for f, _, fmt in present] for row in rows],
        title,
        row_classes,
    )


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
