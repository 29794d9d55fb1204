"""Empirical ceilings (ERT-style): this GPU's own roofs, and the three roof sets reports can use.

The pure part (roof_sets, the calibration cache) imports no CuPy. `measure()` runs the kernels
(kernels/calibrate/*.cu) on the GPU: each is compiled by NVRTC (compiler.compile_source), loaded
with cupy.RawModule and timed with CUDA events (warm-up, median of repeats).

Roofs measured:
- HBM read: a read-only reduction over >= 2 GiB, 16-byte loads; bytes read / time.
- HBM copy: cudaMemcpy device to device of >= 2 GiB; bytes read + written / time.
- L2 read: repeated passes over a buffer of a quarter of the L2, loads that skip L1 (ld.cg).
- FP32 SIMT: 16 independent fmaf chains per thread, a grid that fills every SM several times.
- FP16 Tensor Core, mma.sync.m16n8k16 (f32 accumulate) on register operands, 8 independent
  accumulators per warp (sm_80+).
- FP16 Tensor Core, wgmma.mma_async m64n256k16 (f32 accumulate) from shared-memory descriptors
  (sm_90a only).

Roof sets: "datasheet" (the spec), "derived" (SMs x clock x operations per clock per SM, the
seed's 132 x 1830 MHz x 4096 = 989.4 TFLOP/s), "measured" (the calibration).
"""

from __future__ import annotations

import json
import math
import re
import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rooflinecli import __version__
from rooflinecli.errors import RooflineError
from rooflinecli.paths import cache_dir, data_dir

SCHEMA = "roofline.calibration/1"
GIB = 1 << 30

# Dense FP16 Tensor Core FLOPs per clock per SM (f32 accumulate), by compute capability.
# Hopper: 4 Tensor Cores x 1024; A100: 4 x 512. Others: derived from the datasheet (below).
TC_FP16_FLOPS_PER_CLK_SM: dict[int, int] = {90: 4096, 80: 2048}

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
    from rooflinecli import compiler

    _file, entry, defines, _cc, _arch_a = KERNELS[name]
    return compiler.compile_source(kernel_source(name), name, entry, arch, defines)


def kernels_for(arch: str) -> list[str]:
    """The calibration kernels that build for this target (wgmma needs exactly sm_90a)."""
    from rooflinecli.compiler import cc_of_arch

    cc = cc_of_arch(arch)
    out = []
    for name, (_src, _entry, _defs, min_cc, needs_a) in KERNELS.items():
        if cc < min_cc or (needs_a and arch != "sm_90a"):
            continue
        out.append(name)
    return out


# --------------------------------------------------------------------------- roof sets (pure)


def tc_fp16_flops_per_clk_sm(spec: Any) -> tuple[int | None, str]:
    """Dense FP16 Tensor Core FLOPs per clock per SM and where the figure comes from."""
    major, minor = (int(x) for x in spec.compute_capability.split("."))
    cc = major * 10 + minor
    if cc in TC_FP16_FLOPS_PER_CLK_SM:
        return TC_FP16_FLOPS_PER_CLK_SM[cc], f"architecture (cc {spec.compute_capability})"
    peak = spec.tflops.get("fp16_tensor_dense")
    if not peak:
        return None, "no FP16 Tensor Core peak in the spec"
    per = peak * 1e6 / (spec.sm_count * spec.boost_clock_mhz)
    return 2 ** round(math.log2(per)), "datasheet / (SMs x boost clock), nearest power of 2"


def _set(fp32: float | None, fp16: float | None, bw: float | None, **extra: Any) -> dict[str, Any]:
    def ridge(peak: float | None) -> float | None:
        return peak * 1000.0 / bw if peak and bw else None

    return {
        "fp32": fp32,
        "fp16_tensor_dense": fp16,
        "bandwidth_gbs": bw,
        "ridge_fp32": ridge(fp32),
        "ridge_fp16_tensor": ridge(fp16),
        **extra,
    }


