"""Measure the user's own kernel from Python and place it on the roofline.

    from rooflinecli import measure, document

    rec = measure(lambda: torch.matmul(a, b, out=c), flops=2 * m * n * k,
                  bytes=2 * (m * k + k * n + m * n), name="torch.matmul", dtype="fp16",
                  shape=(m, n, k))
    doc = document([rec], spec="h100-sxm5")   # what `roofline show`, `plot` and `gate` read

`measure` times a callable that launches work on the current CUDA stream (CuPy's current stream,
which is the legacy default stream unless you change it; PyTorch launches there too by default)
exactly the way `roofline run` times a stage (rooflinecli.gpu.timer). CuPy is imported only
when `measure` runs, so importing this module costs nothing. See docs/measure.md.

measure(..., counters=True) also counts what one call does in hardware (FLOPs by instruction and
Tensor Core operation, bytes and intensity at DRAM, L2, L1 and shared memory): it re-runs the
whole script once more under Nsight Compute, where that run's measure() with the same name makes
one extra call inside an NVTX range (domain "roofline_counters") that ncu alone profiles. The
speed stays the one timed here, outside ncu.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import rooflinecli.core.model
from rooflinecli import results
from rooflinecli.core import roofs
from rooflinecli.core.specs import Spec
from rooflinecli.errors import RooflineError


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return value


def _checked(
    fn: Any, flops: Any, nbytes: Any, name: Any, dtype: Any, shape: Any, warmup_ms: Any,
    budget_ms: Any,
) -> tuple[int | None, int | None, int | None]:  # fmt: skip
    """measure()'s arguments checked (TypeError or ValueError, in its words); (M, N, K)."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    _positive("flops", flops)
    if nbytes is not None:
        _positive("bytes", nbytes)
    if dtype not in rooflinecli.core.model.DTYPE_BYTES:
        known = ", ".join(rooflinecli.core.model.DTYPE_BYTES)
        raise ValueError(f"dtype must be one of {known}, got {dtype!r}")
    m = n = k = None
    if shape is not None:
        dims = tuple(shape)
        if len(dims) != 3 or not all(isinstance(d, int) and d > 0 for d in dims):
            raise ValueError(f"shape must be three positive whole numbers (M, N, K), got {shape!r}")
        m, n, k = dims
    _positive("warmup_ms", warmup_ms)
    _positive("budget_ms", budget_ms)

    return m, n, k


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
    counters: bool = False,
    counters_timeout: float = 3600.0,
) -> dict[str, Any]:
    """Time `fn` on the GPU and return a results record.

    flops: the work of one call; bytes: the HBM traffic one call needs (ideal: every operand
    moved once), which places the record on the roofline; shape: (M, N, K) if it is a GEMM.
    The record holds the median time (time_ms), its min, max and stdev, the number of repeats,
    tflops, achieved GB/s (with bytes) and spread = (max - min) / median.

    counters=True: also the hardware counts of one call, from Nsight Compute (flops_hw,
    flops_hw_ratio against `flops`, bytes_dram/l2/l1/smem, ai_dram/l2/l1/smem with their notes,
    ncu_time_ms, ncu_kernels). The script runs once more, under ncu (`counters_timeout`
    seconds at most); RooflineError where that cannot be done (no ncu, no permission to read
    counters, a script that cannot be re-run: -c, stdin, a REPL or a notebook).
    """
    import statistics  # here: it loads fractions and its regexes, which `model` needs not

    from rooflinecli.gpu import timer

    m, n, k = _checked(fn, flops, bytes, name, dtype, shape, warmup_ms, budget_ms)
    under_ncu = os.environ.get(COUNTERS_CHILD)
    if counters and under_ncu == range_name(name):
        _counted_call(fn, name)  # this run is the one under ncu: the call it profiles
    timing = timer.Timing(warmup_ms=warmup_ms, budget_ms=budget_ms, flush_l2=flush_l2)
    timed = timer.time_callable(fn, name, timing)
    times = timed.samples[0]
    clock = timed.clock  # the SM clock while the timed calls ran (NVML), if there is one
    gpu_name = _device_name()

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
        "ai_ideal": rooflinecli.core.model.intensity(flops, bytes) if bytes else None,
        "time_ms": median,
        "time_ms_min": min(times),
        "time_ms_max": max(times),
        "time_ms_stdev": statistics.stdev(times) if len(times) > 1 else 0.0,
        "repeats": len(times),
        "tflops": rooflinecli.core.model.tflops(flops, median),
        "gbs": bytes / (median * 1e-3) / 1e9 if bytes else None,
        "spread": (max(times) - min(times)) / median,
        "flush_l2": flush_l2,
        "device_name": gpu_name,
        "samples_ms": [round(x, 6) for x in times],
        **clock,
    }
    if counters and not under_ncu:
        record.update(hardware_counts(name, flops, bytes, counters_timeout))
    elif counters:
        record["counters_reason"] = "this run is the script's run under ncu"
    return results.complete_record(record)


