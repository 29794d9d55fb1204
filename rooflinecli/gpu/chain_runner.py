"""A token's weight GEMMs as a dependent chain on the GPU (rooflinecli.core.chain builds it):
our picks, cuBLAS and PyTorch's F.linear, each captured in a CUDA graph and replayed as whole
tokens, timed by the one timer (rooflinecli.gpu.timer.Timer, no L2 flush) on the chain's stream,
interleaved, every sample kept; each verified against a float32 reference of the same chain,
eagerly and from its replayed graph. CuPy and PyTorch are imported lazily.

Our stages launch through the runner's one launch path (rooflinecli.gpu.runner.launcher: the
stage's grid, workspace and TMA maps); cuBLAS is the runner's reference call on the same
buffers. The weights are laid out K x N (row-major, the contract's B) for both, N x K for
PyTorch (F.linear's layout, copied from the same values), so one float32 reference checks all.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rooflinecli import results
from rooflinecli.core import chain, model, roofs
from rooflinecli.core.elements import element
from rooflinecli.core.specs import Spec
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import device, runner
from rooflinecli.gpu.arrays import as_f32, poison, store, torch_dtype
from rooflinecli.gpu.timer import Launch, Timed, Timer, Timing
from rooflinecli.stages.token import TOKEN_BY_NAME

OURS, OURS_PDL, TOKEN, TOKEN_MMA = "best", "best+pdl", "token", "token+mma"
CUBLAS, TORCH = "cublas", "torch"
CUBLAS_WORKSPACE_BYTES = 32 << 20
_cublas_spaces: dict[int, Any] = {}
WAYS = (OURS, OURS_PDL, TOKEN, TOKEN_MMA, CUBLAS, TORCH)
OUR_WAYS = (OURS, OURS_PDL, TOKEN, TOKEN_MMA)
DEFAULT_WAYS = (OURS, CUBLAS, TORCH)


@dataclass
class Operands:
    """What runner.launcher and its cuBLAS call read of a GEMM problem: one link's buffers."""

    m: int
    n: int
    k: int
    A: Any
    B: Any
    C: Any
    dtype: str
    alpha: float = 1.0
    beta: float = 0.0

    @property
    def C_ref(self) -> Any:  # the reference writes the same output buffer here
        return self.C


@dataclass
class Way:
    name: str
    replay: Callable[[], None] | None = None
    eager: Callable[[], None] | None = None
    outputs: Callable[[], list[Any]] | None = None  # the early and the last output (CuPy)
    poison: Callable[[], None] | None = None
    stages: list[str] = field(default_factory=list)  # per link
    absent: str | None = None
    checks: dict[str, Any] = field(default_factory=dict)
    samples_ms: list[float] = field(default_factory=list)
    trace: dict[str, Any] = field(default_factory=dict)
    build: dict[str, Any] = field(default_factory=dict)  # one launch's registers, params, ...
    kernels: int = 0  # kernels per token where one runs several GEMMs (token: 1); 0: one each
    # the way's stamping build (token: STAMPS=1), captured on the same buffers: (way, stamps)
    stamped: Callable[[], tuple[Way, Any]] | None = None


class Buffers:
    """The chain's weights (distinct per link), the token input and every link's output."""

    def __init__(self, cp, c: chain.Chain, dtype: str, seed: int) -> None:  # type: ignore[no-untyped-def]
        self.cp, self.chain, self.dtype = cp, c, dtype
        rng = cp.random.default_rng(seed)
        m = c.batch
        self.x = store(cp, rng.random((m, c.d_in), dtype=cp.float32) * 2 - 1, dtype)
        self.w: list[Any] = []
        for link in c.links:  # generated on the GPU, one link at a time
            u = rng.random((link.k, link.n), dtype=cp.float32)
            u *= 2 * chain.weight_scale(link.k)
            u -= chain.weight_scale(link.k)
            self.w.append(store(cp, u, dtype))
            del u
        self.out = [cp.empty((m, link.n), dtype=self.x.dtype) for link in c.links]

    def input_of(self, link: chain.Link, outs: list[Any] | None = None):  # type: ignore[no-untyped-def]
        """The M x K input of a link: the first M*K elements of its source's output."""
        src = self.x if link.source < 0 else (outs or self.out)[link.source]
        return src.ravel()[: link.m * link.k].reshape(link.m, link.k)

    def reference(self) -> list[Any]:
        """The float32 chain over the same (rounded) weights and input: the early and the last
        output (CuPy float32, plain matmuls)."""
        cp, c = self.cp, self.chain
        ref: list[Any] = []
        for link in c.links:
            src = as_f32(cp, self.x, self.dtype) if link.source < 0 else ref[link.source]
            a = src.ravel()[: link.m * link.k].reshape(link.m, link.k)
            w = as_f32(cp, self.w[link.index], self.dtype)
            ref.append(cp.matmul(a, w))
            del w
        return [ref[c.early], ref[c.last]]


