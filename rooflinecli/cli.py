"""The root command: it only registers the command modules and turns errors into one line.

Command modules load when their command runs (LAZY below), so `roofline --help` imports click and
this file alone; the short help it lists is kept here and a test holds it equal to each
command's own.
"""

from __future__ import annotations

import gc
import io
import os
import sys
from typing import Any

import click

from rooflinecli import __version__, names
from rooflinecli.commands import LazyGroup
from rooflinecli.errors import RooflineError

# command -> (its module under rooflinecli.commands, the command object, its short help)
LAZY: dict[str, tuple[str, str, str]] = {
    "specs": ("specs", "specs_group", "List GPU specs: peaks (dense TFLOP/s) and ridge points "
              "(FLOP/byte) per precision."),
    "model": ("model", "model", "Analytic roofline model (pure arithmetic, no GPU)."),
    "run": ("run", "run", "Run stages on the GPU (verify, time, place on the roofline)."),
    "show": ("show", "show", "Re-render a results document: table, chart."),
    "compare": ("compare", "compare", "Two runs side by side, with B/A ratios."),
    "plot": ("plot", "plot", "Roofline of a results document as an image."),
    "report": ("report", "report", "One HTML page of results documents."),
    "gate": ("gate", "gate_command", "Fail when a stage regressed (CI gate)."),
    "merge": ("fleet", "merge", "Combine results documents into one fleet document."),
    "fleet": ("fleet", "fleet_command", "Find the GPU that falls behind its fleet (exit 1 when "
              "one does)."),
    "baseline": ("baseline", "baseline", "Verified runs kept as baselines for `roofline gate`."),
    "inspect": ("inspect", "inspect_", "What the compiler made (registers, occupancy, SASS), "
                "no GPU needed."),
    "calibrate": ("calibrate", "calibrate_command", "Measure this GPU's roofs (HBM, L2, FP32 FMA, "
                  "FP16 Tensor Core) and cache them."),
    "tune": ("tune", "tune", "Search tile parameters, or the best stage per shape class, on "
             "the running GPU."),
    "profile": ("profile", "profile_group", "Hardware counters of each stage under Nsight Compute "
                "(ncu) on a GPU."),
}  # fmt: skip


class RooflineGroup(LazyGroup):
    """Errors become one line on stderr; exit 0 ok, 1 gate failure, 2 usage or environment.
    Commands load on first use (LAZY)."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:  # type: ignore[override]
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)  # type: ignore[call-overload]
        try:
            rv = super().main(*args, standalone_mode=False, **kwargs)  # type: ignore[call-overload]
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            click.echo("error: aborted", err=True)
            sys.exit(130)
        except (click.ClickException, RooflineError) as exc:
            # one line, whatever a name or a message in it holds (names.plain: no control code)
            click.echo(f"error: {names.plain(exc.format_message())}", err=True)
            sys.exit(exc.exit_code)
        except BrokenPipeError:  # `roofline ... | head`: the reader left; stop quietly
            _quiet_stdout()
            sys.exit(0)
        except KeyboardInterrupt:
            click.echo("error: interrupted", err=True)
            sys.exit(130)
        except Exception as exc:
            if os.environ.get("ROOFLINE_DEBUG"):
                raise
            line = (str(exc).strip().splitlines() or [""])[0][:300]
            click.echo(
                f"error: {type(exc).__name__}: {line} (ROOFLINE_DEBUG=1 shows more)", err=True
            )
            sys.exit(2)
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _quiet_stdout()
        except RooflineError as exc:  # what was left to write met a full disk (> /dev/full)
            click.echo(f"error: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # in a command: click's own handler would exit 1 (it has EPIPE)
            _quiet_stdout()
            raise click.exceptions.Exit(0) from None


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


@click.group(
    cls=RooflineGroup,
    lazy={
        name: (f"rooflinecli.commands.{m}", attr, text) for name, (m, attr, text) in LAZY.items()
    },
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="roofline")
def cli() -> None:
    """Hand-written CUDA GEMM, stage by stage, on the roofline of your GPU.

    Start with `roofline run gemm --m 4096` on a GPU, or `roofline model gemm --m 4096` anywhere.
    """


class _Stdout(io.FileIO):
    """File descriptor 1 under sys.stdout (guard_streams below): a write that fails (a full disk,
    a descriptor closed when the program started) is one RooflineError line in the tool's words,
    once; what follows is dropped, so the interpreter's last flush cannot fail again. A reader
    that left (EPIPE, `| head`) stays BrokenPipeError: the CLI ends quietly on it."""

    closed_at_start = False
    failed = False

    def write(self, b: Any) -> int:
        if self.failed:
            return len(b)
        if self.closed_at_start:
            self.failed = True
            raise RooflineError("cannot write to standard output: it is closed")
        try:
            return super().write(b)
        except BrokenPipeError:
            raise
        except OSError as exc:
            self.failed = True
            why = exc.strerror or str(exc)
            raise RooflineError(f"cannot write to standard output: {why}") from None


def guard_streams() -> None:
    """For the program (main below): a standard stream closed at start (`>&-`) is held
    by /dev/null, so no file opened later takes its descriptor (and a child process finds one),
    and sys.stdout becomes the same text stream over _Stdout, whose failures are one line."""
    closed = set()
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            closed.add(fd)
    old = sys.stdout
    raw = _Stdout(1, "wb", closefd=False)
    raw.closed_at_start = 1 in closed or old is None
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(raw),
        encoding=getattr(old, "encoding", None) or "utf-8",
        errors=getattr(old, "errors", None) or "strict",
        line_buffering=bool(getattr(old, "line_buffering", False)),
        write_through=bool(getattr(old, "write_through", False)),
    )
    if 2 in closed or sys.stderr is None:
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "wb", closefd=False), write_through=True)


def main() -> None:
    """The program: `roofline` and `python -m rooflinecli` (tests call `cli` itself)."""
    guard_streams()  # a closed or full standard output: one line, never a traceback
    try:
        cli(prog_name="roofline")
    finally:
        # The process ends here, and the interpreter's last act would be a pass of the cyclic
        # collector over every object start-up made (click's and ours, some 15,000): about 10 ms
        # of the 0.1 s `roofline model gemm` takes. Frozen objects are left to the operating
        # system; atexit handlers and the flush of stdout and stderr still run.
        gc.freeze()
