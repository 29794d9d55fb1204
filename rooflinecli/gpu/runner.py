"""The only module that launches kernels. CuPy is imported lazily, inside functions.

Each stage is verified against a float64 product of the same random inputs (output poisoned
with NaN first), then timed with CUDA events: warm-up, repeats chosen to fill a time budget,
the L2 flushed before every timed launch, the median reported, the spread recorded.
"""

from __future__ import annotations

import contextlib
import math
import platform
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rooflinecli.build import compiler
from rooflinecli.build.stages import Stage
from rooflinecli.core import occupancy
from rooflinecli.core import roofs as analysis
from rooflinecli.core.specs import Spec
from rooflinecli.errors import RooflineError

# Relative Frobenius / largest-element error a stage must stay under, per dtype. The output's own
# rounding sets the floor (FP16 2^-11, BF16 2^-8 per element); FP32 accumulation over K adds
# about sqrt(K) * 2^-24, so the bound grows with K.
_BASE_TOL = {"fp32": (1e-4, 1e-3), "fp16": (2e-3, 4e-3), "bf16": (1e-2, 2e-2)}


def tolerance(dtype: str, k: int) -> tuple[float, float]:
    """(relative Frobenius, largest element / largest reference element) bounds."""
    rel, mx = _BASE_TOL[dtype]
    accum = 8 * math.sqrt(k) * 2.0**-24
    return rel + accum, mx + 4 * accum


@dataclass
class Timing:
    warmup_ms: float = 25.0  # warm-up time per stage (at least 1 launch)
    budget_ms: float = 400.0  # timed launches fill about this much GPU time per stage
    min_repeats: int = 5
    # enough that short kernels fill the budget too: at 200, a 0.2 ms kernel was timed over 40 ms,
    # too short for the power-capped clock to settle (and for the clock readings to mean much)
    max_repeats: int = 1000
    flush_l2: bool = True
    # how the L2 is flushed: "read" sums a buffer twice its size, leaving clean lines; "write"
    # fills one, leaving dirty lines that the timed kernel then pays to write back (1-2% of
    # stage 23 at 4096^3 and 8192^3 on the H200: benchmarks/logs/flush-ab-a028b1d.md)
    flush_kind: str = "read"


def _cupy():  # type: ignore[no-untyped-def]
    try:
        import cupy
    except ImportError:
        raise RooflineError(
            "no CUDA device found: CuPy is not installed "
            "(pip install 'roofline[cuda13]' or 'roofline[cuda12]' on a GPU machine)"
        ) from None
    except Exception as exc:  # a CuPy that cannot find its CUDA libraries
        raise RooflineError(
            f"no CUDA device found: CuPy failed to load ({_first_line(exc)})"
        ) from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        raise RooflineError(f"no CUDA device found ({_first_line(exc)})") from None
    if count < 1:
        raise RooflineError("no CUDA device found")
    return cupy


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]


