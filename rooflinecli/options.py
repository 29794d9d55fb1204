"""Options shared by several commands, written once as decorators."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from rooflinecli import results
from rooflinecli.errors import RooflineError
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


def split_list(text: str, option: str) -> list[str]:
    """'a, b,c' -> ['a', 'b', 'c'] for a LIST option; an empty item (a,,b or a trailing comma)
    is an error, never skipped silently."""
    if not text.strip():
        raise RooflineError(f"{option} is empty")
    items = [t.strip() for t in text.split(",")]
    if not all(items):
        raise RooflineError(f"{option}: empty item in {text!r}")
    return items


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


def _format_of_group(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """--format given to a group holds for its subcommand (`specs --format json show X`),
    unless the subcommand is given its own."""
    parent = ctx.parent
    if (
        ctx.get_parameter_source("fmt") is ParameterSource.DEFAULT
        and parent is not None
        and parent.params.get("fmt") is not None
        and parent.get_parameter_source("fmt") is not ParameterSource.DEFAULT
    ):
        return str(parent.params["fmt"])
    return value


def format_option(f: F) -> F:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default="table",
        show_default=True,
        callback=_format_of_group,
        help="Output format.",
    )(f)


def force_option(f: F) -> F:
    # eager: its value is known when --output is checked, before the command does any work
    return click.option(
        "--force",
        "-f",
        is_flag=True,
        is_eager=True,
        help="Replace an existing file (without it, a results document never overwrites one).",
    )(f)


def _check_output(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse a bad --output before any work (a GPU run can take minutes); `-` keeps standard
    output for the document, and the command's other output goes to standard error."""
    if value is None:
        return None
    results.check_output(value, force=bool(ctx.params.get("force")))
    if value == results.STDOUT:
        ctx.call_on_close(results.claim_stdout())
    return value


def output_option(f: F) -> F:
    """--output FILE|- and --force; write with results.write_output(output, ..., force=force)."""
    f = force_option(f)
    return click.option(
        "--output",
        "-o",
        metavar="FILE|-",
        default=None,
        callback=_check_output,
        help="Also write the results document (JSON) here, atomically; - for standard output "
        "(the rest then goes to standard error).",
    )(f)


def chart_option(f: F) -> F:
    return click.option(
        "--chart/--no-chart",
        "chart_flag",
        default=None,
        help="Draw the roofline chart under the table (default: with --format table; for a run, "
        "only on a terminal).",
    )(f)


def want_chart(flag: bool | None, fmt: str, default: bool = True) -> bool:
    """--chart/--no-chart against --format: a chart goes with a table or Markdown only."""
    if flag and fmt in ("json", "csv"):
        raise RooflineError(f"--chart goes with --format table or markdown, not {fmt}")
    return fmt == "table" and default if flag is None else flag


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


ROOF_SETS = ("datasheet", "derived", "measured", "clock")


def roofs_option(f: F) -> F:
    f = click.option(
        "--calibration",
        type=click.Path(dir_okay=False, exists=True),
        default=None,
        help="A calibration file from `roofline calibrate` (default: the cached one).",
    )(f)
    return click.option(
        "--roofs",
        type=click.Choice(ROOF_SETS),
        default="datasheet",
        show_default=True,
        help="Roofs to place against: the spec's datasheet, derived from the SM clock "
        "(SMs x clock x FLOP/clk/SM), measured by `roofline calibrate` (mma.sync stages under "
        "mma.sync's own rate), or derived at the "
        "NVML clock each row ran at (its sm_clock_mhz, the clock the driver set: under a power "
        "cap the SMs can count fewer cycles; rows without one keep derived).",
    )(f)


def place_on_roofs(doc: dict[str, Any], roofs: str, calibration: str | None) -> dict[str, Any]:
    """The document placed against the chosen roof set (unchanged for datasheet)."""
    if roofs == "datasheet":
        return doc
    import json

    from rooflinecli import analysis, calibrate, specs
    from rooflinecli.errors import RooflineError

    device = doc.get("device") or {}
    cal = None
    if calibration:
        try:
            cal = json.loads(open(calibration).read())
        except (OSError, ValueError) as exc:
            raise RooflineError(f"cannot read calibration {calibration}: {exc}") from None
    elif device:
        cal = calibrate.load_calibration(
            device["name"], device.get("driver"), device.get("clock_sm_max_mhz")
        )
    if roofs == "measured" and not cal:
        raise RooflineError(
            "no calibration of this device: run `roofline calibrate` on it, or pass --calibration"
        )
    spec = specs.from_dict(doc["spec"])
    sets = calibrate.roof_sets(spec, cal, device.get("clock_sm_max_mhz"))
    if roofs == "clock":  # the power cap's clock, not the boost clock the datasheet assumes

        def at_its_clock(rec: dict[str, Any]) -> tuple[str, dict[str, Any]]:
            mhz = rec.get("sm_clock_mhz")
            if not mhz:
                return "derived", sets["derived"]
            return f"clock {mhz:,} MHz", calibrate.roof_sets(spec, cal, mhz)["derived"]

        return analysis.apply_roof_set(doc, roofs, sets["derived"], per_record=at_its_clock)
    if roofs == "measured" and sets["measured"].get("fp16_mma_sync_tensor"):
        return analysis.apply_roof_set(
            doc, roofs, sets["measured"], per_record=by_instruction(sets["measured"])
        )
    return analysis.apply_roof_set(doc, roofs, sets[roofs])


def by_instruction(measured: dict[str, Any]) -> Callable[[dict[str, Any]], tuple[str, Any]]:
    """Per-record measured roofs: a stage whose math is mma.sync (HMMA) cannot pass mma.sync's
    own measured rate, so its Tensor Core roof is that, not the best of wgmma and mma.sync."""
    from rooflinecli import analysis, model, stages

    mma = measured["fp16_mma_sync_tensor"]
    mma_set = {
        **measured,
        "fp16_tensor_dense": mma,
        "ridge_fp16_tensor": model.ridge_point(mma, measured["bandwidth_gbs"]),
    }

    def pick(rec: dict[str, Any]) -> tuple[str, Any]:
        stage = stages.BY_NAME.get(str(rec.get("stage")))
        if stage is not None and "HMMA" in stage.sass_claims and rec.get("dtype") != "fp32":
            return analysis.MMA_SYNC_SET, mma_set
        return "measured", measured

    return pick