def _cupy_way(cp, stream, name: str, bufs: Buffers, launches: list[Callable[[], None]],
              stages: list[str]) -> Way:  # type: ignore[no-untyped-def]  # fmt: skip
    c = bufs.chain

    def eager() -> None:
        with stream:
            for f in launches:
                f()

    eager()  # first launches outside the capture: modules loaded, cuBLAS's workspace set up
    stream.synchronize()
    with stream:
        stream.begin_capture()
        try:
            for f in launches:
                f()
        finally:
            graph = stream.end_capture()

    def poison_all() -> None:
        with stream:
            for o in bufs.out:
                poison(o, bufs.dtype)

    return Way(
        name,
        replay=lambda: graph.launch(stream),
        eager=eager,
        outputs=lambda: [bufs.out[c.early], bufs.out[c.last]],
        poison=poison_all,
        stages=stages,
    )


def ours(cp, stream, bufs: Buffers, picks: dict[tuple[int, int, int], Any], arch: str,
         sm_count: int, name: str = OURS) -> Way:  # type: ignore[no-untyped-def]  # fmt: skip
    """Each link launched by its shape's pick through runner.launcher (a stage with `pdl` set
    through cuLaunchKernelEx with programmatic stream serialization: the graph keeps the edge)."""
    launches, stages = [], []
    with stream:
        for link in bufs.chain.links:
            stage = picks[link.shape]
            ops = Operands(link.m, link.n, link.k, bufs.input_of(link), bufs.w[link.index],
                           bufs.out[link.index], bufs.dtype)  # fmt: skip
            b_nk = cp.ascontiguousarray(ops.B.T) if stage.b_layout == "nk" else None
            call, meta = runner.launcher(cp, stage, ops, arch, sm_count, b_nk=b_nk)  # type: ignore[arg-type]
            if meta.get("_convert") is not None:
                raise RooflineError(f"chain: {stage.name} would transpose its weights per launch")
            launches.append(call)
            stages.append(stage.name)
    stream.synchronize()
    return _cupy_way(cp, stream, name, bufs, launches, stages)


def token_way(cp, stream, bufs: Buffers, arch: str, sm_count: int, stage: Any = None,
              name: str = TOKEN) -> Way:  # type: ignore[no-untyped-def]  # fmt: skip
    """Stage 57 (rooflinecli.gpu.token; `stage`: a variant of it): the whole chain in one
    persistent launch, on the same weights, input and outputs; absent, with why, where the stage
    refuses the chain."""
    from rooflinecli.gpu import token

    stage = stage or TOKEN_BY_NAME["decode_token"]
    c = bufs.chain
    why = stage.refuses(bufs.dtype, c.batch, c.shapes, sm_count)
    if why:
        return Way(name, absent=why)

    def way_of(built_name: str, stamps: bool) -> tuple[Way, Any]:  # (the way, its stamps)
        with stream:
            launch, meta = token.launcher(
                cp, stage, arch, sm_count, bufs.dtype, c.batch, bufs.x, bufs.w, bufs.out,
                [(x.n, x.k) for x in c.links], [x.source for x in c.links], stamps=stamps,
            )  # fmt: skip
        stream.synchronize()
        w = _cupy_way(cp, stream, built_name, bufs, [launch], [stage.name] * len(c.links))
        w.build, w.kernels = meta, 1
        return w, launch.stamps  # type: ignore[attr-defined]

    way, _none = way_of(name, False)
    # the same launch, built to stamp its timeline (rooflinecli.core.chain.stamp_timeline)
    way.stamped = functools.partial(way_of, f"{name}-stamped", True)
    return way


