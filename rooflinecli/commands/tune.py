"""`roofline tune gemm --stage NAME`: search the stage's tile parameters on this GPU."""

from __future__ import annotations

import click

from rooflinecli import files, results
from rooflinecli.errors import RooflineError
from rooflinecli.options import (
    DTYPES,
    SIZE,
    columns_option,
    format_option,
    output_option,
    spec_option,
)
from rooflinecli.present import View
from rooflinecli.present import table as report
from rooflinecli.present.progress import progress


@click.group()
def tune() -> None:
    """Search tile parameters on the running GPU and keep the winner."""


@tune.command("gemm")
@click.option("--stage", "stage_name", required=True, help="A stage with a tune_space.")
@click.option("--m", type=SIZE, default=4096, show_default=True, help="Square size to tune at.")
@click.option(
    "--dtype",
    type=click.Choice(DTYPES),
    default=None,
    help="Element type (default: the stage's first, e.g. fp16 for the Tensor Core stages).",
)
@spec_option
@click.option("--budget-ms", type=click.FloatRange(1, 60000), default=200.0, show_default=True)
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
@format_option
@columns_option
@output_option
def tune_gemm(
    stage_name: str,
    m: int,
    dtype: str | None,
    spec_arg: str | None,
    budget_ms: float,
    quiet: bool,
    fmt: str,
    view: View,
    output: str | None,
    force: bool,
) -> None:
    """Compile every variant (dropping those that fail or spill), verify and time the rest."""
    from rooflinecli import api

    report.select(report.RUN, view)
    with progress(not quiet and fmt == "table", "tuning") as tick:
        doc = api.tune_gemm(stage_name, m, spec_arg, budget_ms, progress=tick, dtype=dtype)
    device, info = doc["device"], doc["tune"]
    dropped = info["dropped"]
    win = next((r for r in doc["records"] if r["stage"] == info["winner"]), None)
    if output:
        files.write_output(output, results.dumps(doc), force=force)
    report.emit(
        doc, fmt, report.RUN, title=f"tune {stage_name} at {m}^3 on {device['name']}", view=view
    )
    if fmt == "table":
        con = report.console()
        for d in dropped:
            con.print(f"  dropped {d['stage']}: {d['reason']}")
    if win is None:
        raise RooflineError(f"no variant of {stage_name} verified")
    if fmt == "table":
        report.console().print(
            f"winner: {win['stage']} {win['tflops']:.2f} TFLOP/s; saved to {info['saved_to']} "
            "(used by `roofline run gemm --tuned`)"
        )
