"""Do the Tensor Core GEMM stages verify with C poisoned, beta != 0 and shapes no tile divides,
and how fast are they in a short run? Checks and times them on a CUDA GPU, through CuPy.

Each stage's cubin comes from the tool's own compile path (compiler.compile_stage, NVRTC), the
very file the runner loads. Every stage runs in its own subprocess (an illegal address would
poison the CUDA context of everything after it), for dtypes fp16 and bf16:

  * inputs uniform in [-1, 1) rounded to the dtype; bf16 travels as raw uint16 bits (CuPy need
    not know bfloat16); B goes in as the stage's b_layout says: "kn" (every registry stage) the
    contract's K x N row-major B, "nk" its N x K transposed copy;
  * C poisoned with NaN and beta = 0 (the kernel must not read C), at 256^3, 4096^3, 8192^3 and
    shapes that divide no tile: 1000 x 1016 x 1032 and 600 x 1016 x 1032 (N, K multiples of 8:
    TMA row strides; 600 rows = an odd number of 128-row tiles, a cluster pair's second block
    past M), 1001 x 600 x 1032 (M free; the last 256-column tile of B has whole 64-column
    boxes past N) and 1000 x 333 x 1030 (N, K odd: any-shape stages only; the TMA stages print
    SKIP with the registry's reason); then alpha = 0.5, beta = 0.75 on random C at 256^3 and
    the odd shapes;
  * compared with a float32 product of the same rounded inputs (TF32 off) by relative Frobenius
    error: PASS below 2e-3 (fp16) / 1e-2 (bf16);
  * timed at 4096^3 and 8192^3 (CUDA events, 3 warm-ups, median of 20) next to cuBLAS
    (cublasGemmEx, FP32 compute, same dtype in and out; plus cupy.matmul for fp16).

TMA stages get their tensor maps from rooflinecli.gpu.tma.extra_args; a stage with a workspace
(stage 29) gets it, zeroed, from rooflinecli.gpu.runner.workspace_args.

    python benchmarks/probes/check_tc.py                                # all chapter-12/13 stages
    python benchmarks/probes/check_tc.py --stages wgmma_ws --dtypes bf16
    python benchmarks/probes/check_tc.py --variant mma_multistage:STAGES=3 --stages none
    python benchmarks/probes/check_tc.py --stages mma_tma_ws,wgmma_tma,wgmma_ws,wgmma_persistent \
        --variant mma_tma_ws:CLUSTER_M=2 --variant wgmma_persistent:TMA_C=0 --no-time

A wrong shared-memory descriptor shows as garbage here; benchmarks/probes/check_wgmma_layout.py runs
one WGMMA tile with B row-major and names the first wrong elements.

Prints one line per stage, dtype and shape; exits non-zero if anything failed or crashed.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import statistics
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

os.environ.setdefault("CUPY_TF32", "0")  # the float32 reference must be true FP32

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rooflinecli.stages.gemm import BY_NAME, STAGES, Stage  # noqa: E402

TOL = {"fp16": 2e-3, "bf16": 1e-2}
CHECK_SHAPES = [(256, 256, 256), (4096, 4096, 4096), (8192, 8192, 8192)]
ODD_SHAPES = [
    (1000, 1016, 1032),  # multiples of 8 (TMA row strides) that divide no tile
    (600, 1016, 1032),  # 5 row tiles of 128: stage 23's CLUSTER_M=2 pairs get a block past M
    (1001, 600, 1032),  # M free; N = 512 + 88: whole 64-column B boxes past N (zero-filled)
    (1000, 333, 1030),  # N, K odd: any-shape stages only (the TMA stages refuse it, SKIP)
]
TIME_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]


def tc_stages() -> list[Stage]:
    return [s for s in STAGES if s.chapter in (12, 13) and not s.reference and s.file]


def retile(base: Stage, assigns: str) -> Stage:
    """'mma_multistage:STAGES=3' -> that stage with those parameters; tile, threads and shared
    memory recomputed the way each family of kernels derives them."""
    params = dict(base.params)
    for item in filter(None, assigns.split(",")):
        key, _, value = item.partition("=")
        params[key.strip()] = int(value)
    if base.rebuild is not None:  # the registry derives threads and shared memory itself
        return dataclasses.replace(base.with_params(params), name=f"{base.name}[{assigns}]")
    bm, bn, bk = params["BM"], params["BN"], params["BK"]
    smem = base.smem_bytes
    if base.file.startswith(("20_", "21_", "22_")):
        threads = 32 * (bm // params["WM"]) * (bn // params["WN"])
        if "STAGES" in params:
            smem = params["STAGES"] * (bm * bk + bk * bn) * 2
    elif base.file.startswith("24_"):  # WGMMA, no producer warpgroup
        threads = 128 * (bm // 64)
        smem = params["STAGES"] * (bm + bn) * bk * 2 + 1024
    else:  # warp-specialized: + one producer warpgroup
        threads = 128 * (1 + bm // 64)
        smem = params["STAGES"] * (bm + bn) * bk * 2 + 1024
        if base.file.startswith("26_") and params.get("TMA_C"):  # 2 staging buffers/consumer
            smem += (bm // 64) * 2 * 64 * 64 * 2
    return dataclasses.replace(
        base,
        name=f"{base.name}[{assigns}]",
        params=params,
        tile=(bm, bn),
        threads=(threads, 1),
        smem_bytes=smem,
    )


# ---------------------------------------------------------------- worker (one stage, in a child)


def worker(spec: str, dtypes: list[str], seed: int, do_time: bool, arch: str | None) -> int:
    import cupy as cp
    import numpy as np

    from rooflinecli.stages.compiler import arch_for_cc

    name, _, assigns = spec.partition(":")
    stage = retile(BY_NAME[name], assigns) if assigns else BY_NAME[name]
    dev = cp.cuda.Device()
    cc = dev.compute_capability
    arch = arch or arch_for_cc((int(cc[:-1]), int(cc[-1])))
    if int(cc) < stage.min_cc:
        print(f"SKIP  {stage.name}: needs cc {stage.min_cc}, device is {cc}")
        return 0
    rng = cp.random.default_rng(seed)
    failed = 0

    for dtype in dtypes:
        if dtype in stage.all_dtypes:
            failed += check_dtype(cp, np, stage, dtype, arch, rng, do_time)
    return 1 if failed else 0


def to_elem(cp, x32, dtype):  # type: ignore[no-untyped-def]
    """float32 -> (stored array, float32 copy of the rounded values); bf16 as raw uint16 bits."""
    if dtype == "fp16":
        h = x32.astype(cp.float16)
        return h, h.astype(cp.float32)
    u = x32.view(cp.uint32)
    bits = ((u + cp.uint32(0x7FFF) + ((u >> 16) & cp.uint32(1))) >> 16).astype(cp.uint16)
    return bits, from_elem(cp, bits, dtype)


def from_elem(cp, x, dtype):  # type: ignore[no-untyped-def]
    if dtype == "fp16":
        return x.astype(cp.float32)
    return (x.astype(cp.uint32) << 16).view(cp.float32)


def check_dtype(cp, np, stage: Stage, dtype: str, arch: str, rng, do_time: bool) -> int:  # type: ignore[no-untyped-def]
    from rooflinecli.stages.compiler import compile_stage, nvrtc_version
    from rooflinecli.gpu import tma as tc_host
    from rooflinecli.gpu.runner import workspace_args

    try:
        built = compile_stage(stage, arch, dtype)
    except Exception as exc:  # noqa: BLE001 - report and go on with the next dtype
        print(f"FAIL  {stage.name:34} {dtype} compile: {exc}", flush=True)
        return 1
    r = built.resources
    print(
        f"# {stage.name} {dtype}: {arch}, NVRTC {nvrtc_version()}, {r.registers} regs, "
        f"{r.smem_static_bytes} B static + {stage.smem_bytes} B dynamic smem, "
        f"{r.spill_bytes} B spills, {r.stack_frame_bytes} B stack",
        flush=True,
    )
    func = cp.RawModule(path=built.cubin_path).get_function(stage.entry)
    if stage.smem_bytes > 48 * 1024:
        func.max_dynamic_shared_size_bytes = stage.smem_bytes

    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]  # once: not in the timing

    def launch(m, n, k, alpha, a, b_arg, beta, c, extra):  # type: ignore[no-untyped-def]
        grid, block, smem = stage.launch(m, n, sms)
        args = (np.int32(m), np.int32(n), np.int32(k), np.float32(alpha), a, b_arg,
                np.float32(beta), c) + extra  # fmt: skip
        func(grid, block, args, shared_mem=smem)

    def operands(m, n, k):  # type: ignore[no-untyped-def]
        a, a32 = to_elem(cp, rng.random((m, k), dtype=cp.float32) * 2.0 - 1.0, dtype)
        b, b32 = to_elem(cp, rng.random((k, n), dtype=cp.float32) * 2.0 - 1.0, dtype)
        b_arg = cp.ascontiguousarray(b.T) if stage.b_layout == "nk" else b
        return a, a32, b, b32, b_arg

    failed = 0
    cases = [(s, 1.0, 0.0) for s in CHECK_SHAPES + ODD_SHAPES]
    cases += [(s, 0.5, 0.75) for s in [(256, 256, 256)] + ODD_SHAPES]
    for (m, n, k), alpha, beta in cases:
        tag = f"{stage.name:34} {dtype} {m:5}x{n:5}x{k:5} a={alpha:<4} b={beta:<4}"
        why = stage.refuses(m, n, k)
        if why:
            print(f"SKIP  {tag} (refused: {why})", flush=True)
            continue
        try:
            a, a32, b, b32, b_arg = operands(m, n, k)
            ref = a32 @ b32
            if beta == 0.0:
                c = cp.empty((m, n), dtype=a.dtype)
                c.view(cp.uint16).fill(0x7E00 if dtype == "fp16" else 0x7FC0)  # NaN poison
            else:
                c, c32 = to_elem(cp, rng.random((m, n), dtype=cp.float32) * 2.0 - 1.0, dtype)
                ref = alpha * ref + beta * c32
            extra = tc_host.extra_args(stage, a, b_arg, c, m, n, k, dtype=dtype)
            extra += workspace_args(cp, stage, m, n, k, stage.launch(m, n, sms)[0])
            launch(m, n, k, alpha, a, b_arg, beta, c, extra)
            cp.cuda.runtime.deviceSynchronize()
            out = from_elem(cp, c, dtype)
            nbad = int((~cp.isfinite(out)).sum())
            rel = float("inf") if nbad else float(cp.linalg.norm(out - ref) / cp.linalg.norm(ref))
            ok = rel < TOL[dtype]
            failed += not ok
            note = f" ({nbad} non-finite)" if nbad else ""
            if not ok:
                note += "\n      " + where_wrong(cp, out, ref, stage.tile)
            print(f"{'PASS' if ok else 'FAIL'}  {tag} rel_fro={rel:.2e}{note}", flush=True)
        except Exception:  # noqa: BLE001
            failed += 1
            text = traceback.format_exc()
            print(f"FAIL  {tag} raised:\n{text}", flush=True)
            if "illegal" in text.lower() or "launch failure" in text.lower():
                sys.exit(3)  # the context is gone: nothing else can run in this process
        cp.get_default_memory_pool().free_all_blocks()

    if do_time:
        for m, n, k in TIME_SHAPES:
            a, _, b, _, b_arg = operands(m, n, k)
            c = cp.empty((m, n), dtype=a.dtype)
            extra = tc_host.extra_args(stage, a, b_arg, c, m, n, k, dtype=dtype)
            extra += workspace_args(cp, stage, m, n, k, stage.launch(m, n, sms)[0])
            flop = 2.0 * m * n * k
            run_it = functools.partial(launch, m, n, k, 1.0, a, b_arg, 0.0, c, extra)
            ms = time_ms(cp, run_it)
            ms_ref = time_ms(cp, cublas_gemm(cp, np, dtype, a, b, c, m, n, k))
            line = (
                f"TIME  {stage.name:34} {dtype} {m}^3 {ms:8.3f} ms {flop / ms / 1e9:7.1f} TFLOP/s"
                f" | cublasGemmEx {flop / ms_ref / 1e9:7.1f} ({ms_ref / ms:6.1%})"
            )
            if dtype == "fp16":
                ms_mm = time_ms(cp, functools.partial(cp.matmul, a, b, out=c))
                line += f" | cupy.matmul {flop / ms_mm / 1e9:7.1f} ({ms_mm / ms:6.1%})"
            print(line, flush=True)
            cp.get_default_memory_pool().free_all_blocks()
    return failed


def where_wrong(cp, out, ref, tile) -> str:  # type: ignore[no-untyped-def]
    """Which elements of C are off (NaN counts): the first few, and the rows and columns of
    block tiles they fall in; a layout bug shows as a pattern (every 64-column block but the
    first, all rows of one warpgroup, ...)."""
    scale = float(cp.abs(ref).max()) or 1.0
    bad = ~(cp.abs(out - ref) <= 0.02 * scale)  # NaN compares False: counted as bad
    rows, cols = (cp.asnumpy(x) for x in cp.nonzero(bad))
    if rows.size == 0:
        return "no single element is far off: the error is spread thin"
    first = ", ".join(
        f"C[{r}][{c}]={float(out[r, c]):.3g} (want {float(ref[r, c]):.3g})"
        for r, c in zip(rows[:4], cols[:4], strict=True)
    )
    tm, tn = tile
    return (
        f"{rows.size} elements off by > 2% of max|C|; first: {first}; rows within a tile "
        f"{sorted(set((rows % tm).tolist()))[:8]}..., columns within a tile mod 64: "
        f"{sorted(set((cols % tn % 64).tolist()))[:8]}..., 64-column blocks of a tile "
        f"{sorted(set((cols % tn // 64).tolist()))}"
    )


def time_ms(cp, fn, warmup: int = 3, reps: int = 20) -> float:  # type: ignore[no-untyped-def]
    """Median of `reps` timed calls after `warmup`, through the tool's one timer (no flush)."""
    from rooflinecli.gpu.timer import Launch, Timer, Timing

    timing = Timing(warmup_ms=0.0, warmup_min=warmup, min_repeats=reps, max_repeats=reps,
                    flush_l2=False, sample_clock=False)  # fmt: skip
    return statistics.median(Timer(timing).time([Launch("check", fn)]).samples[0])


