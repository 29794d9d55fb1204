"""Names from documents, specs, TOML files and programs are data, never markup: the one home of
how each is checked and how each output writes them.

A stage, kernel, workload or device name comes from a file anyone can write. It is checked once
where it is read (`check`: a string without control characters, at most `MAX_NAME` characters),
then every output writes it through the function for its format here:

- a terminal (`plain`): control characters never reach it raw;
- Rich (`rich_text`, a `rich.text.Text`, or `rich`, escaped markup): `[/bold]` and
  `[link=...]` print as written;
- matplotlib (`MATPLOTLIB_RC`: its text is never parsed as mathtext or TeX; `mathtext` escapes
  a label that must be parsed);
- a Markdown table cell or line (`markdown`), a fenced block (`markdown_code`);
- HTML (`html`), XML 1.0 (`xml`: what it cannot hold becomes U+FFFD);
- a CSV cell (`csv_cell`: one a spreadsheet would run as a formula is neutralised).

Real kernel names survive each one as they are: C++ templates and scopes (`void gemm<128,
256>(float*)`, `at::native::(anonymous namespace)::f`), brackets, dollar signs, backslashes.

A name a program reports (`roofline profile app`'s kernels) is not refused: the run's results
would be lost for one odd name. `from_program` writes it with U+FFFD for each control character
and shortens an oversize one (keeping a checksum of the whole, so two long names stay two).
"""

from __future__ import annotations

import re
import zlib
from typing import TYPE_CHECKING, Any

from rooflinecli.errors import RooflineError

if TYPE_CHECKING:
    from rich.text import Text

# Characters; a C++ template instance's demangled name runs to a few thousand (the longest of
# the committed documents: 1,298)
MAX_NAME = 4096

# Unicode's format characters (category Cf, as of Unicode 15): the bidirectional marks,
# embeddings and isolates (U+200E, U+200F, U+061C, U+202A-U+202E, U+2066-U+2069), which reorder
# what a terminal shows; the zero-width joiner and non-joiner, word joiner and invisible
# operators; the byte order mark; soft hyphen; tags. Each is invisible or moves the text
# around it, so a name that holds one can look like another.
_FORMAT = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f"
)
# C0 and C1 control characters, DEL, the line and paragraph separators and the format
# characters above; a name holds none, a tab or newline neither
_BEYOND_C0 = "\x7f-\x9f\u2028\u2029" + _FORMAT
_CONTROL = re.compile(f"[\x00-\x1f{_BEYOND_C0}]")
# the same in prose (an error message, a note): tab, newline and carriage return allowed
_CONTROL_IN_TEXT = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f{_BEYOND_C0}]")
_SURROGATE = re.compile("[\ud800-\udfff]")  # JSON can carry a lone one ("\ud800"): not text
# either, in one pass (what a document's reader runs over every string)
_NOT_NAME = re.compile(f"[\x00-\x1f{_BEYOND_C0}\ud800-\udfff]")
_NOT_TEXT = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f{_BEYOND_C0}\ud800-\udfff]")
_SPACES = re.compile("[\t\n\r]")
# characters XML 1.0 cannot hold at all (besides the controls above, which plain() replaced)
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# Markdown: what a renderer reads as markup, backslash-escaped (CommonMark lets any ASCII
# punctuation be): backslash, backtick, * (emphasis), brackets (links), | (tables), ~ (strike),
# # (headings), $ (GitHub's math); _ where it could open or close emphasis (an underscore
# between two letters or digits, as in mma_sync, never does); & and < become entities, so no
# HTML passes (and > closes none)
_MARKDOWN = re.compile(r"([\\`*\[\]|~#$]|(?<![^\W_])_|_(?![^\W_]))")
# a CSV cell that a spreadsheet could read as a formula (OWASP, CSV injection)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")

# matplotlib: every text of a figure is literal (no mathtext, whatever a user's matplotlibrc
# says, and no TeX), so `$\frac{a}{$` is drawn as written and never raises
MATPLOTLIB_RC: dict[str, Any] = {"text.parse_math": False, "text.usetex": False}


def _what(ch: str) -> str:
    return f"U+{ord(ch):04X}"


def problem(value: str, limit: int = MAX_NAME) -> str | None:
    """Why `value` is no name (a control character, a lone surrogate, its length), or None."""
    bad = _NOT_NAME.search(value)
    if bad:
        return (
            f"holds a control character ({_what(bad.group())} at position {bad.start() + 1}): "
            "a name is plain text"
        )
    if len(value) > limit:
        return f"is {len(value):,} characters long (at most {limit:,})"
    return None


def check(value: object, field: str, limit: int = MAX_NAME) -> str:
    """`value` as a name, or a one-line RooflineError naming `field`: a string without control
    characters (nor a lone surrogate), at most `limit` characters long."""
    if not isinstance(value, str):
        raise RooflineError(f"{field} is not a string")
    why = problem(value, limit)
    if why:
        raise RooflineError(f"{field} {why}")
    return value


