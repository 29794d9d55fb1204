"""Place a GEMM stage on a spec's roofline: model fields of a record, then measured ones.

Pure Python (no CuPy): `roofline model` uses it alone, `roofline run` adds times to it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rooflinecli.build.stages import Stage
from rooflinecli.core import model
from rooflinecli.core.specs import DTYPE_PEAK, Spec


def model_record(
    stage: Stage,
    m: int,
    n: int,
    k: int,
    spec: Spec,
    alpha: float = 1.0,
    beta: float = 0.0,
    dtype: str | None = None,
) -> dict[str, Any]:
    dtype = dtype or stage.dtype
    elem = model.DTYPE_BYTES[dtype]
    flops = model.gemm_flops(m, n, k)
    nbytes = model.gemm_bytes_ideal(m, n, k, elem, beta_nonzero=beta != 0.0)
    # a user's stage may count its own work (rooflinecli.build.userstage: flops/bytes formulas)
    flops_of, bytes_of = getattr(stage, "flops_of", None), getattr(stage, "bytes_of", None)
    if flops_of is not None and bytes_of is not None:
        flops, nbytes = flops_of(m, n, k), bytes_of(m, n, k)
    ai = model.intensity(flops, nbytes)
    peak = spec.peak(dtype)
    bw = spec.memory_bandwidth_gbs
    return {
        "stage": stage.name,
        "kind": "reference" if stage.reference else "stage",
        "dtype": dtype,
        "m": m,
        "n": n,
        "k": k,
        "alpha": alpha,
        "beta": beta,
        "flops": flops,
        "bytes_ideal": nbytes,
        "ai_ideal": ai,
        "ai_instruction": stage.ai_instruction,
        "ai_global": stage.ai_global,
        "ai_shared": stage.ai_shared,
        "roof": model.binding_roof(ai, peak, bw),
        "roof_set": "datasheet",
        "peak_key": DTYPE_PEAK[dtype],
        "peak_tflops": peak,
        "bandwidth_gbs": bw,
        "ridge_point": model.ridge_point(peak, bw),
        "attainable_tflops": model.attainable(ai, peak, bw),
        # what the by-instruction intensity alone would allow from DRAM (no cache reuse)
        "attainable_instruction_tflops": (
            model.attainable(stage.ai_instruction, peak, bw)
            if stage.ai_instruction is not None
            else None
        ),
    }


def place(record: dict[str, Any], time_ms: float | None) -> None:
    """Add the achieved speed and its ratios to a model record (in place)."""
    if time_ms is None or time_ms <= 0:
        record.update(time_ms=None, tflops=None, pct_of_roof=None, pct_of_peak=None)
        return
    achieved = model.tflops(record["flops"], time_ms)
    record["time_ms"] = time_ms
    record["tflops"] = achieved
    record["pct_of_roof"] = 100.0 * achieved / record["attainable_tflops"]
    record["pct_of_peak"] = 100.0 * achieved / record["peak_tflops"]


def add_reference_ratios(records: list[dict[str, Any]]) -> None:
    """pct_of_reference for every record, against the reference record of the same shape/dtype."""
    refs = {
        (r["dtype"], r["m"], r["n"], r["k"]): r.get("tflops")
        for r in records
        if r.get("kind") == "reference" and r.get("verified") is not False
    }
    for r in records:
        ref = refs.get((r["dtype"], r["m"], r["n"], r["k"]))
        mine = r.get("tflops")
        r["pct_of_reference"] = 100.0 * mine / ref if ref and mine else None


# the measured roof set as placed under a stage whose math is mma.sync (options.by_instruction)
MMA_SYNC_SET = "measured, mma.sync"

# which roof of a roof set (rooflinecli.gpu.calibrate.roof_sets) places each peak key: the sets
# carry FP32 and the FP16 Tensor Core rate; BF16 runs at the FP16 rate on these parts
_SET_KEY = {
    "fp32": "fp32",
    "fp16_tensor_dense": "fp16_tensor_dense",
    "bf16_tensor_dense": "fp16_tensor_dense",
}


def apply_roof_set(
    doc: dict[str, Any],
    name: str,
    roofs: dict[str, Any],
    per_record: Callable[[dict[str, Any]], tuple[str, dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """A copy of `doc` with every timed record placed against another roof set (datasheet,
    derived from the SM clock, or measured by `roofline calibrate`). Records say which.
    `per_record`, if given, names and gives each record's own roofs (those at the clock it ran
    at), in place of `name` and `roofs`."""
    from rooflinecli.errors import RooflineError

    out = []
    for rec in doc["records"]:
        rec = dict(rec)
        set_name, rec_roofs = per_record(rec) if per_record else (name, roofs)
        bw = rec_roofs.get("bandwidth_gbs")
        if not bw:
            raise RooflineError(f"roof set {name} has no memory bandwidth")
        key = _SET_KEY.get(rec.get("peak_key") or "")
        peak = rec_roofs.get(key) if key else None
        if not peak:
            raise RooflineError(f"roof set {name} has no roof for {rec.get('peak_key')}")
        ai = rec["ai_ideal"]
        rec.update(
            roof_set=set_name,
            peak_tflops=peak,
            bandwidth_gbs=bw,
            ridge_point=model.ridge_point(peak, bw),
            roof=model.binding_roof(ai, peak, bw),
            attainable_tflops=model.attainable(ai, peak, bw),
        )
        place(rec, rec.get("time_ms") if rec.get("tflops") else None)
        out.append(rec)
    add_reference_ratios(out)
    return {**doc, "records": out, "roof_set": {"name": name, **roofs}}
