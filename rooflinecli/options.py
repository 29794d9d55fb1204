"""Options shared by several commands, written once as decorators."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

import click
from click.core import ParameterSource

from rooflinecli.core import roofs
from rooflinecli.errors import RooflineError
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


def shape_options(f: F) -> F:
    f = click.option("--k", type=SIZE, default=None, help="Inner dimension (default: M).")(f)
    f = click.option("--n", type=SIZE, default=None, help="Columns of C (default: M).")(f)
    f = click.option("--m", type=SIZE, required=True, help="Rows of C.")(f)
    return f


def attention_shape_options(required: bool = True) -> Callable[[F], F]:
    """--batch --heads --seq --head-dim [--kv-heads] [--causal]: one attention shape."""

    def add(f: F) -> F:
        return _attention_shape_options(f, required)

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
        help="Also write the results document (JSON) here, atomically; - for standard output "
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

    @functools.wraps(f)
    def command(*args: Any, wide: bool, column_names: tuple[str, ...], **kwargs: Any) -> Any:
        if wide and column_names:
            raise RooflineError("give --wide or --columns, not both")
        return f(*args, view=View(wide=wide, names=column_names), **kwargs)

    g = click.option(
        "--columns",
        "column_names",
        metavar="LIST",
        default=None,
        callback=_column_names,
        help="Table columns by record field, e.g. stage,tflops,registers,occupancy_pct "
        "(an unknown name lists them all). JSON and CSV always carry every field.",
    )(command)
    g = click.option(
        "--wide",
        is_flag=True,
        help="Every column (the default table is compact, to fit 100 terminal columns).",
    )(g)
    return cast(F, g)


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


def timing_options(f: F) -> F:
    """--seed --budget-ms --repeats --max-noise --no-flush: how a run's inputs are made and its
    stages timed (`run gemm`, `run attention`). timing_of() turns them into a Timing."""
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


def roofs_option(f: F) -> F:
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


def place_on_roofs(doc: dict[str, Any], roof_set: str, calibration: str | None) -> dict[str, Any]:
    """--roofs and --calibration applied to a document: the calibration file given, else the
    one cached for the document's device (rooflinecli.gpu.calibrate), then core.roofs."""
    if roof_set == "datasheet":
        return doc
    from rooflinecli.gpu import calibrate

    device = doc.get("device") or {}
    cal = None
    if calibration:
        cal = calibrate.read_calibration(calibration)
    elif device:
        cal = calibrate.load_calibration(
            device["name"], device.get("driver"), device.get("clock_sm_max_mhz")
        )
    return roofs.place_on_roofs(doc, roof_set, cal)


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


# ------------------------------------------------------------- calibrations and the report page


def load_calibration(path: str | None, doc: dict[str, Any]) -> dict[str, Any] | None:
    """The calibration named by --calibration, else the one cached for the document's device
    (`roofline calibrate` on it), else None. One of another GPU is refused."""
    from rooflinecli.gpu import calibrate  # the calibration cache: pure, no CuPy

    device = doc.get("device") or {}
    if path is None:
        if not device.get("name"):
            return None
        return calibrate.load_calibration(
            device["name"], device.get("driver"), device.get("clock_sm_max_mhz")
        )
    cal = calibrate.read_calibration(path)
    theirs = (cal.get("device") or {}).get("name")
    if device.get("name") and theirs != device["name"]:
        raise RooflineError(f"{path} calibrates {theirs}, the document ran on {device['name']}")
    spec = (doc.get("spec") or {}).get("name")
    if not device and cal.get("spec") and spec and cal["spec"] != spec:
        raise RooflineError(f"{path} calibrates spec {cal['spec']}, the document models {spec}")
    return cal


def calibration_for(doc: dict[str, Any], given: dict[str, Any] | None) -> dict[str, Any] | None:
    """The calibration a document's roofs take: the one given, where it calibrates the
    document's GPU (or the document is a model), else the one cached for its GPU, if any."""
    device = (doc.get("device") or {}).get("name")
    theirs = ((given or {}).get("device") or {}).get("name")
    if given is not None and (not device or theirs == device):
        return given
    return load_calibration(None, doc)


