"""The root command: it only registers the command modules and turns errors into one line."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from rooflinecli import __version__
from rooflinecli.commands.baseline import baseline
from rooflinecli.commands.calibrate import calibrate
from rooflinecli.commands.compare import compare
from rooflinecli.commands.gate import gate
from rooflinecli.commands.inspect import inspect_
from rooflinecli.commands.llm import model_llm, run_llm
from rooflinecli.commands.model import model
from rooflinecli.commands.plot import plot
from rooflinecli.commands.profile import profile
from rooflinecli.commands.run import run
from rooflinecli.commands.show import show
from rooflinecli.commands.specs import specs
from rooflinecli.commands.tune import tune
from rooflinecli.errors import RooflineError


class RooflineGroup(click.Group):
    """Errors become one line on stderr; exit 0 ok, 1 gate failure, 2 usage or environment."""

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
            click.echo(f"error: {exc.format_message()}", err=True)
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


@click.group(cls=RooflineGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="roofline")
def cli() -> None:
    """Hand-written CUDA GEMM, stage by stage, on the roofline of your GPU.

    Start with `roofline run gemm --m 4096` on a GPU, or `roofline model gemm --m 4096` anywhere.
    """


cli.add_command(specs)
cli.add_command(model)
cli.add_command(run)
cli.add_command(show)
cli.add_command(compare)
cli.add_command(plot)
cli.add_command(gate)
cli.add_command(baseline)
cli.add_command(inspect_, "inspect")
cli.add_command(calibrate)
cli.add_command(tune)
cli.add_command(profile)
model.add_command(model_llm, "llm")
run.add_command(run_llm, "llm")


def main() -> None:
    cli(prog_name="roofline")