def cublas(cp, stream, bufs: Buffers, reference: Any, arch: str) -> Way:  # type: ignore[no-untyped-def]
    """The runner's cuBLAS call (GemmEx, FP32 compute) per link, on the same buffers."""
    handle = cp.cuda.device.get_cublas_handle()
    lib = runner.cublas_library(cp)  # CuPy's wrappers refuse a capturing stream; cuBLAS does not
    if handle not in _cublas_spaces:
        # a workspace of its own, nothing to allocate under capture; kept for the handle's life
        _cublas_spaces[handle] = space = cp.empty(CUBLAS_WORKSPACE_BYTES, dtype=cp.uint8)
        status = lib.cublasSetWorkspace_v2(handle, space.data.ptr, CUBLAS_WORKSPACE_BYTES)
        if status != 0:
            raise RooflineError(f"cublasSetWorkspace failed: cuBLAS status {status}")
    launches: list[Callable[[], None]] = []
    for link in bufs.chain.links:
        ops = Operands(link.m, link.n, link.k, bufs.input_of(link), bufs.w[link.index],
                       bufs.out[link.index], bufs.dtype)  # fmt: skip
        call, _meta = runner.launcher(cp, reference, ops, arch, capture=True)  # type: ignore[arg-type]
        launches.append(call)
    return _cupy_way(cp, stream, CUBLAS, bufs, launches, [reference.name] * len(bufs.chain.links))


def torch_way(cp, stream, bufs: Buffers) -> Way:  # type: ignore[no-untyped-def]
    """PyTorch's F.linear chain over N x K copies of the same weights, in a torch.cuda.CUDAGraph
    replayed on the chain's stream; absent (with the reason) without PyTorch or its GPU."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        return Way(TORCH, absent=f"PyTorch is not installed ({e})")
    if not torch.cuda.is_available():
        return Way(TORCH, absent="PyTorch sees no CUDA device")
    c, dtype = bufs.chain, bufs.dtype
    tdt = torch_dtype(dtype)

    def to_torch(x):  # type: ignore[no-untyped-def]
        if element(dtype).bits:  # bf16 bits: through int16, which both sides know
            return torch.from_dlpack(x.view(cp.int16)).view(torch.bfloat16)
        return torch.from_dlpack(x)

    def to_cupy(t):  # type: ignore[no-untyped-def]
        if element(dtype).bits:
            return cp.from_dlpack(t.view(torch.int16)).view(cp.uint16)
        return cp.from_dlpack(t)

    cp.cuda.runtime.deviceSynchronize()
    x = to_torch(bufs.x)
    w_nk = [to_torch(w).t().contiguous() for w in bufs.w]
    assert all(w.dtype == tdt for w in w_nk)

    def run() -> list[Any]:
        outs: list[Any] = []
        for link in c.links:
            src = x if link.source < 0 else outs[link.source]
            a = src.reshape(-1)[: link.m * link.k].view(link.m, link.k)
            outs.append(F.linear(a, w_nk[link.index]))
        return outs

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            run()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static = run()
    ext = torch.cuda.ExternalStream(stream.ptr)
    holder: dict[str, list[Any]] = {"outs": static}

    def replay() -> None:
        with torch.cuda.stream(ext):
            graph.replay()

    def eager() -> None:
        with torch.cuda.stream(ext):
            holder["outs"] = run()

    def outputs() -> list[Any]:
        torch.cuda.synchronize()
        o = holder["outs"]
        return [to_cupy(o[c.early]), to_cupy(o[c.last])]

    def poison_all() -> None:
        with torch.cuda.stream(ext):
            for o in static:
                o.fill_(math.nan)
        holder["outs"] = static

    return Way(TORCH, replay=replay, eager=eager, outputs=outputs, poison=poison_all,
               stages=["F.linear"] * len(c.links))  # fmt: skip


def verify(cp, way: Way, ref: list[Any], bufs: Buffers, replayed: bool) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Poison every output, run the chain once (eagerly, or a replay of its graph), and check
    the early and the last output against the float32 reference."""
    c, dtype = bufs.chain, bufs.dtype
    assert way.poison and way.eager and way.replay and way.outputs
    way.poison()
    if not replayed:
        way.eager()
    else:
        way.replay()
    cp.cuda.runtime.deviceSynchronize()
    out: dict[str, Any] = {}
    k_max = max(x.k for x in c.links)
    for tag, got, r, upto in (
        ("early", way.outputs()[0], ref[0], c.early + 1),
        ("last", way.outputs()[1], ref[1], c.last + 1),
    ):
        g = as_f32(cp, got, dtype).astype(cp.float64)
        r64 = r.astype(cp.float64)
        finite = bool(cp.isfinite(g).all())
        ref_norm = float(cp.linalg.norm(r64))
        rel = float(cp.linalg.norm(g - r64)) / ref_norm if finite and ref_norm else math.inf
        rms = float(cp.sqrt(cp.mean(g * g))) if finite else math.inf
        ref_rms = float(cp.sqrt(cp.mean(r64 * r64)))
        v = chain.judge(rel, rms, ref_rms, finite, chain.tolerance(dtype, upto, k_max))
        out[tag] = {"ok": v.ok, "rel_error": v.rel_error if math.isfinite(v.rel_error) else None,
                    "tolerance": v.tolerance, "rms": v.rms if math.isfinite(v.rms) else None,
                    "reference_rms": ref_rms, "gemms": upto, "reason": v.reason}  # fmt: skip
    out["ok"] = all(out[t]["ok"] for t in ("early", "last"))
    return out


