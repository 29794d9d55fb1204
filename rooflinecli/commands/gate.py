"""`roofline gate`: fail CI when a stage got slower than its baseline or fell below a floor."""

from __future__ import annotations

from typing import Any

import click

from rooflinecli import gate as core
from rooflinecli import report, results
from rooflinecli.errors import GateFailure
from rooflinecli.options import format_option


def _floors(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[str, float]:
    out: dict[str, float] = {}
    for text in values:
        try:
            stage, pct = core.parse_floor(text)
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx, param) from None
        out[stage] = pct
    return out


def _markdown(result: core.GateResult, rows: list[dict[str, Any]], heading: str) -> str:
    state = "passed" if result.passed else "FAILED"
    lines = [
        f"## roofline gate: {state}",
        "",
        heading,
        "",
        f"{result.summary()}.",
        "",
        report.markdown_rows(rows, report.GATE_COLUMNS).rstrip("\n"),
        "",
        f"Tolerance {result.tolerance_pct:g}% of TFLOP/s. Noise: {core.NOISE_RULE}.",
    ]
    if result.mismatches:
        diffs = "; ".join(result.mismatches)
        lines += ["", f"Compared across environments (--allow-mismatch): {diffs}."]
    return "\n".join(lines) + "\n"


@click.command("gate")
@click.argument("path", metavar="RESULTS.json", type=click.Path(dir_okay=False))
@click.option(
    "--baseline",
    "baseline_path",
    metavar="BASELINE.json",
    type=click.Path(dir_okay=False),
    default=None,
    help="Run to compare against (optional when only floors are given).",
)
@click.option(
    "--tolerance",
    type=click.FloatRange(0, 100),
    default=5.0,
    show_default=True,
    help="Allowed TFLOP/s loss against the baseline, in percent.",
)
@click.option(
    "--min-pct-of-roof",
    "roof_floors",
    multiple=True,
    metavar="STAGE=PCT",
    callback=_floors,
    help="Floor on % of roof for a stage (* for every stage); repeatable.",
)
@click.option(
    "--min-pct-of-reference",
    "ref_floors",
    multiple=True,
    metavar="STAGE=PCT",
    callback=_floors,
    help="Floor on % of the reference (cuBLAS) for a stage (* for every stage); repeatable.",
)
@click.option(
    "--allow-mismatch",
    is_flag=True,
    help="Compare against a baseline from another GPU, driver or CUDA version.",
)
@click.option("--junit", metavar="FILE", default=None, help="Also write JUnit XML here.")
@click.option(
    "--markdown",
    "markdown_path",
    metavar="FILE",
    default=None,
    help="Also write a Markdown summary here (e.g. $GITHUB_STEP_SUMMARY).",
)
@click.option(
    "--benchmark-json",
    metavar="FILE",
    default=None,
    help="Also write TFLOP/s for github-action-benchmark (customBiggerIsBetter).",
)
@format_option
def gate(
    path: str,
    baseline_path: str | None,
    tolerance: float,
    roof_floors: dict[str, float],
    ref_floors: dict[str, float],
    allow_mismatch: bool,
    junit: str | None,
    markdown_path: str | None,
    benchmark_json: str | None,
    fmt: str,
) -> None:
    """Fail when a stage regressed (CI gate).

    Exit 1 when a stage lost more TFLOP/s than --tolerance against the baseline (a slowdown
    within two combined standard deviations of the repeats is noise and passes), is missing or
    unverified, or misses a floor; exit 2 for a baseline from another GPU, driver or CUDA. The
    rules: docs/gate.md.
    """
    for target in (junit, markdown_path, benchmark_json):
        if target:  # refused now, before any work, not after the verdict
            results.check_output(target, document=False)
    current = results.load(path)
    base = results.load(baseline_path) if baseline_path else None
    result = core.evaluate(
        current,
        base,
        tolerance_pct=tolerance,
        min_pct_of_roof=roof_floors,
        min_pct_of_reference=ref_floors,
        allow_mismatch=allow_mismatch,
        where=(path, baseline_path or "baseline"),
    )
    rows = [c.row() for c in result.checks]
    heading = f"Current: `{path}` ({core.describe(current)})"
    if base is not None:
        heading += f"; baseline: `{baseline_path}` ({core.describe(base)})"
    if junit:
        results.write_output(junit, core.junit_xml(result), document=False)
    if markdown_path:
        results.write_output(markdown_path, _markdown(result, rows, heading), document=False)
    if benchmark_json:
        results.write_output(benchmark_json, core.benchmark_json(current), document=False)
    if fmt == "markdown":
        report.console().file.write(_markdown(result, rows, heading))
    else:
        title = f"Gate: {path}" + (f" against {baseline_path}" if base is not None else "")
        title += f" (tolerance {tolerance:g}%)" if base is not None else " (floors only)"
        caption = f"{result.summary()}. Noise: {core.NOISE_SHORT}."
        if result.mismatches:
            caption += f" Environments differ: {'; '.join(result.mismatches)}."
        report.emit_rows(
            rows, fmt, report.GATE_COLUMNS, title=title, caption=caption, payload=result.to_dict()
        )
    if not result.passed:
        raise GateFailure(result.summary())
