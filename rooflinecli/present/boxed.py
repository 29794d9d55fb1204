"""A records table as rich draws it on a stream without colour, written without rich.

Importing and running rich costs about 80 ms, most of `roofline model gemm`'s start-up, and a
pipe, a file or a test's runner shows no colour anyway. So where the output could only be plain
text, and the table is of the simple kind (every cell on one line, printable ASCII, no rich
markup, a caption that wraps at single spaces), present.output writes the same characters itself.
Anything else returns None here and rich draws it. tests/test_boxed.py holds the two equal over
many tables, widths and captions.
"""

from __future__ import annotations

import builtins
import os
import sys
from collections.abc import Sequence
from typing import TextIO

# rich's box.HEAVY_HEAD, the default box of rich.table.Table
_TOP = ("┏", "━", "┳", "┓")
_HEAD = ("┃", "┃", "┃")
_HEAD_RULE = ("┡", "━", "╇", "┩")
_ROW = ("│", "│", "│")
_BOTTOM = ("└", "─", "┴", "┘")


def colourless(stream: TextIO) -> bool:
    """True where rich would write no escape codes to `stream` and draw its boxes in Unicode:
    not a terminal (nor told to act as one: FORCE_COLOR, TTY_COMPATIBLE), not Jupyter or IDLE,
    and a UTF encoding."""
    if "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ:
        return False
    if hasattr(builtins, "get_ipython"):  # Jupyter, where rich colours whatever the stream
        return False
    if getattr(sys.stdin, "__module__", "").startswith("idlelib"):
        return False
    encoding = (getattr(stream, "encoding", None) or "utf-8").lower()
    if not encoding.startswith("utf"):
        return False
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):
        return False


def _simple(text: str) -> bool:
    """One terminal cell a character and nothing rich would read as markup."""
    return text.isascii() and text.isprintable() and "[" not in text


def _cell(text: str) -> bool:
    """A cell rich writes as it is, justified: no space at either end (rich strips a right
    justified cell's)."""
    return _simple(text) and text == text.strip()


def _rule(widths: Sequence[int], left: str, fill: str, mid: str, right: str) -> str:
    return left + mid.join(fill * (w + 2) for w in widths) + right


def _line(
    cells: Sequence[str], widths: Sequence[int], right: Sequence[bool], bars: tuple[str, ...]
) -> str:
    edge, mid, end = bars
    padded = (
        (c.rjust(w) if r else c.ljust(w)) for c, w, r in zip(cells, widths, right, strict=True)
    )
    return edge + " " + f" {mid} ".join(padded) + " " + end


def wrap_caption(text: str, width: int) -> list[str] | None:
    """rich's word wrap of a caption justified left (each line padded to `width`, a line keeps
    the space after its last word), for words split by single spaces and none longer than
    `width`; None otherwise."""
    if not _simple(text) or not text or text != text.strip() or "  " in text:
        return None
    words = [w + " " for w in text.split(" ")]
    words[-1] = words[-1][:-1]
    if max(len(w.rstrip()) for w in words) > width:
        return None
    lines: list[str] = []
    line = ""
    for word in words:
        if line and width - len(line) < len(word.rstrip()):
            lines.append(line)
            line = ""
        line += word
    lines.append(line)
    return [(x[:width] if len(x) > width else x).ljust(width) for x in lines]


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    right: Sequence[bool],
    width: int,
    caption: str | None = None,
) -> str | None:
    """The table rich.table.Table draws (default box, header, padding 1, no title) when every
    column is as wide as its widest cell and the whole fits in `width`; None where it would
    not be this simple (rich draws it then)."""
    if not headers or not rows:
        return None
    cells = [list(headers), *map(list, rows)]
    if any(len(r) != len(headers) or not all(map(_cell, r)) for r in cells):
        return None
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    span = sum(widths) + 3 * len(widths) + 1
    if span > width or min(widths) < 1:
        return None
    out = [_rule(widths, *_TOP), _line(headers, widths, right, _HEAD), _rule(widths, *_HEAD_RULE)]
    out += [_line(r, widths, right, _ROW) for r in rows]
    out.append(_rule(widths, *_BOTTOM))
    if caption:
        lines = wrap_caption(caption, span)
        if lines is None:
            return None
        out += lines
    return "\n".join(out) + "\n"


def prose(line: str) -> bool:
    """A line rich prints as it is (soft wrap, no markup): it strips control codes, so a line
    with one goes to rich."""
    return line.isprintable()
