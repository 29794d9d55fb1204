"""`roofline model`: the analytic roofline picture, no GPU needed."""

from __future__ import annotations

import click

from rooflinecli import analysis, report, results, stages
from rooflinecli import specs as specreg
from rooflinecli.errors import RooflineError
from rooflinecli.options import (
    dtype_option,
    format_option,
    output_option,
    resolve_shape,
    shape_options,
    spec_option,
)

DEFAULT_SPEC = "h100-sxm5"  # the seed's GPU, when none is given and none is detected


def default_spec(spec_arg: str | None) -> tuple[specreg.Spec, str]:
    """--spec, else the GPU nvidia-smi reports, else the seed's H100 SXM5. Never imports CuPy."""
    if spec_arg:
        return specreg.resolve(spec_arg), "given"
    from rooflinecli.runner import smi_device_name

    name = smi_device_name()
    if name:
        try:
            return specreg.for_device(name), f"detected {name}"
        except RooflineError:
            pass
    return specreg.resolve(DEFAULT_SPEC), "default: no GPU detected"


@click.group()
def model() -> None:
    """Analytic roofline model (pure arithmetic, no GPU)."""


@model.command("gemm")
@shape_options
@dtype_option
@spec_option
@click.option("--alpha", type=float, default=1.0, show_default=True)
@click.option("--beta", type=float, default=0.0, show_default=True, help="Non-zero: C is read.")
@format_option
@output_option
def model_gemm(
    m: int,
    n: int | None,
    k: int | None,
    dtype: str,
    spec_arg: str | None,
    alpha: float,
    beta: float,
    fmt: str,
    output: str | None,
    force: bool,
) -> None:
    """FLOPs, ideal bytes and intensity, by-instruction intensity, roof and attainable per stage."""
    m, n, k = resolve_shape(m, n, k)
    spec, why = default_spec(spec_arg)
    chosen = stages.select(None, dtype)
    records = [analysis.model_record(s, m, n, k, spec, alpha, beta, dtype) for s in chosen]
    doc = results.new_document(spec.to_dict(), None, records, command="model gemm")
    if output:
        results.write_output(output, results.dumps(doc), force=force)
    first = records[0]
    title = (
        f"GEMM {m}x{n}x{k} {dtype}, model on {spec.display_name} ({spec.name}, {why}): "
        f"peak {first['peak_tflops']:g} TFLOP/s, {spec.memory_bandwidth_gbs:g} GB/s, "
        f"ridge {first['ridge_point']:.1f} FLOP/byte"
    )
    caption = (
        "AI ideal: every byte moved once (perfect caching). AI instr: what each load "
        "instruction feeds, if nothing were cached; attain@instr is the roof at that intensity."
    )
    report.emit(doc, fmt, report.MODEL_COLUMNS, title=title, caption=caption)