def replay_timing(warmup: int, repeats: int) -> Timing:
    """The one timer's settings for whole-token replays: `warmup` untimed replays per way (none
    sized by time), exactly `repeats` timed rounds, no L2 flush (the weights of a token exceed
    the L2), the SM clock sampled, the rounds held (Timing's defaults)."""
    return Timing(warmup_ms=0.0, warmup_min=warmup, min_repeats=repeats, max_repeats=repeats,
                  flush_l2=False)  # fmt: skip


def time_replays(timer: Timer, stream: Any, ways: list[Way]) -> Timed:
    """Whole-token replays timed by the one timer, interleaved: one Launch per way, each round
    replaying every way once (forward on even rounds, backward on odd) between its own events;
    every sample kept in the way's samples_ms. The timer queues its events and its holding
    kernel on the current stream, so the chain's stream (where every replay runs) is made
    current around it."""
    launches = [Launch(w.name, w.replay) for w in ways if w.replay is not None]
    assert len(launches) == len(ways), "every way timed has a graph to replay"
    with stream:
        timed = timer.time(launches)
    stream.synchronize()
    for w, samples in zip(ways, timed.samples, strict=True):
        w.samples_ms = list(samples)
    return timed


def trace_way(
    timer: Timer, stream: Any, way: Way, gemms: int, untraced_ms: float
) -> dict[str, Any]:
    """One replayed token under the timeline (rooflinecli.gpu.timeline, optional): per GEMM its
    kernel time and the gap before it; the reason where there is no timeline. Two tokens are
    traced and the second kept: the first pays the tracer's one-time setup. The traced replay
    is also timed between CUDA events (Timer.once, on the chain's stream)."""
    try:
        from rooflinecli.gpu import timeline

        if way.replay is None:
            return {"timeline_reason": "no graph to replay"}
        graph_replay = way.replay
        marks: list[float] = []

        def replay() -> None:  # event-timed too: the traced token beside the untraced ones
            with stream:
                marks.append(timer.once(graph_replay))

        # the first traced replay pays the tracer's one-time setup: traced again, kept second
        timeline.trace(replay, stream.synchronize)
        del marks[:]
        spans = timeline.trace(replay, stream.synchronize)
        backend = getattr(spans, "backend", None)
    except ImportError as e:
        return {"timeline_reason": f"no timeline: {e}"}
    except RooflineError as e:  # timeline.TracingUnavailable, with its reason
        return {"timeline_reason": f"no timeline: {e}"}
    t = chain.timeline(spans, gemms)  # type: ignore[arg-type]  # KernelSpan is a Span
    t["timeline_backend"] = backend
    if "traced_token_us" in t and untraced_ms:
        event_ms = marks[0] if len(marks) == 1 else None
        # tracing's cost to the token: the traced token (its kernels' span on the GPU's clock)
        # against the untraced median; and, apart, the traced replay's event time, which also
        # holds the tracer's delay before the graph's first kernel starts
        t["tracing_overhead"] = t["traced_token_us"] / (untraced_ms * 1e3) - 1.0
        if event_ms:
            t["traced_event_us"] = event_ms * 1e3
            t["tracing_event_overhead"] = event_ms / untraced_ms - 1.0
            t["tracing_start_delay_us"] = event_ms * 1e3 - t["traced_token_us"]
        # kernel times plus gaps against the untraced token (both measured, never derived)
        summed = sum(t["kernel_us"]) + sum(t["gap_before_us"]) - sum(t.get("overlap_us", []))
        t["kernel_gap_sum_us"] = summed
        t["timeline_error"] = summed / (untraced_ms * 1e3) - 1.0
    return t


