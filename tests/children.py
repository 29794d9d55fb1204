"""Child processes a test starts: with the signal state the test relies on, and never left
behind.

A job run in the background by a shell (`make test &`) starts with SIGINT and SIGQUIT ignored,
and `nohup` ignores SIGHUP: a child inherits that, and Python, seeing SIGINT ignored, installs
no KeyboardInterrupt for it. `started` puts the default action of each signal back in the
child (before it runs any Python) and, however the test ends, kills what is still running: the
child's whole process group, so nothing it started outlives the test either.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

# the signals a shell or nohup may have left ignored, and a test may send
DEFAULT_ACTION = ("SIGINT", "SIGQUIT", "SIGHUP", "SIGTERM")


def _defaults() -> None:
    """In the child, between fork and exec: each signal a test sends does what it does by
    default (Python then turns SIGINT into KeyboardInterrupt, as in a terminal)."""
    for name in DEFAULT_ACTION:
        signal.signal(getattr(signal, name), signal.SIG_DFL)


@contextmanager
def started(args: Sequence[str], **kwargs: Any) -> Iterator[subprocess.Popen[Any]]:
    """subprocess.Popen(args, **kwargs) in a process group of its own, with default signal
    actions; on leaving, whatever of its group still runs is killed and the child reaped."""
    child: subprocess.Popen[Any] = subprocess.Popen(
        list(args), preexec_fn=_defaults, process_group=0, **kwargs
    )
    try:
        yield child
    finally:
        try:  # the child if it still runs, and what it started that still does
            os.killpg(child.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        child.wait(timeout=60)
        for stream in (child.stdin, child.stdout, child.stderr):
            if stream is not None:
                stream.close()


def alive(pid: int) -> bool:
    """Whether a process of this id still runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def run(
    args: Sequence[str], *, timeout: float, input: Any = None, check: bool = False, **kwargs: Any
) -> subprocess.CompletedProcess[Any]:
    """subprocess.run for a test: the child in a process group of its own with default signal
    actions; at the timeout the whole group is killed (a shell's or pytest's children too, which
    subprocess.run leaves running) and subprocess.TimeoutExpired raised, as subprocess.run does."""
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    if kwargs.pop("capture_output", False):
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    with started(args, **kwargs) as child:
        out, err = child.communicate(input, timeout=timeout)
        rc = child.wait()
    done = subprocess.CompletedProcess(list(args), rc, out, err)
    if check:
        done.check_returncode()
    return done
