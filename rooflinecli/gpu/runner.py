"""The GEMM runner: buffers, the float64 reference, launches and checks of the GEMM problem kind,
which the one runner loop (rooflinecli.gpu.loop) verifies and times. CuPy is imported lazily,
inside functions (rooflinecli.gpu.device).

Each stage is verified against a float64 product of the same random inputs (output poisoned
with NaN first), then timed interleaved with the reference (each round runs both, alternating
which goes first, so the power-capped clock drifts under both alike), then the output of its
last timed launch is checked too. A stage that reads B K-major (b_layout "nk") gets the
contract's row-major B and a transpose queued inside each of its timed launches: the
conversion is charged to it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from rooflinecli.core import roofs
from rooflinecli.core.elements import element
from rooflinecli.core.specs import Spec
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import loop
from rooflinecli.gpu.arrays import from_bf16_bits, poison, store
from rooflinecli.gpu.loop import Kind, Launched, ReferenceRun, setup
from rooflinecli.gpu.timer import Launch, Timer, Timing, flush_job, hold_job
from rooflinecli.results import Check, RunRecord
from rooflinecli.stages import compiler
from rooflinecli.stages.gemm import Stage, cannot_run

__all__ = [
    "Timing",
    "Problem",
    "launcher",
    "run_gemm",
    "tolerance",
    "memory_needed",
    "workspace_args",
]

# FP32 accumulation over K adds about sqrt(K) * 2^-24 of relative error per output; the rest of
# the bound is the output type's own rounding: for FP32 a fixed floor, for FP16/BF16 twice the
# error that rounding the exact (float64) product to the output type leaves on these very
# inputs. A kernel that skips one k index is off by about 1/sqrt(K) (0.8% at K = 16,384), far
# above BF16's rounding (0.1-0.2%), so it fails; every correct kernel sits at about 1x.
_FP32_TOL = (1e-4, 1e-3)
ROUNDING_FACTOR = 2.0


def accumulation_error(k: int) -> float:
    return 8 * math.sqrt(k) * 2.0**-24


def tolerance(
    dtype: str, k: int, rounding: tuple[float, float] | None = None
) -> tuple[float, float]:
    """(relative Frobenius, largest element / largest reference element) bounds. For FP16 and
    BF16 `rounding` is what rounding the reference to the output type leaves, by the same two
    measures (Problem measures it); without it, the type's unit roundoff stands in."""
    acc = accumulation_error(k)
    if dtype == "fp32":
        return _FP32_TOL[0] + acc, _FP32_TOL[1] + 4 * acc
    if rounding is None:
        u = element(dtype).unit_roundoff
        rounding = (u, u)
    return ROUNDING_FACTOR * rounding[0] + acc, ROUNDING_FACTOR * rounding[1] + 4 * acc


def tolerance_rule(dtype: str) -> str:
    if dtype == "fp32":
        return f"relative Frobenius <= {_FP32_TOL[0]:g} + 8*sqrt(K)*2^-24"
    return (
        f"relative Frobenius <= {ROUNDING_FACTOR:g} x the error of the float64 product rounded "
        f"to {dtype} + 8*sqrt(K)*2^-24 (same rule for the largest element)"
    )


