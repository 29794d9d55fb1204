"""Names from documents, specs, TOML files and programs are data, never markup: the one home of
how each output writes them.

A stage, kernel, workload or device name comes from a file anyone can write. It is checked once
where it is read (`check`: no control characters, at most `MAX_NAME` characters), then every
output writes it through the function for its format here: a terminal or Rich (`rich`), a
matplotlib label (`mathtext`), a Markdown table cell (`markdown`), HTML (`html`), XML 1.0
(`xml`), a CSV cell (`csv_cell`). Real kernel names must survive each one as they are: C++
templates and scopes (`void gemm<128, 256>(float*)`, `at::native::(anonymous namespace)::f`),
brackets, dollar signs, backslashes.
"""

from __future__ import annotations

import re

from rooflinecli.errors import RooflineError

MAX_NAME = 1024  # characters; a C++ template instance's name runs to a few hundred

# C0 and C1 control characters and DEL; a name holds none (a tab or newline neither)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# characters XML 1.0 cannot hold at all (besides the controls above, which a name never has)
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def check(value: object, field: str, limit: int = MAX_NAME) -> str:
    """`value` as a name, or a RooflineError naming `field`: a string without control
    characters, at most `limit` characters long."""
    if not isinstance(value, str):
        raise RooflineError(f"{field} is not a string")
    if _CONTROL.search(value):
        raise RooflineError(f"{field} holds a control character")
    if len(value) > limit:
        raise RooflineError(f"{field} is {len(value):,} characters long (at most {limit:,})")
    return value


def plain(text: str) -> str:
    """Text for a terminal: control characters (ESC, BEL, NUL, ...) shown as U+FFFD, never sent."""
    return _CONTROL.sub("\ufffd", text)


def rich(text: str) -> str:
    """Text for a Rich markup string: its brackets escaped, so `[/bold]` or `[link=...]` is
    printed as written."""
    return plain(text).replace("\\", "\\\\").replace("[", "\\[")


def mathtext(text: str) -> str:
    """Text for a matplotlib label that is parsed for mathtext: every `$` escaped, so no part of
    the name is read as math."""
    return plain(text).replace("$", r"\$")


def markdown(text: str) -> str:
    """Text for a Markdown table cell: HTML escaped, pipes and backslashes escaped, line breaks
    as spaces."""
    out = html(plain(text).replace("\n", " ").replace("\r", " "))
    return out.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")


def html(text: str) -> str:
    """Text for HTML content or a quoted attribute."""
    return (
        plain(text)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#x27;")
    )


def xml(text: str) -> str:
    """Text XML 1.0 can hold (ElementTree escapes <, & and quotes itself): characters it cannot
    hold replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", plain(text))


def csv_cell(text: str) -> str:
    """A CSV cell a spreadsheet will not run: one that starts with =, +, -, @, a tab or a carriage
    return gets a leading apostrophe (OWASP's advice on CSV injection)."""
    text = plain(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def plotly(text: str) -> str:
    """Text for Plotly (legend, hover, axis labels, titles), which reads a few HTML tags (<b>,
    <br>, <a href>, ...) and character references in every label it draws: HTML escaped with
    numeric references only (it knows few named ones, so `&quot;` would show as written), and
    `$` as a reference, so no name is ever typeset as TeX."""
    return (
        plain(text)
        .replace("&", "&#38;")
        .replace("<", "&#60;")
        .replace(">", "&#62;")
        .replace('"', "&#34;")
        .replace("'", "&#39;")
        .replace("$", "&#36;")
    )
