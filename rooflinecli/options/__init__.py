"""Options shared by several commands, written once as decorators, and the builders that
gather them into requests.

A gathering decorator (`gather`) hands the command one value built from a group of its options
(the timing of a run, where its results go, the shapes asked for) in place of those options:
rooflinecli.commands.Command applies it before the command's function runs, so the function
takes a handful of values and nothing lies between it and the job it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import click
from click.core import ParameterSource

from rooflinecli.core import roofs
from rooflinecli.errors import RooflineError
from rooflinecli.options.gather import add_step, gather  # noqa: F401  (commands import both here)
from rooflinecli.present import FORMATS, View

F = TypeVar("F", bound=Callable[..., Any])

DTYPES = ("fp32", "fp16", "bf16")
# the analytic model's types: FP8 too (1 byte an element, the FP8 Tensor Core roof)
MODEL_DTYPES = (*DTYPES, "fp8")


class Size(click.ParamType):
    """A positive matrix dimension, with one clear line when it is not."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            v = value
        else:
            text = str(value).strip()
            if not (text.isascii() and text.lstrip("+-").isdigit()):  # int() takes ４０９６ too
                self.fail(f"{value!r} is not a whole number (digits 0-9)", param, ctx)
            v = int(text)
        if v < 1:
            self.fail(f"{v} must be at least 1", param, ctx)
        if v > 1 << 20:
            self.fail(f"{v} is too large (at most {1 << 20})", param, ctx)
        return v


SIZE = Size()


class Finite(click.ParamType):
    """A float that is a number: NaN and infinity are refused (stored, NaN became null)."""

    name = "float"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        import math

        try:
            v = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(v):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return v


FINITE = Finite()


def _named_spec(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--spec "" is refused, never taken as the default."""
    if value is not None and not value.strip():
        raise click.BadParameter(
            "empty: give a name from `roofline specs` or a TOML file", ctx, param
        )
    return value


def split_list(text: str, option: str) -> list[str]:
    """'a, b,c' -> ['a', 'b', 'c'] for a LIST option; an empty item (a,,b or a trailing comma)
    is an error, never skipped silently."""
    if not text.strip():
        raise RooflineError(f"{option} is empty")
    items = [t.strip() for t in text.split(",")]
    if not all(items):
        raise RooflineError(f"{option}: empty item in {text!r}")
    return items


class Emit(NamedTuple):
    """Where and how a command's results go: --format, the columns of its tables (--wide,
    --columns), the chart (--chart/--no-chart), the progress display (--quiet), the results
    document (--output, --force). Gathered by `emits`."""

    fmt: str = "table"
    view: Any = None  # a present.View
    chart_flag: bool | None = None
    quiet: bool = False
    output: str | None = None
    force: bool = False

    def chart(self, on_terminal: bool | None = None) -> bool:
        """Draw the chart: --chart, else with --format table (and for a run, only on a
        terminal: `on_terminal` True)."""
        from rooflinecli.present import output, table

        if on_terminal:
            return output.chart_wanted(self.chart_flag, self.fmt, table.console().is_terminal)
        return output.chart_wanted(self.chart_flag, self.fmt)

    def live(self) -> bool:
        """A progress display: not --quiet, and a format that draws on the terminal."""
        from rooflinecli.present.output import live

        return not self.quiet and live(self.fmt)

    def write(self, doc: dict[str, Any]) -> None:
        """The results document to --output, if given."""
        if self.output:
            from rooflinecli import files, results

            files.write_output(self.output, results.file_text(doc), force=self.force)


_EMIT = ("fmt", "view", "chart_flag", "quiet", "output", "force")


def emits(f: F) -> F:
    """Gather --format, the columns (`view`), --chart, --quiet, --output and --force, those the
    command has, into `emit` (an Emit). Put it below them: it runs after columns_option."""
    return gather("emit", _EMIT, lambda **kw: Emit(**kw))(f)


def shape_options(f: F) -> F:
    """--m [--n] [--k], handed to the command as `shape` (M, N, K)."""
    f = click.option("--k", type=SIZE, default=None, help="Inner dimension (default: M).")(f)
    f = click.option("--n", type=SIZE, default=None, help="Columns of C (default: M).")(f)
    f = click.option("--m", type=SIZE, required=True, help="Rows of C.")(f)
    return gather_shape(f)


def gather_shape(f: F) -> F:
    """--m, --n and --k handed to the command as one `shape` (M, N, K); N and K default to M."""
    return gather("shape", ("m", "n", "k"), resolve_shape)(f)


ATTENTION_SHAPE = ("batch", "heads", "seq", "head_dim", "kv_heads", "causal")


def attention_shape_options(required: bool = True) -> Callable[[F], F]:
    """--batch --heads --seq --head-dim [--kv-heads] [--causal]: one attention shape, handed to
    the command as `shape` (a core.attention.Shape) where they are required."""

    def add(f: F) -> F:
        f = _attention_shape_options(f, required)
        return gather("shape", ATTENTION_SHAPE, attention_shape)(f) if required else f

    return add


def _attention_shape_options(f: F, required: bool) -> F:
    f = click.option("--causal", is_flag=True, help="Query i attends keys j <= i: half the FLOPs.")(
        f
    )
    f = click.option(
        "--kv-heads", type=SIZE, default=None, help="K/V heads (grouped-query; default: --heads)."
    )(f)
    f = click.option("--head-dim", type=SIZE, required=required, help="D, per head.")(f)
    f = click.option("--seq", type=SIZE, required=required, help="N, the sequence length.")(f)
    f = click.option("--heads", type=SIZE, required=required, help="Query heads H.")(f)
    f = click.option("--batch", type=SIZE, required=required, help="Batch B.")(f)
    return f


def attention_shape(
    batch: int, heads: int, seq: int, head_dim: int, kv_heads: int | None, causal: bool
) -> Any:
    """The options as a rooflinecli.core.attention.Shape (a bad combination: one line)."""
    from rooflinecli.core.attention import Shape

    return Shape(batch, heads, kv_heads or heads, seq, head_dim, causal)


def spec_option(f: F) -> F:
    return click.option(
        "--spec",
        "spec_arg",
        metavar="NAME|PATH",
        default=None,
        callback=_named_spec,
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
        help="Replace an existing file (without it, no file the command writes overwrites one).",
    )(f)


def _check_output(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse a bad --output before any work (a GPU run can take minutes); `-` keeps standard
    output for the document, and the command's other output goes to standard error."""
    if value is None:
        return None
    from rooflinecli import files  # here: a command run without --output never loads it

    value = output_name(value)
    files.check_output(value, force=bool(ctx.params.get("force")))
    if value == files.STDOUT:
        ctx.call_on_close(files.claim_stdout())
    return value