def stamp_way(timer: Timer, stream: Any, way: Way) -> dict[str, Any]:
    """A one-launch way's timeline from its blocks' own stamps (no tracer): its stamping build
    (Way.stamped) replayed in the same rounds as the way itself, so that what the stamps cost
    is the ratio of the two medians (`tracing_overhead`), every sample of both kept; the stamps
    of the last replay read by chain.stamp_timeline."""
    assert way.stamped is not None and way.replay is not None
    try:
        twin, stamps = way.stamped()
    except RooflineError as e:
        return {"timeline_reason": f"no timeline: the stamping build: {e}"}
    assert twin.replay is not None
    with stream:
        timed = timer.time([Launch(way.name, way.replay), Launch(twin.name, twin.replay)])
    stream.synchronize()
    plain, marked = (statistics.median(s) for s in timed.samples)
    t = chain.stamp_timeline(stamps.get().tolist(), plain)
    t["timeline_backend"] = "globaltimer"
    t["tracing_overhead"] = marked / plain - 1.0
    t["stamped_samples_ms"] = list(timed.samples[1])
    t["unstamped_samples_ms"] = list(timed.samples[0])
    return t


def fit_layers(cp, preset: Any, batch: int, dtype: str, copies: int) -> int:  # type: ignore[no-untyped-def]
    free, _total = cp.cuda.runtime.memGetInfo()
    pool = cp.get_default_memory_pool()
    free += pool.free_bytes()  # CuPy's cached blocks are free for these buffers too
    return chain.layers_that_fit(preset, batch, dtype, int(free), copies)


def record(c: chain.Chain, full: chain.Chain, way: Way, dtype: str, spec: Spec,
           scale: float, ref_way: Way | None) -> dict[str, Any]:  # fmt: skip
    """A chain record: the token's FLOPs and bytes (the whole model's), its time (the median
    replay, times `scale` for a shortened chain), every sample, the checks, per GEMM its shape
    and stage (and its kernel time and the gap before it, from a timeline)."""
    flops, nbytes = full.flops(), full.bytes_ideal(dtype)
    samples = [s * scale for s in way.samples_ms]
    rec: dict[str, Any] = {
        "stage": way.name,
        "kind": "stage" if way.name in OUR_WAYS else "reference",
        "op": "chain",
        "dtype": dtype,
        "m": None, "n": None, "k": None,
        "workload": f"{c.what}:chain:b{c.batch}",
        "preset": c.what,
        "gemm": "chain",
        "batch": c.batch,
        "flops": flops,
        "bytes_ideal": nbytes,
        "ai_ideal": model.intensity(flops, nbytes),
        "gemm_count": len(full.links),
        "layers": full.layers,
        "layers_run": c.layers_run,
        "scale": scale,
        "scale_rule": chain.SCALE_RULE if scale != 1.0 else None,
        "token_bytes": nbytes,
        "weight_bytes": full.weight_bytes(dtype),
        "replay": "CUDA graph, whole tokens",
        "chain_version": results.CHAIN_VERSION,
        "error": None if way.absent is None else f"skipped: {way.absent}",
    }  # fmt: skip
    if way.absent is None and samples:
        med = statistics.median(samples)
        rec.update(results._summary(samples))
        rec["time_ms"] = med
        rec["tflops"] = model.tflops(flops, med)
        rec["time_us_per_token"] = med * 1e3
        rec["samples_run_ms"] = [round(s, 6) for s in way.samples_ms]
    _add_checks(rec, way.checks)
    rec["gemms"] = [
        {"name": x.label, "m": x.m, "n": x.n, "k": x.k,
         "stage": way.stages[x.index] if x.index < len(way.stages) else None,
         "reads": c.links[x.source].label if x.source >= 0 else "input"}
        for x in c.links
    ]  # fmt: skip
    _add_trace(rec, way)
    if ref_way is not None and ref_way is not way and ref_way.samples_ms and rec.get("time_ms"):
        rec["compared_with"] = ref_way.name
        rec["reference_time_ms"] = statistics.median(ref_way.samples_ms) * scale
    rec = results.complete_record(rec)
    roofs.put_under(rec, roofs.datasheet_roof(spec, dtype), "datasheet", spec.peak_clock(dtype))
    return rec


