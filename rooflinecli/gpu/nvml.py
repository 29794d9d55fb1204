"""The SM clock a stage really ran at, from NVML (libnvidia-ml, the driver's library, via ctypes).

Datasheet peaks assume the boost clock; a card at its power cap runs well below it, and the
clock moves on a scale of tens of milliseconds (on the lent H200 it swung between 1,300 and
1,980 MHz within a second of 8192^3 GEMMs). One reading says little, so the runner reads NVML
about every millisecond while a stage's timed repeats are queued and run, and records the mean,
the range and every reason NVML gave for holding the clock down.

No NVML (no driver, a CPU machine, a sandbox without the library): `open_device` returns None and
records simply lack the clock fields.
"""

from __future__ import annotations

import ctypes
import statistics
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

# nvmlClocksEventReason* bits (nvml.h); "idle" is left out: the GPU is busy while we sample
REASONS = {
    0x2: "application clocks",
    0x4: "power cap",
    0x8: "hardware slowdown",
    0x10: "sync boost",
    0x20: "software thermal",
    0x40: "hardware thermal",
    0x80: "power brake",
    0x100: "display clock",
}
_NVML_CLOCK_SM = 1


def reasons_text(mask: int) -> str:
    return ", ".join(name for bit, name in REASONS.items() if mask & bit)


@dataclass
class Samples:
    clocks_mhz: list[int] = field(default_factory=list)
    power_mw: list[int] = field(default_factory=list)
    reasons: int = 0

    def summary(self, min_samples: int = 3) -> dict[str, Any]:
        """Fields for a run record; empty with too few samples to say anything."""
        if len(self.clocks_mhz) < min_samples:
            return {}
        out: dict[str, Any] = {
            "sm_clock_mhz": round(statistics.fmean(self.clocks_mhz)),
            "sm_clock_mhz_min": min(self.clocks_mhz),
            "sm_clock_mhz_max": max(self.clocks_mhz),
            "clock_samples": len(self.clocks_mhz),
            "clock_limited_by": reasons_text(self.reasons) or None,
        }
        if self.power_mw:
            out["power_w"] = round(statistics.fmean(self.power_mw) / 1000.0, 1)
        return out


class Device:
    """One GPU's NVML handle and the three readings the runner takes."""

    def __init__(self, lib: Any, handle: Any) -> None:
        self._lib, self._handle = lib, handle
        self._reasons = getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            lib, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )

    def read(self, into: Samples) -> None:
        clock, power, mask = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_ulonglong()
        if self._lib.nvmlDeviceGetClockInfo(self._handle, _NVML_CLOCK_SM, ctypes.byref(clock)) == 0:
            into.clocks_mhz.append(int(clock.value))
        if self._lib.nvmlDeviceGetPowerUsage(self._handle, ctypes.byref(power)) == 0:
            into.power_mw.append(int(power.value))
        if self._reasons is not None and self._reasons(self._handle, ctypes.byref(mask)) == 0:
            into.reasons |= int(mask.value)

    @contextmanager
    def sampling(self, period_s: float = 0.001) -> Iterator[Samples]:
        """Readings about every `period_s` from a background thread for as long as the block
        runs (NVML calls through ctypes let go of the GIL, so the thread keeps up while the
        main thread queues launches or sleeps waiting for them)."""
        got = Samples()
        stop = threading.Event()

        def loop() -> None:
            while not stop.is_set():
                self.read(got)
                stop.wait(period_s)

        thread = threading.Thread(target=loop, name="roofline-nvml", daemon=True)
        thread.start()
        try:
            yield got
        finally:
            stop.set()
            thread.join()


_opened: dict[str, Device | None] = {}


def open_device(pci_bus_id: str) -> Device | None:
    """The NVML device with this PCI bus id ("0000:19:00.0"), or None without NVML."""
    if pci_bus_id in _opened:
        return _opened[pci_bus_id]
    dev: Device | None = None
    try:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
        handle = ctypes.c_void_p()
        if lib.nvmlInit_v2() == 0 and (
            lib.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode(), ctypes.byref(handle)) == 0
        ):
            dev = Device(lib, handle)
    except (OSError, AttributeError):
        dev = None
    _opened[pci_bus_id] = dev
    return dev
