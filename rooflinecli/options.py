"""Options shared by several commands, written once as decorators."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from rooflinecli.report import FORMATS

F = TypeVar("F", bound=Callable[..., Any])

DTYPES = ("fp32", "fp16", "bf16")


class Size(click.ParamType):
    """A positive matrix dimension, with one clear line when it is not."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            v = value
        else:
            try:
                v = int(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a whole number", param, ctx)
        if v < 1:
            self.fail(f"{v} must be at least 1", param, ctx)
        if v > 1 << 20:
            self.fail(f"{v} is too large (at most {1 << 20})", param, ctx)
        return v


SIZE = Size()


def shape_options(f: F) -> F:
    f = click.option("--k", type=SIZE, default=None, help="Inner dimension (default: M).")(f)
    f = click.option("--n", type=SIZE, default=None, help="Columns of C (default: M).")(f)
    f = click.option("--m", type=SIZE, required=True, help="Rows of C.")(f)
    return f


def spec_option(f: F) -> F:
    return click.option(
        "--spec",
        "spec_arg",
        metavar="NAME|PATH",
        default=None,
        help="GPU spec: a name from `roofline specs` or a TOML file (default: detected GPU).",
    )(f)


def format_option(f: F) -> F:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default="table",
        show_default=True,
        help="Output format.",
    )(f)


def output_option(f: F) -> F:
    return click.option(
        "--output",
        "-o",
        type=click.Path(dir_okay=False, writable=True),
        default=None,
        help="Also write the results document (JSON) here, atomically.",
    )(f)


def dtype_option(f: F) -> F:
    return click.option(
        "--dtype",
        type=click.Choice(DTYPES),
        default="fp32",
        show_default=True,
        help="Element type.",
    )(f)


def resolve_shape(m: int, n: int | None, k: int | None) -> tuple[int, int, int]:
    return m, n if n is not None else m, k if k is not None else m
