"""Empirical ceilings (ERT-style): this GPU's own roofs, and the three roof sets reports can use.

The pure part (the calibration cache) imports no CuPy; the roof sets built from a calibration
are computed in rooflinecli.core.roofs. `measure()` runs the kernels (kernels/calibrate/*.cu) on
the GPU: each is compiled by NVRTC (compiler.compile_source), loaded with cupy.RawModule and
timed by the one timer (rooflinecli.gpu.timer).

Roofs measured:
- HBM read: a read-only reduction over >= 2 GiB, 16-byte loads; bytes read / time.
- HBM copy: cudaMemcpy device to device of >= 2 GiB; bytes read + written / time.
- L2 read: repeated passes over a buffer of a quarter of the L2, loads that skip L1 (ld.cg).
- FP32 SIMT: 16 independent fmaf chains per thread, a grid that fills every SM several times.
- FP16 Tensor Core, mma.sync.m16n8k16 (f32 accumulate) on register operands, 8 independent
  accumulators per warp (sm_80+).
- FP16 Tensor Core, wgmma.mma_async m64n256k16 (f32 accumulate) from shared-memory descriptors
  (sm_90a only).

"""

from __future__ import annotations

import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rooflinecli import __version__, doc_check, files, paths
from rooflinecli.errors import RooflineError
from rooflinecli.paths import data_dir, read_json

SCHEMA = "roofline.calibration/1"
GIB = 1 << 30


# --------------------------------------------------------------------------- kernels (CUDA C++)

# The sources are kernels/calibrate/*.cu, compiled with the stages' include path (the PTX
# headers); the parameters below reach them as -D defines.
FP32_CHAINS, FP32_UNROLL = 16, 8  # independent FMA chains per thread, steps per loop iteration
MMA_SYNC_NACC = 8  # independent mma.sync accumulators per warp
MMA_FLOPS = 16 * 8 * 16 * 2  # one m16n8k16 for a warp
WGMMA_N, WGMMA_KSTEPS = 256, 16  # wgmma m64nNk16, wgmmas per commit
WGMMA_FLOPS = 64 * WGMMA_N * 16 * 2  # one m64n256k16 for a warpgroup

# name -> (source file, entry, defines, lowest compute capability, needs the sm_90a target)
KERNELS: dict[str, tuple[str, str, dict[str, int | str], int, bool]] = {
    "cal_hbm_read": ("mem_read.cu", "mem_read", {"LOAD": "__ldg"}, 50, False),
    "cal_l2_read": ("mem_read.cu", "mem_read", {"LOAD": "__ldcg"}, 50, False),
    "cal_fp32_fma": (
        "fp32_fma.cu",
        "fp32_fma",
        {"CHAINS": FP32_CHAINS, "UNROLL": FP32_UNROLL},
        50,
        False,
    ),
    "cal_mma_sync": ("tensor_core.cu", "tc_mma_sync", {"NACC": MMA_SYNC_NACC}, 80, False),
    "cal_wgmma": (
        "tensor_core.cu",
        "tc_wgmma",
        {"WG_N": WGMMA_N, "KSTEPS": WGMMA_KSTEPS},
        90,
        True,
    ),
}


def kernel_source(name: str) -> str:
    """The CUDA source of one calibration kernel (kernels/calibrate/)."""
    path = data_dir("kernels") / "calibrate" / KERNELS[name][0]
    try:
        return path.read_text()
    except OSError as exc:
        raise RooflineError(f"cannot read kernel source {path}: {exc.strerror}") from None


def compile_kernel(name: str, arch: str):  # type: ignore[no-untyped-def]
    """Compile one calibration kernel (NVRTC, cached). Returns compiler.Compiled."""
    from rooflinecli.stages import compiler

    _file, entry, defines, _cc, _arch_a = KERNELS[name]
    return compiler.compile_source(kernel_source(name), name, entry, arch, defines)


def kernels_for(arch: str) -> list[str]:
    """The calibration kernels that build for this target (wgmma needs exactly sm_90a)."""
    from rooflinecli.stages.compiler import cc_of_arch

    cc = cc_of_arch(arch)
    out = []
    for name, (_src, _entry, _defs, min_cc, needs_a) in KERNELS.items():
        if cc < min_cc or (needs_a and arch != "sm_90a"):
            continue
        out.append(name)
    return out


# --------------------------------------------------------------------------- the cache (pure)


