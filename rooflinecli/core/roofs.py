"""Roofs: every ceiling, ridge point and placement under a roof is computed here, once.

A roof is min(peak, intensity x bandwidth). Records are placed under one and say so themselves
(`math_instruction`, `roof_set`, `roof_key`, `peak_tflops`, `peak_clock_mhz`, `bandwidth_gbs`,
`ridge_point`), so a document renders years later without today's stage registry.

Roof sets: "datasheet" (the spec), "derived" (SMs x clock x FLOP/clk/SM, the seed's
132 x 1830 MHz x 4096 = 989.4 TFLOP/s), "measured" (`roofline calibrate`), "clock NNN MHz"
(derived at the SM clock each row ran at). Pure Python: no CuPy, no click.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol

from rooflinecli.core import model, reference, roof_keys

# what shape a record is: decided with the reference rule (core.reference), named here too
from rooflinecli.core.reference import ATTENTION_SHAPE as ATTENTION_SHAPE
from rooflinecli.core.reference import shape_key as shape_key
from rooflinecli.core.specs import Spec
from rooflinecli.errors import RooflineError

# --------------------------------------------------------------------------- roof arithmetic


def ridge_point(peak_tflops: float, bandwidth_gbs: float) -> float:
    """Intensity (FLOP/byte) at which the memory roof meets the compute roof."""
    return peak_tflops * 1e12 / (bandwidth_gbs * 1e9)


def memory_roof(ai: float, bandwidth_gbs: float) -> float:
    """TFLOP/s the memory system allows at intensity `ai`."""
    return ai * bandwidth_gbs / 1000.0


def attainable(ai: float, peak_tflops: float, bandwidth_gbs: float) -> float:
    """min(peak, AI x bandwidth), in TFLOP/s."""
    return min(peak_tflops, memory_roof(ai, bandwidth_gbs))


def roof_seconds(flops: float, nbytes: float, peak_tflops: float, bandwidth_gbs: float) -> float:
    """The time the roofs allow: the longer of compute at peak and traffic at full bandwidth."""
    return max(flops / (peak_tflops * 1e12), nbytes / (bandwidth_gbs * 1e9))


def binding_roof(ai: float, peak_tflops: float, bandwidth_gbs: float) -> str:
    """'memory' left of the ridge point, 'compute' at or right of it."""
    return "memory" if ai < ridge_point(peak_tflops, bandwidth_gbs) else "compute"


class Roof(NamedTuple):
    """One roofline: a compute ceiling (peak_key names it) and a memory slope (a NamedTuple, as
    rooflinecli.present.View says why)."""

    peak_key: str
    peak_tflops: float
    bandwidth_gbs: float

    @property
    def ridge(self) -> float:
        return ridge_point(self.peak_tflops, self.bandwidth_gbs)

    def memory(self, ai: float) -> float:
        return memory_roof(ai, self.bandwidth_gbs)

    def at(self, ai: float) -> float:
        return attainable(ai, self.peak_tflops, self.bandwidth_gbs)


# --------------------------------------------------------------------------- math instructions

# The math instruction a record's work runs on, and which compute roof that puts it under.
# FFMA: SIMT FP32 (CUDA cores); HMMA: mma.sync (warp-level Tensor Core); HGMMA: wgmma (warpgroup
# Tensor Core); QGMMA: 8-bit wgmma (FP8, under the FP8 Tensor Core peak); "library": a vendor
# library (cuBLAS), which may use either.
MATH_INSTRUCTIONS = ("FFMA", "HMMA", "HGMMA", "QGMMA", "library")


class StageLike(Protocol):
    """What placing a stage needs of it (rooflinecli.stages.gemm.Stage has it all)."""

    @property
    def name(self) -> str: ...

    @property
    def reference(self) -> bool: ...

    @property
    def ai_global(self) -> float | None: ...

    @property
    def ai_shared(self) -> float | None: ...

    @property
    def slower_because(self) -> str: ...

    @property
    def what(self) -> str: ...

    @property
    def ai_instruction(self) -> float | None: ...

    @property
    def sass_claims(self) -> tuple[str, ...]: ...


def math_instruction(stage: StageLike, dtype: str) -> str | None:
    if stage.reference:
        return "library"
    claims = stage.sass_claims
    if dtype == "fp32" and "FFMA" in claims:
        return "FFMA"
    return claims[0] if claims else None


# --------------------------------------------------------------------------- records


def model_record(
    stage: StageLike,
    m: int,
    n: int,
    k: int,
    spec: Spec,
    alpha: float = 1.0,
    beta: float = 0.0,
    dtype: str | None = None,
) -> dict[str, Any]:
    """The record of one stage at one shape before anything is timed: work, bytes, roof."""
    dtype = dtype or str(getattr(stage, "dtype", "fp32"))
    elem = model.DTYPE_BYTES[dtype]
    flops = model.gemm_flops(m, n, k)
    nbytes = model.gemm_bytes_ideal(
        m, n, k, elem, beta_nonzero=beta != 0.0, out_bytes=model.OUTPUT_BYTES.get(dtype)
    )
    # a user's stage may count its own work (rooflinecli.stages.userstage: flops/bytes formulas)
    flops_of, bytes_of = getattr(stage, "flops_of", None), getattr(stage, "bytes_of", None)
    if flops_of is not None and bytes_of is not None:
        flops, nbytes = flops_of(m, n, k), bytes_of(m, n, k)
    ai = model.intensity(flops, nbytes)
    rec: dict[str, Any] = {
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
        "math_instruction": math_instruction(stage, dtype),
        "what": stage.what,
        "slower_because": stage.slower_because or None,
        "attainable_instruction_tflops": None,
    }
    roof = datasheet_roof_for(spec, dtype, rec["math_instruction"])
    put_under(rec, roof, "datasheet", spec.peak_clock(roof.peak_key))
    return rec


def datasheet_roof(spec: Spec, dtype: str) -> Roof:
    key = roof_keys.datasheet(dtype)
    return Roof(key, spec.peak(key), spec.memory_bandwidth_gbs)


def datasheet_roof_for(spec: Spec, dtype: str, math: str | None) -> Roof:
    """datasheet_roof of the peak its math instruction can reach (roof_keys.of_instruction)."""
    key = roof_keys.of_instruction(dtype, math)
    return Roof(key, spec.peak(key), spec.memory_bandwidth_gbs)


def put_under(
    rec: dict[str, Any], roof: Roof, roof_set: str, clock_mhz: float | None, roof_key: str = ""
) -> None:
    """Place a record (in place) under `roof` of `roof_set`; its speed, if any, is re-rated."""
    ai = rec["ai_ideal"]
    rec.update(
        peak_key=roof_keys.family(rec["dtype"], roof.peak_key),
        roof_set=roof_set,
        roof_key=roof_key or roof.peak_key,
        peak_tflops=roof.peak_tflops,
        peak_clock_mhz=clock_mhz,
        bandwidth_gbs=roof.bandwidth_gbs,
        ridge_point=roof.ridge,
        roof=binding_roof(ai, roof.peak_tflops, roof.bandwidth_gbs) if ai else None,
        attainable_tflops=roof.at(ai) if ai else None,
    )
    ai_instr = rec.get("ai_instruction")
    if "attainable_instruction_tflops" in rec or ai_instr is not None:
        # what the by-instruction intensity alone would allow from DRAM (no cache reuse)
        rec["attainable_instruction_tflops"] = roof.at(ai_instr) if ai_instr is not None else None
    if "time_ms" in rec:
        place(rec, rec.get("time_ms") if rec.get("tflops") else None)


def place(record: dict[str, Any], time_ms: float | None) -> None:
    """Add the achieved speed and its ratios to a placed record (in place)."""
    if time_ms is None or time_ms <= 0:
        record.update(time_ms=None, tflops=None, pct_of_roof=None, pct_of_peak=None)
        return
    achieved = model.tflops(record["flops"], time_ms)
    attain = record.get("attainable_tflops")
    record["time_ms"] = time_ms
    record["tflops"] = achieved
    record["pct_of_roof"] = 100.0 * achieved / attain if attain else None
    record["pct_of_peak"] = 100.0 * achieved / record["peak_tflops"]


def title(rec: Mapping[str, Any], bandwidth_gbs: float | None = None) -> str:
    """The roofs a table stands under, in words: peak (at its clock), bandwidth, ridge, set."""
    bw = rec.get("bandwidth_gbs") or bandwidth_gbs
    clock = rec.get("peak_clock_mhz")
    at = f" at {clock:,.0f} MHz" if clock else ""
    ridge = rec.get("ridge_point")
    parts = [f"{rec.get('peak_key')} peak {rec.get('peak_tflops'):g} TFLOP/s{at}"]
    if bw:
        parts.append(f"{bw:g} GB/s")
    if ridge:
        parts.append(f"ridge {ridge:.1f} FLOP/byte")
    text = ", ".join(parts)
    if rec.get("roof_set"):
        text += f"; {rec['roof_set']} roofs"
    return text


# --------------------------------------------------------------------------- roof sets

# Dense FP16 Tensor Core FLOPs per clock per SM (f32 accumulate), by compute capability.
# Hopper: 4 Tensor Cores x 1024; A100: 4 x 512. Others: derived from the datasheet (below).
TC_FP16_FLOPS_PER_CLK_SM: dict[int, int] = {90: 4096, 80: 2048}

# the measured roof set as placed under a stage whose math is mma.sync
MMA_SYNC_SET = "measured, mma.sync"


def tc_fp16_flops_per_clk_sm(spec: Any) -> tuple[int | None, str]:
    """Dense FP16 Tensor Core FLOPs per clock per SM and where the figure comes from."""
    major, minor = (int(x) for x in spec.compute_capability.split("."))
    cc = major * 10 + minor
    if cc in TC_FP16_FLOPS_PER_CLK_SM:
        return TC_FP16_FLOPS_PER_CLK_SM[cc], f"architecture (cc {spec.compute_capability})"
    peak = spec.tflops.get("fp16_tensor_dense")
    if not peak:
        return None, "no FP16 Tensor Core peak in the spec"
    clock = spec.peak_clock("fp16_tensor_dense") or spec.boost_clock_mhz
    if not spec.sm_count or not clock:
        return None, "the spec gives no SM count or clock to divide its peak by"
    per = peak * 1e6 / (spec.sm_count * clock)
    return 2 ** round(math.log2(per)), "datasheet / (SMs x its clock), nearest power of 2"


def _set(fp32: float | None, fp16: float | None, bw: float | None, **extra: Any) -> dict[str, Any]:
    def ridge(peak: float | None) -> float | None:
        return ridge_point(peak, bw) if peak and bw else None

    return {
        "fp32": fp32,
        "fp16_tensor_dense": fp16,
        "bandwidth_gbs": bw,
        "ridge_fp32": ridge(fp32),
        "ridge_fp16_tensor": ridge(fp16),
        **extra,
    }


def roof_sets(
    spec: Any, calibration: dict[str, Any] | None = None, clock_mhz: float | None = None
) -> dict[str, dict[str, Any]]:
    """Roofs (TFLOP/s, GB/s, ridge points in FLOP/byte) by set: datasheet, derived, measured.

    derived = SMs x clock x operations per clock per SM (FP32: 2 per lane; FP16 Tensor Core:
    4096 on Hopper, 2048 on A100), at `clock_mhz`, else the calibrated device's maximum SM
    clock, else the spec's boost clock; its bandwidth is 2 x memory clock x bus width when the
    calibration recorded both, else the datasheet's. measured is present with a calibration."""
    dev = (calibration or {}).get("device") or {}
    sets: dict[str, dict[str, Any]] = {
        "datasheet": _set(
            spec.tflops.get("fp32"),
            spec.tflops.get("fp16_tensor_dense"),
            spec.memory_bandwidth_gbs,
            source=f"spec {spec.name}",
            clock_fp32_mhz=spec.peak_clock("fp32"),
            clock_fp16_tensor_mhz=spec.peak_clock("fp16_tensor_dense"),
        )
    }
    clock = clock_mhz or dev.get("clock_sm_max_mhz") or spec.boost_clock_mhz
    sms = dev.get("sm_count") or spec.sm_count
    tc, tc_why = tc_fp16_flops_per_clk_sm(spec)
    mem_clock, bus = dev.get("clock_mem_max_mhz"), dev.get("memory_bus_width_bits")
    if mem_clock and bus:
        bw, bw_why = 2 * mem_clock * bus / 8 / 1000.0, "2 x memory clock x bus width"
    else:
        bw, bw_why = spec.memory_bandwidth_gbs, "datasheet (memory clock or bus width unknown)"
    if not sms or not clock:  # a spec that gives neither, and no GPU that says: no derived roofs
        sms, clock, tc = 0, 0, None
    sets["derived"] = _set(
        sms * clock * spec.fp32_lanes_per_sm * 2 / 1e6 or None,
        sms * clock * tc / 1e6 if tc else None,
        bw,
        clock_mhz=clock,
        clock_fp32_mhz=clock,
        clock_fp16_tensor_mhz=clock,
        sm_count=sms,
        fp32_flops_per_clk_sm=spec.fp32_lanes_per_sm * 2,
        fp16_tensor_flops_per_clk_sm=tc,
        source=f"SMs x {clock:g} MHz x FLOP/clk/SM (tensor: {tc_why}); bandwidth: {bw_why}",
    )
    if calibration:
        m = calibration.get("measurements", {})
        tensor = [m.get("fp16_wgmma_tflops"), m.get("fp16_mma_sync_tflops")]
        hbm = [m.get("hbm_read_gbs"), m.get("hbm_copy_gbs")]
        sets["measured"] = _set(
            m.get("fp32_fma_tflops"),
            max((t for t in tensor if t), default=None),
            max((b for b in hbm if b), default=None),
            l2_gbs=m.get("l2_read_gbs"),
            # the ceiling of kernels whose math is mma.sync (place_on_roofs puts them under it)
            fp16_mma_sync_tensor=m.get("fp16_mma_sync_tflops"),
            source=f"calibration of {dev.get('name', '?')} ({calibration.get('created', '?')}): "
            "best of wgmma/mma.sync, best of HBM read/copy",
        )
    return sets