def roof_sets(
    spec: Any, calibration: dict[str, Any] | None = None, clock_mhz: float | None = None
) -> dict[str, dict[str, Any]]:
    """Roofs (TFLOP/s, GB/s, ridge points in FLOP/byte) by set: datasheet, derived, measured.

    derived = SMs x clock x operations per clock per SM (FP32: 2 per lane; FP16 Tensor Core:
    4096 on Hopper, 2048 on A100), at `clock_mhz`, else the calibrated device's maximum SM
    clock, else the spec's boost clock; its bandwidth is 2 x memory clock x bus width when the
    calibration recorded both, else the datasheet's. measured is present with a calibration."""
    dev = (calibration or {}).get("device") or {}
    sets: dict[str, dict[str, Any]] = {
        "datasheet": _set(
            spec.tflops.get("fp32"),
            spec.tflops.get("fp16_tensor_dense"),
            spec.memory_bandwidth_gbs,
            source=f"spec {spec.name}",
        )
    }
    clock = clock_mhz or dev.get("clock_sm_max_mhz") or spec.boost_clock_mhz
    sms = dev.get("sm_count") or spec.sm_count
    tc, tc_why = tc_fp16_flops_per_clk_sm(spec)
    mem_clock, bus = dev.get("clock_mem_max_mhz"), dev.get("memory_bus_width_bits")
    if mem_clock and bus:
        bw, bw_why = 2 * mem_clock * bus / 8 / 1000.0, "2 x memory clock x bus width"
    else:
        bw, bw_why = spec.memory_bandwidth_gbs, "datasheet (memory clock or bus width unknown)"
    sets["derived"] = _set(
        sms * clock * spec.fp32_lanes_per_sm * 2 / 1e6,
        sms * clock * tc / 1e6 if tc else None,
        bw,
        clock_mhz=clock,
        sm_count=sms,
        fp32_flops_per_clk_sm=spec.fp32_lanes_per_sm * 2,
        fp16_tensor_flops_per_clk_sm=tc,
        source=f"SMs x {clock:g} MHz x FLOP/clk/SM (tensor: {tc_why}); bandwidth: {bw_why}",
    )
    if calibration:
        m = calibration.get("measurements", {})
        tensor = [m.get("fp16_wgmma_tflops"), m.get("fp16_mma_sync_tflops")]
        hbm = [m.get("hbm_read_gbs"), m.get("hbm_copy_gbs")]
        sets["measured"] = _set(
            m.get("fp32_fma_tflops"),
            max((t for t in tensor if t), default=None),
            max((b for b in hbm if b), default=None),
            l2_gbs=m.get("l2_read_gbs"),
            # the ceiling of kernels whose math is mma.sync (place_on_roofs puts them under it)
            fp16_mma_sync_tensor=m.get("fp16_mma_sync_tflops"),
            source=f"calibration of {dev.get('name', '?')} ({calibration.get('created', '?')}): "
            "best of wgmma/mma.sync, best of HBM read/copy",
        )
    return sets


# --------------------------------------------------------------------------- the cache (pure)


def slug(device_name: str, driver: str | None, clock_mhz: int | None) -> str:
    raw = f"{device_name}-drv{driver or 'unknown'}-{clock_mhz or 0}mhz".lower()
    return re.sub(r"[^a-z0-9.]+", "-", raw).strip("-")


def calibration_path(device_name: str, driver: str | None, clock_mhz: int | None) -> Path:
    return cache_dir() / "calibration" / f"{slug(device_name, driver, clock_mhz)}.json"


def load_calibration(
    device_name: str, driver: str | None, clock_mhz: int | None
) -> dict[str, Any] | None:
    """The cached calibration of this device, driver and maximum SM clock, or None."""
    path = calibration_path(device_name, driver, clock_mhz)
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        return None
    if not isinstance(doc.get("measurements"), dict):
        return None
    return doc


def save_calibration(doc: dict[str, Any]) -> Path:
    from rooflinecli import results

    dev = doc["device"]
    path = calibration_path(dev["name"], dev.get("driver"), dev.get("clock_sm_max_mhz"))
    path.parent.mkdir(parents=True, exist_ok=True)
    results.write_atomic(path, results.dumps(doc))
    return path


# --------------------------------------------------------------------------- measuring (GPU)


class _Timer:
    def __init__(self, cp, warmup: int, repeats: int):  # type: ignore[no-untyped-def]
        self.cp, self.warmup, self.repeats = cp, warmup, repeats

    def __call__(self, launch) -> list[float]:  # type: ignore[no-untyped-def]
        cp = self.cp
        for _ in range(self.warmup):
            launch()
        starts = [cp.cuda.Event() for _ in range(self.repeats)]
        ends = [cp.cuda.Event() for _ in range(self.repeats)]
        for s, e in zip(starts, ends, strict=True):
            s.record()
            launch()
            e.record()
        ends[-1].synchronize()
        return [cp.cuda.get_elapsed_time(s, e) for s, e in zip(starts, ends, strict=True)]

    def once(self, launch) -> float:  # type: ignore[no-untyped-def]
        cp = self.cp
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        launch()
        e.record()
        e.synchronize()
        return max(cp.cuda.get_elapsed_time(s, e), 1e-3)