def output_name(value: str) -> str:
    """--output with its placeholders filled in: {host}, and under a launcher {rank} and
    {local_rank} (rooflinecli.core.ranks); an unknown one is one line."""
    if "{" not in value and "}" not in value:
        return value
    import os
    import platform

    from rooflinecli.core import ranks

    return ranks.expand(value, ranks.discover(os.environ), platform.node())


def output_option(f: F) -> F:
    """--output FILE|- and --force; write with files.write_output(output, ..., force=force)."""
    f = force_option(f)
    return click.option(
        "--output",
        "-o",
        metavar="FILE|-",
        default=None,
        callback=_check_output,
        help="Also write the results document (JSON) here, atomically, gzip-compressed where "
        "the name ends in .gz; - for standard output "
        "(the rest then goes to standard error). {host}, {rank} and {local_rank} are filled in "
        "(the ranks under srun, mpirun or torchrun: docs/fleet.md).",
    )(f)


def chart_option(f: F) -> F:
    return click.option(
        "--chart/--no-chart",
        "chart_flag",
        default=None,
        help="Draw the roofline chart under the table (default: with --format table; for a run, "
        "only on a terminal).",
    )(f)


def _column_names(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    return tuple(split_list(value, "--columns")) if value is not None else ()


def columns_option(f: F) -> F:
    """--wide and --columns LIST, handed to the command as one `view` (present.View): which
    columns its tables of records show (rooflinecli.present.table.select checks the names)."""

    def view(wide: bool, column_names: tuple[str, ...]) -> View:
        if wide and column_names:
            raise RooflineError("give --wide or --columns, not both")
        return View(wide=wide, names=column_names)

    g = gather("view", ("wide", "column_names"), view)(f)
    g = click.option(
        "--columns",
        "column_names",
        metavar="LIST",
        default=None,
        callback=_column_names,
        help="Table columns by record field, e.g. stage,tflops,registers,occupancy_pct "
        "(an unknown name lists them all). JSON and CSV always carry every field.",
    )(g)
    return click.option(
        "--wide",
        is_flag=True,
        help="Every column (the default table is compact, to fit 100 terminal columns).",
    )(g)


def max_noise_option(f: F) -> F:
    return click.option(
        "--max-noise",
        "max_noise",
        type=click.FloatRange(0, 100, min_open=True),
        default=None,
        metavar="PCT",
        help="Repeat each stage until its noise is at most PCT percent, or the budget is spent "
        "(the noise: half the 99% bootstrap interval of the median, in percent of it, as the "
        "gate measures it); each record says whether it got there (noise_pct, "
        "noise_target_met). Default: the budget alone decides.",
    )(f)


TIMING = ("seed", "budget_ms", "repeats", "max_noise", "no_flush")


def timed(
    seed: int = 0,
    budget_ms: float = 400.0,
    repeats: int | None = None,
    max_noise: float | None = None,
    no_flush: bool = False,
) -> Any:
    """The timing settings of a run (api.requests.Timed) from timing_options' values."""
    from rooflinecli.api.requests import Timed

    return Timed(seed, timing_of(budget_ms, repeats, max_noise, no_flush))


def timing_options(f: F) -> F:
    """--seed --budget-ms --repeats --max-noise --no-flush: how a run's inputs are made and its
    stages timed (`run gemm`, `run attention`), handed to the command as `timed` (`timed()`)."""
    f = gather("timed", TIMING, timed)(f)
    f = click.option("--no-flush", is_flag=True, help="Do not flush the L2 between repeats.")(f)
    f = max_noise_option(f)
    f = click.option(
        "--repeats",
        type=click.IntRange(1, 10000),
        default=None,
        help="Exact number of timed repeats.",
    )(f)
    f = click.option(
        "--budget-ms", type=click.FloatRange(1, 60000), default=400.0, show_default=True,
        help="GPU time of timed repeats per stage.",
    )(f)  # fmt: skip
    f = click.option(
        "--seed", type=int, default=0, show_default=True, help="Seed of the random inputs."
    )(f)
    return f


def timing_of(
    budget_ms: float, repeats: int | None, max_noise: float | None, no_flush: bool
) -> Any:
    """The Timing of timing_options' values (--repeats and --max-noise exclude each other)."""
    from rooflinecli.gpu.timer import Timing

    if repeats is not None and max_noise is not None:
        raise RooflineError("give --repeats (a fixed count) or --max-noise (a target), not both")
    timing = Timing(budget_ms=budget_ms, flush_l2=not no_flush, max_noise_pct=max_noise)
    if repeats is not None:
        timing.min_repeats = timing.max_repeats = repeats
    return timing


def dtype_option(f: F) -> F:
    return click.option(
        "--dtype",
        type=click.Choice(DTYPES),
        default="fp32",
        show_default=True,
        help="Element type.",
    )(f)


def gemm_dtype_option(f: F) -> F:
    """--dtype of `run gemm`: DTYPES and fp8 (the FP8 stages beside cuBLASLt), with its format."""
    f = click.option(
        "--fp8-scaling",
        type=click.Choice(("tensor", "row", "block")),
        default="tensor",
        show_default=True,
        help="With --dtype fp8: the float32 scales of A and B, per tensor, per row of A and "
        "column of B, or DeepGEMM's blocks (per row of A and 128 of K, per 128 x 128 block of B).",
    )(f)
    f = click.option(
        "--fp8-format",
        type=click.Choice(("e4m3", "e5m2")),
        default="e4m3",
        show_default=True,
        help="With --dtype fp8: the FP8 format of A and B.",
    )(f)
    return click.option(
        "--dtype",
        type=click.Choice(MODEL_DTYPES),
        default="fp32",
        show_default=True,
        help="Element type (fp8: A and B FP8 with per-tensor float32 scales, B given as N x K, "
        "bf16 out, beside cuBLASLt's FP8 GEMM).",
    )(f)


def model_dtype_option(f: F) -> F:
    """--dtype of `model gemm`: DTYPES and fp8 (e4m3 or e5m2: both 1 byte, one roof)."""
    return click.option(
        "--dtype",
        type=click.Choice(MODEL_DTYPES),
        default="fp32",
        show_default=True,
        help="Element type (fp8: e4m3 or e5m2, 1 byte, the FP8 Tensor Core roof).",
    )(f)


def resolve_shape(m: int, n: int | None, k: int | None) -> tuple[int, int, int]:
    return m, n if n is not None else m, k if k is not None else m


class Roofs(NamedTuple):
    """--roofs and --calibration: the roof set a document is placed under, and the calibration
    file its measured roofs come from (None: the one cached for its GPU)."""

    roof_set: str = "datasheet"
    calibration: str | None = None

    def place(self, doc: dict[str, Any]) -> dict[str, Any]:
        from rooflinecli import api

        return api.place_on_roofs(doc, self.roof_set, self.calibration)


def roofs_option(f: F) -> F:
    """--roofs and --calibration, handed to the command as `roofs` (a Roofs)."""
    f = gather("roofs", ("roof_set", "calibration"), Roofs)(f)
    f = click.option(
        "--calibration",
        type=click.Path(dir_okay=False, exists=True),
        default=None,
        help="A calibration file from `roofline calibrate` (default: the cached one).",
    )(f)
    return click.option(
        "--roofs",
        "roof_set",
        type=click.Choice(roofs.ROOF_SETS),
        default="datasheet",
        show_default=True,
        help="Roofs to place against: the spec's datasheet, derived from the SM clock "
        "(SMs x clock x FLOP/clk/SM), measured by `roofline calibrate` (mma.sync stages under "
        "mma.sync's own rate), or derived at the "
        "NVML clock each row ran at (its sm_clock_mhz, the clock the driver set: under a power "
        "cap the SMs can count fewer cycles; rows without one keep derived).",
    )(f)


def reports_option(help_text: str) -> Callable[[F], F]:
    """--reports FOLDER: where ncu's .ncu-rep reports are kept (profile gemm and profile app)."""

    def deco(f: F) -> F:
        return click.option(
            "--reports",
            "reports_dir",
            type=click.Path(file_okay=False, writable=True),
            default=None,
            help=help_text,
        )(f)

    return deco


def extra_stage_option(help_text: str) -> Callable[[F], F]:
    """--extra-stage FILE.toml (repeatable): the user's own kernel beside ours."""

    def deco(f: F) -> F:
        return click.option(
            "--extra-stage",
            "extra_stages",
            multiple=True,
            type=click.Path(dir_okay=False),
            metavar="FILE.toml",
            help=help_text,
        )(f)

    return deco


# The most shapes a sweep (--sizes, --shapes) takes unless --max-shapes says more: each shape
# runs every stage, some seconds of GPU time each (the default ladder at 4096: 12 s), so 2,000
# shapes are hours.
MAX_SHAPES = 2_000


def max_shapes_option(f: F) -> F:
    """--max-shapes N: the sweep's limit (MAX_SHAPES)."""
    return click.option(
        "--max-shapes",
        type=click.IntRange(min=1),
        default=MAX_SHAPES,
        show_default=True,
        help="Refuse a sweep of more shapes than this (each shape runs every stage: seconds of "
        "GPU time each).",
    )(f)


def check_sweep(shapes: list[Any], max_shapes: int, option: str) -> None:
    """A sweep of more than `max_shapes` shapes is one line, before any work."""
    if len(shapes) > max_shapes:
        raise RooflineError(
            f"{option}: {len(shapes):,} shapes, more than a sweep takes ({max_shapes:,}); "
            f"pass --max-shapes {len(shapes)} to run them all"
        )


def parse_shapes(
    m: int | None, n: int | None, k: int | None, sizes: str | None
) -> list[tuple[int, int, int]]:
    """--m/--n/--k, or --sizes 256,512,127x333x65 (N means NxNxN)."""
    if sizes and m is not None:
        raise RooflineError("give either --m/--n/--k or --sizes, not both")
    if not sizes:
        if m is None:
            raise RooflineError("give a size: --m M [--n N] [--k K], or --sizes S1,S2,...")
        return [(m, n or m, k or m)]
    if n is not None or k is not None:
        raise RooflineError("--n/--k go with --m; with --sizes write MxNxK")
    shapes = []
    for token in split_list(sizes, "--sizes"):
        token = token.lower()
        parts = token.split("x")
        if len(parts) not in (1, 3):
            raise RooflineError(f"bad size {token!r}: write N or MxNxK")
        try:
            dims = [SIZE.convert(p, None, None) for p in parts]
        except click.BadParameter as exc:
            raise RooflineError(f"bad size {token!r}: {exc.format_message()}") from None
        shapes.append((dims[0], dims[0], dims[0]) if len(dims) == 1 else tuple(dims))  # type: ignore[arg-type]
    return shapes  # type: ignore[return-value]


def tolerance_option(help_text: str) -> Callable[[F], F]:
    """--tolerance PCT: the TFLOP/s a stage may lose against a baseline (`gate`, `report`)."""

    def deco(f: F) -> F:
        return click.option(
            "--tolerance",
            type=click.FloatRange(0, 100),
            default=5.0,
            show_default=True,
            help=help_text,
        )(f)

    return deco


# ------------------------------------------------------------------------- requests of a run


class GemmAsk(NamedTuple):
    """What `run gemm` was asked for, its values checked: the shapes (at most --max-shapes),
    --stages, --dtype, --fp8-format and --fp8-scaling, alpha and beta, --tuned, --extra-stage."""

    shapes: list[tuple[int, int, int]]
    stage_list: str | None
    dtype: str
    fp8_format: str
    fp8_scaling: str
    alpha: float
    beta: float
    tuned: bool
    extra_stages: tuple[str, ...]


GEMM_ASK = ("m", "n", "k", "sizes", "max_shapes", "stage_list", "dtype", "fp8_format",
            "fp8_scaling", "alpha", "beta", "tuned", "extra_stages")  # fmt: skip


def gemm_ask(
    m: int | None, n: int | None, k: int | None, sizes: str | None, max_shapes: int,
    **rest: Any,
) -> GemmAsk:  # fmt: skip
    """GemmAsk of `run gemm`'s options (gather GEMM_ASK): a bad size or too many is one line."""
    shapes = parse_shapes(m, n, k, sizes)
    check_sweep(shapes, max_shapes, "--sizes")
    return GemmAsk(shapes, **rest)


def gemm_request(plan: Any, ask: GemmAsk, spec_arg: str | None, timed: Any, progress: Any) -> Any:
    """The GEMM job's request (api.requests.GemmRequest) of a planned `run gemm`."""
    from rooflinecli.api.requests import GemmProblem, GemmRequest, Output

    problem = GemmProblem(plan.shapes, plan.chosen, spec_arg, ask.dtype, ask.alpha, ask.beta,
                          plan.kind, ask.fp8_format, plan.picks, plan.work,
                          fp8_scaling=ask.fp8_scaling)  # fmt: skip
    return GemmRequest(problem, timed, Output("run gemm", progress, plan.document_fields()))


ATTENTION_ASK = (*ATTENTION_SHAPE, "shapes", "max_shapes")


def attention_shapes(
    batch: int | None, heads: int | None, seq: int | None, head_dim: int | None,
    kv_heads: int | None, causal: bool, shapes: str | None, max_shapes: int,
) -> list[Any]:  # fmt: skip
    """--batch/--heads/--seq/--head-dim [--kv-heads], or --shapes BxHxNxD,BxHxKVxNxD,... (at
    most --max-shapes): the attention shapes of `run attention` (gather ATTENTION_ASK)."""
    one = (batch, heads, seq, head_dim)
    if shapes:
        if any(v is not None for v in (*one, kv_heads)):
            raise RooflineError(
                "give either --batch/--heads/--seq/--head-dim or --shapes, not both"
            )
        out = [_attention_token(token, causal) for token in split_list(shapes, "--shapes")]
        check_sweep(out, max_shapes, "--shapes")
        return out
    names = ("--batch", "--heads", "--seq", "--head-dim")
    missing = [n for n, v in zip(names, one, strict=True) if v is None]
    if missing:
        raise RooflineError(f"give {', '.join(missing)} (or --shapes BxHxNxD,...)")
    return [attention_shape(batch, heads, seq, head_dim, kv_heads, causal)]  # type: ignore[arg-type]


def _attention_token(token: str, causal: bool) -> Any:
    parts = token.lower().split("x")
    if len(parts) not in (4, 5):
        raise RooflineError(f"bad shape {token!r}: write BxHxNxD or BxHxKVxNxD")
    try:
        dims = [SIZE.convert(p, None, None) for p in parts]
    except click.BadParameter as exc:
        raise RooflineError(f"bad shape {token!r}: {exc.format_message()}") from None
    b, h, *rest = dims
    kv = rest.pop(0) if len(rest) == 3 else h
    return attention_shape(b, h, rest[0], rest[1], kv, causal)


# --gpus (options/gpus.py): the one shared option that runs the command another way
from rooflinecli.options.gpus import gpus_option  # noqa: E402, F401
