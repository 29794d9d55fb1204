"""The one device probe: CuPy and its GPU, what a document records of them, nvidia-smi.

Everything that needs to know which GPU it runs on asks here (the runner, calibrate, measure(),
the probes under benchmarks/). CuPy is imported lazily, inside functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rooflinecli.errors import RooflineError

if TYPE_CHECKING:
    from rooflinecli.core import occupancy


def cupy():  # type: ignore[no-untyped-def]
    """The CuPy module with a usable CUDA device, or RooflineError in one line (exit 2)."""
    try:
        import cupy as cp
    except ImportError:
        raise RooflineError(
            "no CUDA device found: CuPy is not installed "
            "(pip install 'roofline[cuda13]' or 'roofline[cuda12]' on a GPU machine)"
        ) from None
    except Exception as exc:  # a CuPy that cannot find its CUDA libraries
        raise RooflineError(
            f"no CUDA device found: CuPy failed to load ({first_line(exc)})"
        ) from None
    try:
        count = cp.cuda.runtime.getDeviceCount()
    except Exception as exc:
        raise RooflineError(f"no CUDA device found ({first_line(exc)})") from None
    if count < 1:
        raise RooflineError("no CUDA device found")
    return cp


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]


def _on_path(name: str) -> str | None:
    """shutil.which for a program name on Linux, without importing shutil (it loads zlib, bz2
    and lzma, about 3 ms of `roofline model`'s start-up)."""
    import os

    for folder in os.get_exec_path():
        path = os.path.join(folder, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def smi(query: str, gpu: str = "0") -> list[str] | None:
    """One row of `nvidia-smi --query-gpu=QUERY` for one GPU (an index or a PCI bus id:
    nvidia-smi numbers GPUs as the host does, not as CUDA_VISIBLE_DEVICES does), or None without
    nvidia-smi."""
    exe = _on_path("nvidia-smi")
    if not exe:
        return None
    import subprocess  # only with nvidia-smi there: `model` without a GPU never loads it

    try:
        out = subprocess.run(
            [exe, f"--query-gpu={query}", "--format=csv,noheader,nounits", "-i", gpu],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    return [x.strip() for x in out.stdout.strip().splitlines()[0].split(",")]


def visible_gpu() -> str:
    """The GPU a program started from here runs on, as nvidia-smi's -i names it: the first of
    CUDA_VISIBLE_DEVICES (an index or a UUID), else 0."""
    import os

    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return first or "0"


def smi_bus_id(gpu: str = "0") -> str | None:
    """The PCI bus id of one GPU (an index or a UUID), from nvidia-smi."""
    got = smi("pci.bus_id", gpu)
    return got[0] if got and got[0] else None


def smi_device_name() -> str | None:
    """The GPU name from nvidia-smi, without CuPy (for `model`'s default spec)."""
    got = smi("name")
    return got[0] if got else None


def smi_compute_capability() -> str | None:
    """The GPU's compute capability ('9.0') from nvidia-smi, without CuPy."""
    got = smi("compute_cap")
    return got[0] if got and got[0].replace(".", "", 1).isdigit() else None


def smi_clock_mhz() -> int | None:
    """The SM clock nvidia-smi reports now."""
    got = smi("clocks.sm")
    return int(got[0]) if got and got[0].isdigit() else None


def _attr(cp, num: int) -> int | None:  # type: ignore[no-untyped-def]
    try:
        return int(cp.cuda.runtime.deviceGetAttribute(num, cp.cuda.Device().id)) or None
    except Exception:
        return None


def info() -> dict[str, Any]:
    """What a results document records of the current GPU: name, compute capability, SMs,
    memory, clocks, driver, CUDA driver and runtime, CuPy, NVRTC, the NVRTC target."""
    from rooflinecli.stages import compiler

    cp = cupy()
    rt = cp.cuda.runtime
    props = rt.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    cc = f"{props['major']}.{props['minor']}"
    drv = rt.driverGetVersion()
    rtv = rt.runtimeGetVersion()
    bus = _pci_bus_id(cp)
    got = smi("driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem", bus or "0")
    clock_khz = _attr(cp, 13)  # cudaDevAttrClockRate
    mem_khz = _attr(cp, 36)  # cudaDevAttrMemoryClockRate
    return {
        "name": name,
        "compute_capability": cc,
        "sm_count": int(props["multiProcessorCount"]),
        "l2_bytes": int(props["l2CacheSize"]),
        "memory_bytes": int(props["totalGlobalMem"]),
        "smem_per_block_optin_bytes": int(props.get("sharedMemPerBlockOptin", 0)) or None,
        "clock_sm_max_mhz": int(got[2]) if got else (clock_khz // 1000 if clock_khz else None),
        "clock_sm_mhz_at_start": int(got[1]) if got else None,
        "clock_mem_max_mhz": int(got[4]) if got else (mem_khz // 1000 if mem_khz else None),
        "memory_bus_width_bits": _attr(cp, 37),  # cudaDevAttrGlobalMemoryBusWidth
        "driver": got[0] if got else None,
        "cuda_driver": f"{drv // 1000}.{drv % 1000 // 10}",
        "cuda_runtime": f"{rtv // 1000}.{rtv % 1000 // 10}",
        "cupy": cp.__version__,
        "nvrtc": compiler.nvrtc_version(),
        "arch": compiler.arch_for_cc(cc),
        **identity(bus),
    }


def _pci_bus_id(cp) -> str | None:  # type: ignore[no-untyped-def]
    try:
        return str(cp.cuda.Device().pci_bus_id)
    except Exception:
        return None


def identity(bus: str | None) -> dict[str, Any]:
    """The GPU's index on the host, UUID, serial, PCI bus id and power limit (gpu.nvml), from
    nvidia-smi where NVML is missing; only the bus id where neither is there."""
    from rooflinecli.gpu import nvml

    if not bus:
        return {}
    got = nvml.identity(bus)
    if got:
        return got
    row = smi("index,uuid,serial,power.limit", bus)
    if not row or len(row) < 4:
        return {"pci_bus_id": bus}
    out: dict[str, Any] = {"pci_bus_id": bus, "uuid": row[1]}
    if row[0].isdigit():
        out["index"] = int(row[0])
    out["serial"] = (
        row[2] if row[2] and row[2].strip("0") and not row[2].startswith("[") else "unknown"
    )
    try:
        out["power_limit_w"] = float(row[3])
    except ValueError:
        pass
    return out


def host_gpus() -> int | None:
    """How many GPUs the host has (NVML, else `nvidia-smi -L`), or None where neither says."""
    from rooflinecli.gpu import nvml

    n = nvml.count()
    if n is not None:
        return n
    exe = _on_path("nvidia-smi")
    if not exe:
        return None
    import subprocess

    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def sm_limits() -> occupancy.SmLimits:
    """The current GPU's per-SM limits, for occupancy and grid sizing."""
    from rooflinecli.core import occupancy

    cp = cupy()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    return occupancy.SmLimits(
        cc=int(props["major"]) * 10 + int(props["minor"]),
        registers_per_sm=int(props.get("regsPerMultiprocessor", 65536)),
        max_threads_per_sm=int(props.get("maxThreadsPerMultiProcessor", 2048)),
        max_blocks_per_sm=int(props.get("maxBlocksPerMultiProcessor", 32)),
        smem_per_sm_bytes=int(props.get("sharedMemPerMultiprocessor", 228 * 1024)),
        smem_per_block_bytes=int(props.get("sharedMemPerBlockOptin", 227 * 1024)),
    )


def l2_bytes() -> int:
    cp = cupy()
    return int(cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["l2CacheSize"])


def clock_sampler():  # type: ignore[no-untyped-def]
    """NVML for the current device (rooflinecli.gpu.nvml), or None where there is none."""
    from rooflinecli.gpu import nvml

    bus = _pci_bus_id(cupy())
    return nvml.open_device(bus) if bus else None