def _grid_for(fn, threads: int, limits, sm_count: int, waves: int) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """Blocks per SM the kernel's registers and shared memory allow, and a grid of whole waves."""
    from rooflinecli import occupancy

    occ = occupancy.theoretical(limits, threads, int(fn.num_regs), int(fn.shared_size_bytes))
    per_sm = max(1, occ.blocks_per_sm)
    return per_sm, sm_count * per_sm * waves


def _attr(cp, num: int) -> int | None:  # type: ignore[no-untyped-def]
    try:
        return int(cp.cuda.runtime.deviceGetAttribute(num, 0)) or None
    except Exception:
        return None


def _summary(times: list[float]) -> dict[str, Any]:
    return {
        "median_ms": statistics.median(times),
        "min_ms": min(times),
        "max_ms": max(times),
        "repeats": len(times),
    }


def measure(
    spec_arg: str | None = None,
    quick: bool = False,
    progress=None,  # type: ignore[no-untyped-def]
) -> dict[str, Any]:
    """Run every calibration kernel on GPU 0 and return the calibration document."""
    import numpy as np

    from rooflinecli import occupancy, runner
    from rooflinecli import specs as specreg

    cp = runner._cupy()
    dev = runner.device_info()
    dev["memory_bus_width_bits"] = _attr(cp, 37)  # cudaDevAttrGlobalMemoryBusWidth
    if not dev.get("clock_mem_max_mhz"):  # no nvidia-smi: cudaDevAttrMemoryClockRate (kHz)
        khz = _attr(cp, 36)
        dev["clock_mem_max_mhz"] = khz // 1000 if khz else None
    spec = None
    try:
        spec = specreg.resolve(spec_arg) if spec_arg else specreg.for_device(dev["name"])
    except RooflineError:
        if spec_arg:
            raise
    props = cp.cuda.runtime.getDeviceProperties(0)
    major, minor = int(props["major"]), int(props["minor"])
    limits = occupancy.SmLimits(
        cc=major * 10 + minor,
        registers_per_sm=int(props.get("regsPerMultiprocessor", 65536)),
        max_threads_per_sm=int(props.get("maxThreadsPerMultiProcessor", 2048)),
        max_blocks_per_sm=int(props.get("maxBlocksPerMultiProcessor", 32)),
        smem_per_sm_bytes=int(props.get("sharedMemPerMultiprocessor", 228 * 1024)),
        smem_per_block_bytes=int(props.get("sharedMemPerBlockOptin", 227 * 1024)),
    )
    sms = dev["sm_count"]
    arch = dev["arch"]
    repeats, warmup = (5, 1) if quick else (15, 3)
    target_ms = 4.0 if quick else 15.0
    timer = _Timer(cp, warmup, repeats)
    tick = progress or (lambda _label: None)
    meas: dict[str, float | None] = {}
    details: dict[str, Any] = {}
    notes: list[str] = []
    sentinel = np.float32(-1.2345e30)
    out = cp.zeros(sms * 32 * 1024, dtype=cp.float32)  # written only if a sum hits the sentinel

    def load(name: str):  # type: ignore[no-untyped-def]
        built = compile_kernel(name, arch)
        if built.resources and built.resources.spill_bytes:
            notes.append(f"{name}: {built.resources.spill_bytes} bytes of spills")
        mod = cp.RawModule(path=built.cubin_path)
        return mod.get_function(KERNELS[name][1]), built

    def memory_roofs() -> None:  # its buffers are freed when it returns
        # ---- HBM read: one pass over >= 2 GiB, 16-byte loads
        tick("HBM read")
        nbytes = 2 * GIB
        try:  # random data: never time zeros
            buf = cp.random.default_rng(0).random(nbytes // 4, dtype=cp.float32)
            dst = cp.empty_like(buf)
        except cp.cuda.memory.OutOfMemoryError:
            raise RooflineError("out of device memory: calibration needs 4 GiB free") from None
        fn, built = load("cal_hbm_read")
        _per_sm, grid = _grid_for(fn, 256, limits, sms, 1)
        hbm_args = (buf, np.int64(nbytes // 16), np.int32(1), sentinel, out)
        t = _summary(timer(lambda: fn((grid,), (256,), hbm_args)))
        meas["hbm_read_gbs"] = nbytes / (t["median_ms"] * 1e-3) / 1e9
        regs = built.resources.registers if built.resources else None
        details["hbm_read"] = {**t, "bytes": nbytes, "grid": grid, "block": 256, "registers": regs}

        # ---- HBM copy: cudaMemcpy device to device, bytes read + written
        tick("HBM copy")
        stream = cp.cuda.get_current_stream()
        t = _summary(timer(lambda: dst.data.copy_from_device_async(buf.data, nbytes, stream)))
        meas["hbm_copy_gbs"] = 2 * nbytes / (t["median_ms"] * 1e-3) / 1e9
        details["hbm_copy"] = {**t, "bytes_read": nbytes, "bytes_written": nbytes}

        # ---- L2: passes over a quarter of the L2, loads cached in L2 only
        tick("L2 read")
        l2_bytes = (dev["l2_bytes"] // 4) // (16 * 256) * (16 * 256)
        fn2, built = load("cal_l2_read")
        _per_sm, grid2 = _grid_for(fn2, 256, limits, sms, 1)
        l2_args = [buf[: l2_bytes // 4], np.int64(l2_bytes // 16), np.int32(64), sentinel, out]
        fn2((grid2,), (256,), tuple(l2_args))  # the first pass fetches the buffer into L2
        one = timer.once(lambda: fn2((grid2,), (256,), tuple(l2_args)))
        passes = int(min(1 << 20, max(16, 64 * target_ms / one)))
        l2_args[2] = np.int32(passes)
        t = _summary(timer(lambda: fn2((grid2,), (256,), tuple(l2_args))))
        meas["l2_read_gbs"] = l2_bytes * passes / (t["median_ms"] * 1e-3) / 1e9
        details["l2_read"] = {**t, "buffer_bytes": l2_bytes, "passes": passes, "grid": grid2,
                              "block": 256}  # fmt: skip

    memory_roofs()
    cp.get_default_memory_pool().free_all_blocks()

    # ---- compute roofs: scale the loop count so one launch runs about target_ms
    def compute(
        name: str, threads: int, flops_per_iter_per_block: int, args, waves: int = 4
    ) -> tuple[float, dict[str, Any]]:  # type: ignore[no-untyped-def]
        fn, built = load(name)
        per_sm, grid = _grid_for(fn, threads, limits, sms, waves)
        call = [np.int32(256), *args, out]

        def launch() -> None:
            fn((grid,), (threads,), tuple(call))

        launch()  # module load, first-launch costs
        one = timer.once(launch)
        iters = int(min(1 << 24, max(64, 256 * target_ms / one)))
        call[0] = np.int32(iters)
        t = _summary(timer(launch))
        flops = flops_per_iter_per_block * grid * iters
        tflops = flops / (t["median_ms"] * 1e-3) / 1e12
        regs = built.resources.registers if built.resources else None
        info = {**t, "flops": flops, "iters": iters, "grid": grid, "block": threads,
                "blocks_per_sm": per_sm, "registers": regs}  # fmt: skip
        return tflops, info

    tick("FP32 FMA")
    meas["fp32_fma_tflops"], details["fp32_fma"] = compute(
        "cal_fp32_fma",
        256,
        256 * FP32_CHAINS * FP32_UNROLL * 2,
        (np.float32(0.999), np.float32(1e-3), sentinel),
    )
    available = kernels_for(arch)

    def tensor(key: str, label: str, name: str, threads: int, flops_per_iter: int) -> None:
        """A Tensor Core roof; a failure (an old driver, a faulting kernel) leaves it out with
        a note instead of losing the roofs already measured."""
        meas[key] = None
        if name not in available:
            need = "the sm_90a target" if KERNELS[name][4] else "sm_80 or later"
            notes.append(f"{label} left out: it needs {need} (this GPU: {arch})")
            return
        tick(label)
        try:
            meas[key], details[key.removesuffix("_tflops")] = compute(
                name, threads, flops_per_iter, (sentinel,)
            )
        except RooflineError as exc:
            notes.append(f"{label} left out: {exc.message}")
        except Exception as exc:  # CUDA errors from CuPy: one line, keep the rest
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            notes.append(f"{label} left out: {type(exc).__name__}: {first}")

    tensor(
        "fp16_mma_sync_tflops", "FP16 mma.sync", "cal_mma_sync", 256,
        (256 // 32) * MMA_SYNC_NACC * MMA_FLOPS,
    )  # fmt: skip
    tensor(
        "fp16_wgmma_tflops", "FP16 wgmma", "cal_wgmma", 128, WGMMA_KSTEPS * WGMMA_FLOPS
    )  # fmt: skip
    try:
        cp.cuda.runtime.deviceSynchronize()
    except Exception as exc:  # a kernel above broke the context: the notes say which
        notes.append(f"the CUDA context is broken after the tensor roofs: {exc}")
    smi_after = runner._smi("clocks.sm")
    dev["clock_sm_mhz_after"] = int(smi_after[0]) if smi_after and smi_after[0].isdigit() else None
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "tool_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": quick,
        "device": dev,
        "spec": spec.name if spec else None,
        "measurements": meas,
        "details": details,
        "notes": notes,
    }
    if spec is not None:
        doc["roof_sets"] = roof_sets(spec, doc)
    return doc
