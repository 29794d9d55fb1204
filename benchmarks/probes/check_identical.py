"""Why every stage of a ladder shows the same rel_error: their outputs are bit for bit equal.

Each SIMT stage accumulates every C element with FFMA in k order 0..K-1 (tiles change who
loads what, not the order of the additions), and so does cuBLAS SGEMM for these shapes; the
Tensor Core stages all add k16 products in k order. This script runs stages on the same
inputs (the runner's own buffers and launchers) and compares their outputs bitwise.

    python benchmarks/probes/check_identical.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import cupy as cp  # noqa: E402

from rooflinecli.stages.gemm import BY_NAME, stage_names  # noqa: E402
from rooflinecli.gpu import device, runner  # noqa: E402


def outputs(dtype: str, shape: tuple[int, int, int]) -> None:
    dev = device.info()
    m, n, k = shape
    g = runner.Problem(cp, m, n, k, 1.0, 0.0, 0, dtype)
    first_name, first = None, None
    for name in stage_names(dtype):
        stage = BY_NAME[name].for_arch(dev["arch"])
        if stage.refuses(m, n, k):
            continue
        launch, _meta = runner.launcher(cp, stage, g, dev["arch"], dev["sm_count"])
        g.reset_output()
        launch()
        cp.cuda.runtime.deviceSynchronize()
        ok, rel, _mx = g.check()
        out = g.C.copy()
        if first is None:
            first_name, first = name, out
            print(f"{dtype} {m}x{n}x{k} {name}: rel_error {rel:.6e} verified {ok} (the yardstick)")
            continue
        same = bool(
            cp.array_equal(
                out.view(cp.uint16 if dtype != "fp32" else cp.uint32),
                first.view(cp.uint16 if dtype != "fp32" else cp.uint32),
            )
        )
        diff = int(cp.count_nonzero(out != first))
        print(
            f"{dtype} {m}x{n}x{k} {name}: rel_error {rel:.6e} verified {ok}, bitwise equal to "
            f"{first_name}: {same} ({diff} elements differ)"
        )


if __name__ == "__main__":
    outputs("fp32", (1000, 1000, 1000))
    outputs("fp16", (1024, 1024, 1024))
