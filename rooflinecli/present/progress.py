"""The progress display of long GPU work (`run`, `tune`, `profile`): a bar with the steps done
(stages x shapes), the time so far and the time left, on stderr, only on a terminal, gone when
the work ends.

The protocol, as the runner (rooflinecli.gpu.runner) and the profiler call it: `tick(label)`
when a step begins, naming it ("multistage 4096x4096x4096"); `tick(label, total=n)` also says
how many steps there are, for callers that learn it only as the work starts. Without a total
the bar pulses and no time left is shown.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Steps:
    """What `progress()` yields: counts the steps begun and moves the bar."""

    def __init__(self, bar: Any = None, task: Any = None, verb: str = "", total: int | None = None):
        self.bar, self.task, self.verb = bar, task, verb
        self.total = total
        self.begun = 0

    def __call__(self, label: str, total: int | None = None) -> None:
        if total is not None:
            self.total = total
        self.begun += 1
        if self.bar is not None:
            # the step now beginning is not done: the bar counts the ones before it
            self.bar.update(
                self.task,
                description=f"{self.verb} {label}",
                completed=self.begun - 1,
                total=self.total,
            )

    @property
    def done(self) -> int:
        return max(0, self.begun - 1)


@contextmanager
def progress(
    enabled: bool, verb: str = "verifying and timing", total: int | None = None
) -> Iterator[Steps]:
    """A Steps that names the step now running (`tick("multistage 4096x4096x4096")`); the
    bar shows `total` steps when it is given here or by the first tick."""
    if not enabled:
        yield Steps(total=total)
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from rooflinecli.present.table import console

    con = console(stderr=True)
    if not con.is_terminal:
        yield Steps(total=total)
        return
    with Progress(
        TextColumn("{task.description}", style="progress.description", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=con,
        transient=True,
    ) as bar:
        task = bar.add_task("starting", total=total)
        yield Steps(bar, task, verb, total)
