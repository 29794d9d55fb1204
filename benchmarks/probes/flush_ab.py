"""Does the way the runner flushes the L2 change what it measures?

The runner evicts the L2 before every timed launch. Filling a buffer twice the L2's size ("write",
the runner's way so far) leaves the L2 full of dirty lines, which the timed kernel then pays for
writing back; summing one ("read") leaves clean lines. This times stage 23 and cuBLAS both ways,
alternating (write, read, write, read) so that drift in the clock shows, at 4096^3 and 8192^3 fp16,
and prints each record's time, TFLOP/s and the SM clock by NVML and as counted by the SMs.

    python benchmarks/probes/flush_ab.py        # on a GPU
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rooflinecli.stages.gemm import BY_NAME  # noqa: E402
from rooflinecli.gpu import runner  # noqa: E402


def main() -> int:
    stages = [BY_NAME["mma_tma_ws"], BY_NAME["cublas_hgemm"]]
    print("| size | flush | stage | time ms | TFLOP/s | NVML MHz | counted MHz |")
    print("|---:|---|---|---:|---:|---:|---:|")
    for size in (4096, 8192):
        for kind in ("write", "read", "write", "read"):
            timing = runner.Timing(flush_kind=kind)
            _dev, _spec, recs = runner.run_gemm(
                [(size, size, size)], stages, None, timing=timing, dtype="fp16"
            )
            for r in recs:
                print(
                    f"| {size} | {kind} | {r['stage']} | {r['time_ms']:.4f} | {r['tflops']:.1f} | "
                    f"{r.get('sm_clock_mhz')} | {r.get('sm_clock_mhz_counted')} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