def cublas_gemm(cp, np, dtype, a, b, c, m, n, k):  # type: ignore[no-untyped-def]
    """cublasGemmEx on row-major data: C^T = B^T A^T in cuBLAS's column-major view."""
    from cupy_backends.cuda.libs import cublas

    handle = cp.cuda.device.get_cublas_handle()
    cuda_type = 2 if dtype == "fp16" else 14  # CUDA_R_16F, CUDA_R_16BF
    compute_32f, algo_default = 68, -1  # CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT
    alpha = np.array(1.0, dtype=np.float32)
    beta = np.array(0.0, dtype=np.float32)

    def run() -> None:
        cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
        cublas.gemmEx(
            handle, 0, 0, n, m, k, alpha.ctypes.data, b.data.ptr, cuda_type, n,
            a.data.ptr, cuda_type, k, beta.ctypes.data, c.data.ptr, cuda_type, n,
            compute_32f, algo_default,
        )  # fmt: skip

    return run


# ---------------------------------------------------------------- driver


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", help="comma-separated stage names ('none': only variants)")
    parser.add_argument("--variant", action="append", default=[], help="STAGE:NAME=V,...")
    parser.add_argument("--dtypes", default="fp16,bf16")
    parser.add_argument("--arch", help="NVRTC target (default: the device's, e.g. sm_90a)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-time", action="store_true", help="skip the timings")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per stage")
    parser.add_argument("--stage", help=argparse.SUPPRESS)  # worker mode: one stage in this process
    args = parser.parse_args()
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]

    if args.stage:
        return worker(args.stage, dtypes, args.seed, not args.no_time, args.arch)

    if args.stages == "none":
        specs: list[str] = []
    elif args.stages:
        specs = [s.strip() for s in args.stages.split(",") if s.strip()]
    else:
        specs = [s.name for s in tc_stages()]
    specs += args.variant
    results = {}
    for spec in specs:
        cmd = [sys.executable, __file__, "--stage", spec, "--dtypes", ",".join(dtypes)]
        cmd += ["--seed", str(args.seed)] + (["--no-time"] if args.no_time else [])
        cmd += ["--arch", args.arch] if args.arch else []
        t0 = time.time()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        watchdog = threading.Timer(args.timeout, proc.kill)  # a kernel that never finishes
        watchdog.start()
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
        rc = proc.wait()
        watchdog.cancel()
        if rc < 0:
            print(f"FAIL  {spec}: killed after {args.timeout} s (hung kernel?)", flush=True)
        results[spec] = rc
        print(f"# {spec}: rc={rc} ({time.time() - t0:.0f} s)", flush=True)
    bad = {k: v for k, v in results.items() if v}
    print(f"{len(results) - len(bad)} stages passed, {len(bad)} failed: {sorted(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