RecordRoofs = Callable[[dict[str, Any]], tuple[str, dict[str, Any]]]


def apply_roof_set(
    doc: dict[str, Any],
    name: str,
    roofs: dict[str, Any],
    per_record: RecordRoofs | None = None,
) -> dict[str, Any]:
    """A copy of `doc` with every record placed against another roof set (datasheet, derived
    from the SM clock, or measured by `roofline calibrate`). Records say which. `per_record`,
    if given, names and gives each record's own roofs, in place of `name` and `roofs`."""
    out = []
    for rec in doc["records"]:
        rec = dict(rec)
        set_name, rec_roofs = per_record(rec) if per_record else (name, roofs)
        bw = rec_roofs.get("bandwidth_gbs")
        if not bw:
            raise RooflineError(f"roof set {name} has no memory bandwidth")
        key = roof_keys.in_sets(rec.get("peak_key") or "")
        peak = rec_roofs.get(key) if key else None
        if not key or not peak:
            raise RooflineError(f"roof set {name} has no roof for {rec.get('peak_key')}")
        fp32 = key == "fp32"
        put_under(
            rec,
            Roof(rec["peak_key"], peak, bw),
            set_name,
            rec_roofs.get("clock_fp32_mhz" if fp32 else "clock_fp16_tensor_mhz"),
            # which of the set's roofs this is (mma.sync's own, under by_instruction)
            roof_key=key if fp32 else str(rec_roofs.get("tensor_roof", key)),
        )
        out.append(rec)
    reference.add_ratios(out)
    return {**doc, "records": out, "roof_set": {"name": name, **roofs}}