def fail_unverified(doc: dict[str, Any]) -> None:
    """A run whose document holds a stage that failed its check ends with exit 1, naming each
    such stage once (after the document is written and shown)."""
    from rooflinecli.errors import GateFailure

    failed = sorted({r["stage"] for r in doc["records"] if r.get("verified") is False})
    if failed:
        raise GateFailure(f"verification failed: {', '.join(failed)}")


def write_report(
    output: str,
    paths: list[str],
    docs: list[dict[str, Any]],
    calibration_path: str | None,
    result: Any = None,
    baseline: tuple[str, dict[str, Any]] | None = None,
    force: bool = False,
) -> int:
    """Write the page of `docs` (the first the current run of a gate `result` against
    `baseline`); returns its size in bytes."""
    from rooflinecli import files
    from rooflinecli.present import report

    given = None
    if calibration_path:  # read and checked once, against the first document's GPU
        given = load_calibration(calibration_path, docs[0])
    sources = [
        report.Source(p, d, calibration_for(d, given)) for p, d in zip(paths, docs, strict=True)
    ]
    base = None
    if baseline is not None:
        base = report.Source(baseline[0], baseline[1], calibration_for(baseline[1], given))
    data = report.render(sources, result, base).encode("utf-8")
    files.write_output(output, data, document=False, force=force)
    return len(data)


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


def pin_rank() -> None:
    """Under a launcher that started several ranks on a node (srun, mpirun, torchrun), this
    rank takes its local rank's GPU (rooflinecli.core.ranks.device_for), before CUDA starts."""
    import os

    from rooflinecli.core import ranks

    place = ranks.discover(os.environ)
    if place is None:
        return
    sharing = place.local_world_size or place.world_size or 1
    if sharing > 1:
        os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")  # as NVML numbers them
        os.environ["CUDA_VISIBLE_DEVICES"] = ranks.device_for(
            place, os.environ.get("CUDA_VISIBLE_DEVICES")
        )


def gpus_option(kind: str = "results") -> Callable[[F], F]:
    """--gpus all|0,2,5: the command run on each GPU at once, one worker process a GPU
    (rooflinecli.gpu.fleet), their documents merged into one (`kind` "results":
    results.merge, records naming their GPU; "calibration": one calibration a GPU). Without
    it, the command runs as it always has, on the GPU its rank takes under a launcher."""

    def deco(f: F) -> F:
        @functools.wraps(f)
        def command(*args: Any, gpus: str | None, **kwargs: Any) -> Any:
            if gpus is None:
                pin_rank()
                return f(*args, **kwargs)
            ctx = click.get_current_context()
            return fan_out(ctx, gpus, kind, kwargs)

        return cast(
            F,
            click.option(
                "--gpus",
                default=None,
                metavar="all|LIST",
                help="Run on these GPUs at once, one worker process each (all, or indices "
                "such as 0,2,5), and merge their documents into one whose records name their "
                "GPU (docs/fleet.md).",
            )(command),
        )

    return deco


