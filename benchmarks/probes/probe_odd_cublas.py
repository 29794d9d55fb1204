"""At 127x333x65 cuBLAS took 6.5 us in fp16 and 10.0 us in bf16 on the H200, our 64 x 64
mma_multistage 10.5 us in both (tune-dispatch-tcsmall-*-odd.json): which kernel does cuBLAS
run in fp16 that it does not in bf16? Run under `roofline profile app`
(ncu), this launches cuBLAS (cublasGemmEx, as the runner calls it) and the given stages a few
times each at one shape, so that ncu's rows name cuBLAS's kernel per dtype, its grid, block and
time beside ours: which algorithm fp16 gets that bf16 does not.

    roofline profile app --format csv -- python3 benchmarks/probes/probe_odd_cublas.py fp16 \
        mma_multistage@BM=64,BN=64,WM=32,WN=32,STAGES=3
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from rooflinecli.stages import compiler, gemm as stages  # noqa: E402
from rooflinecli.gpu import runner  # noqa: E402


def main(dtype: str, names: str, shape: str = "127x333x65", launches: int = 3) -> None:
    import cupy as cp

    m, n, k = (int(x) for x in shape.split("x"))
    dev = cp.cuda.Device()
    cc = dev.compute_capability  # e.g. "90"
    arch = compiler.arch_for_cc(f"{cc[:-1]}.{cc[-1]}")
    sms = dev.attributes["MultiProcessorCount"]
    g = runner.Problem(cp, m, n, k, 1.0, 0.0, 0, dtype)
    calls = [("cublas", runner.launcher(cp, stages.reference_for(dtype), g, arch, sms)[0])]
    for stage in stages.select(names, dtype)[:-1]:
        calls.append((stage.name, runner.launcher(cp, stage, g, arch, sms)[0]))
    for name, launch in calls:
        for _ in range(launches):
            launch()
        cp.cuda.runtime.deviceSynchronize()
        print(f"{name} {dtype} {shape}: {launches} launches", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "127x333x65")
