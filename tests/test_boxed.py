"""rooflinecli.present.boxed writes the records table exactly as rich draws it on a stream
without colour: the two are compared here over tables, widths and captions, and the cases boxed
leaves to rich are checked to be left to it."""

from __future__ import annotations

import io
import itertools
import random

import pytest
from rich.console import Console
from rich.table import Table

from rooflinecli.present import boxed
from rooflinecli.present import table as report

CAPTION = (
    "AI ideal: every byte moved once (perfect caching). AI instr: what each load "
    "instruction feeds, if nothing were cached; attain@instr is the roof at that intensity."
)


def rich_draws(
    headers: list[str], rows: list[list[str]], right: list[bool], width: int, caption: str | None
) -> str:
    """What table.table() and print_table() print for these cells, natural widths."""
    out = io.StringIO()
    con = Console(file=out, width=width, highlight=False, soft_wrap=False, emoji=False)
    t = Table(caption=caption, title_justify="left", caption_justify="left")
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    for h, r, w in zip(headers, right, widths, strict=True):
        t.add_column(h, justify="right" if r else "left", overflow="fold", width=w)
    for row in rows:
        t.add_row(*row)
    t.min_width = sum(widths) + 3 * len(widths) + 1
    con.print(t)
    return out.getvalue()


def _cases() -> list[tuple[list[str], list[list[str]], list[bool], int, str | None]]:
    rng = random.Random(13)
    words = ["naive_xcol", "682.7", "0.25", "compute", "-", "67.0", "1,234", "x", "", "a b"]
    names = ["stage", "AI ideal", "attain TF/s", "roof", "h"]
    cases = []
    for n_cols, n_rows in itertools.product((1, 2, 4, 6), (1, 3, 17)):
        headers = [rng.choice(names) for _ in range(n_cols)]
        rows = [[rng.choice(words) for _ in range(n_cols)] for _ in range(n_rows)]
        right = [rng.random() < 0.6 for _ in range(n_cols)]
        for width in (60, 80, 200):
            for caption in (None, CAPTION, "a " * 30 + "end"):
                cases.append((headers, rows, right, width, caption))
    return cases


def test_boxed_draws_what_rich_draws() -> None:
    drawn = 0
    for headers, rows, right, width, caption in _cases():
        mine = boxed.table(headers, rows, right, width, caption)
        span = sum(max(len(r[i]) for r in [headers, *rows]) + 3 for i in range(len(headers))) + 1
        if span > width:
            assert mine is None, (headers, width)  # too wide: rich folds it
            continue
        assert mine == rich_draws(headers, rows, right, width, caption), (headers, rows, width)
        drawn += 1
    assert drawn >= 90  # of 108: most tables fit, captions or not


@pytest.mark.parametrize(
    "headers, rows, caption",
    [
        (["stage"], [["[bold]x"]], None),  # rich markup
        (["stage"], [["naïve"]], None),  # not ASCII: rich measures cells
        (["stage"], [["tab\there"]], None),  # control character
        (["stage"], [[" padded"]], None),  # rich strips a right-justified cell's spaces
        (["stage"], [["x"]], "two  spaces"),  # rich's wrap keeps runs of spaces
        (["stage"], [["x"]], "[dim]markup"),
        (["stage"], [["x"]], "a_word_longer_than_the_table_is_wide"),
        (["stage"], [], None),  # no rows
    ],
)
def test_what_boxed_leaves_to_rich(headers, rows, caption) -> None:
    assert boxed.table(headers, rows, [False] * len(headers), 200, caption) is None


def test_model_table_is_written_without_rich_and_equals_rich(monkeypatch, capsys) -> None:
    """The table format on a plain stream: boxed's text, the same as the rich path gives."""
    from rooflinecli import api
    from rooflinecli.present import output

    spec, _ = api.default_spec("h100-sxm5")
    doc = api.model_gemm(4096, 4096, 4096, "fp32", spec)
    monkeypatch.setenv("COLUMNS", "120")
    with monkeypatch.context() as m:
        m.setattr(report, "console", lambda *a, **k: pytest.fail("rich was used"))
        output.emit(
            output.of_document(doc, [output.Records(doc, report.MODEL, "a title", CAPTION)]),
            "table",
        )
    fast = capsys.readouterr().out
    monkeypatch.setattr(boxed, "colourless", lambda stream: False)
    output.emit(
        output.of_document(doc, [output.Records(doc, report.MODEL, "a title", CAPTION)]), "table"
    )
    slow = capsys.readouterr().out
    assert fast == slow
    assert fast.count("┃") == 7 and "naive_xcol" in fast


def test_a_terminal_or_forced_colour_goes_to_rich(monkeypatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert boxed.colourless(io.StringIO())
    assert not boxed.colourless(Tty())
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert not boxed.colourless(io.StringIO())
