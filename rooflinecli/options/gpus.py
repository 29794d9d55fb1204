"""--gpus all|0,2,5: the command run on each GPU at once (rooflinecli.gpu.fleet), and the
command line each worker runs."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from rooflinecli.options.gather import add_step

F = TypeVar("F", bound=Callable[..., Any])

# ------------------------------------------------------------------ many GPUs: --gpus, ranks

# Options the parent of a --gpus run keeps for itself: each worker writes its document for the
# parent to merge, quietly, as JSON
_PARENT_ONLY = frozenset(
    {"gpus", "output", "force", "fmt", "quiet", "column_names", "wide", "chart_flag"}
)


def _worker_args(ctx: click.Context) -> list[str]:
    """The command line that runs this command again for one GPU: its path and every option
    and argument given, less those the parent keeps."""
    path: list[str] = []
    c: click.Context | None = ctx
    while c is not None and c.parent is not None:
        path.insert(0, str(c.info_name))
        c = c.parent
    opts: list[str] = []
    positional: list[str] = []
    for p in ctx.command.params:
        name = str(p.name)
        if name in _PARENT_ONLY:
            continue
        source = ctx.get_parameter_source(name)
        if source not in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
            continue
        value = ctx.params.get(name)
        if isinstance(p, click.Argument):
            positional += (
                [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]
            )
            continue
        assert isinstance(p, click.Option)
        if p.is_flag and not p.count:
            if value:
                opts.append(p.opts[0])
            elif p.secondary_opts:
                opts.append(p.secondary_opts[0])
        elif p.multiple:
            for v in value or ():
                opts += [p.opts[0], str(v)]
        elif value is not None:
            opts += [p.opts[0], str(value)]
    return [*path, *opts, *(["--", *positional] if positional else [])]


def gpus_option(kind: str = "results") -> Callable[[F], F]:
    """--gpus all|0,2,5: the command run on each GPU at once, one worker process a GPU, their
    documents merged into one (rooflinecli.gpu.fleet.fan_out; `kind` "results": records naming
    their GPU; "calibration": one calibration a GPU). Without it, the command runs as it
    always has, on the GPU its rank takes under a launcher (gpu.fleet.pin_rank)."""

    def step(ctx: click.Context) -> Callable[[], None] | None:
        from rooflinecli.gpu import fleet

        gpus = ctx.params.pop("gpus")
        if gpus is None:
            fleet.pin_rank()
            return None
        params = dict(ctx.params)
        return functools.partial(_fan_out, ctx, gpus, kind, params)

    def deco(f: F) -> F:
        f = add_step(f, step)
        return click.option(
            "--gpus",
            default=None,
            metavar="all|LIST",
            help="Run on these GPUs at once, one worker process each (all, or indices "
            "such as 0,2,5), and merge their documents into one whose records name their "
            "GPU (docs/fleet.md).",
        )(f)

    return deco


def _fan_out(ctx: click.Context, gpus: str, kind: str, params: dict[str, Any]) -> None:
    """--gpus: the workers (gpu.fleet.fan_out), the merged document written and shown."""
    import rooflinecli.present.fleet
    from rooflinecli import files
    from rooflinecli.gpu import fleet

    names = {str(p.name) for p in ctx.command.params}
    merged = fleet.fan_out(gpus, _worker_args(ctx), kind, "output" in names, "quiet" in names)
    output = params.get("output")
    if output:
        files.write_output(str(output), merged.data, force=bool(params.get("force")))
    rooflinecli.present.fleet.present(merged.document, kind, str(params.get("fmt") or "table"))
    merged.fail()