def _add_checks(rec: dict[str, Any], checks: dict[str, Any]) -> None:
    """The way's checks on the record, in place: verified where both the eager and the replayed
    outputs passed, the replayed last output's error; no speed for a way that failed."""
    if checks:
        rec["verified"] = bool(
            checks.get("eager", {}).get("ok") and checks.get("replayed", {}).get("ok")
        )
        last = checks.get("replayed", {}).get("last", {})
        rec["rel_error"] = last.get("rel_error")
        rec["checks"] = checks
        rec["tolerance_rule"] = chain.TOLERANCE_RULE
        if rec["verified"] is False:
            rec["time_ms"] = rec["tflops"] = None


def _add_trace(rec: dict[str, Any], way: Way) -> None:
    """What else the way measured, on the record in place: one launch's build, its kernels per
    token, and from its traced token each GEMM's kernel time and the gap before it (where the
    timeline has one kernel per GEMM) and the timeline's own figures."""
    t = way.trace
    if way.build:
        rec["build"] = way.build
    if way.kernels:
        rec["kernels_per_token"] = way.kernels
    if t.get("kernel_us") and len(t["kernel_us"]) == len(rec["gemms"]):
        for g, k_us, gap in zip(rec["gemms"], t["kernel_us"], t["gap_before_us"], strict=True):
            g["kernel_us"], g["gap_before_us"] = k_us, gap
        for g, wait in zip(rec["gemms"], t.get("wait_us", ()), strict=False):
            g["wait_us"] = wait
    for key in (
        "traced_token_us",
        "tracing_overhead",
        "gap_share",
        "timeline_reason",
        "timeline_backend",
        "traced_event_us",
        "tracing_event_overhead",
        "tracing_start_delay_us",
        "kernel_gap_sum_us",
        "timeline_error",
        "wait_share",
        "tail_us",
        "stamp_resolution_ns",
        "stamped_blocks",
        "stamped_samples_ms",
        "unstamped_samples_ms",
    ):
        if key in t:
            rec[key] = t[key]