def check_text(value: object, field: str) -> str:
    """`value` as prose (an error message, a note): a string without control characters other
    than tab, newline and carriage return, nor a lone surrogate; RooflineError otherwise."""
    if not isinstance(value, str):
        raise RooflineError(f"{field} is not a string")
    bad = _CONTROL_IN_TEXT.search(value) or _SURROGATE.search(value)
    if bad:
        raise RooflineError(
            f"{field} holds a control character ({_what(bad.group())} at position "
            f"{bad.start() + 1})"
        )
    return value


def is_name(value: str, limit: int = MAX_NAME) -> bool:
    """What check() accepts, without the error (for a reader's fast path)."""
    return len(value) <= limit and _NOT_NAME.search(value) is None


def is_text(value: str) -> bool:
    """What check_text() accepts, without the error."""
    return _NOT_TEXT.search(value) is None


def from_program(value: str, limit: int = MAX_NAME) -> str:
    """A name a program reported, made one that check() accepts: each control character (or lone
    surrogate) as U+FFFD; an oversize one cut, with its length and a checksum of the whole."""
    text = plain(value)
    if len(text) <= limit:
        return text
    tail = f"... ({len(text):,} characters, crc32 {zlib.crc32(text.encode()):08x})"
    return text[: limit - len(tail)] + tail


def plain(text: str) -> str:
    """Text for a terminal, or any output: tab, newline and carriage return as spaces, other
    control characters (ESC, BEL, NUL, ...) and lone surrogates as U+FFFD, never sent raw."""
    if _CONTROL.search(text) is None and _SURROGATE.search(text) is None:
        return text  # the common case, untouched
    return _SURROGATE.sub("\ufffd", _CONTROL.sub("\ufffd", _SPACES.sub(" ", text)))


def rich_text(text: str, style: str = "") -> Text:
    """A rich Text of the name: printed as written, never read as markup."""
    from rich.text import Text  # here: names is imported where rich never loads

    return Text(plain(text), style=style)


def rich(text: str) -> str:
    """Text for a Rich markup string: each `[` escaped (with the backslashes before it doubled),
    so `[/bold]` or `[link=...]` is printed as written. Put no tag right after a text that ends
    in a backslash (that would escape the tag); rich_text() has no such limit."""
    return re.sub(r"(\\*)\[", lambda m: m.group(1) * 2 + "\\[", plain(text))


def mathtext(text: str) -> str:
    """Text for a matplotlib label that is parsed for mathtext: every `$` escaped, so no part of
    the name is read as math (a figure drawn under MATPLOTLIB_RC needs none of this)."""
    return plain(text).replace("$", r"\$")


def markdown(text: str) -> str:
    """Text for a Markdown table cell or line: line breaks as spaces, & and < as entities,
    Markdown's punctuation (_MARKDOWN) backslash-escaped, so every renderer shows the name as
    written."""
    out = plain(text).replace("&", "&amp;").replace("<", "&lt;")  # no tag opens: > is text
    return _MARKDOWN.sub(r"\\\1", out)


def markdown_code(text: str, info: str = "text") -> str:
    """`text` as a fenced Markdown code block, its fence longer than any run of backticks in it
    (so nothing in it can close the block)."""
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    body = plain_lines(text)
    return f"{fence}{info}\n{body}{'' if body.endswith(chr(10)) else chr(10)}{fence}\n"


def markdown_code_span(text: str) -> str:
    """`text` as inline Markdown code (a path): its delimiters longer than any run of backticks
    in it."""
    text = plain(text)
    run = max((len(r) for r in re.findall(r"`+", text)), default=0)
    if not run:
        return f"`{text}`"
    tick = "`" * (run + 1)
    return f"{tick} {text} {tick}"


def plain_lines(text: str) -> str:
    """plain() of each line of a text the tool composed of names (a chart): its line breaks
    kept."""
    return "\n".join(plain(line) for line in text.split("\n"))


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
    """Text XML 1.0 can hold (ElementTree escapes <, & and quotes itself): control characters and
    what XML cannot hold replaced by U+FFFD (tab and newline kept, as prose has them)."""
    lines = "\n".join(plain(line) for line in text.replace("\r", "").split("\n"))
    return _NOT_XML.sub("\ufffd", lines)


def csv_cell(text: str) -> str:
    """A CSV text cell a spreadsheet will not run: one that starts with =, +, -, @, a tab or a
    carriage return gets a leading apostrophe (OWASP's advice on CSV injection). A number written
    as text (-1.5), or a lone '-', cannot be a formula and stays as it is."""
    if text[:1] in _FORMULA_START and text != "-" and not _NUMBER.fullmatch(text):
        text = "'" + text
    return plain(text)


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
