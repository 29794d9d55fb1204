"""`roofline calibrate`: measure this GPU's own roofs and keep them for later reports."""

from __future__ import annotations

from typing import Any

import click

from rooflinecli.commands import Command, examples
from rooflinecli.options import format_option, gpus_option, spec_option
from rooflinecli.present import output, table

# measurement key -> (label, unit, datasheet/derived key in a roof set, or None)
ROOFS: tuple[tuple[str, str, str, str | None], ...] = (
    ("hbm_read_gbs", "HBM read (16-byte loads, 2 GiB)", "GB/s", "bandwidth_gbs"),
    ("hbm_copy_gbs", "HBM copy (memcpy D2D, read + written)", "GB/s", "bandwidth_gbs"),
    ("l2_read_gbs", "L2 read (1/4 of L2, ld.cg)", "GB/s", None),
    ("fp32_fma_tflops", "FP32 FMA (SIMT, 16 chains/thread)", "TFLOP/s", "fp32"),
    ("fp16_mma_sync_tflops", "FP16 Tensor Core, mma.sync m16n8k16", "TFLOP/s", "fp16_tensor_dense"),
    ("fp16_wgmma_tflops", "FP16 Tensor Core, wgmma m64n256k16", "TFLOP/s", "fp16_tensor_dense"),
)


_num = table.fixed(1)
_pct = table.pct(1)
_str = table.text


ROOF_COLUMNS: list[table.Column] = [
    ("roof", "roof", str),
    ("unit", "unit", str),
    ("measured", "measured", _num),
    ("datasheet", "datasheet", _num),
    ("derived", "derived", _num),
    ("pct_of_datasheet", "% datasheet", _pct),
    ("pct_of_derived", "% derived", _pct),
]

SET_COLUMNS: list[table.Column] = [
    ("set", "roof set", str),
    ("fp32", "FP32 TFLOP/s", _num),
    ("fp16_tensor_dense", "FP16 TC TFLOP/s", _num),
    ("bandwidth_gbs", "HBM GB/s", _num),
    ("ridge_fp32", "ridge FP32", _num),
    ("ridge_fp16_tensor", "ridge FP16 TC", _num),
    ("l2_gbs", "L2 GB/s", _num),
]


def roof_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per measured roof: measured vs datasheet vs derived-from-clock."""
    sets = doc.get("roof_sets") or {}
    ds, dv = sets.get("datasheet", {}), sets.get("derived", {})
    rows = []
    for key, label, unit, set_key in ROOFS:
        measured = doc["measurements"].get(key)
        sheet = ds.get(set_key) if set_key else None
        derived = dv.get(set_key) if set_key else None
        rows.append(
            {
                "roof": label,
                "key": key,
                "unit": unit,
                "measured": measured,
                "datasheet": sheet,
                "derived": derived,
                "pct_of_datasheet": 100 * measured / sheet if measured and sheet else None,
                "pct_of_derived": 100 * measured / derived if measured and derived else None,
            }
        )
    return rows


def set_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"set": name, **vals} for name, vals in (doc.get("roof_sets") or {}).items()]


@click.command(
    "calibrate",
    cls=Command,
    epilog=examples("roofline calibrate", "roofline calibrate --quick --gpus all"),
)
@gpus_option("calibration")
@click.option("--quick", is_flag=True, help="Fewer repeats and shorter kernels (about 15 s).")
@spec_option
@format_option
def calibrate_command(quick: bool, spec_arg: str | None, fmt: str) -> None:
    """Measure this GPU's roofs (HBM, L2, FP32 FMA, FP16 Tensor Core) and cache them.

    Each roof is a small kernel timed with CUDA events (warm-up, median of repeats), shown
    against the datasheet and against SMs x clock x operations per clock. The result is kept in
    the cache (per device, driver and maximum SM clock) for reports that offer measured roofs.
    """
    import pandas as pd

    from rooflinecli.gpu import calibrate

    err = table.console(stderr=True)
    if err.is_terminal:
        with err.status("calibrating") as status:
            doc = calibrate.measure(
                spec_arg, quick=quick, progress=lambda what: status.update(f"calibrating: {what}")
            )
    else:
        doc = calibrate.measure(spec_arg, quick=quick)
    path = calibrate.save_calibration(doc)
    doc["cache_file"] = str(path)
    roofs = pd.DataFrame(roof_rows(doc))
    sets = pd.DataFrame(set_rows(doc))
    dev = doc["device"]
    title = (
        f"Roofs of {dev['name']} (driver {dev.get('driver') or '?'}, max SM clock "
        f"{dev.get('clock_sm_max_mhz') or '?'} MHz, spec {doc.get('spec') or 'none'})"
        + (" -- quick" if quick else "")
    )
    parts: list[output.Part] = [
        output.Frame(
            roofs,
            ROOF_COLUMNS,
            title=title,
            caption="derived = SMs x max SM clock x FLOP/clk/SM (FP32: 2 per lane; FP16 Tensor "
            "Core: 4096 Hopper, 2048 A100); bandwidth: 2 x memory clock x bus width. "
            f"Cached in {path}",
        )
    ]
    if len(sets):
        derived = (doc.get("roof_sets") or {}).get("derived", {})
        parts.append(
            output.Frame(
                sets,
                SET_COLUMNS,
                title="Roof sets for reports (ridge points in FLOP/byte)",
                caption=f"derived: {derived.get('source', '-')}. measured: the best of wgmma "
                "and mma.sync, the best of HBM read and copy.",
            )
        )
    parts += [output.Line(f"note: {n}", markdown=False, rich=True) for n in doc.get("notes", [])]
    output.emit(output.Report(parts, json=doc, csv=roof_rows(doc)), fmt)