def run_chain(
    c: chain.Chain,
    full: chain.Chain,
    dtype: str,
    picks: dict[tuple[int, int, int], Any],
    reference: Any,
    spec: Spec,
    arch: str,
    sm_count: int,
    seed: int = 0,
    pdl_picks: dict[tuple[int, int, int], Any] | None = None,
    warmup: int = 5,
    repeats: int = 30,
    ways: tuple[str, ...] = DEFAULT_WAYS,
    log: Callable[[str], None] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Build, verify (eager and replayed), time interleaved through the one timer (`warmup`
    untimed replays per way, then `repeats` rounds), trace: (records, clock)."""
    import time

    cp = device.cupy()
    t0 = time.perf_counter()

    def say(what: str) -> None:
        if log is not None:
            log(f"[{time.perf_counter() - t0:6.2f} s] {c.what} b{c.batch} {dtype}: {what}")

    stream = cp.cuda.Stream(non_blocking=True)
    bufs = Buffers(cp, c, dtype, seed)
    cp.cuda.runtime.deviceSynchronize()
    say(f"{len(c.links)} GEMMs, {c.weight_bytes(dtype) / 1e9:.2f} GB of weights generated")
    ref = bufs.reference()
    cp.cuda.runtime.deviceSynchronize()
    say("float32 reference done")
    built = [
        _build(cp, stream, bufs, name, picks, pdl_picks, reference, arch, sm_count, say)
        for name in ways
    ]
    live = [w for w in built if w.absent is None]
    for w in live:  # each way checks its own buffers: poisoned, run, checked, eager then graph
        w.checks = {"eager": verify(cp, w, ref, bufs, False),
                    "replayed": verify(cp, w, ref, bufs, True)}  # fmt: skip
        say(f"{w.name}: eager {w.checks['eager']['ok']}, replayed {w.checks['replayed']['ok']}")
    clock: dict[str, Any] = {}
    method = None
    if live:
        timer = Timer(replay_timing(warmup, repeats))
        timed = time_replays(timer, stream, live)
        clock, method = timed.clock, timed.method
        say("timed: " + ", ".join(
            f"{w.name} {statistics.median(w.samples_ms) * 1e3:.1f} us" for w in live
        ))  # fmt: skip
        for w in live:  # the output of the last timed replay, checked too
            w.checks["timed"] = verify_last(cp, w, ref, bufs)
        for w in live:
            _trace(timer, stream, w, len(c.links), say)
    by = {w.name: w for w in built}
    ref_way = by.get(CUBLAS) if by.get(CUBLAS) and by[CUBLAS].absent is None else None
    scale = chain.token_scale(c, full, dtype)
    recs = [record(c, full, w, dtype, spec, scale, ref_way) for w in built]
    for w, r in zip(built, recs, strict=True):
        r.update(clock)
        if w.absent is None and method:  # how its rounds were queued (Timed.method)
            r["timing_method"] = method
    return recs, clock


def _build(cp, stream, bufs: Buffers, name: str, picks: dict[tuple[int, int, int], Any],
           pdl_picks: dict[tuple[int, int, int], Any] | None, reference: Any, arch: str,
           sm_count: int, say: Callable[[str], None]) -> Way:  # type: ignore[no-untyped-def]  # fmt: skip
    """One way captured, or absent with the reason where it cannot be built."""
    try:
        if name == OURS:
            w = ours(cp, stream, bufs, picks, arch, sm_count)
        elif name == OURS_PDL:
            w = ours(cp, stream, bufs, pdl_picks or picks, arch, sm_count, OURS_PDL)
        elif name == TOKEN:
            w = token_way(cp, stream, bufs, arch, sm_count)
        elif name == TOKEN_MMA:  # the same launch with Tensor Core consumers
            mma = TOKEN_BY_NAME["decode_token_mma"]
            w = token_way(cp, stream, bufs, arch, sm_count, mma, TOKEN_MMA)
        elif name == CUBLAS:
            w = cublas(cp, stream, bufs, reference, arch)
        else:
            w = torch_way(cp, stream, bufs)
    except Exception as e:  # recorded as absent with the reason; the other ways go on
        w = Way(name, absent=f"could not be built: {type(e).__name__}: {e}")
    say(f"{name} captured" if w.absent is None else f"{name} absent: {w.absent}")
    return w


def _trace(timer: Timer, stream: Any, w: Way, links: int, say: Callable[[str], None]) -> None:
    """The way's traced token (trace_way) against its untraced median, said."""
    med = statistics.median(w.samples_ms) if w.samples_ms else 0.0
    if w.stamped is not None:  # one launch: its blocks stamp the timeline themselves
        w.trace = stamp_way(timer, stream, w)
    else:
        w.trace = trace_way(timer, stream, w, w.kernels or links, med)
        if w.kernels:
            w.trace["timeline_reason"] = (
                f"{w.kernels} kernel runs the token's {links} GEMMs: no gaps between "
                "kernels to show; its span is the traced token"
            )
    say(
        f"{w.name} timeline: "
        + (
            w.trace.get("timeline_reason")
            or f"traced {w.trace['traced_token_us']:.1f} us, gaps {100 * w.trace['gap_share']:.1f}%"
        )
    )


def verify_last(cp, way: Way, ref: list[Any], bufs: Buffers) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """The output the last timed replay left (not poisoned again: what the timing produced)."""
    cp.cuda.runtime.deviceSynchronize()
    saved = way.poison
    way.poison = lambda: None
    replay = way.replay
    way.replay = lambda: None  # the last timed replay already wrote the outputs
    try:
        return verify(cp, way, ref, bufs, True)
    finally:
        way.poison, way.replay = saved, replay
