"""`roofline tune gemm --stage NAME`: search the stage's tile parameters on this GPU."""

from __future__ import annotations

import click

from rooflinecli import files, results
from rooflinecli.errors import RooflineError
from rooflinecli.options import (
    DTYPES,
    SIZE,
    check_sweep,
    columns_option,
    dtype_option,
    format_option,
    max_shapes_option,
    output_option,
    parse_shapes,
    spec_option,
)
from rooflinecli.present import View, table
from rooflinecli.present.output import Line, Part, Records, emit, live, of_document
from rooflinecli.present.progress import progress


@click.group()
def tune() -> None:
    """Search tile parameters, or the best stage per shape class, on the running GPU."""


@tune.command("gemm")
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
def tune_gemm(
    stage_name: str,
    m: int,
    n: int | None,
    k: int | None,
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

    table.select(table.RUN, view)
    with progress(not quiet and live(fmt), "tuning") as tick:
        doc = api.tune_gemm(
            stage_name, m, spec_arg, budget_ms, progress=tick, dtype=dtype, n=n, k=k
        )
    device, info = doc["device"], doc["tune"]
    dropped = info["dropped"]
    win = next((r for r in doc["records"] if r["stage"] == info["winner"]), None)
    if output:
        files.write_output(output, results.dumps(doc), force=force)
    title = f"tune {stage_name} at {m}x{n or m}x{k or m} on {device['name']}"
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
    emit(of_document(doc, parts), fmt)
    if win is None:
        raise RooflineError(f"no variant of {stage_name} verified")


@tune.command("dispatch")
@click.option(
    "--sizes", required=True, metavar="LIST",
    help="Shapes to measure: 1x4096x4096,16x11008x4096,4096 (N means NxNxN); at most 2,000 "
    "unless --max-shapes says more.",
)  # fmt: skip
@max_shapes_option
@dtype_option
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
def tune_dispatch(
    sizes: str,
    max_shapes: int,
    dtype: str,
    stage_list: str | None,
    spec_arg: str | None,
    budget_ms: float,
    quiet: bool,
    fmt: str,
    view: View,
    output: str | None,
    force: bool,
) -> None:
    """Time every stage at each shape and save, per shape class, the fastest verified one to
    this GPU's tune table in the cache (read first by `--stages best`; docs/dispatch.md)."""
    from rooflinecli import api

    shapes = parse_shapes(None, None, None, sizes)
    check_sweep(shapes, max_shapes, "--sizes")
    table.select(table.RUN, view)
    with progress(not quiet and live(fmt), "tuning") as tick:
        doc = api.tune_dispatch(shapes, dtype, spec_arg, budget_ms, stage_list, progress=tick)
    if output:
        files.write_output(output, results.dumps(doc), force=force)
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
    emit(of_document(doc, parts), fmt)
    if not info["picks"]:
        raise RooflineError("no stage verified at any shape: nothing saved")
