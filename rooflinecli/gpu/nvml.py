"""The SM clock while stages run, sampled through NVML (nvidia-ml-py, NVIDIA's own binding).

This module keeps only what the tool adds to the binding: readings about every millisecond from a
background thread while a stage's timed repeats run, summarised into record fields.

Datasheet peaks assume the boost clock; a card at its power cap runs well below it, and the
clock moves on a scale of tens of milliseconds (on an H200 it swung between 1,300 and
1,980 MHz within a second of 8192^3 GEMMs). One reading says little, so the runner reads NVML
about every millisecond while a stage's timed repeats are queued and run, and records the mean,
the range and every reason NVML gave for holding the clock down.

No NVML (no nvidia-ml-py, no driver, a CPU machine): `open_device` returns None and records simply
lack the clock fields.
"""

from __future__ import annotations

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

    def __init__(self, nvml: Any, handle: Any) -> None:
        self._nvml, self._handle = nvml, handle
        self._reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )

    def read(self, into: Samples) -> None:
        n, h = self._nvml, self._handle
        for what, call in (
            ("clock", lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)),
            ("power", lambda: n.nvmlDeviceGetPowerUsage(h)),
            ("reasons", lambda: self._reasons(h) if self._reasons else None),
        ):
            try:
                value = call()
            except n.NVMLError:
                continue  # a reading this GPU or driver does not give
            if value is None:
                continue
            if what == "clock":
                into.clocks_mhz.append(int(value))
            elif what == "power":
                into.power_mw.append(int(value))
            else:
                into.reasons |= int(value)

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
        import pynvml

        pynvml.nvmlInit()
        dev = Device(pynvml, pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id))
    except Exception:  # no nvidia-ml-py, no libnvidia-ml, no such device: no clock fields
        dev = None
    _opened[pci_bus_id] = dev
    return dev


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def identity(pci_bus_id: str) -> dict[str, Any]:
    """What tells this GPU from the others of its model: its index on the host (NVML's, which
    CUDA_VISIBLE_DEVICES does not renumber), UUID, serial ("unknown" where the board gives
    none), PCI bus id and power limit. Empty without NVML."""
    dev = open_device(pci_bus_id)
    if dev is None:
        return {}
    n, h = dev._nvml, dev._handle
    out: dict[str, Any] = {"pci_bus_id": pci_bus_id}
    for key, call, conv in (
        ("index", lambda: n.nvmlDeviceGetIndex(h), int),
        ("uuid", lambda: n.nvmlDeviceGetUUID(h), _text),
        ("serial", lambda: n.nvmlDeviceGetSerial(h), _text),
        ("power_limit_w", lambda: n.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0, float),
    ):
        try:
            out[key] = conv(call())
        except Exception:  # NVMLError_NotSupported and the like: the field is left out
            continue
    if not str(out.get("serial") or "").strip() or str(out.get("serial")).strip("0") == "":
        out["serial"] = "unknown"
    return out


def count() -> int | None:
    """How many GPUs NVML sees on this host (every one, whatever CUDA_VISIBLE_DEVICES says),
    or None without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return int(pynvml.nvmlDeviceGetCount())
    except Exception:
        return None