def calibration_path(device_name: str, driver: str | None, clock_mhz: int | None) -> Path:
    """A calibration is kept per GPU, driver and SM clock (a driver's version keeps its dots)."""
    name = f"{device_name}-drv{driver or 'unknown'}-{clock_mhz or 0}mhz"
    return paths.cache_file("calibration", name, keep=".")


# the numbers core.roofs reads of a calibration: each a positive finite number or null
_DEVICE_NUMBERS = ("clock_sm_max_mhz", "sm_count", "clock_mem_max_mhz", "memory_bus_width_bits")


def check_calibration(doc: Any, where: str) -> dict[str, Any]:
    """A calibration document (`roofline calibrate`) as core.roofs reads it, or one RooflineError
    line naming the file and the field."""
    import math

    if not isinstance(doc, dict):
        kinds = {list: "a list", str: "a string", bool: "true or false", type(None): "null"}
        got = kinds.get(type(doc), "a number")
        raise RooflineError(f"{where} is not a calibration document ({SCHEMA}): it holds {got}")
    if doc.get("schema") != SCHEMA:
        raise RooflineError(f"{where} is not a calibration document ({SCHEMA})")
    doc_check.numbers(doc, where)  # whole numbers in 64 bits, the rest 0 or of a sane size
    measurements = doc.get("measurements")
    if not isinstance(measurements, dict):
        raise RooflineError(f"{where} has no measurements (an object of roofs)")
    device = doc.get("device")
    if device is not None and not isinstance(device, dict):
        raise RooflineError(f"{where}: 'device' must be an object or null")

    def number(v: Any) -> bool:
        ok = isinstance(v, int | float) and not isinstance(v, bool)
        return v is None or (ok and math.isfinite(v) and v > 0)

    for key, v in measurements.items():
        if not number(v):
            raise RooflineError(f"{where}: measurements.{key} = {str(v)[:40]} is not a roof")
    for key in _DEVICE_NUMBERS:
        if not number((device or {}).get(key)):
            raise RooflineError(f"{where}: device.{key} must be a positive number or null")
    name = (device or {}).get("name")
    if name is not None and not isinstance(name, str):
        raise RooflineError(f"{where}: device.name must be a string")
    return doc


def read_calibration(path: str | Path) -> dict[str, Any]:
    """The calibration file a user names (--calibration): read by the one reader, checked."""
    return check_calibration(read_json(path, "calibration file"), str(path))


def load_calibration(
    device_name: str, driver: str | None, clock_mhz: int | None
) -> dict[str, Any] | None:
    """The cached calibration of this device, driver and maximum SM clock, or None (none
    cached, or one damaged: `roofline calibrate` writes it again)."""
    path = calibration_path(device_name, driver, clock_mhz)
    if not path.is_file():
        return None
    try:
        return check_calibration(read_json(path, "cached calibration"), str(path))
    except RooflineError:
        return None


def save_calibration(doc: dict[str, Any]) -> Path:
    from rooflinecli import results

    dev = doc["device"]
    path = calibration_path(dev["name"], dev.get("driver"), dev.get("clock_sm_max_mhz"))
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(path, results.dumps(doc))
    return path


# --------------------------------------------------------------------------- measuring (GPU)


def _grid_for(fn, threads: int, limits, sm_count: int, waves: int) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """Blocks per SM the kernel's registers and shared memory allow, and a grid of whole waves."""
    from rooflinecli.core import occupancy

    occ = occupancy.theoretical(limits, threads, int(fn.num_regs), int(fn.shared_size_bytes))
    per_sm = max(1, occ.blocks_per_sm)
    return per_sm, sm_count * per_sm * waves


def _summary(times: list[float]) -> dict[str, Any]:
    return {
        "median_ms": statistics.median(times),
        "min_ms": min(times),
        "max_ms": max(times),
        "repeats": len(times),
    }