def fan_out(ctx: click.Context, gpus_text: str, kind: str, params: dict[str, Any]) -> None:
    """--gpus: the workers, one line per GPU as each ends, the merged document."""
    import os
    import sys
    import tempfile
    from pathlib import Path

    from rooflinecli import files, results
    from rooflinecli.errors import GateFailure
    from rooflinecli.gpu import device, fleet

    gpus = fleet.parse_gpus(gpus_text, os.environ, device.host_gpus)
    base = _worker_args(ctx)
    has_output = any(p.name == "output" for p in ctx.command.params)
    has_quiet = any(p.name == "quiet" for p in ctx.command.params)
    fmt = str(params.get("fmt") or "table")
    output = params.get("output")

    def argv(gpu: str, doc: Path) -> list[str]:
        extra = ["--quiet"] if has_quiet else []
        extra += ["--format", "json"]
        if has_output:
            extra += ["-o", str(doc), "--force"]
        cut = base.index("--") if "--" in base else len(base)
        return worker_argv([*base[:cut], *extra, *base[cut:]])

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    say(f"{len(gpus)} GPU(s) at once: {', '.join(gpus)}")
    with tempfile.TemporaryDirectory(prefix="roofline-gpus-") as tmp:
        outcomes = fleet.run_pool(gpus, Path(tmp), argv, say, stdout_document=not has_output)
        loaded: list[tuple[str, dict[str, Any]]] = []
        for o in outcomes:
            if o.path is None:
                continue
            try:
                loaded.append((f"GPU {o.gpu}", _read_worker(o.path, kind)))
            except RooflineError as exc:
                failed = o._replace(returncode=o.returncode or 2, error=str(exc), path=None)
                outcomes = [failed if x.gpu == o.gpu else x for x in outcomes]
                say(f"GPU {o.gpu}: its document is unreadable: {exc}")
    bad = [o for o in outcomes if not o.ok]
    if not loaded:
        raise RooflineError(f"--gpus: every worker failed; GPU {bad[0].gpu}: {bad[0].error}")
    if kind == "calibration":
        merged: dict[str, Any] = {
            "command": "calibrate --gpus",
            "gpus": [{"gpu": results.gpu_of(d), **d} for _, d in loaded],
            "failed": [{"gpu": o.gpu, "error": o.error} for o in bad],
        }
        data = results.dumps(merged)
    else:
        merged = results.merge(loaded, command=" ".join(["roofline", *base[:2]]))
        merged["fleet"]["failed"] = [{"gpu": o.gpu, "exit": o.returncode, "error": o.error}
                                     for o in bad]  # fmt: skip
        merged["fleet"]["wall_s"] = {o.gpu: round(o.wall_s, 2) for o in outcomes}
        data = results.dumps(merged)
    if output:
        files.write_output(str(output), data, force=bool(params.get("force")))
    _present(merged, kind, fmt)
    if bad:
        which = "; ".join(f"GPU {o.gpu} (exit {o.returncode}): {o.error}" for o in bad)
        raise GateFailure(f"{len(bad)} of {len(outcomes)} worker(s) failed: {which}")
    if kind != "calibration":
        wrong = sorted({f"{r['stage']} on {r.get('gpu_label')}" for r in merged["records"]
                        if r.get("verified") is False})  # fmt: skip
        if wrong:
            raise GateFailure(f"verification failed: {', '.join(wrong)}")


def worker_argv(args: list[str]) -> list[str]:
    """A worker's command line (tests put a stand-in for the GPU here)."""
    from rooflinecli.gpu import fleet

    return fleet.python_argv(args)


def _read_worker(path: Any, kind: str) -> dict[str, Any]:
    from rooflinecli import paths, results

    if kind == "calibration":
        doc = paths.read_json(path, "calibration")
        if not isinstance(doc, dict):
            raise RooflineError(f"{path}: not a calibration")
        return doc
    return results.load(path)


def _present(merged: dict[str, Any], kind: str, fmt: str) -> None:
    """The merged document as `show` prints it; a calibration per GPU as rows of roofs."""
    from rooflinecli.present import document, output, table

    if kind == "calibration":
        rows = []
        for item in merged["gpus"]:
            for key, m in sorted((item.get("measurements") or {}).items()):
                vals = m if isinstance(m, dict) else {"value": m}
                rows.append({"gpu": item["gpu"].get("label"), "roof": key,
                             **{k: v for k, v in vals.items()
                                if isinstance(v, int | float | str)}})  # fmt: skip
        cols = sorted({k for r in rows for k in r} - {"gpu", "roof"})

        def cell(v: Any) -> str:  # measured roofs to four significant figures, as elsewhere
            return f"{v:,.4g}" if isinstance(v, float) else str(v)

        columns: list[table.Column] = [("gpu", "GPU", str), ("roof", "roof", str)]
        columns += [(c, c, cell) for c in cols]
        title = f"Calibration of {len(merged['gpus'])} GPU(s)"
        output.emit(output.of_rows(rows, columns, [output.Rows(rows, columns, title=title)],
                                   merged), fmt)  # fmt: skip
        return
    if table.is_app(merged) or not merged["records"]:
        n = merged["fleet"]["gpus"]
        output.emit(output.of_document(merged, [output.Line(f"{n} GPU(s) merged")]), fmt)
        return
    output.emit(document.report(merged, View(), False), fmt)
