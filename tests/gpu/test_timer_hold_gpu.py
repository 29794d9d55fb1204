"""On a GPU: the timer that holds the stream does not count the host's time. A launch that sleeps
300 us in Python before queuing a kernel of a few microseconds is timed as that kernel (within
max(2%, 0.5 us) of the same kernel timed with no sleep, the independent measure), while the
timer without the hold, which it replaced, counts the sleep."""

import statistics
import time

import pytest

from rooflinecli.gpu import timer

pytestmark = pytest.mark.gpu


def _timings(hold: bool) -> timer.Timing:
    return timer.Timing(
        warmup_ms=5.0, min_repeats=64, max_repeats=64, sample_clock=False, hold=hold
    )


def test_a_slow_host_is_not_counted_as_kernel_time():
    import cupy as cp

    x = cp.ones(1 << 20, dtype=cp.float32)  # 4 MiB: a read of a few microseconds
    out = cp.empty((), dtype=cp.float32)

    def kernel() -> None:
        cp.sum(x, out=out)

    def slow_host() -> None:
        time.sleep(300e-6)
        kernel()

    kernel()
    cp.cuda.runtime.deviceSynchronize()
    alone = statistics.median(
        timer.Timer(_timings(True)).time([timer.Launch("k", kernel)]).samples[0]
    )
    timed = timer.Timer(_timings(True)).time([timer.Launch("slow", slow_host)])
    slow = statistics.median(timed.samples[0])
    assert timed.hold_timeouts == 0
    assert timed.method.startswith("held:")
    assert abs(slow - alone) <= max(0.02 * alone, 0.5e-3), (slow, alone)
    unheld = timer.Timer(_timings(False)).time([timer.Launch("slow", slow_host)])
    assert statistics.median(unheld.samples[0]) > alone + 0.2  # the sleep (ms) was counted


def test_a_launch_that_syncs_inside_costs_one_hold_timeout_and_is_said():
    import cupy as cp

    x = cp.ones(1 << 20, dtype=cp.float32)
    out = cp.empty((), dtype=cp.float32)

    def syncs() -> None:
        cp.sum(x, out=out)
        cp.cuda.get_current_stream().synchronize()  # waits for the held stream: it times out once

    syncs()
    timed = timer.Timer(_timings(True)).time([timer.Launch("syncs", syncs)])
    assert timed.hold_timeouts == 1
    assert "queued without the hold" in timed.method
    assert len(timed.samples[0]) == 64