class _Run:
    """One calibration on the GPU: the one timer (fixed counts, no L2 flush, no stream hold),
    the kernels' output and sentinel, and what is measured so far (measurements, details,
    notes)."""

    def __init__(self, cp, dev: dict[str, Any], quick: bool, progress) -> None:  # type: ignore[no-untyped-def]
        import numpy as np

        from rooflinecli.gpu import device
        from rooflinecli.gpu.timer import Timer, Timing

        self.cp, self.np, self.dev = cp, np, dev
        self.limits = device.sm_limits()
        self.sms, self.arch = dev["sm_count"], dev["arch"]
        repeats, warmup = (5, 1) if quick else (15, 3)
        self.target_ms = 4.0 if quick else 15.0
        # the one timer, with fixed counts and no L2 flush (each kernel sizes its own buffers),
        # and no stream hold: each kernel is sized to run target_ms (4-15 ms), a thousand times
        # what the host needs to queue the next, so the GPU never waits inside an interval
        self.timer = Timer(
            Timing(
                warmup_ms=0.0,
                warmup_min=warmup,
                min_repeats=repeats,
                max_repeats=repeats,
                flush_l2=False,
                sample_clock=False,
                hold=False,
            )
        )
        self.tick = progress or (lambda _label: None)
        self.meas: dict[str, float | None] = {}
        self.details: dict[str, Any] = {}
        self.notes: list[str] = []
        self.sentinel = np.float32(-1.2345e30)
        # written only if a sum hits the sentinel
        self.out = cp.zeros(self.sms * 32 * 1024, dtype=cp.float32)

    def samples(self, launch) -> list[float]:  # type: ignore[no-untyped-def]
        """The launch's timed repeats (ms), through the one timer."""
        from rooflinecli.gpu.timer import Launch

        return self.timer.time([Launch("calibrate", launch)]).samples[0]

    def load(self, name: str):  # type: ignore[no-untyped-def]
        built = compile_kernel(name, self.arch)
        if built.resources and built.resources.spill_bytes:
            self.notes.append(f"{name}: {built.resources.spill_bytes} bytes of spills")
        mod = self.cp.RawModule(path=built.cubin_path)
        return mod.get_function(KERNELS[name][1]), built

    def memory_roofs(self) -> None:  # its buffers are freed when it returns
        cp, np, meas, details = self.cp, self.np, self.meas, self.details
        # ---- HBM read: one pass over >= 2 GiB, 16-byte loads
        self.tick("HBM read")
        nbytes = 2 * GIB
        try:  # random data: never time zeros
            buf = cp.random.default_rng(0).random(nbytes // 4, dtype=cp.float32)
            dst = cp.empty_like(buf)
        except cp.cuda.memory.OutOfMemoryError:
            raise RooflineError("out of device memory: calibration needs 4 GiB free") from None
        fn, built = self.load("cal_hbm_read")
        _per_sm, grid = _grid_for(fn, 256, self.limits, self.sms, 1)
        hbm_args = (buf, np.int64(nbytes // 16), np.int32(1), self.sentinel, self.out)
        t = _summary(self.samples(lambda: fn((grid,), (256,), hbm_args)))
        meas["hbm_read_gbs"] = nbytes / (t["median_ms"] * 1e-3) / 1e9
        regs = built.resources.registers if built.resources else None
        details["hbm_read"] = {**t, "bytes": nbytes, "grid": grid, "block": 256, "registers": regs}

        # ---- HBM copy: cudaMemcpy device to device, bytes read + written
        self.tick("HBM copy")
        stream = cp.cuda.get_current_stream()
        t = _summary(
            self.samples(lambda: dst.data.copy_from_device_async(buf.data, nbytes, stream))
        )
        meas["hbm_copy_gbs"] = 2 * nbytes / (t["median_ms"] * 1e-3) / 1e9
        details["hbm_copy"] = {**t, "bytes_read": nbytes, "bytes_written": nbytes}

        # ---- L2: passes over a quarter of the L2, loads cached in L2 only
        self.tick("L2 read")
        l2_bytes = (self.dev["l2_bytes"] // 4) // (16 * 256) * (16 * 256)
        fn2, built = self.load("cal_l2_read")
        _per_sm, grid2 = _grid_for(fn2, 256, self.limits, self.sms, 1)
        l2_args = [buf[: l2_bytes // 4], np.int64(l2_bytes // 16), np.int32(64), self.sentinel,
                   self.out]  # fmt: skip
        fn2((grid2,), (256,), tuple(l2_args))  # the first pass fetches the buffer into L2
        one = self.timer.once(lambda: fn2((grid2,), (256,), tuple(l2_args)))
        passes = int(min(1 << 20, max(16, 64 * self.target_ms / one)))
        l2_args[2] = np.int32(passes)
        t = _summary(self.samples(lambda: fn2((grid2,), (256,), tuple(l2_args))))
        meas["l2_read_gbs"] = l2_bytes * passes / (t["median_ms"] * 1e-3) / 1e9
        details["l2_read"] = {**t, "buffer_bytes": l2_bytes, "passes": passes, "grid": grid2,
                              "block": 256}  # fmt: skip

    def compute(
        self, name: str, threads: int, flops_per_iter_per_block: int, args, waves: int = 4
    ) -> tuple[float, dict[str, Any]]:  # type: ignore[no-untyped-def]
        """A compute roof: the loop count scaled so one launch runs about target_ms."""
        np = self.np
        fn, built = self.load(name)
        per_sm, grid = _grid_for(fn, threads, self.limits, self.sms, waves)
        call = [np.int32(256), *args, self.out]

        def launch() -> None:
            fn((grid,), (threads,), tuple(call))

        launch()  # module load, first-launch costs
        one = self.timer.once(launch)
        iters = int(min(1 << 24, max(64, 256 * self.target_ms / one)))
        call[0] = np.int32(iters)
        t = _summary(self.samples(launch))
        flops = flops_per_iter_per_block * grid * iters
        tflops = flops / (t["median_ms"] * 1e-3) / 1e12
        regs = built.resources.registers if built.resources else None
        info = {**t, "flops": flops, "iters": iters, "grid": grid, "block": threads,
                "blocks_per_sm": per_sm, "registers": regs}  # fmt: skip
        return tflops, info

    def tensor(self, key: str, label: str, name: str, threads: int, flops_per_iter: int) -> None:
        """A Tensor Core roof; a failure (an old driver, a faulting kernel) leaves it out with
        a note instead of losing the roofs already measured."""
        self.meas[key] = None
        if name not in kernels_for(self.arch):
            need = "the sm_90a target" if KERNELS[name][4] else "sm_80 or later"
            self.notes.append(f"{label} left out: it needs {need} (this GPU: {self.arch})")
            return
        self.tick(label)
        try:
            self.meas[key], self.details[key.removesuffix("_tflops")] = self.compute(
                name, threads, flops_per_iter, (self.sentinel,)
            )
        except RooflineError as exc:
            self.notes.append(f"{label} left out: {exc.message}")
        except Exception as exc:  # CUDA errors from CuPy: one line, keep the rest
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            self.notes.append(f"{label} left out: {type(exc).__name__}: {first}")


def measure(
    spec_arg: str | None = None,
    quick: bool = False,
    progress=None,  # type: ignore[no-untyped-def]
) -> dict[str, Any]:
    """Run every calibration kernel on GPU 0 and return the calibration document."""
    import numpy as np

    from rooflinecli.core import specs
    from rooflinecli.gpu import device

    cp = device.cupy()
    dev = device.info()
    spec = None
    try:
        spec = specs.choose(spec_arg, dev["name"], default=None).spec
    except RooflineError:
        if spec_arg:
            raise
    run = _Run(cp, dev, quick, progress)
    run.memory_roofs()
    cp.get_default_memory_pool().free_all_blocks()
    run.tick("FP32 FMA")
    run.meas["fp32_fma_tflops"], run.details["fp32_fma"] = run.compute(
        "cal_fp32_fma",
        256,
        256 * FP32_CHAINS * FP32_UNROLL * 2,
        (np.float32(0.999), np.float32(1e-3), run.sentinel),
    )
    run.tensor(
        "fp16_mma_sync_tflops", "FP16 mma.sync", "cal_mma_sync", 256,
        (256 // 32) * MMA_SYNC_NACC * MMA_FLOPS,
    )  # fmt: skip
    run.tensor(
        "fp16_wgmma_tflops", "FP16 wgmma", "cal_wgmma", 128, WGMMA_KSTEPS * WGMMA_FLOPS
    )  # fmt: skip
    try:
        cp.cuda.runtime.deviceSynchronize()
    except Exception as exc:  # a kernel above broke the context: the notes say which
        run.notes.append(f"the CUDA context is broken after the tensor roofs: {exc}")
    dev["clock_sm_mhz_after"] = device.smi_clock_mhz()
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "tool_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": quick,
        "device": dev,
        "spec": spec.name if spec else None,
        "measurements": run.meas,
        "details": run.details,
        "notes": run.notes,
    }
    if spec is not None:
        from rooflinecli.core.roofs import roof_sets

        doc["roof_sets"] = roof_sets(spec, doc)
    return doc
