"""The progress bar of long GPU work: steps done of the total, time left; only on a terminal."""

from __future__ import annotations

import io

from rich.console import Console

from rooflinecli.present import progress as prog
from rooflinecli.present import table as report


class FakeBar:
    def __init__(self) -> None:
        self.updates: list[dict[str, object]] = []

    def update(self, task: object, **fields: object) -> None:
        self.updates.append(fields)


def test_a_tick_begins_a_step_and_the_bar_counts_the_ones_before():
    bar = FakeBar()
    tick = prog.Steps(bar, task=0, verb="timing")
    tick("naive_xcol 64x64x64", total=3)  # the runner says how many as the first step begins
    tick("multistage 64x64x64")
    assert bar.updates == [
        {"description": "timing naive_xcol 64x64x64", "completed": 0, "total": 3},
        {"description": "timing multistage 64x64x64", "completed": 1, "total": 3},
    ]
    assert (tick.done, tick.total) == (1, 3)


def test_off_or_off_a_terminal_it_draws_nothing(capsys):
    with prog.progress(False, total=4) as tick:
        tick("a")
        assert tick.bar is None and tick.total == 4
    with prog.progress(True) as tick:  # pytest's stderr is no terminal
        tick("a", total=2)
        assert tick.bar is None and tick.total == 2
    assert capsys.readouterr().err == ""


def test_on_a_terminal_a_bar_with_steps_and_time_left(monkeypatch):
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=True, width=120, color_system=None)
    monkeypatch.setattr(report, "console", lambda stderr=False: con)
    with prog.progress(True, "verifying and timing") as tick:
        tick("naive_xcol 4096x4096x4096", total=24)
        tick("naive_xrow 4096x4096x4096")
        tick.bar.refresh()
        drawn = buf.getvalue()
    assert "verifying and timing naive_xrow 4096x4096x4096" in drawn
    assert " 1/24 " in drawn and "left" in drawn
    assert "━" in drawn  # the bar itself


def test_a_label_is_text_not_markup(monkeypatch):
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=True, width=120, color_system=None)
    monkeypatch.setattr(report, "console", lambda stderr=False: con)
    with prog.progress(True, "tuning", total=2) as tick:
        tick("double_buffer@[BM=64] 64x64x64")
        tick.bar.refresh()
        assert "double_buffer@[BM=64]" in buf.getvalue()
