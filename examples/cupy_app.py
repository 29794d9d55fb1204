"""A small CuPy program to put on the measured roofline with `roofline profile app`.

    roofline profile app -- python examples/cupy_app.py
    roofline profile app --nvtx "app@matmul/" -- python examples/cupy_app.py --gib 0
    roofline profile app --kernel axpb -- python examples/cupy_app.py --n 256

Two parts, each inside an NVTX push/pop range in domain "app":

- "matmul": C = A @ B in FP16 (cuBLAS, Tensor Cores), N x N x N with N a multiple of every tile
  size (default 4096), --repeats times: each launch must count 2*N^3 FLOPs.
- "elementwise": a chain over float32 arrays of --gib GiB each (default 1, far larger than any
  L2): y = x * 2 (cupy.multiply), z = y + 1 (cupy.add), w = 3 * z + 1 (one ElementwiseKernel,
  `axpb`: one FMA per element). Each kernel reads one array and writes one: it must move twice the
  array's size through DRAM.

Needs CuPy and the nvtx package (both come with `pip install 'roofline[cuda12]'` or `[cuda13]`).
"""

from __future__ import annotations

import argparse

import cupy as cp
import nvtx

DOMAIN = "app"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096, help="matmul size (0: no matmul)")
    ap.add_argument("--repeats", type=int, default=2, help="matmuls")
    ap.add_argument("--gib", type=float, default=1.0, help="GiB per elementwise array (0: none)")
    args = ap.parse_args()

    if args.n:
        rng = cp.random.default_rng(0)
        a = rng.standard_normal((args.n, args.n), dtype=cp.float32).astype(cp.float16)
        b = rng.standard_normal((args.n, args.n), dtype=cp.float32).astype(cp.float16)
        c = cp.empty((args.n, args.n), dtype=cp.float16)
        cp.matmul(a, b, out=c)  # cuBLAS handles and its first-call kernels: outside the range
        cp.cuda.get_current_stream().synchronize()
        with nvtx.annotate("matmul", domain=DOMAIN):
            for _ in range(args.repeats):
                cp.matmul(a, b, out=c)
            cp.cuda.get_current_stream().synchronize()
        del a, b, c

    if args.gib:
        n = int(args.gib * (1 << 30)) // 4
        axpb = cp.ElementwiseKernel(
            "float32 x, float32 a, float32 b", "float32 y", "y = a * x + b", "axpb"
        )
        x = cp.ones(n, dtype=cp.float32)
        y = cp.empty_like(x)
        z = cp.empty_like(x)
        cp.cuda.get_current_stream().synchronize()
        with nvtx.annotate("elementwise", domain=DOMAIN):
            cp.multiply(x, 2.0, out=y)
            cp.add(y, 1.0, out=z)
            axpb(z, 3.0, 1.0, y)
            cp.cuda.get_current_stream().synchronize()
        assert float(y[0]) == 3.0 * (1.0 * 2.0 + 1.0) + 1.0


if __name__ == "__main__":
    main()
