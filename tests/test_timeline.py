"""The kernel timeline of one replay (rooflinecli/gpu/timeline.py) on the CPU: cupti-python and
PyTorch's profiler are replaced by stand-ins that hand over activity records the way they do
(buffers completed on flush, kernels of a graph among them), so that the parsing, the order,
the window of the trace and the reasons it cannot run are tested without a GPU."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rooflinecli.errors import RooflineError, TracingUnavailable
from rooflinecli.gpu import timeline

KERNEL, MEMCPY = 10, 1  # CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, _MEMCPY


class FakeCupti:
    """cupti-python's `cupti` module as the tracer uses it: records made while CONCURRENT_KERNEL
    is enabled wait in buffers until a flush completes them, in as many buffers as the device
    filled, not in start order."""

    ActivityKind = SimpleNamespace(CONCURRENT_KERNEL=KERNEL, MEMCPY=MEMCPY)

    def __init__(self):
        self.callbacks = None
        self.enabled = set()
        self.pending = []  # buffers of records not yet completed
        self.registrations = 0
        self.log = []

    # the module's functions
    def activity_register_callbacks(self, requested, completed):
        self.callbacks = (requested, completed)
        self.registrations += 1

    def activity_enable(self, kind):
        self.enabled.add(kind)
        self.log.append("enable")

    def activity_disable(self, kind):
        self.enabled.discard(kind)
        self.log.append("disable")

    def activity_flush_all(self, flag):
        self.log.append(f"flush {flag}")
        requested, completed = self.callbacks
        size, most = requested()
        assert size >= 1 << 20 and most == 0
        while self.pending:
            completed(self.pending.pop(0))

    # what the GPU does
    def run(self, *records, buffers=1):
        """Kernels (and other activities) the device runs now: (kind, name, start, end, graph)."""
        recs = [
            SimpleNamespace(kind=k, name=n, start=s, end=e, graph_id=g, correlation_id=i)
            for i, (k, n, s, e, g) in enumerate(records)
            if k in self.enabled
        ]
        step = -(-len(recs) // buffers) if recs else 1
        for i in range(0, len(recs), step):
            self.pending.append(recs[i : i + step][::-1])  # a buffer need not be in order


@pytest.fixture
def cupti(monkeypatch):
    fake = FakeCupti()
    monkeypatch.setattr(timeline, "_collectors", {})

    def importer(name):  # as the wheel is laid out: `cupti` is a package, `cupti.cupti` the API
        if name == "cupti.cupti":
            return fake
        if name == "cupti":
            return SimpleNamespace(__all__=["cupti"])
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(timeline, "_import", importer)
    return fake


def test_a_replayed_graphs_kernels_come_back_in_start_order(cupti):
    graph = [
        (KERNEL, "gemv_pdl", 1_000, 1_900, 7),
        (MEMCPY, "copy", 1_950, 1_990, 7),
        (KERNEL, "gemv_pdl", 2_000, 2_800, 7),
        (KERNEL, "gemv_splitk", 2_850, 3_700, 7),
    ]
    synced = []
    spans = timeline.trace(lambda: cupti.run(*graph, buffers=2), lambda: synced.append(1))
    assert spans == [
        timeline.KernelSpan("gemv_pdl", 1_000, 1_900),
        timeline.KernelSpan("gemv_pdl", 2_000, 2_800),
        timeline.KernelSpan("gemv_splitk", 2_850, 3_700),
    ]
    assert isinstance(spans, timeline.Trace) and spans.backend == "cupti"
    assert timeline.gaps_ns(spans) == [0, 100, 50]
    assert len(synced) == 2  # before the window opens, and after the replay
    # tracing is on only around the replay, and flushed once it synced
    assert cupti.log == ["flush 1", "enable", "disable", "flush 1"]
    assert not cupti.enabled


def test_kernels_outside_the_window_are_left_out(cupti):
    cupti.activity_enable(KERNEL)
    cupti.run((KERNEL, "before", 0, 10, 0))  # ran, traced by someone, before the replay
    cupti.activity_disable(KERNEL)
    spans = timeline.trace(lambda: cupti.run((KERNEL, "mine", 20, 30, 1)), lambda: None)
    assert [s.name for s in spans] == ["mine"]
    cupti.activity_enable(KERNEL)
    cupti.run((KERNEL, "after", 40, 50, 0))
    cupti.activity_flush_all(1)  # completed after the trace: no trace is listening
    again = timeline.trace(lambda: cupti.run((KERNEL, "next", 60, 70, 1)), lambda: None)
    assert [s.name for s in again] == ["next"]
    assert cupti.registrations == 1  # CUPTI keeps one pair of callbacks per process


def test_a_failed_replay_still_turns_tracing_off(cupti):
    def replay():
        raise RuntimeError("launch failed")

    with pytest.raises(RuntimeError, match="launch failed"):
        timeline.trace(replay, lambda: None)
    assert not cupti.enabled
    assert timeline.trace(lambda: None, lambda: None) == []


def test_gaps_of_overlapping_kernels_are_negative():
    spans = [timeline.KernelSpan("a", 0, 100), timeline.KernelSpan("b", 90, 200)]
    assert timeline.gaps_ns(spans) == [0, -10]
    assert timeline.gaps_ns([]) == []


class FakeKinetoEvent:
    def __init__(self, name, start, dur, device="DeviceType.CUDA"):
        self._n, self._s, self._d, self._dev = name, start, dur, device

    def name(self):
        return self._n

    def start_ns(self):
        return self._s

    def duration_ns(self):
        return self._d

    def device_type(self):
        return self._dev


def fake_torch_profiler(events, seen):
    class Profile:
        def __init__(self, activities):
            seen.append(("activities", activities))
            self.profiler = SimpleNamespace(kineto_results=SimpleNamespace(events=lambda: events))

        def __enter__(self):
            seen.append("enter")
            return self

        def __exit__(self, *exc):
            seen.append("exit")

    return SimpleNamespace(profile=Profile, ProfilerActivity=SimpleNamespace(CUDA="CUDA"))


def test_pytorchs_profiler_is_the_fallback(monkeypatch):
    seen = []
    events = [
        FakeKinetoEvent("gemv_splitk", 5_000, 700),
        FakeKinetoEvent("cudaGraphLaunch", 100, 50, device="DeviceType.CPU"),
        FakeKinetoEvent("Memcpy DtoD (Device -> Device)", 4_000, 10),
        FakeKinetoEvent("gemv_pdl", 3_000, 900),
    ]
    prof = fake_torch_profiler(events, seen)

    def importer(name):
        if name == "torch.profiler":
            return prof
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(timeline, "_import", importer)
    assert timeline.available() == ("torch", "")
    spans = timeline.trace(lambda: seen.append("replay"), lambda: seen.append("sync"))
    assert spans.backend == "torch"
    assert spans == [
        timeline.KernelSpan("gemv_pdl", 3_000, 3_900),
        timeline.KernelSpan("gemv_splitk", 5_000, 5_700),
    ]
    assert seen == ["sync", ("activities", ["CUDA"]), "enter", "replay", "sync", "exit"]


def test_no_tracer_says_why(monkeypatch):
    def importer(name):
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(timeline, "_import", importer)
    backend, why = timeline.available()
    assert backend is None and "cupti-python is not installed" in why and "PyTorch" in why
    with pytest.raises(TracingUnavailable) as e:
        timeline.trace(lambda: None, lambda: None)
    assert isinstance(e.value, RooflineError) and e.value.exit_code == 2
    assert "cupti-python" in e.value.message and "PyTorch" in e.value.message
    with pytest.raises(TracingUnavailable, match="cupti-python is not installed"):
        timeline.trace(lambda: None, lambda: None, backend="cupti")
    with pytest.raises(TracingUnavailable, match="unknown tracer"):
        timeline.trace(lambda: None, lambda: None, backend="nsys")


def test_the_cupti_tracer_is_asked_for_by_name(cupti, monkeypatch):
    assert timeline.available() == ("cupti", "")
    spans = timeline.trace(lambda: cupti.run((KERNEL, "k", 1, 2, 0)), lambda: None, "cupti")
    assert spans.backend == "cupti" and len(spans) == 1
    with pytest.raises(TracingUnavailable, match="PyTorch is not installed"):
        timeline.trace(lambda: None, lambda: None, backend="torch")


def test_cupti_refusing_falls_back_to_pytorch(cupti, monkeypatch):
    def refuse(kind):
        raise RuntimeError("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED")

    cupti.activity_enable = refuse
    with pytest.raises(TracingUnavailable, match="CUPTI refused kernel tracing.*MULTIPLE"):
        timeline.trace(lambda: None, lambda: None, backend="cupti")
    seen = []
    prof = fake_torch_profiler([FakeKinetoEvent("k", 10, 5)], seen)
    monkeypatch.setattr(
        timeline,
        "_import",
        lambda name: SimpleNamespace(cupti=cupti) if name == "cupti" else prof,
    )
    replays = []
    spans = timeline.trace(lambda: replays.append(1), lambda: None)
    assert spans.backend == "torch" and spans == [timeline.KernelSpan("k", 10, 15)]
    assert replays == [1]  # the replay ran once, under the tracer that worked


def test_a_module_that_does_not_load_is_a_reason(monkeypatch):
    def importer(name):
        if name == "cupti.cupti":
            raise OSError("libcupti.so.13: cannot open shared object file")
        raise ImportError(name)

    monkeypatch.setattr(timeline, "_import", importer)
    with pytest.raises(TracingUnavailable, match="does not load.*libcupti"):
        timeline.trace(lambda: None, lambda: None)
