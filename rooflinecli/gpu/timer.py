"""The one timer: warm-up, L2 flush, CUDA events, every repeat kept, the SM clock sampled.

The runner, `roofline calibrate`, `measure()`, the chain's whole-token replays (flush off) and
the probes under benchmarks/ all time through `Timer`. Several launches can be timed together,
interleaved: round i runs each of them once (forward on even rounds, backward on odd ones), each
after its own L2 flush and between its own pair of CUDA events. On a power-capped GPU whose
clock drifts through a run, a stage and its reference timed this way see the same clocks; timed
one after the other, the second would not.

The rounds are held (Timing.hold, the default): each batch of up to `hold_rounds` rounds is
queued behind a one-thread kernel (kernels/util/hold.cu, hold_stream) that holds the stream
until the host has queued the whole batch and releases it through a flag in pinned memory. The
GPU then runs the batch back to back, so no interval between a start and an end event contains
time the GPU spent waiting for Python to queue the launch (which, for a kernel of a few
microseconds behind a 256 MiB flush, it otherwise can). The NVTX ranges are pushed on the host
around each launch as before, so ncu's and nsys's NVTX filters find the same kernels; the
holding kernel is outside them.

Why a holding kernel and not a CUDA graph of the rounds: a captured event becomes a timing node
only when recorded with cudaEventRecordExternal (CuPy's Event.record does not pass it),
host-side NVTX ranges are not replayed with a graph, and library calls (cuBLAS) and user
callables would each have to be safe to capture. The hold changes nothing about what is
launched or how; it only decides when the GPU may start. A launch that waits for the GPU itself
(a host sync inside the call) would never see the hold released: the holding kernel then lets
go by its timeout, the timer stops holding for the rest of that call, and the record says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rooflinecli.core import stats
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import device

if TYPE_CHECKING:
    from rooflinecli.stages.compiler import Job


@dataclass
class Timing:
    warmup_ms: float = 25.0  # warm-up time per launch (at least warmup_min calls)
    budget_ms: float = 400.0  # the first launch's timed repeats fill about this much GPU time
    min_repeats: int = 5
    # enough that short kernels fill the budget too: at 200, a 0.2 ms kernel was timed over 40 ms,
    # too short for the power-capped clock to settle (and for the clock readings to mean much)
    max_repeats: int = 1000
    flush_l2: bool = True
    # how the L2 is flushed: "read" sums a buffer twice its size, leaving clean lines; "write"
    # fills one, leaving dirty lines that the timed kernel then pays to write back (1-2% of
    # stage 23 at 4096^3 and 8192^3 on the H200: benchmarks/probes/h200-findings.json, id
    # l2-flush-kind)
    flush_kind: str = "read"
    warmup_min: int = 1
    sample_clock: bool = True  # read the SM clock through NVML while the repeats run
    # the stopping rule (`run gemm --max-noise PCT`, as nvbench's): after min_repeats, repeat
    # until the first launch's noise (core.stats.noise_pct, the CI gate's figure) is at most this
    # many percent, or the budget (max_repeats) is spent; None: the budget alone decides
    max_noise_pct: float | None = None
    # hold each batch of rounds until it is fully queued (see the module's docstring); a batch
    # of 16 rounds of two launches is ~200 queued operations, far from the driver's queue limit
    hold: bool = True
    hold_rounds: int = 16


@dataclass
class Launch:
    """One thing to time: a name (the NVTX range), a call that queues the work on the current
    stream, and optionally a call queued (untimed) before its last timed repeat, e.g. one that
    restores an output that the repeats accumulate into, so that repeat can be checked."""

    name: str
    call: Callable[[], Any]
    before_last: Callable[[], Any] | None = None


@dataclass
class Timed:
    samples: list[list[float]]  # milliseconds, per launch, in the order given, repeat by repeat
    clock: dict[str, Any] = field(default_factory=dict)  # NVML summary over the timed rounds
    # with Timing.max_noise_pct: the first launch's noise over all its samples, and whether it
    # reached the target before the budget ran out (None without a target)
    noise_pct: float | None = None
    noise_target_met: bool | None = None
    method: str = ""  # how the repeats were queued (a record's timing_method)
    hold_timeouts: int = 0  # held batches the holding kernel let go by its timeout, not the host


# about 0.5 s of SM clock: queuing a batch takes milliseconds; only a full launch queue, or a
# profiler that holds each launch until it ends, gets here
HOLD_TIMEOUT_CYCLES = 1_000_000_000


def method_text(
    timing: Timing, timeouts: int = 0, held: bool | None = None, gave_up: bool = False
) -> str:
    """What a record says of how its repeats were queued (timing_method); `held`: whether the
    stream was held (default: what timing asks for); `gave_up`: holding stopped after a hold
    was let go by its timeout."""
    if not (timing.hold if held is None else held):
        return (
            "queued from the host round by round: an interval may include time the GPU waited "
            "for the host to queue the launch"
        )
    text = (
        f"held: each batch of up to {timing.hold_rounds} rounds queued behind a kernel that "
        "holds the stream until the whole batch is queued (kernels/util/hold.cu), so no "
        "interval includes time the GPU waited for the host"
    )
    if gave_up and timeouts:
        text += (
            f"; until a hold was let go by its timeout ({timeouts}): a launch waits for the GPU "
            "(a host sync in the call), so the rounds after it were queued without the hold and "
            "may include waits"
        )
    elif timeouts:
        text += f"; {timeouts} hold(s) let go by their timeout: those batches may include waits"
    return text


class StreamHold:
    """kernels/util/hold.cu and its flag: hold() queues the holding kernel, which waits for the
    next ticket, and release() hands it out. Tickets only grow, so a holding kernel that starts
    late never misses one."""

    def __init__(self, kernel: Callable[..., Any], flag: Any, ptr: int, keep: Any = None) -> None:
        self.kernel, self.flag, self.ptr, self._keep = kernel, flag, ptr, keep
        self.ticket = 0

    def hold(self) -> None:
        import numpy as np

        self.ticket += 1
        self.kernel(
            (1,), (1,), (np.uint64(self.ptr), np.int32(self.ticket), np.int64(HOLD_TIMEOUT_CYCLES))
        )

    def release(self) -> None:
        self.flag[0] = self.ticket

    def timeouts(self) -> int:
        """Holds let go by their timeout so far (read once the stream is idle)."""
        return int(self.flag[1])


def hold_job(arch: str) -> Job:
    """The build of the holding kernel (kernels/util/hold.cu) for `arch`: a run queues it with
    its stages' builds (compiler.precompile)."""
    from rooflinecli.stages import compiler

    return compiler.util_job("hold.cu", "hold", "hold_stream", arch)