class Harness:
    """The runner's own kernels for one dtype (kernels/util/check.cu): random inputs, float64
    copies, alpha and beta, and the error statistics of an output, with no kernel of the array
    library to compile (CuPy compiles each of its kernels on first use, one after another)."""

    def __init__(self, cp, arch: str, dtype: str) -> None:  # type: ignore[no-untyped-def]
        built = compiler.build(check_job(arch, dtype))
        module = cp.RawModule(path=built.cubin_path)
        self.cp, self.dtype = cp, dtype
        self.fn = {f: module.get_function(f) for f in ("uniform", "widen", "axpby", "stats")}
        sms = cp.cuda.Device().attributes.get("MultiProcessorCount", 132)
        self.max_blocks = 8 * int(sms)

    def _grid(self, n: int) -> tuple[int, int, int]:
        return (max(1, min(-(-n // 256), self.max_blocks)), 1, 1)

    def uniform(self, shape: tuple[int, int], seed: int, stream: int):  # type: ignore[no-untyped-def]
        """Uniform in [-1, 1), rounded to the dtype (stored as store() stores)."""
        import numpy as np

        cp = self.cp
        kind = {"fp32": cp.float32, "fp16": cp.float16, "bf16": cp.uint16}[self.dtype]
        out = cp.empty(shape, dtype=kind)
        n = out.size
        self.fn["uniform"](
            self._grid(n),
            (256, 1, 1),
            (out, np.uint64(n), np.uint64(seed & (2**64 - 1)), np.uint64(stream)),
        )
        return out

    def widen(self, x):  # type: ignore[no-untyped-def]
        import numpy as np

        out = self.cp.empty(x.shape, dtype=self.cp.float64)
        self.fn["widen"](self._grid(x.size), (256, 1, 1), (x, out, np.uint64(x.size)))
        return out

    def axpby(self, ref, c0, alpha: float, beta: float) -> None:  # type: ignore[no-untyped-def]
        import numpy as np

        args = (ref, c0 if c0 is not None else np.uint64(0), np.float64(alpha), np.float64(beta))
        self.fn["axpby"](self._grid(ref.size), (256, 1, 1), (*args, np.uint64(ref.size)))

    def stats(self, ref, got, mode: int) -> tuple[float, float, int]:  # type: ignore[no-untyped-def]
        """(sum of squares, largest magnitude, elements not finite) of ref (mode 0), got - ref
        (mode 1) or ref stored in the dtype - ref (mode 2)."""
        import numpy as np

        out = self.cp.zeros(3, dtype=self.cp.float64)
        g = got if got is not None else np.uint64(0)
        self.fn["stats"](
            self._grid(ref.size), (256, 1, 1), (ref, g, np.int32(mode), np.uint64(ref.size), out)
        )
        sq, mx, bad = (float(v) for v in out.get())
        return sq, mx, int(bad)


def check_job(arch: str, dtype: str) -> compiler.Job:
    """The build of the runner's own kernels (kernels/util/check.cu) for `arch` and dtype: a run
    queues it with its stages' builds (compiler.precompile)."""
    define = element(dtype).define
    defines: dict[str, int | str] = {define: 1} if define else {}
    return compiler.util_job("check.cu", f"check-{dtype}", "stats", arch, defines)


_harnesses: dict[tuple[str, str], Harness] = {}


def harness(cp, arch: str, dtype: str) -> Harness:  # type: ignore[no-untyped-def]
    """The runner's kernels for arch and dtype (compiled, or taken from the prebuild, once)."""
    key = (arch, dtype)
    if key not in _harnesses:
        _harnesses[key] = Harness(cp, arch, dtype)
    return _harnesses[key]


class Problem:
    """Device buffers for one shape and dtype: fresh random inputs, the float64 reference, an
    output for the stage under test and one for the reference, and the check. On the GPU the
    runner's own kernels do the work (`harness`); without one, the array library's operations
    (NumPy in the CPU tests, CuPy in probes) do the same."""

    def __init__(
        self,
        cp,
        m: int,
        n: int,
        k: int,
        alpha: float,
        beta: float,
        seed: int,
        dtype: str = "fp32",
        harness: Harness | None = None,
    ):  # type: ignore[no-untyped-def]  # noqa: E501
        self.cp, self.m, self.n, self.k, self.alpha, self.beta = cp, m, n, k, alpha, beta
        self.dtype = dtype
        self.harness = h = harness
        if h is not None:
            self.A, self.B = h.uniform((m, k), seed, 0), h.uniform((k, n), seed, 1)
            self.C0 = h.uniform((m, n), seed, 2) if beta != 0.0 else None
        else:
            rng = cp.random.default_rng(seed)
            # uniform in [-1, 1): never zeros, signs mixed so cancellations are exercised
            a = rng.random((m, k), dtype=cp.float32) * 2 - 1
            b = rng.random((k, n), dtype=cp.float32) * 2 - 1
            c0 = rng.random((m, n), dtype=cp.float32) * 2 - 1 if beta != 0.0 else None
            self.A, self.B = self._store(a), self._store(b)
            self.C0 = self._store(c0) if c0 is not None else None
        self.C = cp.empty((m, n), dtype=self.A.dtype)  # the stage's output
        self.C_ref = cp.empty((m, n), dtype=self.A.dtype)  # the reference's, timed beside it
        # the reference sees exactly the inputs the kernels see (after rounding to dtype)
        ref = cp.matmul(self.as_f64(self.A), self.as_f64(self.B))
        rounding = None
        if h is not None:
            h.axpby(ref, self.as_f64(self.C0) if self.C0 is not None else None, alpha, beta)
            self.ref = ref
            sq, self.ref_max, _ = h.stats(ref, None, 0)
            self.ref_norm = math.sqrt(sq)
            if dtype != "fp32":  # what storing the exact product in the output type costs
                sq, mx, _ = h.stats(ref, None, 2)
                rounding = (
                    math.sqrt(sq) / self.ref_norm if self.ref_norm else 0.0,
                    mx / self.ref_max if self.ref_max else 0.0,
                )
        else:
            ref *= alpha
            if self.C0 is not None:
                ref += beta * self.as_f64(self.C0)
            self.ref = ref
            self.ref_norm = float(cp.linalg.norm(ref))
            self.ref_max = float(cp.abs(ref).max())
            if dtype != "fp32":  # what storing the exact product in the output type costs
                gap = self.as_f64(self._store(ref)) - ref
                rounding = (
                    float(cp.linalg.norm(gap)) / self.ref_norm if self.ref_norm else 0.0,
                    float(cp.abs(gap).max()) / self.ref_max if self.ref_max else 0.0,
                )
                del gap
        self.rounding = rounding
        self.rel_tol, self.max_tol = tolerance(dtype, k, rounding)

    def _store(self, x):  # type: ignore[no-untyped-def]
        return store(self.cp, x, self.dtype)

    def as_f64(self, x):  # type: ignore[no-untyped-def]
        cp = self.cp
        if self.harness is not None:
            return self.harness.widen(x)
        if element(self.dtype).bits:  # bf16 bits: their float32 values first
            return from_bf16_bits(cp, x).astype(cp.float64)
        return x.astype(cp.float64)

    def reset_output(self, out=None) -> None:  # type: ignore[no-untyped-def]
        """Poison the output (NaN: any element a kernel misses stays NaN), or with beta != 0
        restore C's initial values. Queued on the stream; synchronizes."""
        self.restore(out)
        self.cp.cuda.runtime.deviceSynchronize()

    def restore(self, out=None) -> None:  # type: ignore[no-untyped-def]
        """reset_output without the synchronization (queued before a last timed launch)."""
        c = self.C if out is None else out
        if self.harness is not None:  # copies of the runtime: no kernel to compile
            rt, stream = self.cp.cuda.runtime, self.cp.cuda.get_current_stream().ptr
            if self.C0 is None:  # every byte 0xFF: a NaN in fp32, fp16 and bf16 alike
                rt.memsetAsync(c.data.ptr, 0xFF, c.nbytes, stream)
            else:
                rt.memcpyAsync(
                    c.data.ptr, self.C0.data.ptr, c.nbytes, rt.memcpyDeviceToDevice, stream
                )
        elif self.C0 is None:
            poison(c, self.dtype)
        else:
            c[...] = self.C0

    def check(self, out=None) -> tuple[bool, float, float]:  # type: ignore[no-untyped-def]
        cp = self.cp
        if self.harness is not None:
            sq, mx, bad = self.harness.stats(self.ref, self.C if out is None else out, 1)
            if bad:
                return False, math.inf, math.inf
            rel = math.sqrt(sq) / self.ref_norm if self.ref_norm else float("nan")
            mx = mx / self.ref_max if self.ref_max else float("nan")
            return rel <= self.rel_tol and mx <= self.max_tol, rel, mx
        got = self.as_f64(self.C if out is None else out)
        finite = bool(cp.isfinite(got).all())
        diff = got - self.ref
        rel = float(cp.linalg.norm(diff)) / self.ref_norm if self.ref_norm else float("nan")
        mx = float(cp.abs(diff).max()) / self.ref_max if self.ref_max else float("nan")
        if not finite:
            return False, math.inf, math.inf
        return rel <= self.rel_tol and mx <= self.max_tol, rel, mx


_transposers: dict[tuple[str, int], Any] = {}


def _transposer(cp, arch: str, elem_bytes: int):  # type: ignore[no-untyped-def]
    """The kernel of kernels/util/transpose.cu for this element size (compiled once)."""
    key = (arch, elem_bytes)
    if key not in _transposers:
        job = compiler.util_job(
            "transpose.cu", f"transpose{elem_bytes * 8}", "transpose", arch,
            {"ELEM_BYTES": elem_bytes},
        )  # fmt: skip
        built = compiler.build(job)
        _transposers[key] = cp.RawModule(path=built.cubin_path).get_function("transpose")
    return _transposers[key]


def launcher(  # type: ignore[no-untyped-def]
    cp,
    stage: Stage,
    g: Problem,
    arch: str,
    sm_count: int | None = None,
    b_nk=None,
    capture: bool = False,
) -> tuple[Callable[[], None], dict[str, Any]]:
    """(a call that launches the stage on g's problem, the record fields it adds). The call
    writes g.C, or g.C_ref for the reference. A stage with b_layout "nk" gets a transpose of
    the contract's B queued before it, inside the call, unless `b_nk` holds B already stored
    N x K (a chain's weights, laid out once). `capture`: the library call works under stream
    capture (a chain's graph)."""
    if stage.reference:
        return _library_launcher(cp, g, capture)
    built = compiler.compile_stage(stage, arch, g.dtype)
    module = cp.RawModule(path=built.cubin_path)
    fn = module.get_function(stage.entry)
    grid, block, smem = stage.launch(g.m, g.n, sm_count)
    if smem > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = smem
    b, convert = _b_operand(cp, stage, g, arch, b_nk)
    args = _kernel_args(cp, stage, g, b, grid)
    kernel = _kernel_call(cp, stage, fn, (grid, block, smem), args)

    def launch() -> None:
        if convert is not None:
            convert()
        kernel()

    meta = _launch_meta(stage, g, built, fn, (grid, block, smem), sm_count, b_nk, convert)
    if convert is not None:
        meta["_convert"] = convert
    return launch, meta


def _library_launcher(  # type: ignore[no-untyped-def]
    cp, g: Problem, capture: bool
) -> tuple[Callable[[], None], dict[str, Any]]:
    """The reference's launcher: cuBLAS's SGEMM for FP32, else cublasGemmEx (`capture`: made to
    work under stream capture), and the record fields of a library call."""
    if g.dtype == "fp32":
        library = _cublas_sgemm(cp, g)
    else:
        library = _cublas_gemm_ex(cp, g, capture)
    return library, {"registers": None, "smem_bytes": None, "spill_bytes": None, "b_layout": "kn"}


def _b_operand(  # type: ignore[no-untyped-def]
    cp, stage: Stage, g: Problem, arch: str, b_nk
) -> tuple[Any, Callable[[], None] | None]:
    """B as the stage reads it, and the conversion to queue before each of its launches (None
    where there is none): the contract's B (K x N); for b_layout "nk", `b_nk` where given, else
    an N x K buffer that a transpose of B fills inside every launch."""
    import numpy as np

    convert: Callable[[], None] | None = None
    b = g.B
    if stage.b_layout == "nk" and b_nk is not None:
        b = b_nk
    elif stage.b_layout == "nk":  # the stage reads B^T (N x K): made from B inside every launch
        b = cp.empty((g.n, g.k), dtype=g.B.dtype)
        tr = _transposer(cp, arch, g.B.dtype.itemsize)
        tgrid = (-(-g.n // 64), -(-g.k // 64), 1)  # 64 x 64 tiles (kernels/util/transpose.cu)
        targs = (np.int32(g.k), np.int32(g.n), g.B, b)

        def convert() -> None:
            tr(tgrid, (32, 8, 1), targs)

    return b, convert


def _kernel_args(  # type: ignore[no-untyped-def]
    cp, stage: Stage, g: Problem, b, grid: tuple[int, int, int]
) -> tuple[Any, ...]:
    """The stage's kernel arguments: the contract's eight (B as the stage reads it), then its
    TMA tensor maps where it uses the copy engine, then its workspace where it has one."""
    import numpy as np

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
        from rooflinecli.gpu import tma

        args = args + tuple(tma.extra_args(stage, g.A, b, g.C, g.m, g.n, g.k, g.dtype))
    args = args + workspace_args(cp, stage, g.m, g.n, g.k, grid)
    return args


def _kernel_call(  # type: ignore[no-untyped-def]
    cp, stage: Stage, fn, geometry: tuple[Any, Any, int], args: tuple[Any, ...]
) -> Callable[[], None]:
    """The stage's kernel launched once on the current stream with `geometry` (grid, block,
    dynamic shared memory): CuPy's launch, or for a PDL stage cuLaunchKernelEx."""
    grid, block, smem = geometry

    def kernel() -> None:
        fn(grid, block, args, shared_mem=smem)

    if stage.pdl:  # cuLaunchKernelEx with programmatic stream serialization, on CuPy's stream
        from rooflinecli.gpu import pdl

        kernel = pdl.launcher(
            pdl.function_ptr(fn), grid, block, smem, args, lambda: cp.cuda.get_current_stream().ptr
        )
    return kernel


def _launch_meta(  # type: ignore[no-untyped-def]
    stage: Stage,
    g: Problem,
    built,
    fn,
    geometry: tuple[Any, Any, int],
    sm_count: int | None,
    b_nk,
    convert: Callable[[], None] | None,
) -> dict[str, Any]:
    """The record fields a stage's launch adds: registers, shared memory, spills, the launch
    geometry, its output tiles (and the SMs they ran on), its parameters and how B reached it."""
    grid, block, smem = geometry
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
        # the output tiles and the SMs they ran on: the waves of the verdict (core/waves.py)
        "tiles": -(-g.m // stage.tile[0]) * -(-g.n // stage.tile[1]),
        "params": dict(stage.params),
        "b_layout": ("nk, stored so" if b_nk is not None and stage.b_layout == "nk" else "kn")
        if convert is None
        else "nk, transposed from the contract's B in every timed launch (charged)",
    }
    if sm_count:
        meta["sm_count"] = sm_count
    if stage.persistent_fill:  # every SM busy: the last wave's tiles are cut along K
        meta["splits_k"] = True
    return meta


def workspace_args(  # type: ignore[no-untyped-def]
    cp, stage: Stage, m: int, n: int, k: int, grid: tuple[int, int, int]
) -> tuple[Any, ...]:
    """The last kernel argument of a stage with a workspace (Stage.workspace_bytes): a zeroed
    device buffer for this shape and grid, allocated once, outside the timing (the kernel leaves
    it zeroed for the next launch); () for every other stage."""
    if stage.workspace_bytes is None:
        return ()
    nbytes = stage.workspace_bytes(m, n, k, grid[0] * grid[1] * grid[2])
    return (cp.zeros(max(nbytes, 16), dtype=cp.uint8),)


def _cublas_sgemm(cp, g: Problem) -> Callable[[], None]:  # type: ignore[no-untyped-def]
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
            g.A.data.ptr, k, beta.ctypes.data, g.C_ref.data.ptr, n,
        )  # fmt: skip

    return launch


_libcublas: Any = None


def cublas_library(cp):  # type: ignore[no-untyped-def]
    """cuBLAS itself through ctypes (the library CuPy loaded): CuPy's wrappers refuse to run
    while a stream is being captured, cuBLAS does not. Declares what the graph's calls use."""
    global _libcublas
    if _libcublas is None:
        import ctypes

        cp.cuda.device.get_cublas_handle()  # CuPy loads libcublas first
        major = cp.cuda.runtime.runtimeGetVersion() // 1000
        lib = ctypes.CDLL(f"libcublas.so.{major}")
        p, i = ctypes.c_void_p, ctypes.c_int
        lib.cublasSetStream_v2.argtypes = [p, p]
        lib.cublasSetWorkspace_v2.argtypes = [p, p, ctypes.c_size_t]
        lib.cublasGemmEx.argtypes = [p, i, i, i, i, i, p, p, i, i, p, i, i, p, p, i, i, i, i]
        _libcublas = lib
    return _libcublas


def _ok(status: int, what: str) -> None:
    if status != 0:
        raise RooflineError(f"{what} failed: cuBLAS status {status}")


def _cublas_gemm_ex(cp, g: Problem, capture: bool = False) -> Callable[[], None]:  # type: ignore[no-untyped-def]
    """cublasGemmEx, FP16/BF16 in and out, FP32 compute, default tensor-op algorithm. With
    `capture`, called through ctypes on the current stream, so that a graph can capture it."""
    import numpy as np
    from cupy_backends.cuda.libs import cublas

    handle = cp.cuda.device.get_cublas_handle()
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    elem = element(g.dtype).cuda_type  # CUDA_R_16BF or CUDA_R_16F
    compute_32f, algo = 68, 99  # CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP
    alpha = np.array(g.alpha, dtype=np.float32)
    beta = np.array(g.beta, dtype=np.float32)
    m, n, k = g.m, g.n, g.k
    op_n = cublas.CUBLAS_OP_N

    def launch() -> None:
        cublas.gemmEx(
            handle, op_n, op_n, n, m, k, alpha.ctypes.data, g.B.data.ptr, elem, n,
            g.A.data.ptr, elem, k, beta.ctypes.data, g.C_ref.data.ptr, elem, n, compute_32f, algo,
        )  # fmt: skip

    if not capture:
        return launch
    lib = cublas_library(cp)

    def captured() -> None:
        _ok(lib.cublasSetStream_v2(handle, cp.cuda.get_current_stream().ptr), "cublasSetStream")
        _ok(lib.cublasGemmEx(
            handle, op_n, op_n, n, m, k, alpha.ctypes.data, g.B.data.ptr, elem, n,
            g.A.data.ptr, elem, k, beta.ctypes.data, g.C_ref.data.ptr, elem, n, compute_32f, algo,
        ), "cublasGemmEx")  # fmt: skip

    captured.keep = (alpha, beta)  # type: ignore[attr-defined]  # host scalars outlive the call
    return captured


def memory_needed(m: int, n: int, k: int, beta: float) -> int:
    """Bytes one shape takes: operands (B twice at most, C three times), the float64 reference
    and the check."""
    ops = 4 * (m * k + 2 * k * n + 3 * m * n + (m * n if beta else 0))
    f64 = 8 * (m * k + k * n + 3 * m * n)  # upcast inputs, reference, upcast output + diff
    return ops + f64


class GemmProblem:
    """One GEMM shape for the runner loop (rooflinecli.gpu.loop.Problem): the buffers and the
    float64 reference (Problem), the dtype's library reference (cuBLAS), and the stages' records
    placed under the spec's roofs."""

    def __init__(  # type: ignore[no-untyped-def]
        self, cp, shape: tuple[int, int, int], reference: Stage | None, spec: Spec,
        arch: str, cc: int, sm_count: int, alpha: float, beta: float, seed: int, dtype: str,
    ) -> None:  # fmt: skip
        m, n, k = shape
        free, _total = cp.cuda.runtime.memGetInfo()
        need = memory_needed(m, n, k, beta)
        if need > free:
            raise RooflineError(
                f"out of device memory: {m}x{n}x{k} needs {need / 2**30:.1f} GiB, "
                f"{free / 2**30:.1f} GiB free"
            )
        try:
            self.g = g = Problem(cp, m, n, k, alpha, beta, seed, dtype, harness(cp, arch, dtype))
        except cp.cuda.memory.OutOfMemoryError:
            raise RooflineError(f"out of device memory at {m}x{n}x{k}") from None
        self.cp, self.shape, self.reference, self.spec = cp, shape, reference, spec
        self.arch, self.cc, self.sm_count = arch, cc, sm_count
        self.label = f"{m}x{n}x{k}"
        self.checked = {
            "tolerance_rel": g.rel_tol,
            "tolerance_max": g.max_tol,
            "rounding_error": g.rounding[0] if g.rounding else None,
        }

    def record(self, stage: Stage) -> RunRecord:
        g = self.g
        model = roofs.model_record(stage, g.m, g.n, g.k, self.spec, g.alpha, g.beta, g.dtype)
        return RunRecord(model, dict(self.checked))

    def skip(self, stage: Stage, refusal: str | None) -> str | None:
        if self.cc < stage.min_cc:
            return f"{stage.name} needs compute capability {stage.min_cc / 10:.1f}"
        why_not = cannot_run(stage, self.arch)  # an instruction the target lacks
        return f"{stage.name} {why_not}" if why_not else refusal

    def launch(self, stage: Stage) -> Launched:
        call, meta = launcher(self.cp, stage, self.g, self.arch, self.sm_count)
        return Launched(call, meta, convert=meta.pop("_convert", None))

    def reset(self) -> None:
        self.g.restore()

    def check(self) -> Check:
        return Check(*self.g.check())

    def before_last(self) -> Callable[[], None] | None:
        return self.g.restore if self.g.C0 is not None else None

    def references(self) -> tuple[list[RunRecord], list[ReferenceRun]]:
        """cuBLAS, launched and checked once (its own output, C_ref)."""
        ref, g = self.reference, self.g
        if ref is None:
            return [], []
        rec = self.record(ref)
        launch, rec.launch = launcher(self.cp, ref, g, self.arch, self.sm_count)
        g.reset_output(g.C_ref)
        launch()
        self.cp.cuda.runtime.deviceSynchronize()
        rec.first = Check(*g.check(g.C_ref))
        rec.verified = rec.first.ok
        restore = partial(g.restore, g.C_ref) if g.C0 is not None else None
        return [], [
            ReferenceRun(rec, Launch(ref.name, launch, restore), lambda: Check(*g.check(g.C_ref)))
        ]


GEMM = Kind("interleaved with the reference, alternating order each round", reference_noise=True)


def run_gemm(
    shapes: list[tuple[int, int, int]],
    stages: list[Stage],
    spec_arg: str | None,
    alpha: float = 1.0,
    beta: float = 0.0,
    seed: int = 0,
    timing: Timing | None = None,
    progress: Callable[..., None] | None = None,
    dtype: str = "fp32",
    work: Sequence[tuple[tuple[int, int, int], Sequence[tuple[Stage, str | None]]]] | None = None,
) -> tuple[dict[str, Any], Spec, list[dict[str, Any]]]:
    """Verify and time every stage at every shape, each interleaved with the reference (the one
    of `stages`, if any). Returns (device, spec, records). `work`: per shape, the stages to run
    or record as skipped with the refusal decided for each (rooflinecli.plan); without it, every
    stage at every shape with its own refusal. `progress(label, total=steps)` is called as each
    stage and shape begins (rooflinecli.present.progress draws it)."""
    if dtype == "fp8":  # another problem kind (rooflinecli.plan.gemm_kind): gpu/fp8.py runs it
        raise RooflineError("--dtype fp8 runs through rooflinecli.gpu.fp8.run_gemm")
    timing = timing or Timing()
    cp, dev, spec, arch, cc, limits = setup(spec_arg)
    reference = next((s for s in stages if s.reference), None)
    if work is None:  # every stage at every shape, refused where it cannot run it
        work = [(shape, [(s, s.refuses(*shape)) for s in stages if not s.reference])
                for shape in shapes]  # fmt: skip
    work = loop.shaped(work, dev["sm_count"], arch)
    # every stage the plan runs, and the timer's holding kernel, built in parallel processes
    # behind the run, in the order it needs them: the loop times the stages already built
    # while the rest build, and waits only for a stage not built yet
    prebuild = compiler.precompile(
        [s for _shape, items in work for s, why in items if why is None],
        arch,
        dtype,
        jobs=[
            check_job(arch, dtype),
            *([hold_job(arch)] if timing.hold else []),
            *([flush_job(arch)] if timing.flush_l2 and timing.flush_kind == "read" else []),
        ],
        background=True,
    )

    def problem(shape: tuple[int, int, int], _items: object) -> GemmProblem:
        return GemmProblem(
            cp, shape, reference, spec, arch, cc, dev["sm_count"], alpha, beta, seed, dtype
        )

    try:
        timer = Timer(timing)
        return dev, spec, loop.run(cp, work, problem, GEMM, timer, limits, progress)
    finally:
        if prebuild is not None:
            prebuild.stop()
