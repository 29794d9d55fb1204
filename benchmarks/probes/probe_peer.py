"""How fast are a public Hopper GEMM series' kernels (pranjalssh/fast.cu: 103% of cuBLAS BF16 at
8192^3 on an H200 in that project's own harness, 814 vs 790 TFLOP/s) when this tool times them
beside cuBLAS and our WGMMA stages? This probe times that series' best kernels with this tool's
own timer, in the same rounds as cuBLAS and our stages: default budget (400 ms), L2 flushed by
a read before every launch, gated, CUDA events, every repeat kept, the median reported, the SM
clock sampled. So the peer's figure and ours are
measured on equal terms, on the same power-capped card, in one run.

The peer's kernels come from a shared library that benchmarks/probes.sh (steps peer, peer_ncu)
builds with nvcc: benchmarks/probes/peer/fastcu_wrap.cu around the series' headers, which
benchmarks/probes/peer/export_fastcu.sh exports from a clone to .peer/ (ignored, never committed).
They compute C = A * B^T, A M x K and B N x K both K-contiguous: the probe gives them B^T made
once outside the timing (our stages take B K x N, cuBLAS runs NN; cuBLAS runs NN and TN at the
same speed on this card). Each peer output is checked once, after
the timed rounds, against the float64 product, read as C (M x N) and as C^T.

Usage: python3 benchmarks/probes/probe_peer.py [--lib PATH] [--sizes 8192,4096] [--kernels 12,11]
    [--stages wgmma_stagger,...] [--dtype bf16|fp16] [--budget-ms 400] [--output FILE.json]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from rooflinecli.stages import gemm as stages  # noqa: E402
from rooflinecli.gpu import device, runner  # noqa: E402
from rooflinecli.gpu.timer import Launch, Timer, Timing  # noqa: E402


def peer_error(g: runner.Problem, out) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Relative Frobenius error of a peer output read as C (M x N, row-major) and as C^T (the
    buffer holding C column-major), beside the tolerance our stages are held to."""
    cp = g.cp
    got = g.as_f64(out)
    return {
        "as_C": float(cp.linalg.norm(got - g.ref)) / g.ref_norm,
        "as_C_transposed": float(cp.linalg.norm(got.reshape(g.n, g.m).T - g.ref)) / g.ref_norm,
        "tolerance": g.rel_tol,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", help="the peer library (without it: our stages and cuBLAS only)")
    ap.add_argument("--sizes", default="8192,4096")
    ap.add_argument("--kernels", default="12,11")
    ap.add_argument("--stages", default="wgmma_stagger,wgmma_streamk,wgmma_cluster")
    ap.add_argument("--dtype", default="bf16", choices=("bf16", "fp16"))
    ap.add_argument("--budget-ms", type=float, default=400.0)
    ap.add_argument("--output")
    ap.add_argument(
        "--launch-only",
        type=int,
        default=0,
        metavar="N",
        help="launch each N times, untimed, and stop (for ncu)",
    )
    args = ap.parse_args()

    cp = device.cupy()
    info = device.info()
    arch, sms = info["arch"], info["sm_count"]
    lib = ctypes.CDLL(args.lib) if args.lib else None
    if lib is not None:
        lib.peer_gemm.argtypes = [ctypes.c_int] * 4 + [ctypes.c_void_p] * 3
        lib.peer_gemm.restype = ctypes.c_int
    else:
        args.kernels = ""
    timer = Timer(Timing(budget_ms=args.budget_ms))
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        m = n = k = size
        g = runner.Problem(cp, m, n, k, 1.0, 0.0, 0, args.dtype)
        bt = cp.ascontiguousarray(g.B.T)  # the peer's B: N x K, made once, outside the timing
        launches = []
        checks = {}
        ref = runner.launcher(cp, stages.reference_for(args.dtype), g, arch, sms)[0]
        ref()  # cuBLAS loads its kernel on first use (~18 ms): not a time to size the repeats by
        cp.cuda.runtime.deviceSynchronize()
        launches.append(Launch("cublas", ref))
        for st in stages.select(args.stages, args.dtype)[:-1]:
            call = runner.launcher(cp, st, g, arch, sms)[0]
            g.reset_output()
            call()
            cp.cuda.runtime.deviceSynchronize()
            checks[st.name] = g.check()
            launches.append(Launch(st.name, call))
        outs = {}
        peers = [int(x) for x in args.kernels.split(",") if x] if args.dtype == "bf16" else []
        for kn in peers:  # the series is bf16 only
            out = cp.empty((m, n), dtype=g.A.dtype)
            outs[kn] = out

            args_ = (kn, m, n, k, g.A.data.ptr, bt.data.ptr, out.data.ptr)

            def call(args_=args_) -> None:
                rc = lib.peer_gemm(*args_)
                if rc:
                    raise RuntimeError(f"peer kernel {args_[0]}: CUDA error {rc}")

            call()  # the series' first call builds its tensor maps and schedule (host, untimed)
            cp.cuda.runtime.deviceSynchronize()
            launches.append(Launch(f"peer_kernel{kn}", call))
        if args.launch_only:
            for x in launches:
                for _ in range(args.launch_only):
                    x.call()
                cp.cuda.runtime.deviceSynchronize()
                print(f"{size}^3 {x.name}: {args.launch_only} launch(es)")
            continue
        timed = timer.time(launches)
        for kn, out in outs.items():
            checks[f"peer_kernel{kn}"] = peer_error(g, out)
        base = statistics.median(timed.samples[0])
        for x, samples in zip(launches, timed.samples, strict=True):
            ms = statistics.median(samples)
            rows.append(
                {
                    "size": size,
                    "name": x.name,
                    "time_ms": ms,
                    "tflops": 2.0 * m * n * k / (ms * 1e-3) / 1e12,
                    "pct_of_cublas": 100.0 * base / ms,
                    "repeats": len(samples),
                    "check": checks.get(x.name),
                    "samples_ms": [round(s, 6) for s in samples],
                }
            )
            print(
                f"{size}^3 {x.name:28} {ms * 1e3:9.1f} us {rows[-1]['tflops']:7.1f} TFLOP/s "
                f"{rows[-1]['pct_of_cublas']:6.1f}% of cuBLAS  check {checks.get(x.name)}"
            )
        print(f"{size}^3 clock over the rounds: {timed.clock}")
        rows.append({"size": size, "clock": timed.clock, "timing_method": timed.method})
        outs.clear()
        cp.get_default_memory_pool().free_all_blocks()
    if args.output:
        doc = {
            "what": "a public Hopper GEMM series timed with roofline's timer beside cuBLAS and "
            "our stages (benchmarks/probes/probe_peer.py)",
            "device": info,
            "settings": {"budget_ms": args.budget_ms, "flush_l2": True, "dtype": args.dtype},
            "rows": rows,
        }
        Path(args.output).write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