def by_instruction(measured: dict[str, Any]) -> RecordRoofs:
    """Per-record measured roofs: a stage whose math is mma.sync (HMMA) cannot pass mma.sync's
    own measured rate, so its Tensor Core roof is that, not the best of wgmma and mma.sync. The
    record says its instruction (`math_instruction`); no registry is consulted."""
    mma = measured["fp16_mma_sync_tensor"]
    mma_set = {
        **measured,
        "fp16_tensor_dense": mma,
        "tensor_roof": "fp16_mma_sync_tensor",
        "ridge_fp16_tensor": ridge_point(mma, measured["bandwidth_gbs"]),
    }

    def pick(rec: dict[str, Any]) -> tuple[str, Any]:
        if rec.get("math_instruction") == "HMMA" and rec.get("dtype") != "fp32":
            return MMA_SYNC_SET, mma_set
        return "measured", measured

    return pick


ROOF_SETS = ("datasheet", "derived", "measured", "clock")


def place_on_roofs(
    doc: dict[str, Any], roofs: str, calibration: dict[str, Any] | None
) -> dict[str, Any]:
    """The document placed against the chosen roof set (unchanged for datasheet).

    calibration: a calibration document of the device (`roofline calibrate`), or None."""
    from rooflinecli.core import specs

    if roofs not in ROOF_SETS:
        raise RooflineError(f"unknown roof set {roofs!r}: {', '.join(ROOF_SETS)}")
    if roofs == "datasheet":
        return doc
    device = doc.get("device") or {}
    if roofs == "measured" and not calibration:
        raise RooflineError(
            "no calibration of this device: run `roofline calibrate` on it, or pass --calibration"
        )
    spec = specs.from_dict(doc["spec"])
    sets = roof_sets(spec, calibration, device.get("clock_sm_max_mhz"))
    if roofs == "clock":  # the power cap's clock, not the boost clock the datasheet assumes

        def at_its_clock(rec: dict[str, Any]) -> tuple[str, dict[str, Any]]:
            mhz = rec.get("sm_clock_mhz")
            if not mhz:
                return "derived", sets["derived"]
            return f"clock {mhz:,} MHz", roof_sets(spec, calibration, mhz)["derived"]

        return apply_roof_set(doc, roofs, sets["derived"], per_record=at_its_clock)
    if roofs == "measured" and sets["measured"].get("fp16_mma_sync_tensor"):
        return apply_roof_set(
            doc, roofs, sets["measured"], per_record=by_instruction(sets["measured"])
        )
    return apply_roof_set(doc, roofs, sets[roofs])


