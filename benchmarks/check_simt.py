"""Check and time the chapter-11 SIMT SGEMM stages on a CUDA GPU, through CuPy.

Each stage's cubin comes from the tool's own compile path (compiler.compile_stage, NVRTC), the
very file the runner loads. For every stage and shape: C is poisoned with NaN and the kernel runs
with beta = 0 (it must not read C), then C is filled with random values and it runs again with
beta = 0.5; both results are compared with a float64 product of the same inputs by relative
Frobenius error (threshold 1e-4) and by max-abs error relative to max |ref| (threshold 1e-3;
NaN anywhere fails). A last case passes
A, B and C one float past a 16-byte boundary, which must send the float4 stages down their
scalar path. Then each stage is timed at 4096^3 (2 warm-ups, median of 10, CUDA events) next to
cupy.matmul (FP32, TF32 off).

    python benchmarks/check_simt.py                   # chapter-11 stages
    python benchmarks/check_simt.py --stages double_buffer,warptile --no-time
    python benchmarks/check_simt.py --stages double_buffer --variant double_buffer:BK=16

Prints one line per stage and shape, and exits non-zero if anything failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
from pathlib import Path

os.environ.setdefault("CUPY_TF32", "0")  # the reference must be true FP32, not TF32

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

from rooflinecli.stages.compiler import arch_for_cc, compile_stage  # noqa: E402
from rooflinecli.stages.gemm import BY_NAME, STAGES, Stage  # noqa: E402

SHAPES = [
    (4096, 4096, 4096),
    (1000, 1000, 1000),
    (127, 333, 65),
    (1, 4096, 4096),
    (4097, 4097, 4097),
    (64, 64, 8),
    (129, 257, 31),
]
MISALIGNED = (129, 260, 36)  # K and N multiples of 4, but every base pointer 4 bytes off
REL_FRO_MAX = 1e-4
REL_MAX_MAX = 1e-3  # element-wise: FP32 with K = 4097 lands near 3e-6
TIME_SHAPE = (4096, 4096, 4096)


def variant(spec: str) -> Stage:
    """'double_buffer:BK=16,MIN_BLOCKS=1' -> that stage re-tiled (tile and threads follow)."""
    base_name, _, assigns = spec.partition(":")
    base = BY_NAME[base_name]
    params = dict(base.params)
    for item in filter(None, assigns.split(",")):
        key, _, value = item.partition("=")
        params[key.strip()] = int(value)
    tile = (params.get("BM", base.tile[0]), params.get("BN", base.tile[1]))
    threads = (params["NUM_THREADS"], 1) if "NUM_THREADS" in params else base.threads
    return dataclasses.replace(
        base, name=f"{base.name}[{assigns}]", params=params, tile=tile, threads=threads
    )


def load(stage: Stage, arch: str):  # type: ignore[no-untyped-def]
    compiled = compile_stage(stage, arch)
    r = compiled.resources
    print(
        f"# {stage.name}: {arch}, {r.registers} registers, {r.smem_static_bytes} B static smem, "
        f"{stage.smem_bytes} B dynamic, {r.spill_bytes} B spills, {r.stack_frame_bytes} B stack"
    )
    func = cp.RawModule(path=compiled.cubin_path).get_function(stage.entry)
    if stage.smem_bytes > 48 * 1024:  # above 48 KiB a kernel must opt in
        func.max_dynamic_shared_size_bytes = stage.smem_bytes
    return func


def launch(func, stage: Stage, m: int, n: int, k: int, alpha, a, b, beta, c) -> None:  # type: ignore[no-untyped-def]
    grid, block, smem = stage.launch(m, n)
    args = (np.int32(m), np.int32(n), np.int32(k), np.float32(alpha), a, b, np.float32(beta), c)
    func(grid, block, args, shared_mem=smem)


def uniform(rng, shape):  # type: ignore[no-untyped-def]
    """float32 uniform in [-1, 1): not zeros, which would hide unwritten or misindexed C."""
    return rng.random(shape, dtype=cp.float32) * 2.0 - 1.0


def errors(c, ref) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(relative Frobenius error, max-abs error / max |ref|); NaN anywhere gives inf."""
    c64 = c.astype(cp.float64)
    if not bool(cp.isfinite(c64).all()):
        return float("inf"), float("inf")
    diff = c64 - ref
    scale = float(cp.linalg.norm(ref))
    rel_fro = float(cp.linalg.norm(diff)) / (scale if scale > 0 else 1.0)
    amax = float(cp.abs(ref).max())
    rel_max = float(cp.abs(diff).max()) / (amax if amax > 0 else 1.0)
    return rel_fro, rel_max


