"""Is a stage faster with other parameters? A/B: the stage against variants of its parameters, verified and timed by the runner, in
alternating rounds (A B C, A B C, ...) so that a drifting clock does not favour one of them.

    python benchmarks/probes/ab_stage.py mma_tma_ws CLUSTER_M=2 CLUSTER_M=2,TMA_C=0 \\
        --sizes 8192 --dtype fp16 --rounds 2 [--check-sizes 600x1016x1032,256]

--check-sizes are verified (short timing) before the rounds. Prints one markdown row per stage,
size and round: verified, time, TFLOP/s, NVML SM clock; exits non-zero if anything failed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rooflinecli.stages.gemm import BY_NAME  # noqa: E402
from rooflinecli.commands.run import parse_shapes  # noqa: E402
from rooflinecli.gpu import runner  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_tc import retile  # noqa: E402  (the same NAME=V,... variants check_tc.py takes)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stage")
    ap.add_argument("variants", nargs="*", help="NAME=V,... (the registry's entry is always A)")
    ap.add_argument("--sizes", default="8192")
    ap.add_argument("--check-sizes", default="")
    ap.add_argument("--dtype", default="fp16")
    ap.add_argument("--rounds", type=int, default=2)
    opts = ap.parse_args()
    base = BY_NAME[opts.stage]
    labels = ["registry"] + opts.variants
    stages = [base] + [retile(base, v) for v in opts.variants]
    failed = 0
    print("| variant | size | round | verified | rel err | time ms | TFLOP/s | NVML MHz |")
    print("|---|---|---:|---|---:|---:|---:|---:|")

    def show(label: str, rnd: int, rec: dict) -> None:  # type: ignore[type-arg]
        nonlocal failed
        failed += rec.get("verified") is not True
        size = f"{rec['m']}x{rec['n']}x{rec['k']}"
        tf = rec.get("tflops")
        print(
            f"| {label} | {size} | {rnd} | {rec.get('verified')} | {rec.get('rel_error') or 0:.2e} "
            f"| {rec.get('time_ms') or 0:.4f} | {tf or 0:.1f} | {rec.get('sm_clock_mhz')} |"
            + (f" {rec['error']}" if rec.get("error") else ""),
            flush=True,
        )

    if opts.check_sizes:
        quick = runner.Timing(budget_ms=20.0)
        for label, st in zip(labels, stages, strict=True):
            _d, _s, recs = runner.run_gemm(
                parse_shapes(None, None, None, opts.check_sizes),
                [st],
                None,
                timing=quick,
                dtype=opts.dtype,
            )
            for rec in recs:
                show(label, 0, rec)
    for rnd in range(1, opts.rounds + 1):
        for label, st in zip(labels, stages, strict=True):
            _d, _s, recs = runner.run_gemm(
                parse_shapes(None, None, None, opts.sizes),
                [st],
                None,
                timing=runner.Timing(),
                dtype=opts.dtype,
            )
            for rec in recs:
                show(label, rnd, rec)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
