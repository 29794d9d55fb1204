"""The SM clock as the multiprocessors count it: cycles of %clock64 over nanoseconds of
%globaltimer, read by a small kernel with one warp per SM.

NVML's SM clock is the clock the driver has set. Under a power cap the cycles the SMs actually
run can be fewer (benchmarks/probes/probe-mma-h200.json: 1,944 MHz by NVML against 1,755 counted
by the kernel itself, on the H200 at its power cap). This kernel, launched right behind the last
timed launch on the same stream, reads the counted clock before the card has had time to leave
the state that launch put it in. Only the runner imports this module (CuPy, lazily).
"""

from __future__ import annotations

import statistics
from typing import Any

SRC = r"""
extern "C" __global__ void sm_clock(long long span_ns, unsigned long long* __restrict__ out) {
    unsigned long long c0, c1, g0, g1;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c0));
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
    } while (static_cast<long long>(g1 - g0) < span_ns);
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c1));
    if (threadIdx.x == 0) {
        out[2 * blockIdx.x] = c1 - c0;
        out[2 * blockIdx.x + 1] = g1 - g0;
    }
}
"""

SPAN_US = 200.0


class Counter:
    """One compiled sentinel and its output buffer, for one device."""

    def __init__(self, cp: Any, arch: str, sm_count: int) -> None:
        from rooflinecli import compiler

        built = compiler.compile_source(SRC, "sm_clock", "sm_clock", arch)
        self._cp = cp
        self._fn = cp.RawModule(path=built.cubin_path).get_function("sm_clock")
        self._blocks = sm_count
        self._out = cp.zeros(2 * sm_count, dtype=cp.uint64)

    def launch(self, span_us: float = SPAN_US, stream: Any = None) -> None:
        """Queue the sentinel (on `stream`, default the current one); read() after it ran."""
        args = (self._cp.int64(int(span_us * 1000)), self._out)
        if stream is None:
            self._fn((self._blocks,), (32,), args)
        else:
            with stream:
                self._fn((self._blocks,), (32,), args)

    def read(self) -> float | None:
        """Median over the blocks of cycles per microsecond (MHz); None if nothing was read."""
        ticks = self._out.get().reshape(-1, 2).astype(float)
        rates = [c / t * 1000.0 for c, t in ticks if t > 0]
        return statistics.median(rates) if rates else None
