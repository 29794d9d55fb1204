"""The GPU's own timestamps of the kernels one replay runs: each kernel's start and end, in the
order they started, so that the gap before a kernel is its start minus the previous one's end
(never a token time minus kernel times).

Two tracers, both on CUPTI's activity records of concurrent kernels (which include the
kernels of a replayed CUDA graph): NVIDIA's cupti-python (`pip install 'roofline[timeline]'`)
and, where it is missing, PyTorch's profiler (kineto on CUPTI). Tracing is on only around the
replay; the records are flushed after the sync. Neither installed: TracingUnavailable, with why.
Which tracer ran is the result's `backend`.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rooflinecli.errors import TracingUnavailable

BACKENDS = ("cupti", "torch")
BUFFER_BYTES = 8 << 20  # one activity buffer: about 40,000 kernel records


@dataclass(frozen=True)
class KernelSpan:
    name: str  # the kernel's name
    start_ns: int  # GPU timestamp
    end_ns: int


class Trace(list[KernelSpan]):
    """The kernels of one traced replay in start order, and the tracer that saw them."""

    def __init__(self, spans: Iterable[KernelSpan], backend: str) -> None:
        super().__init__(sorted(spans, key=lambda s: (s.start_ns, s.end_ns)))
        self.backend = backend


def gaps_ns(spans: list[KernelSpan]) -> list[int]:
    """The gap before each kernel: its start minus the end of the kernels before it (0 for the
    first; negative where kernels overlap, as under programmatic dependent launch)."""
    out, end = [], None
    for s in spans:
        out.append(0 if end is None else s.start_ns - end)
        end = s.end_ns if end is None else max(end, s.end_ns)
    return out


def _import(name: str) -> Any:
    return importlib.import_module(name)


def _cupti() -> tuple[Any, str]:
    """(cupti-python's `cupti` module, "") or (None, why not)."""
    try:
        return _import("cupti.cupti"), ""  # the package's __init__ is empty: the submodule
    except ImportError as e:
        return None, f"cupti-python is not installed (pip install cupti-python): {e}"
    except AttributeError as e:
        return None, f"cupti-python has no `cupti` module: {e}"
    except Exception as e:  # the module loads libcupti: a missing or mismatched library
        return None, f"cupti-python does not load ({type(e).__name__}: {e})"


def _torch_profiler() -> tuple[Any, str]:
    try:
        return _import("torch.profiler"), ""
    except ImportError as e:
        return None, f"PyTorch is not installed (its profiler is the other tracer): {e}"


class _Collector:
    """cupti-python's activity callbacks, registered once per process (CUPTI keeps one pair);
    records go to the trace running now, if any."""

    def __init__(self, cupti: Any) -> None:
        self.cupti = cupti
        self.records: list[KernelSpan] | None = None
        self.lock = threading.Lock()
        self.kernel_kind = cupti.ActivityKind.CONCURRENT_KERNEL
        cupti.activity_register_callbacks(self.requested, self.completed)

    def requested(self) -> tuple[int, int]:
        return BUFFER_BYTES, 0  # 0: as many records as fit

    def completed(self, activities: list[Any]) -> None:
        with self.lock:
            if self.records is None:
                return
            for a in activities:
                if a.kind == self.kernel_kind:
                    self.records.append(KernelSpan(str(a.name), int(a.start), int(a.end)))


_collectors: dict[int, _Collector] = {}


def _start_cupti(cupti: Any) -> _Collector:
    """The process's collector, its records emptied, CONCURRENT_KERNEL enabled; CUPTI's refusal
    (another profiler subscribed, a driver it does not support) as TracingUnavailable."""
    collector = _collectors.get(id(cupti))
    try:
        if collector is None:
            collector = _collectors[id(cupti)] = _Collector(cupti)
        cupti.activity_flush_all(1)  # records from before the window are dropped
        with collector.lock:
            collector.records = []
        cupti.activity_enable(collector.kernel_kind)
    except Exception as e:
        if collector is not None:
            collector.records = None
        raise TracingUnavailable(f"CUPTI refused kernel tracing ({type(e).__name__}: {e})") from e
    return collector


def _trace_cupti(cupti: Any, replay: Callable[[], None], sync: Callable[[], None]) -> Trace:
    sync()  # nothing before the replay lands in its records
    collector = _start_cupti(cupti)
    try:
        try:
            replay()
            sync()
        finally:
            cupti.activity_disable(collector.kernel_kind)
        cupti.activity_flush_all(1)  # 1: forced, incomplete buffers too
        with collector.lock:
            spans = collector.records or []
    finally:
        with collector.lock:
            collector.records = None
    return Trace(spans, "cupti")


def _kineto_spans(prof: Any) -> list[KernelSpan]:
    """The kernels in a finished torch.profiler.profile, in ns of the GPU clock."""
    spans = []
    results = getattr(getattr(prof, "profiler", None), "kineto_results", None)
    if results is not None:
        for e in results.events():
            if str(e.device_type()).endswith("CUDA") and _is_kernel(e):
                start = int(e.start_ns())
                spans.append(KernelSpan(str(e.name()), start, start + int(e.duration_ns())))
        return spans
    for e in prof.events():  # older PyTorch: microseconds
        if str(getattr(e, "device_type", "")).endswith("CUDA"):
            r = e.time_range
            spans.append(KernelSpan(str(e.name), int(r.start * 1000), int(r.end * 1000)))
    return spans


def _is_kernel(e: Any) -> bool:
    """Kineto also reports memcpys and memsets on the device; kernels only."""
    name = str(e.name())
    return not name.startswith(("Memcpy", "Memset", "cudaMemcpy", "cudaMemset"))


def _trace_torch(profiler: Any, replay: Callable[[], None], sync: Callable[[], None]) -> Trace:
    sync()
    with profiler.profile(activities=[profiler.ProfilerActivity.CUDA]) as prof:
        replay()
        sync()
    return Trace(_kineto_spans(prof), "torch")


def available() -> tuple[str | None, str]:
    """(the tracer `trace` would use, "") or (None, why there is none)."""
    cupti, why_cupti = _cupti()
    if cupti is not None:
        return "cupti", ""
    profiler, why_torch = _torch_profiler()
    if profiler is not None:
        return "torch", ""
    return None, f"no kernel tracer: {why_cupti}; {why_torch}"


def trace(
    replay: Callable[[], None], sync: Callable[[], None], backend: str | None = None
) -> list[KernelSpan]:
    """Run replay() once (then sync()) under CUPTI kernel activity tracing; return the kernels it
    ran, in start order. `backend` ("cupti" or "torch") picks the tracer; None: cupti-python,
    else PyTorch's profiler. The result is a Trace: `.backend` names the tracer."""
    if backend not in (None, *BACKENDS):
        raise TracingUnavailable(f"unknown tracer {backend!r}: expected one of {BACKENDS}")
    reasons = []
    if backend in (None, "cupti"):
        cupti, why = _cupti()
        if cupti is not None:
            try:
                return _trace_cupti(cupti, replay, sync)
            except TracingUnavailable as e:  # CUPTI refused before the replay ran
                if backend == "cupti":
                    raise
                why = e.message
        reasons.append(why)
    if backend in (None, "torch"):
        profiler, why = _torch_profiler()
        if profiler is not None:
            return _trace_torch(profiler, replay, sync)
        reasons.append(why)
    raise TracingUnavailable("cannot trace kernels: " + "; ".join(reasons))