def own_set(records: list[dict[str, Any]]) -> str:
    """The roof set (of ROOF_SETS) the records stand under: "clock" where any row stands under
    its own clock's, else the first of their sets by name (datasheet where none is named)."""
    own = sorted({str(r.get("roof_set") or "datasheet") for r in records})
    return "clock" if any(s.startswith("clock ") for s in own) else own[0]


def offered(
    doc: dict[str, Any], calibration: dict[str, Any] | None
) -> list[tuple[str, dict[str, Any]]]:
    """Every roof set the document can be placed under, with the document placed there: the one
    its records stand under (as they are), then the others a run's document can take (measured
    with a calibration, clock where rows have an SM clock, none whose roof the set lacks). A
    model (no device) has its own only."""
    own = own_set(doc["records"])
    out = [(own, doc)]
    if doc.get("device") is None:
        return out
    clocks = any(_nonzero(r.get("sm_clock_mhz")) for r in doc["records"])
    for key in ROOF_SETS:
        if key == own or (key == "measured" and not calibration) or (key == "clock" and not clocks):
            continue
        try:
            out.append((key, place_on_roofs(doc, key, calibration)))
        except RooflineError:  # a roof the set lacks (no FP16 peak, say): not offered
            continue
    return out


def _nonzero(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v != 0


def per_row_roofs(recs: list[dict[str, Any]]) -> str | None:
    """What a title says when the rows of one table sit under different roofs, else None."""
    sets = [str(r.get("roof_set") or "") for r in recs]
    if any(s.startswith("clock ") for s in sets):
        return "roofs derived at the SM clock each row ran at (attain TF/s, % roof)"
    mma = [r for r in recs if r.get("roof_set") == MMA_SYNC_SET]
    if mma and len(mma) < len(recs):
        return (
            f"measured roofs; mma.sync stages under mma.sync's own "
            f"{mma[0]['peak_tflops']:.1f} TFLOP/s (attain TF/s, % roof)"
        )
    keys = list(dict.fromkeys(str(r.get("roof_key") or "") for r in recs))
    if len(keys) > 1 and "fp32" in keys:  # 16-bit FFMA stages beside Tensor Core ones
        simt = next(r for r in recs if r.get("roof_key") == "fp32")
        tensor = next(r for r in recs if r.get("roof_key") != "fp32")
        return (
            f"FFMA stages under the {simt['peak_tflops']:g} TFLOP/s fp32 peak, the others under "
            f"{tensor['roof_key']} {tensor['peak_tflops']:g} TFLOP/s; "
            f"{tensor['bandwidth_gbs']:g} GB/s; {tensor.get('roof_set') or 'datasheet'} roofs"
        )
    return None
