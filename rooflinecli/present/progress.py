"""The progress display of long GPU work (`run`, `tune`, `profile`): on stderr, only on a
terminal, gone when the work ends."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress(enabled: bool, verb: str = "verifying and timing") -> Iterator[Callable[[str], None]]:
    """A callable that names the step now running (`tick("multistage 4096x4096x4096")`)."""
    if not enabled:
        yield lambda _label: None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from rooflinecli.present.table import console

    con = console(stderr=True)
    with Progress(
        SpinnerColumn(),
        TextColumn("[progress.description]{task.description}"),
        TimeElapsedColumn(),
        console=con,
        transient=True,
        disable=not con.is_terminal,
    ) as bar:
        task = bar.add_task("starting", total=None)
        yield lambda label: bar.update(task, description=f"{verb} {label}")
