"""`roofline tune gemm --stage NAME`: search the stage's tile parameters on this GPU."""

from __future__ import annotations

import click

from rooflinecli import report, results, stages
from rooflinecli.errors import RooflineError
from rooflinecli.options import SIZE, format_option, output_option, spec_option


@click.group()
def tune() -> None:
    """Search tile parameters on the running GPU and keep the winner."""


@tune.command("gemm")
@click.option("--stage", "stage_name", required=True, help="A stage with a tune_space.")
@click.option("--m", type=SIZE, default=4096, show_default=True, help="Square size to tune at.")
@spec_option
@click.option("--budget-ms", type=click.FloatRange(1, 60000), default=200.0, show_default=True)
@format_option
@output_option
def tune_gemm(
    stage_name: str,
    m: int,
    spec_arg: str | None,
    budget_ms: float,
    fmt: str,
    output: str | None,
    force: bool,
) -> None:
    """Compile every variant (dropping those that fail or spill), verify and time the rest."""
    from rooflinecli import runner
    from rooflinecli import tune as core

    if stage_name not in stages.BY_NAME:
        raise RooflineError(f"unknown stage {stage_name!r}; known: {', '.join(stages.BY_NAME)}")
    stage = stages.BY_NAME[stage_name]
    dev = runner.device_info()
    keep, dropped = core.candidates(stage, dev["arch"])
    if not keep:
        raise RooflineError(f"no variant of {stage_name} compiles without spills")
    chosen = [*keep, stages.reference_for(stage.dtype)]
    device, spec, records = runner.run_gemm(
        [(m, m, m)], chosen, spec_arg, timing=runner.Timing(budget_ms=budget_ms), dtype=stage.dtype
    )
    win = core.best(records)
    doc = results.new_document(
        spec.to_dict(), device, records, command="tune gemm", environment=runner.environment(),
        tune={"stage": stage_name, "dropped": dropped, "winner": win and win["stage"]},
    )  # fmt: skip
    if output:
        results.write_output(output, results.dumps(doc), force=force)
    report.emit(
        doc, fmt, report.RUN_COLUMNS, title=f"tune {stage_name} at {m}^3 on {device['name']}"
    )
    if fmt == "table":
        con = report.console()
        for d in dropped:
            con.print(f"  dropped {d['stage']}: {d['reason']}")
    if win is None:
        raise RooflineError(f"no variant of {stage_name} verified")
    path = core.save_winner(device["name"], stage_name, win["params"])
    if fmt == "table":
        report.console().print(
            f"winner: {win['stage']} {win['tflops']:.2f} TFLOP/s; saved to {path} "
            "(used by `roofline run gemm --tuned`)"
        )
