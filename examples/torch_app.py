"""A small PyTorch program to put on the measured roofline with `roofline profile app`.

    roofline profile app -- python examples/torch_app.py
    roofline profile app --nvtx "softmax/" -- python examples/torch_app.py

A matmul (Tensor Cores), a softmax over its rows and a layer norm, each inside an NVTX push/pop
range of that name (torch.cuda.nvtx, the default domain), --repeats times, in FP16 (or --dtype
bf16 / fp32). Imports PyTorch only if it is there: without it, or without a GPU, it says so and
exits 0, so a session without PyTorch can run it harmlessly.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--dtype", choices=("fp16", "bf16", "fp32"), default="fp16")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    if importlib.util.find_spec("torch") is None:
        print("PyTorch is not installed: nothing to profile", file=sys.stderr)
        return 0
    import torch

    if not torch.cuda.is_available():
        print("PyTorch sees no CUDA device: nothing to profile", file=sys.stderr)
        return 0
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    n = args.n
    x = torch.randn(n, n, device="cuda", dtype=dt)
    w = torch.randn(n, n, device="cuda", dtype=dt)
    norm = torch.nn.LayerNorm(n, device="cuda", dtype=dt)
    with torch.no_grad():
        norm(torch.softmax(x @ w, dim=-1))  # first calls: handles, autotuning, outside ranges
        torch.cuda.synchronize()
        nvtx = torch.cuda.nvtx
        for _ in range(args.repeats):
            nvtx.range_push("matmul")
            y = x @ w
            nvtx.range_pop()
            nvtx.range_push("softmax")
            s = torch.softmax(y, dim=-1)
            nvtx.range_pop()
            nvtx.range_push("layer_norm")
            norm(s)
            nvtx.range_pop()
        torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