def _smi(query: str) -> list[str] | None:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run(
            [exe, f"--query-gpu={query}", "--format=csv,noheader,nounits", "-i", "0"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    return [x.strip() for x in out.stdout.strip().splitlines()[0].split(",")]


def smi_device_name() -> str | None:
    """The GPU name from nvidia-smi, without CuPy (for `model`'s default spec)."""
    got = _smi("name")
    return got[0] if got else None


def git_commit() -> str | None:
    """The tool's commit: ROOFLINE_COMMIT (set where the checkout has no .git), else git."""
    import os

    if os.environ.get("ROOFLINE_COMMIT"):
        return os.environ["ROOFLINE_COMMIT"]
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists() or not shutil.which("git"):
        return None
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def device_info() -> dict[str, Any]:
    cp = _cupy()
    rt = cp.cuda.runtime
    props = rt.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    cc = f"{props['major']}.{props['minor']}"

    def attr(num: int) -> int | None:
        try:
            return int(rt.deviceGetAttribute(num, 0))
        except Exception:
            return None

    drv = rt.driverGetVersion()
    rtv = rt.runtimeGetVersion()
    smi = _smi("driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem")
    clock_khz = attr(13)  # cudaDevAttrClockRate
    info: dict[str, Any] = {
        "name": name,
        "compute_capability": cc,
        "sm_count": int(props["multiProcessorCount"]),
        "l2_bytes": int(props["l2CacheSize"]),
        "memory_bytes": int(props["totalGlobalMem"]),
        "smem_per_block_optin_bytes": int(props.get("sharedMemPerBlockOptin", 0)) or None,
        "clock_sm_max_mhz": int(smi[2]) if smi else (clock_khz // 1000 if clock_khz else None),
        "clock_sm_mhz_at_start": int(smi[1]) if smi else None,
        "clock_mem_max_mhz": int(smi[4]) if smi else None,
        "driver": smi[0] if smi else None,
        "cuda_driver": f"{drv // 1000}.{drv % 1000 // 10}",
        "cuda_runtime": f"{rtv // 1000}.{rtv % 1000 // 10}",
        "cupy": cp.__version__,
        "nvrtc": compiler.nvrtc_version(),
        "arch": compiler.arch_for_cc(cc),
    }
    return info


def environment() -> dict[str, Any]:
    return {"commit": git_commit(), "python": platform.python_version(), "host": platform.node()}


@contextmanager
def _nvtx_range(name: str) -> Iterator[None]:
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


def _to_bf16_bits(cp, x):  # type: ignore[no-untyped-def]
    """float32 -> bfloat16 bit patterns (uint16), round to nearest even. CuPy has no bf16 dtype."""
    u = x.astype(cp.float32).view(cp.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(cp.uint16)


def _from_bf16_bits(cp, b):  # type: ignore[no-untyped-def]
    return (b.astype(cp.uint32) << 16).view(cp.float32)


class _Gemm:
    """Device buffers for one shape and dtype, fresh random inputs, the float64 reference."""

    def __init__(
        self, cp, m: int, n: int, k: int, alpha: float, beta: float, seed: int, dtype: str = "fp32"
    ):  # type: ignore[no-untyped-def]  # noqa: E501
        self.cp, self.m, self.n, self.k, self.alpha, self.beta = cp, m, n, k, alpha, beta
        self.dtype = dtype
        rng = cp.random.default_rng(seed)
        # uniform in [-1, 1): never zeros, signs mixed so cancellations are exercised
        a = rng.random((m, k), dtype=cp.float32) * 2 - 1
        b = rng.random((k, n), dtype=cp.float32) * 2 - 1
        c0 = rng.random((m, n), dtype=cp.float32) * 2 - 1 if beta != 0.0 else None
        self.A, self.B = self._store(a), self._store(b)
        self.C0 = self._store(c0) if c0 is not None else None
        self.C = cp.empty((m, n), dtype=self.A.dtype)
        self._Bt = None
        # the reference sees exactly the inputs the kernels see (after rounding to dtype)
        ref = cp.matmul(self.as_f64(self.A), self.as_f64(self.B))
        ref *= alpha
        if self.C0 is not None:
            ref += beta * self.as_f64(self.C0)
        self.ref = ref
        self.ref_norm = float(cp.linalg.norm(ref))
        self.ref_max = float(cp.abs(ref).max())
        self.rel_tol, self.max_tol = tolerance(dtype, k)

    def _store(self, x):  # type: ignore[no-untyped-def]
        cp = self.cp
        if self.dtype == "bf16":
            return _to_bf16_bits(cp, x)
        return x.astype(cp.float16 if self.dtype == "fp16" else cp.float32)

    def as_f64(self, x):  # type: ignore[no-untyped-def]
        cp = self.cp
        if self.dtype == "bf16":
            return _from_bf16_bits(cp, x).astype(cp.float64)
        return x.astype(cp.float64)

    def b_for(self, layout: str):  # type: ignore[no-untyped-def]
        """B as the stage wants it: KxN (the contract) or its NxK transpose (made once)."""
        if layout == "kn":
            return self.B
        if self._Bt is None:
            self._Bt = self.cp.ascontiguousarray(self.B.T)
        return self._Bt

    def reset_output(self) -> None:
        cp = self.cp
        if self.C0 is None:  # poison: any element the kernel misses stays NaN
            if self.dtype == "bf16":
                self.C.fill(0x7FC0)  # a bfloat16 quiet NaN
            else:
                self.C.fill(math.nan)
        else:
            self.C[...] = self.C0
        cp.cuda.runtime.deviceSynchronize()

    def check(self) -> tuple[bool, float, float]:
        cp = self.cp
        out = self.as_f64(self.C)
        finite = bool(cp.isfinite(out).all())
        diff = out - self.ref
        rel = float(cp.linalg.norm(diff)) / self.ref_norm if self.ref_norm else float("nan")
        mx = float(cp.abs(diff).max()) / self.ref_max if self.ref_max else float("nan")
        if not finite:
            return False, math.inf, math.inf
        return rel <= self.rel_tol and mx <= self.max_tol, rel, mx


def _launcher(  # type: ignore[no-untyped-def]
    cp, stage: Stage, g: _Gemm, arch: str, sm_count: int | None = None
) -> tuple[Callable[[], None], dict[str, Any]]:
    import numpy as np

    if stage.reference:
        library = _cublas_sgemm(cp, g) if g.dtype == "fp32" else _cublas_gemm_ex(cp, g)
        return library, {"registers": None, "smem_bytes": None, "spill_bytes": None}
    built = compiler.compile_stage(stage, arch, g.dtype)
    module = cp.RawModule(path=built.cubin_path)
    fn = module.get_function(stage.entry)
    grid, block, smem = stage.launch(g.m, g.n, sm_count)
    if smem > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = smem
    b = g.b_for(stage.b_layout)
    args: tuple[Any, ...] = (
        np.int32(g.m),
        np.int32(g.n),
        np.int32(g.k),
        np.float32(g.alpha),
        g.A,
        b,
        np.float32(g.beta),
        g.C,
    )
    if stage.params.get("TMA"):  # tensor maps for the copy engine, after the contract's args
        from rooflinecli.gpu import tma as tc_host

        args = args + tuple(tc_host.extra_args(stage, g.A, b, g.C, g.m, g.n, g.k, g.dtype))

    def launch() -> None:
        fn(grid, block, args, shared_mem=smem)

    res = built.resources
    local = int(fn.local_size_bytes)  # per-thread local memory: stack frame and spills
    meta = {
        "registers": int(fn.num_regs),
        "smem_bytes": int(fn.shared_size_bytes) + smem,
        # the ptxas report when NVRTC gave one; else local memory bounds the spills
        "spill_bytes": res.spill_bytes if res is not None else local,
        "local_bytes": local,
        "grid": list(grid),
        "block": list(block),
        "params": dict(stage.params),
    }
    return launch, meta


def _cublas_sgemm(cp, g: _Gemm) -> Callable[[], None]:  # type: ignore[no-untyped-def]
    """cublasSgemm on row-major data: C^T = B^T A^T in cuBLAS's column-major view."""
    import numpy as np
    from cupy_backends.cuda.libs import cublas

    handle = cp.cuda.device.get_cublas_handle()
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    cublas.setMathMode(handle, 0)  # CUBLAS_DEFAULT_MATH: plain FP32, no TF32
    alpha = np.array(g.alpha, dtype=np.float32)
    beta = np.array(g.beta, dtype=np.float32)
    m, n, k = g.m, g.n, g.k
    op_n = cublas.CUBLAS_OP_N

    def launch() -> None:
        cublas.sgemm(
            handle, op_n, op_n, n, m, k, alpha.ctypes.data, g.B.data.ptr, n,
            g.A.data.ptr, k, beta.ctypes.data, g.C.data.ptr, n,
        )  # fmt: skip

    return launch


def _cublas_gemm_ex(cp, g: _Gemm) -> Callable[[], None]:  # type: ignore[no-untyped-def]
    """cublasGemmEx, FP16/BF16 in and out, FP32 compute, default tensor-op algorithm."""
    import numpy as np
    from cupy_backends.cuda.libs import cublas

    handle = cp.cuda.device.get_cublas_handle()
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    elem = 14 if g.dtype == "bf16" else 2  # CUDA_R_16BF, CUDA_R_16F
    compute_32f, algo = 68, 99  # CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP
    alpha = np.array(g.alpha, dtype=np.float32)
    beta = np.array(g.beta, dtype=np.float32)
    m, n, k = g.m, g.n, g.k
    op_n = cublas.CUBLAS_OP_N

    def launch() -> None:
        cublas.gemmEx(
            handle, op_n, op_n, n, m, k, alpha.ctypes.data, g.B.data.ptr, elem, n,
            g.A.data.ptr, elem, k, beta.ctypes.data, g.C.data.ptr, elem, n, compute_32f, algo,
        )  # fmt: skip

    return launch


def _clock_sampler(cp):  # type: ignore[no-untyped-def]
    """NVML for the current device (rooflinecli.gpu.nvml), or None where there is none."""
    from rooflinecli.gpu import nvml

    try:
        bus = cp.cuda.Device().pci_bus_id
    except Exception:
        return None
    return nvml.open_device(str(bus))


def _time(  # type: ignore[no-untyped-def]
    cp, launch: Callable[[], None], name: str, timing: Timing, flush, probe=None
) -> list[float]:
    ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
    ev0.record()
    launch()
    ev1.record()
    ev1.synchronize()
    one = max(cp.cuda.get_elapsed_time(ev0, ev1), 1e-3)
    for _ in range(max(1, min(50, int(timing.warmup_ms / one)))):
        launch()
    reps = int(min(timing.max_repeats, max(timing.min_repeats, timing.budget_ms / one)))
    starts = [cp.cuda.Event() for _ in range(reps)]
    ends = [cp.cuda.Event() for _ in range(reps)]
    sampler = _clock_sampler(cp) if probe is not None else None
    with sampler.sampling() if sampler is not None else contextlib.nullcontext() as readings:
        for i in range(reps):
            if flush is not None:
                flush()
            starts[i].record()
            with _nvtx_range(name):
                launch()
            ends[i].record()
        while not ends[-1].done:  # sleep, not a blocking sync: the clock readings go on meanwhile
            time.sleep(0.0002)
    ends[-1].synchronize()
    if readings is not None and probe is not None:
        probe.update(readings.summary())
    return [cp.cuda.get_elapsed_time(s, e) for s, e in zip(starts, ends, strict=True)]


def _flusher(cp, l2_bytes: int, timing: Timing) -> Callable[[], None] | None:  # type: ignore[no-untyped-def]
    """A call that evicts the L2 before a timed launch, or None when timing says not to."""
    if not timing.flush_l2:
        return None
    if timing.flush_kind not in ("read", "write"):
        raise RooflineError(f"unknown L2 flush {timing.flush_kind!r}: read or write")
    try:
        buf = cp.empty(max(2 * l2_bytes, 256 << 20) // 4, dtype=cp.float32)
    except cp.cuda.memory.OutOfMemoryError:
        raise RooflineError("out of device memory allocating the L2 flush buffer") from None
    if timing.flush_kind == "read":
        buf.fill(1.0)
        out = cp.empty((), dtype=cp.float32)

        def read() -> None:
            cp.sum(buf, out=out)

        return read

    def write() -> None:
        buf.fill(0)

    return write


def memory_needed(m: int, n: int, k: int, beta: float) -> int:
    """Bytes one shape takes: operands (B twice at most), the float64 reference and the check."""
    ops = 4 * (m * k + 2 * k * n + m * n + (m * n if beta else 0))
    f64 = 8 * (m * k + k * n + 3 * m * n)  # upcast inputs, reference, upcast output + diff
    return ops + f64


def run_gemm(
    shapes: list[tuple[int, int, int]],
    stages: list[Stage],
    spec_arg: str | None,
    alpha: float = 1.0,
    beta: float = 0.0,
    seed: int = 0,
    timing: Timing | None = None,
    progress: Callable[[str], None] | None = None,
    dtype: str = "fp32",
) -> tuple[dict[str, Any], Spec, list[dict[str, Any]]]:
    """Verify and time every stage at every shape. Returns (device, spec, records)."""
    from rooflinecli.core import specs as specreg

    timing = timing or Timing()
    cp = _cupy()
    dev = device_info()
    spec = specreg.resolve(spec_arg) if spec_arg else specreg.for_device(dev["name"])
    arch = dev["arch"]
    cc = int(dev["compute_capability"].replace(".", ""))
    records: list[dict[str, Any]] = []
    flush_call = _flusher(cp, dev["l2_bytes"], timing)
    for m, n, k in shapes:
        free, _total = cp.cuda.runtime.memGetInfo()
        need = memory_needed(m, n, k, beta)
        if need > free:
            raise RooflineError(
                f"out of device memory: {m}x{n}x{k} needs {need / 2**30:.1f} GiB, "
                f"{free / 2**30:.1f} GiB free"
            )
        try:
            g = _Gemm(cp, m, n, k, alpha, beta, seed, dtype)
        except cp.cuda.memory.OutOfMemoryError:
            raise RooflineError(f"out of device memory at {m}x{n}x{k}") from None
        shape_records = []
        for stage in stages:
            stage = stage.for_arch(arch)
            if progress:
                progress(f"{stage.name} {m}x{n}x{k}")
            rec = analysis.model_record(stage, m, n, k, spec, alpha, beta, dtype)
            skip = stage.refuses(m, n, k)
            if cc < stage.min_cc:
                skip = f"{stage.name} needs compute capability {stage.min_cc / 10:.1f}"
            if skip:
                rec.update(verified=None, error=f"skipped: {skip}")
                analysis.place(rec, None)
                shape_records.append(rec)
                continue
            try:
                launch, meta = _launcher(cp, stage, g, arch, dev["sm_count"])
                rec.update(meta)
                if meta.get("registers"):
                    occ = occupancy.theoretical(
                        occupancy.SmLimits.from_spec(spec),
                        meta["block"][0] * meta["block"][1],
                        meta["registers"],
                        meta["smem_bytes"],
                    )
                    rec.update(occupancy_pct=100.0 * occ.occupancy, blocks_per_sm=occ.blocks_per_sm)
                g.reset_output()
                launch()
                cp.cuda.runtime.deviceSynchronize()
                ok, rel, mx = g.check()
                rec.update(verified=ok, rel_error=rel, max_rel_error=mx)
                probe: dict[str, Any] = {}
                times = _time(cp, launch, stage.name, timing, flush_call, probe)
                rec.update(probe)
            except RooflineError as exc:
                rec.update(verified=False, error=exc.message)
                analysis.place(rec, None)
                shape_records.append(rec)
                continue
            except cp.cuda.memory.OutOfMemoryError:
                raise RooflineError(f"out of device memory running {stage.name}") from None
            except Exception as exc:  # a launch failure: record it, do not report a speed
                rec.update(verified=False, error=_first_line(exc))
                analysis.place(rec, None)
                shape_records.append(rec)
                if "illegal" in str(exc).lower() or "launch failure" in str(exc).lower():
                    raise RooflineError(
                        f"stage {stage.name} crashed the CUDA context: {_first_line(exc)}"
                    ) from None
                continue
            median = statistics.median(times)
            analysis.place(rec, median)
            rec.update(
                time_ms_min=min(times),
                time_ms_max=max(times),
                time_ms_stdev=statistics.stdev(times) if len(times) > 1 else 0.0,
                repeats=len(times),
            )
            if not rec["verified"]:  # a wrong result is never reported as fast
                rec.update(tflops=None, pct_of_roof=None, pct_of_peak=None)
            shape_records.append(rec)
        analysis.add_reference_ratios(shape_records)
        records.extend(shape_records)
        del g
        cp.get_default_memory_pool().free_all_blocks()
    return dev, spec, records


def time_callable(
    launch: Callable[[], Any],
    name: str = "callable",
    timing: Timing | None = None,
    probe: dict[str, Any] | None = None,
) -> list[float]:
    """Time any callable that launches work on the current CUDA stream, the way run_gemm times
    a stage: one untimed call, one to size the run, warm-up, then repeats filling the budget, each
    between CUDA events and inside an NVTX range, the L2 flushed before each. Milliseconds;
    `probe`, if given, receives the SM clock readings (rooflinecli.gpu.nvml) taken meanwhile."""
    timing = timing or Timing()
    cp = _cupy()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    flush_call = _flusher(cp, int(props["l2CacheSize"]), timing)
    # a first call may create library handles or load modules: it must not size the run
    # (run_gemm's stages have had their verification launch by then)
    launch()
    cp.cuda.get_current_stream().synchronize()
    return _time(cp, launch, name, timing, flush_call, probe)
