"""`roofline gate`: fail CI when a stage got slower than its baseline or fell below a floor."""

from __future__ import annotations

from typing import Any, NamedTuple

import click

from rooflinecli import files, names, results
from rooflinecli.commands import Command, examples
from rooflinecli.errors import GateFailure, Inconclusive
from rooflinecli.options import force_option, format_option, gather, tolerance_option
from rooflinecli.present import gate, output, table


def _floors(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[str, float]:
    out: dict[str, float] = {}
    for text in values:
        try:
            stage, pct = gate.parse_floor(text)
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx, param) from None
        out[stage] = pct
    return out


def _markdown(result: gate.GateResult, rows: list[dict[str, Any]], heading: str) -> str:
    state = {"pass": "passed", "fail": "FAILED", "inconclusive": "INCONCLUSIVE"}[result.outcome]
    lines = [
        f"## roofline gate: {state}",
        "",
        heading,
        "",
        f"{names.markdown(result.summary())}.",
        "",
        table.markdown_rows(rows, table.GATE_COLUMNS).rstrip("\n"),
        "",
        f"Tolerance {result.tolerance_pct:g}% of TFLOP/s. Rules: "
        + "; ".join(f"{name}: {text}" for name, text in gate.RULES.items())
        + ".",
    ]
    if result.mismatches:
        diffs = names.markdown("; ".join(result.mismatches))
        lines += ["", f"Compared across environments (--allow-mismatch): {diffs}."]
    return "\n".join(lines) + "\n"


class Rules(NamedTuple):
    """What the gate holds a run to: --tolerance against the baseline, the floors of % of roof
    and % of the reference, whether another environment's baseline is allowed."""

    tolerance: float
    roof_floors: dict[str, float]
    ref_floors: dict[str, float]
    allow_mismatch: bool


class Also(NamedTuple):
    """The files the gate also writes: JUnit XML, a Markdown summary, the report page, the
    TFLOP/s for github-action-benchmark."""

    junit: str | None
    markdown_path: str | None
    html_path: str | None
    benchmark_json: str | None
    force: bool  # replace a file that exists

    def check(self) -> None:
        """Each refused now, before any work, not after the verdict; the page needs plotly."""
        for target in (self.junit, self.markdown_path, self.html_path, self.benchmark_json):
            if target:
                files.check_output(target, document=False, force=self.force)
        if self.html_path:
            from rooflinecli.present import report

            report.require()


@click.command(
    "gate",
    cls=Command,
    epilog=examples(
        "roofline gate current.json --baseline baseline.json --tolerance 3",
        "roofline gate current.json --min-pct-of-reference '*=80' --junit gate.xml",
    ),
)
@gather("rules", Rules._fields, Rules)
@gather("also", Also._fields, Also)
@click.argument("path", metavar="RESULTS.json", type=click.Path(dir_okay=False))
@click.option(
    "--baseline",
    "baseline_path",
    metavar="BASELINE.json",
    type=click.Path(dir_okay=False),
    default=None,
    help="Run to compare against (optional when only floors are given).",
)
@tolerance_option("Allowed TFLOP/s loss against the baseline, in percent.")
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
    "--html",
    "html_path",
    metavar="FILE",
    default=None,
    help="Also write the report page here: the verdict per check, each stage's samples, both "
    "runs' rooflines (needs the `report` extra).",
)
@click.option(
    "--benchmark-json",
    metavar="FILE",
    default=None,
    help="Also write TFLOP/s for github-action-benchmark (customBiggerIsBetter).",
)
@force_option
@format_option
def gate_command(path: str, baseline_path: str | None, rules: Rules, also: Also, fmt: str) -> None:
    """Fail when a stage regressed (CI gate).

    A stage fails when it lost more TFLOP/s than --tolerance against the baseline, is missing or
    unverified, or misses a floor. With the repeats recorded (samples_ms) on both sides, the 99%
    bootstrap interval of the change decides: all of it beyond the tolerance fails, none of it
    passes, and an interval across the tolerance is inconclusive (too noisy to tell). With fewer
    than 10 samples, or none, the median times alone decide, with no noise allowance (never the
    stored TFLOP/s: a document whose speeds its times contradict is refused). Each check says
    its rule.

    \b
    Exit codes:
      0  every check passed (or was skipped)
      1  a check failed (a failure wins over an inconclusive check)
      2  usage or input error: unreadable document, a baseline from another
         environment or of another dtype, a floor naming a stage the run lacks,
         nothing to check
      3  nothing failed, but a check was inconclusive (rerun, or record more repeats)

    The rules: docs/gate.md.
    """
    also.check()
    current = results.load(path)
    base = results.load(baseline_path) if baseline_path else None
    result = gate.evaluate(
        current,
        base,
        tolerance_pct=rules.tolerance,
        min_pct_of_roof=rules.roof_floors,
        min_pct_of_reference=rules.ref_floors,
        allow_mismatch=rules.allow_mismatch,
        where=(path, baseline_path or "baseline"),
    )
    rows = [c.row() for c in result.checks]
    _write_also(also, path, baseline_path, current, base, result, rows)
    title = f"Gate: {path}" + (f" against {baseline_path}" if base is not None else "")
    title += f" (tolerance {rules.tolerance:g}%)" if base is not None else " (floors only)"
    caption = f"{result.summary()}. Rules: {gate.RULES_SHORT}."
    if result.mismatches:
        caption += f" Environments differ: {'; '.join(result.mismatches)}."
    columns = table.GATE_COLUMNS
    page = output.of_rows(
        rows, columns, [output.Rows(rows, columns, title, caption)], result.to_dict()
    )
    heading = _heading(path, baseline_path, current, base)
    output.emit(page._replace(markdown=_markdown(result, rows, heading)), fmt)
    if result.outcome == "fail":
        raise GateFailure(result.summary())
    if result.outcome == "inconclusive":
        raise Inconclusive(result.summary())


def _heading(
    path: str, baseline_path: str | None, current: dict[str, Any], base: dict[str, Any] | None
) -> str:
    heading = (
        f"Current: {names.markdown_code_span(path)} ({names.markdown(gate.describe(current))})"
    )
    if base is not None:
        where = names.markdown_code_span(str(baseline_path))
        heading += f"; baseline: {where} ({names.markdown(gate.describe(base))})"
    return heading


def _write_also(
    also: Also, path: str, baseline_path: str | None, current: dict[str, Any],
    base: dict[str, Any] | None, result: gate.GateResult, rows: list[dict[str, Any]],
) -> None:  # fmt: skip
    """JUnit, Markdown, the page and the benchmark JSON, those asked for."""
    force = also.force
    if also.junit:
        files.write_output(also.junit, gate.junit_xml(result), document=False, force=force)
    if also.markdown_path:
        heading = _heading(path, baseline_path, current, base)
        text = _markdown(result, rows, heading)
        files.write_output(also.markdown_path, text, document=False, force=force)
    if also.benchmark_json:
        text = gate.benchmark_json(current)
        files.write_output(also.benchmark_json, text, document=False, force=force)
    if also.html_path:
        from rooflinecli import api

        other = (baseline_path or "baseline", base) if base is not None else None
        api.write_report(also.html_path, [path], [current], None, result, other, force=force)
