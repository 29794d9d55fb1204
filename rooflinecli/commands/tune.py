"""`roofline tune gemm --stage NAME`: search the stage's tile parameters on this GPU."""

from __future__ import annotations

import click

from rooflinecli.commands import Command, examples
from rooflinecli.errors import RooflineError
from rooflinecli.options import (
    DTYPES,
    MODEL_DTYPES,
    SIZE,
    Emit,
    check_sweep,
    columns_option,
    emits,
    format_option,
    gather,
    gather_shape,
    max_shapes_option,
    output_option,
    parse_shapes,
    spec_option,
)
from rooflinecli.present import output, table
from rooflinecli.present.output import Line, Part, Records, of_document
from rooflinecli.present.progress import progress


@click.group()
def tune() -> None:
    """Search tile parameters, or the best stage per shape class, on the running GPU."""


@tune.command(
    "gemm",
    cls=Command,
    epilog=examples(
        "roofline tune gemm --stage wgmma_persistent --m 8192",
        "roofline tune gemm --stage smem_tile --m 2048 --dtype fp32 -o tune.json",
    ),
)
@gather_shape
@click.option("--stage", "stage_name", required=True, help="A stage with a tune_space.")
@click.option(
    "--m",
    type=SIZE,
    default=4096,
    show_default=True,
    help="Rows of C to tune at (square by default).",
)
@click.option("--n", type=SIZE, default=None, help="Columns of C (default: --m).")
@click.option("--k", type=SIZE, default=None, help="The inner dimension (default: --m).")
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
@emits
def tune_gemm(
    shape: tuple[int, int, int],
    stage_name: str,
    dtype: str | None,
    spec_arg: str | None,
    budget_ms: float,
    emit: Emit,
) -> None:
    """Compile every variant (dropping those that fail or spill), verify and time the rest."""
    from rooflinecli import api
    from rooflinecli.api.requests import TuneRequest

    m, n, k = shape
    view = emit.view
    table.select(table.RUN, view)
    with progress(emit.live(), "tuning") as tick:
        request = TuneRequest([shape], dtype, spec_arg, budget_ms, stage_name, None, tick)
        doc = api.tune.gemm(request)
    device, info = doc["device"], doc["tune"]
    dropped = info["dropped"]
    win = next((r for r in doc["records"] if r["stage"] == info["winner"]), None)
    emit.write(doc)
    title = f"tune {stage_name} at {m}x{n}x{k} on {device['name']}"
    parts: list[Part] = [Records(doc, table.RUN, title, view=view)]
    parts += [Line(f"  dropped {d['stage']}: {d['reason']}", markdown=False, rich=True)
              for d in dropped]  # fmt: skip
    if win is not None:
        parts.append(
            Line(
                f"winner: {win['stage']} {win['tflops']:.2f} TFLOP/s"
                + (
                    f", {win['pct_of_reference']:.1f}% of the reference beside it"
                    if win.get("pct_of_reference")
                    else ""
                )
                + f"; saved to {info['saved_to']} "
                "(used by `roofline run gemm --tuned`)",
                markdown=False,
                rich=True,
            )
        )
    output.emit(of_document(doc, parts), emit.fmt)
    if win is None:
        raise RooflineError(f"no variant of {stage_name} verified")


def sweep_of_sizes(sizes: str, max_shapes: int) -> list[tuple[int, int, int]]:
    """--sizes (at most --max-shapes), handed to `tune dispatch` as `shapes`."""
    shapes = parse_shapes(None, None, None, sizes)
    check_sweep(shapes, max_shapes, "--sizes")
    return shapes


@tune.command(
    "dispatch",
    cls=Command,
    epilog=examples(
        "roofline tune dispatch --sizes 1x4096x4096,16x11008x4096 --dtype fp16",
        "roofline tune dispatch --sizes 4096,8192 --dtype bf16 --stages wgmma_persistent",
    ),
)
@gather("shapes", ("sizes", "max_shapes"), sweep_of_sizes)
@click.option(
    "--sizes", required=True, metavar="LIST",
    help="Shapes to measure: 1x4096x4096,16x11008x4096,4096 (N means NxNxN); at most 2,000 "
    "unless --max-shapes says more.",
)  # fmt: skip
@max_shapes_option
@click.option(
    "--dtype", type=click.Choice(MODEL_DTYPES), default="fp32", show_default=True,
    help="Element type (fp8: the FP8 stages, e4m3 with per-tensor scales, beside cuBLASLt's FP8 "
    "GEMM, each against the mode its accumulation matches).",
)  # fmt: skip
@click.option(
    "--stages", "stage_list", default=None, metavar="LIST",
    help="Only these stages (default: all of the dtype); stage@P=V,Q=W: the stage with those "
    "tile parameters, e.g. wgmma_persistent@BN=128.",
)  # fmt: skip
@spec_option
@click.option("--budget-ms", type=click.FloatRange(1, 60000), default=200.0, show_default=True)
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
@format_option
@columns_option
@output_option
@emits
def tune_dispatch(
    shapes: list[tuple[int, int, int]],
    dtype: str,
    stage_list: str | None,
    spec_arg: str | None,
    budget_ms: float,
    emit: Emit,
) -> None:
    """Time every stage at each shape and save, per shape class, the verified one nearest
    cuBLAS over the class (geomean) to this GPU's tune table in the cache (read first by
    `--stages best`); above 64 rows also the candidates the wave model weighs at each shape of
    the class (docs/dispatch.md).
    """
    from rooflinecli import api
    from rooflinecli.api.requests import TuneRequest

    view = emit.view
    table.select(table.RUN, view)
    with progress(emit.live(), "tuning") as tick:
        request = TuneRequest(shapes, dtype, spec_arg, budget_ms, None, stage_list, tick)
        doc = api.tune.dispatch(request)
    emit.write(doc)
    info = doc["dispatch"]
    title = f"tune dispatch {dtype} on {doc['device']['name']}"
    parts: list[Part] = [Records(doc, table.RUN, title, view=view)]
    if info["picks"]:
        parts += [
            Line(f"  {p['dtype']} {p['class']}: {p['stage']}", markdown=False, rich=True)
            for p in info["picks"]
        ]  # fmt: skip
        parts.append(
            Line(f"saved to {info['saved_to']} (used by `--stages best`)", markdown=False,
                 rich=True)
        )  # fmt: skip
    output.emit(of_document(doc, parts), emit.fmt)
    if not info["picks"]:
        raise RooflineError("no stage verified at any shape: nothing saved")