def offset_view(x, rows: int, cols: int):  # type: ignore[no-untyped-def]
    """A C-contiguous rows x cols float32 copy of x whose data pointer is 16-byte aligned + 4."""
    flat = cp.empty(rows * cols + 4, dtype=cp.float32)
    view = flat[1 : 1 + rows * cols].reshape(rows, cols)
    view[...] = x
    assert view.data.ptr % 16 == 4 and view.flags.c_contiguous
    return view


def check_shape(func, stage: Stage, shape, rng, misaligned: bool = False) -> bool:  # type: ignore[no-untyped-def]
    m, n, k = shape
    a, b, c0 = uniform(rng, (m, k)), uniform(rng, (k, n)), uniform(rng, (m, n))
    if misaligned:
        a, b = offset_view(a, m, k), offset_view(b, k, n)
    prod = a.astype(cp.float64) @ b.astype(cp.float64)
    ok_all = True
    for alpha, beta in ((1.25, 0.0), (0.75, 0.5)):
        if misaligned:
            c = offset_view(c0, m, n)
        else:
            c = c0.copy()
        if beta == 0.0:
            c.fill(cp.nan)  # beta == 0 must not read C: NaN * 0 would leak through
        ref = alpha * prod + beta * c0.astype(cp.float64)
        launch(func, stage, m, n, k, alpha, a, b, beta, c)
        cp.cuda.runtime.deviceSynchronize()  # a launch error surfaces here
        rel_fro, rel_max = errors(c, ref)
        ok = rel_fro < REL_FRO_MAX and rel_max < REL_MAX_MAX
        ok_all &= ok
        tag = " misaligned" if misaligned else ""
        print(
            f"{'PASS' if ok else 'FAIL'}  {stage.name:24} {m:5}x{n:5}x{k:5}{tag} beta={beta:<3} "
            f"rel_fro={rel_fro:.2e} rel_max={rel_max:.2e}",
            flush=True,
        )
    return ok_all


def time_ms(fn, warmup: int = 2, reps: int = 10) -> float:  # type: ignore[no-untyped-def]
    """Median of `reps` timed calls after `warmup`, through the tool's one timer (no flush)."""
    from rooflinecli.gpu.timer import Launch, Timer, Timing

    timing = Timing(warmup_ms=0.0, warmup_min=warmup, min_repeats=reps, max_repeats=reps,
                    flush_l2=False, sample_clock=False)  # fmt: skip
    return statistics.median(Timer(timing).time([Launch("check", fn)]).samples[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", help="comma-separated stage names (default: chapter 11)")
    parser.add_argument("--arch", help="NVRTC target (default: the device's, e.g. sm_90a)")
    parser.add_argument(
        "--variant", action="append", default=[], help="STAGE:NAME=V,... also run a re-tiled copy"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-time", action="store_true", help="skip the 4096^3 timings")
    parser.add_argument("--no-check", action="store_true", help="skip the correctness checks")
    args = parser.parse_args()

    if args.stages:
        stages = [BY_NAME[s.strip()] for s in args.stages.split(",") if s.strip()]
    else:
        stages = [s for s in STAGES if s.chapter == 11 and s.dtype == "fp32" and not s.reference]
    stages += [variant(v) for v in args.variant]
    dev = cp.cuda.Device()
    cc = dev.compute_capability  # e.g. "90"
    arch = args.arch or arch_for_cc((int(cc[:-1]), int(cc[-1])))
    name = cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode()
    print(f"# device {name} (cc {cc}), arch {arch}, CUPY_TF32={os.environ.get('CUPY_TF32')}")

    rng = cp.random.default_rng(args.seed)
    funcs = {s.name: load(s, arch) for s in stages}
    passed = failed = 0
    if not args.no_check:
        for s in stages:
            cases = [(shape, False) for shape in SHAPES] + [(MISALIGNED, True)]
            for shape, mis in cases:
                if check_shape(funcs[s.name], s, shape, rng, misaligned=mis):
                    passed += 1
                else:
                    failed += 1

    if not args.no_time:
        m, n, k = TIME_SHAPE
        a, b = uniform(rng, (m, k)), uniform(rng, (k, n))
        c = cp.empty((m, n), dtype=cp.float32)
        flop = 2.0 * m * n * k
        ms_ref = time_ms(lambda: cp.matmul(a, b, out=c))
        print(
            f"TIME  {'cupy.matmul':24} {m}^3  {ms_ref:8.3f} ms  {flop / ms_ref / 1e9:6.2f} TFLOP/s"
        )
        for s in stages:
            f = funcs[s.name]
            ms = time_ms(lambda f=f, s=s: launch(f, s, m, n, k, 1.0, a, b, 0.0, c))
            print(
                f"TIME  {s.name:24} {m}^3  {ms:8.3f} ms  {flop / ms / 1e9:6.2f} TFLOP/s  "
                f"({ms_ref / ms:6.1%} of cupy.matmul)",
                flush=True,
            )

    if not args.no_check:
        print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