# --------------------------------------------------------------------------- counters=True

# set (to the range name) in the script's second run, under ncu; its measure() makes the one
# counted call, and never starts another ncu
COUNTERS_CHILD = "ROOFLINE_COUNTERS_CHILD"
COUNTERS_DOMAIN = "roofline_counters"


def range_name(name: str) -> str:
    """The NVTX range of a measure() name: characters ncu's filter syntax gives a meaning to
    ('@', '/', spaces, ...) become '_'."""
    import re

    return re.sub(r"[^A-Za-z0-9_.:-]", "_", name)


@contextmanager
def _counted_range(name: str) -> Iterator[None]:
    try:
        import nvtx
    except ImportError:
        raise RooflineError(
            "measure(counters=True) needs the nvtx package (pip install nvtx)"
        ) from None
    nvtx.push_range(message=range_name(name), domain=COUNTERS_DOMAIN)
    try:
        yield
    finally:
        nvtx.pop_range(domain=COUNTERS_DOMAIN)


def _sync() -> None:
    from rooflinecli.gpu import device

    device.cupy().cuda.get_current_stream().synchronize()


def _counted_call(fn: Callable[[], Any], name: str) -> None:
    """One call ncu profiles: after a call that may set up library handles (outside the range)."""
    fn()
    _sync()
    with _counted_range(name):
        fn()
        _sync()


def script_argv() -> list[str]:
    """The command that runs this script again, the way it was started."""
    args = list(getattr(sys, "orig_argv", [])[1:])
    interactive = not args or args[0] in ("-c", "-") or sys.argv[0] in ("", "-c", "-")
    if interactive or "ipykernel" in sys.modules:
        raise RooflineError(
            "measure(counters=True) runs this script again under Nsight Compute: start it as "
            "`python script.py` or `python -m module`, not with -c, stdin, a REPL or a notebook "
            "(or profile it with `roofline profile app --nvtx ...`)"
        )
    return [sys.executable, *args]


def hardware_counts(
    name: str, flops: float, nbytes: float | None, timeout: float = 3600.0
) -> dict[str, Any]:
    """Run this script again under ncu and count the one call its measure(name) makes there:
    FLOPs, bytes and intensities per level (rooflinecli.gpu.ncu), kernel time, kernel names."""
    from rooflinecli.gpu import ncu, profile, profile_app

    rng = range_name(name)
    env = dict(os.environ, PYTHONUNBUFFERED="1", **{COUNTERS_CHILD: rng})
    filters = profile_app.Filters(nvtx=f"{COUNTERS_DOMAIN}@{rng}/")
    run = profile_app.run_under_ncu(script_argv(), filters, timeout, None, env)
    total = profile.sum_metrics(run.rows)  # every kernel the call launched
    w = ncu.work(total, run.plan)
    nb = ncu.level_bytes(total, run.plan)
    wgmma = ncu.value(total, run.plan, "wgmma_inst")
    counted = w.total
    ai, notes = ncu.intensities(
        counted if counted else flops, nb, nbytes, wgmma, profile._why_missing(run.plan)
    )
    times = [ncu.value(r["metrics"], run.plan, "time") for r in run.rows]
    known = [t for t in times if t is not None]
    return {
        "flops_hw": counted,
        "flops_hw_by": {k: v for k, v in w.by.items() if v is None or v > 0},
        "flops_hw_ratio": counted / flops if counted is not None else None,
        "flops_note": "; ".join(w.notes) or None,
        "bytes_dram": nb["dram"],
        "bytes_l2": nb["l2"],
        "bytes_l1": nb["l1"],
        "bytes_smem": nb["smem"],
        "wgmma_instructions": wgmma,
        **{f"ai_{lvl}": ai[lvl] for lvl in ncu.LEVELS},
        **{f"ai_{lvl}_note": notes[lvl] for lvl in ncu.LEVELS},
        "ncu_time_ms": 1e3 * sum(known) if times and len(known) == len(times) else None,
        "ncu_kernels": [r["kernel"] for r in run.rows],
        "ncu_version": run.info.get("version"),
        "counters_reason": None,
    }


