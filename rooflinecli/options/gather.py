"""Gathering options into requests: a step on the command function that replaces a group of
option values with the one value built from them (rooflinecli.commands.Command runs the steps
before the function)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

Step = Callable[[click.Context], "Callable[[], Any] | None"]


def add_step(f: F, step: Step) -> F:
    """Put a gathering step on the command function `f`: steps run outermost decorator first
    (a decorator applied later stands above), before the function (rooflinecli.commands.Command).
    A step returns None, or what runs instead of the function."""
    steps: list[Step] = f.__dict__.setdefault("__gathers__", [])
    steps.insert(0, step)
    return f


def gather(target: str, names: Sequence[str], build: Callable[..., Any]) -> Callable[[F], F]:
    """Hand the command `target` = build(**the values of `names`) in place of those options."""

    def step(ctx: click.Context) -> None:
        values = {n: ctx.params.pop(n) for n in names if n in ctx.params}
        ctx.params[target] = build(**values)

    def deco(f: F) -> F:
        return add_step(f, step)

    return deco
