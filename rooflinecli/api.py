"""Measure the user's own kernel from Python and place it on the roofline.

    from rooflinecli import measure, document

    rec = measure(lambda: torch.matmul(a, b, out=c), flops=2 * m * n * k,
                  bytes=2 * (m * k + k * n + m * n), name="torch.matmul", dtype="fp16",
                  shape=(m, n, k))
    doc = document([rec], spec="h100-sxm5")   # what `roofline show`, `plot` and `gate` read

`measure` times a callable that launches work on the current CUDA stream (CuPy's current stream,
which is the legacy default stream unless you change it; PyTorch launches there too by default)
exactly the way `roofline run` times a stage (runner.time_callable). CuPy is imported only
when `measure` runs, so importing this module costs nothing. See docs/measure.md.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from rooflinecli import results
from rooflinecli.core import model
from rooflinecli.core.specs import DTYPE_PEAK, Spec
from rooflinecli.errors import RooflineError


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return value


def measure(
    fn: Callable[[], Any],
    *,
    flops: float,
    bytes: float | None = None,  # shadows the builtin here: the name users expect by `flops`
    name: str,
    dtype: str = "fp32",
    shape: Sequence[int] | None = None,
    warmup_ms: float = 25.0,
    budget_ms: float = 400.0,
    flush_l2: bool = True,
) -> dict[str, Any]:
    """Time `fn` on the GPU and return a results record.

    flops: the work of one call; bytes: the HBM traffic one call needs (ideal: every operand
    moved once), which places the record on the roofline; shape: (M, N, K) if it is a GEMM.
    The record holds the median time (time_ms), its min, max and stdev, the number of repeats,
    tflops, achieved GB/s (with bytes) and spread = (max - min) / median.
    """
    from rooflinecli.gpu import runner

    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    _positive("flops", flops)
    if bytes is not None:
        _positive("bytes", bytes)
    if dtype not in model.DTYPE_BYTES:
        raise ValueError(f"dtype must be one of {', '.join(model.DTYPE_BYTES)}, got {dtype!r}")
    m = n = k = None
    if shape is not None:
        dims = tuple(shape)
        if len(dims) != 3 or not all(isinstance(d, int) and d > 0 for d in dims):
            raise ValueError(f"shape must be three positive whole numbers (M, N, K), got {shape!r}")
        m, n, k = dims
    _positive("warmup_ms", warmup_ms)
    _positive("budget_ms", budget_ms)

    timing = runner.Timing(warmup_ms=warmup_ms, budget_ms=budget_ms, flush_l2=flush_l2)
    clock: dict[str, Any] = {}  # the SM clock while the timed calls ran (NVML), if there is one
    times = runner.time_callable(fn, name, timing, clock)
    cp = runner._cupy()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    raw_name = props["name"]
    device = raw_name.decode() if hasattr(raw_name, "decode") else str(raw_name)

    median = statistics.median(times)
    record: dict[str, Any] = {
        "stage": name,
        "kind": "user",
        "dtype": dtype,
        "m": m,
        "n": n,
        "k": k,
        "flops": flops,
        "bytes_ideal": bytes,
        "ai_ideal": model.intensity(flops, bytes) if bytes else None,
        "time_ms": median,
        "time_ms_min": min(times),
        "time_ms_max": max(times),
        "time_ms_stdev": statistics.stdev(times) if len(times) > 1 else 0.0,
        "repeats": len(times),
        "tflops": model.tflops(flops, median),
        "gbs": bytes / (median * 1e-3) / 1e9 if bytes else None,
        "spread": (max(times) - min(times)) / median,
        "flush_l2": flush_l2,
        "device_name": device,
        **clock,
    }
    return results.complete_record(record)


def _spec_for(spec: Spec | str | None, records: list[dict[str, Any]]) -> Spec:
    from rooflinecli.core import specs as specreg

    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, str):
        return specreg.resolve(spec)
    names = sorted({str(r["device_name"]) for r in records if r.get("device_name")})
    if len(names) != 1:
        raise RooflineError(
            "document(): pass spec= (a name from `roofline specs`, a TOML path or a Spec): "
            + ("the records name no device" if not names else f"they name {', '.join(names)}")
        )
    return specreg.for_device(names[0])


def _device(names: list[str]) -> dict[str, Any] | None:
    """The GPU here (driver, CUDA, clocks: what `gate` compares) if the records were measured on
    it, else only the name the records carry."""
    from rooflinecli.gpu import runner

    try:
        info = runner.device_info()
    except Exception:  # no CuPy, no GPU, no NVRTC: a document is still written
        info = None
    if info is not None and names == [info["name"]]:
        return info
    return {"name": names[0]} if len(names) == 1 else None


def document(
    records: list[dict[str, Any]], spec: Spec | str | None = None, **extra: Any
) -> dict[str, Any]:
    """A results document of measured records, each placed on the spec's roofline.

    spec: a Spec, a registry name or a TOML path; None: the spec of the GPU the records were
    measured on. Write it with `results.write_atomic(path, results.dumps(doc))`, then
    `roofline show/plot/gate path`.
    """
    if not isinstance(records, list | tuple) or not records:
        raise ValueError("records must be a non-empty list of measure() records")
    chosen = _spec_for(spec, list(records))
    bw = chosen.memory_bandwidth_gbs
    placed: list[dict[str, Any]] = []
    for rec in records:
        if not isinstance(rec, dict) or "stage" not in rec:
            raise ValueError("each record must be a dict returned by measure()")
        r = results.complete_record(rec)
        peak = chosen.peak(r["dtype"])
        r.update(peak_key=DTYPE_PEAK[r["dtype"]], peak_tflops=peak, roof_set="datasheet")
        ai, achieved = r.get("ai_ideal"), r.get("tflops")
        if ai:
            attain = model.attainable(ai, peak, bw)
            r.update(
                roof=model.binding_roof(ai, peak, bw),
                ridge_point=model.ridge_point(peak, bw),
                attainable_tflops=attain,
                pct_of_roof=100.0 * achieved / attain if achieved else None,
            )
        r["pct_of_peak"] = 100.0 * achieved / peak if achieved else None
        placed.append(r)
    names = sorted({str(r["device_name"]) for r in placed if r.get("device_name")})
    device = _device(names)
    extra.setdefault("command", "measure")
    return results.new_document(chosen.to_dict(), device, placed, **extra)