def _spec_for(spec: Spec | str | None, records: list[dict[str, Any]]) -> Spec:
    from rooflinecli.core import specs

    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, str):
        return specs.choose(spec, None).spec
    names = sorted({str(r["device_name"]) for r in records if r.get("device_name")})
    if len(names) != 1:
        raise RooflineError(
            "document(): pass spec= (a name from `roofline specs`, a TOML path or a Spec): "
            + ("the records name no device" if not names else f"they name {', '.join(names)}")
        )
    return specs.choose(None, names[0], default=None).spec


def _device(names: list[str]) -> dict[str, Any] | None:
    """The GPU here (driver, CUDA, clocks: what `gate` compares) if the records were measured on
    it, else only the name the records carry."""
    from rooflinecli.gpu import device

    try:
        info = device.info()
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
    measured on. Write it with `files.write_atomic(path, results.dumps(doc))`, then
    `roofline show/plot/gate path`.
    """
    if not isinstance(records, list | tuple) or not records:
        raise ValueError("records must be a non-empty list of measure() records")
    chosen = _spec_for(spec, list(records))
    placed: list[dict[str, Any]] = []
    for rec in records:
        if not isinstance(rec, dict) or "stage" not in rec:
            raise ValueError("each record must be a dict returned by measure()")
        r = results.complete_record(rec)
        roofs.put_under(
            r,
            roofs.datasheet_roof(chosen, r["dtype"]),
            "datasheet",
            chosen.peak_clock(r["dtype"]),
        )
        placed.append(r)
    names = sorted({str(r["device_name"]) for r in placed if r.get("device_name")})
    device = _device(names)
    extra.setdefault("command", "measure")
    return results.new_document(chosen.to_dict(), device, placed, **extra)


# --------------------------------------------------------------------------- the jobs
# What the commands call, one module a job, each taking a request (rooflinecli.api.requests)
# and returning a results document; the commands parse options, build the request and hand the
# document's rows to rooflinecli.present. The names below keep `api.run_gemm(...)` and the rest
# working for scripts (benchmarks/) and tests.

from rooflinecli.api.attention import run_attention  # noqa: E402
from rooflinecli.api.chain import (  # noqa: E402
    CHAIN_DEFAULT_WAYS,
    CHAIN_EXCLUDED,
    CHAIN_WAYS,
    run_chain,
)
from rooflinecli.api.common import (  # noqa: E402
    DEFAULT_ARCH,
    _device_name,
    calibration_for,
    compile_user_stages,
    default_spec,
    fail_unverified,
    load_calibration,
    pick_best,
    place_on_roofs,
    target_arch,
    timing_settings,
)
from rooflinecli.api.gemm import dry_run_gemm, run_gemm  # noqa: E402
from rooflinecli.api.llm import run_llm  # noqa: E402
from rooflinecli.api.model import model_attention, model_gemm, model_llm  # noqa: E402
from rooflinecli.api.report import write_report  # noqa: E402
from rooflinecli.api.requests import (  # noqa: E402
    AttentionProblem,
    AttentionRequest,
    ChainProblem,
    ChainRequest,
    ChainTiming,
    GemmProblem,
    GemmRequest,
    LlmProblem,
    LlmRequest,
    Output,
    Timed,
    TuneRequest,
)
from rooflinecli.api.tune import tune_dispatch, tune_gemm  # noqa: E402

__all__ = [
    "measure", "document", "hardware_counts", "run_gemm", "dry_run_gemm", "run_attention",
    "run_llm", "run_chain", "tune_gemm", "tune_dispatch", "model_gemm", "model_llm",
    "model_attention", "default_spec", "target_arch", "compile_user_stages", "pick_best",
    "place_on_roofs", "fail_unverified", "load_calibration", "calibration_for",
    "timing_settings", "write_report", "DEFAULT_ARCH", "CHAIN_WAYS", "CHAIN_DEFAULT_WAYS",
    "CHAIN_EXCLUDED", "GemmRequest", "GemmProblem", "AttentionRequest", "AttentionProblem",
    "ChainRequest", "ChainProblem", "ChainTiming", "LlmRequest", "LlmProblem", "Timed",
    "Output", "TuneRequest", "_device_name",
]  # fmt: skip
