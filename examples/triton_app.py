"""A Triton kernel to put on the measured roofline with `roofline profile app`.

    roofline profile app --kernel scale_shift -- python examples/triton_app.py --gib 1

`scale_shift` computes y = 3 * x + 1 over float32 arrays of --gib GiB (default 1, far larger than
any L2): one FMA per element, one read and one write, so it must move twice the array's size
through DRAM and sit far left of the ridge (0.25 FLOP/byte). Needs Triton and a CUDA GPU; without
Triton it says so and exits 0 without launching anything.
"""

from __future__ import annotations

import argparse
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=float, default=1.0, help="GiB per array")
    args = ap.parse_args()
    try:
        import torch
        import triton
        import triton.language as tl
    except ImportError as exc:
        print(f"triton_app: {exc.name} is not installed; nothing to run", file=sys.stderr)
        return 0

    @triton.jit
    def scale_shift(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(y_ptr + offs, 3.0 * x + 1.0, mask=mask)

    n = int(args.gib * (1 << 30)) // 4
    x = torch.ones(n, device="cuda", dtype=torch.float32)
    y = torch.empty_like(x)
    grid = (triton.cdiv(n, 4096),)
    scale_shift[grid](x, y, n, BLOCK=4096)
    torch.cuda.synchronize()
    assert float(y[0]) == 4.0 and float(y[-1]) == 4.0
    return 0


if __name__ == "__main__":
    sys.exit(main())