def make_hold(cp) -> StreamHold | None:  # type: ignore[no-untyped-def]
    """The holding kernel compiled for the current GPU (NVRTC, cached) and its flag in pinned
    host memory, which the GPU reads through the same pointer (unified addressing); None on a
    device without unified addressing (the rounds then go unheld, and records say so)."""
    import numpy as np

    from rooflinecli.stages import compiler

    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    if not props.get("unifiedAddressing", 1):
        return None
    arch = compiler.arch_for_cc((int(props["major"]), int(props["minor"])))
    built = compiler.build(hold_job(arch))
    kernel = cp.RawModule(path=built.cubin_path).get_function("hold_stream")
    # mapped pinned memory (cudaHostAllocMapped); with unified addressing, which every 64-bit
    # Linux CUDA device has, the device reaches it through the host's own pointer
    mem = cp.cuda.PinnedMemory(8, cp.cuda.runtime.hostAllocMapped)
    ptr = cp.cuda.PinnedMemoryPointer(mem, 0)
    flag = np.ndarray((2,), dtype=np.int32, buffer=ptr)  # as cupyx.empty_pinned does
    flag[:] = 0
    return StreamHold(kernel, flag, ptr.ptr, keep=(mem, ptr))


@contextmanager
def nvtx_range(name: str) -> Iterator[None]:
    """An NVTX range in domain "roofline" (what `roofline profile` filters on)."""
    try:
        import nvtx
    except ImportError:  # a real dependency; tolerate its absence rather than fail a run
        yield
        return
    nvtx.push_range(message=name, domain="roofline")
    try:
        yield
    finally:
        nvtx.pop_range(domain="roofline")


def flush_job(arch: str) -> Job:
    """The build of the read flush's kernel (kernels/util/flush.cu) for `arch`: a run queues it
    with its stages' builds (compiler.precompile)."""
    from rooflinecli.stages import compiler

    return compiler.util_job("flush.cu", "flush", "flush_read", arch)


def _memset(cp, buf, value: int) -> None:  # type: ignore[no-untyped-def]
    """Every byte of a device buffer set on the current stream (no kernel to compile)."""
    stream = cp.cuda.get_current_stream()
    cp.cuda.runtime.memsetAsync(buf.data.ptr, value, buf.nbytes, stream.ptr)


def flusher(cp, l2_bytes: int, timing: Timing, read_kernel=None) -> Callable[[], None] | None:  # type: ignore[no-untyped-def]
    """A call that evicts the L2 before a timed launch, or None when timing says not to. The read
    flush launches `read_kernel` (flush_read of kernels/util/flush.cu) over a buffer twice the
    L2, or sums it with the array library where none is given; the write flush sets it."""
    if not timing.flush_l2:
        return None
    if timing.flush_kind not in ("read", "write"):
        raise RooflineError(f"unknown L2 flush {timing.flush_kind!r}: read or write")
    try:
        buf = cp.empty(max(2 * l2_bytes, 256 << 20) // 4, dtype=cp.float32)
    except cp.cuda.memory.OutOfMemoryError:
        raise RooflineError("out of device memory allocating the L2 flush buffer") from None
    if timing.flush_kind == "read":
        _memset(cp, buf, 0)  # zeros: finite, so the kernel's guarded write never happens
        out = cp.empty((), dtype=cp.float32)
        if read_kernel is None:

            def read() -> None:
                cp.sum(buf, out=out)

            return read
        import numpy as np

        args = (buf, np.uint64(buf.size // 4), out)
        grid = (int(min(-(-buf.size // 4 // 256), 4096)), 1, 1)

        def read_with_kernel() -> None:
            read_kernel(grid, (256, 1, 1), args)

        return read_with_kernel

    def write() -> None:
        _memset(cp, buf, 0)

    return write


def make_flush_read(cp):  # type: ignore[no-untyped-def]
    """flush_read compiled for the current GPU (NVRTC, cached or from the run's prebuild)."""
    from rooflinecli.stages import compiler

    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    arch = compiler.arch_for_cc((int(props["major"]), int(props["minor"])))
    built = compiler.build(flush_job(arch))
    return cp.RawModule(path=built.cubin_path).get_function("flush_read")


class Timer:
    """Times launches on the current device and stream (see the module's docstring)."""

    def __init__(self, timing: Timing | None = None) -> None:
        self.timing = timing or Timing()
        self.cp = device.cupy()
        t = self.timing
        kernel = make_flush_read(self.cp) if t.flush_l2 and t.flush_kind == "read" else None
        self.flush = flusher(self.cp, device.l2_bytes(), t, kernel) if t.flush_l2 else None
        self.hold = make_hold(self.cp) if self.timing.hold else None

    def once(self, call: Callable[[], Any]) -> float:
        """One launch between events (ms, at least 1 us): to size loops."""
        cp = self.cp
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        call()
        e.record()
        e.synchronize()
        return max(cp.cuda.get_elapsed_time(s, e), 1e-3)

    def repeats_for(self, one_ms: float) -> int:
        t = self.timing
        return int(min(t.max_repeats, max(t.min_repeats, t.budget_ms / one_ms)))

    def time(self, launches: Sequence[Launch]) -> Timed:
        """Every launch timed in the same rounds; repeats sized by the first launch's time.

        Without a noise target every round is queued at once and waited for. With one
        (Timing.max_noise_pct) the rounds go in batches, each waited for and the first launch's
        noise measured after it: from max(min_repeats, stats.MIN_SAMPLES) rounds, growing by
        half each time, until the noise is at most the target or the budget's rounds are done.
        The last round (the one `before_last` prepares) comes after that decision."""
        if not launches:
            raise ValueError("nothing to time")
        t = self.timing
        ones = self._size_and_warm_up(launches)
        cap = self.repeats_for(ones[0])
        sampler = device.clock_sampler() if t.sample_clock else None
        rounds = _Rounds(self, launches)
        with sampler.sampling() if sampler is not None else nullcontext() as readings:
            self._queue_and_wait(rounds, cap)
        return self._timed(rounds, readings)

    def _size_and_warm_up(self, launches: Sequence[Launch]) -> list[float]:
        """Each launch once between events (its time, in order), then its warm-up calls: at
        least warmup_min, at most 50, about warmup_ms of GPU time."""
        t = self.timing
        ones = [self.once(x.call) for x in launches]
        for x, one in zip(launches, ones, strict=True):
            for _ in range(max(t.warmup_min, min(50, int(t.warmup_ms / one)))):
                x.call()
        return ones

    def _queue_and_wait(self, rounds: _Rounds, cap: int) -> None:
        """The `cap` rounds queued and waited for: all at once without a noise target, else in
        growing batches until the first launch's noise meets it, then the last round alone."""
        t = self.timing
        if t.max_noise_pct is None:
            end = rounds.queue(0, cap, cap - 1)
        else:
            done, batch = 0, max(t.min_repeats, stats.MIN_SAMPLES)
            while done < cap - 1:
                upto = min(cap - 1, done + batch)
                end = rounds.queue(done, upto, -1)
                done = upto
                _wait(end)
                if stats.noise_pct(rounds.elapsed(0)) <= t.max_noise_pct:
                    break
                batch = max(1, done // 2)
            end = rounds.queue(done, done + 1, done)
        _wait(end)

    def _timed(self, rounds: _Rounds, readings: Any) -> Timed:
        """What the rounds measured: every launch's samples, the clock readings' summary, how
        the rounds were queued, and with a noise target the first launch's noise."""
        t = self.timing
        timeouts = self.hold.timeouts() - rounds.timeouts_before if self.hold is not None else 0
        samples = [rounds.elapsed(j) for j in range(len(rounds.launches))]
        timed = Timed(
            samples,
            readings.summary() if readings is not None else {},
            method=method_text(
                t, timeouts, held=self.hold is not None, gave_up=rounds.hold is None
            ),
            hold_timeouts=timeouts,
        )
        if t.max_noise_pct is not None:
            timed.noise_pct = stats.noise_pct(samples[0])
            timed.noise_target_met = timed.noise_pct <= t.max_noise_pct
        return timed


class _Rounds:
    """The timed rounds of one Timer.time call: each launch's start and end events, and the
    stream hold, given up for the rest of the call once a hold is let go by its timeout."""

    def __init__(self, timer: Timer, launches: Sequence[Launch]) -> None:
        self.cp, self.timing, self.flush = timer.cp, timer.timing, timer.flush
        self.launches = launches
        self.starts: list[list[Any]] = [[] for _ in launches]
        self.ends: list[list[Any]] = [[] for _ in launches]
        self.order = list(range(len(launches)))
        self.hold = timer.hold  # None from the first hold let go by its timeout (see queue)
        self.timeouts_before = self.hold.timeouts() if self.hold is not None else 0

    def run_round(self, i: int, last: bool) -> Any:
        """Round i: each launch once (forward on even rounds, backward on odd), each after
        its own flush, between its own events. Returns the round's last end event."""
        cp, order, launches = self.cp, self.order, self.launches
        end = None
        for j in order if i % 2 == 0 else order[::-1]:
            x = launches[j]
            if last and x.before_last is not None:
                x.before_last()
            if self.flush is not None:
                self.flush()
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record()
            with nvtx_range(x.name):
                x.call()
            e.record()
            self.starts[j].append(s)
            self.ends[j].append(e)
            end = e
        return end

    def queue(self, lo: int, hi: int, last: int) -> Any:
        """Rounds lo..hi-1 (round `last` is the one before_last prepares), held in batches.
        Returns the last end event queued. A hold let go by its timeout while the host was
        still queuing means a launch waits for the GPU (a host sync inside the call):
        holding it would cost a timeout per batch, so the rest go unheld."""
        t = self.timing
        end = None
        b = lo
        while b < hi:
            step = max(1, t.hold_rounds) if self.hold is not None else hi - b
            if self.hold is not None:
                self.hold.hold()
            for i in range(b, min(hi, b + step)):
                end = self.run_round(i, last=i == last)
            if self.hold is not None:
                self.hold.release()
                if self.hold.timeouts() > self.timeouts_before:
                    self.hold = None
            b += step
        return end

    def elapsed(self, j: int) -> list[float]:
        """Launch j's samples so far (ms), round by round."""
        cp = self.cp
        return [
            cp.cuda.get_elapsed_time(s, e)
            for s, e in zip(self.starts[j], self.ends[j], strict=True)
        ]


def _wait(event: Any) -> None:
    """Until `event` is done, then synchronized with."""
    while not event.done:  # sleep, not a blocking sync: the clock readings go on
        time.sleep(0.0002)
    event.synchronize()


def time_callable(
    call: Callable[[], Any],
    name: str = "callable",
    timing: Timing | None = None,
) -> Timed:
    """Time any callable that launches work on the current CUDA stream the way a stage is timed:
    one untimed call first (it may create library handles or load modules, and must not size
    the run), then Timer.time."""
    timer = Timer(timing)
    call()
    timer.cp.cuda.get_current_stream().synchronize()
    return timer.time([Launch(name, call)])


def no_clock() -> Any:
    return nullcontext()
