"""How fast can one kernel read N bytes from HBM, by size? (the floor under batch-1 decode)

Times calibrate's read-only streaming kernel (kernels/calibrate/mem_read.cu, 16-byte __ldg loads,
4 in flight per thread) over buffers of 16 MiB to 2 GiB with the project's one timer (L2 flushed
by a read before every repeat, gated, CUDA events), on grids of 1 to 8 blocks of 256 threads
per SM, and prints GB/s and the time against bytes / (2 GiB rate): the fixed cost per launch
that a decode kernel of that size cannot avoid. Usage: python3 benchmarks/probes/probe_read_sizes.py
[--output FILE.json]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from rooflinecli.gpu import calibrate, device
from rooflinecli.gpu.timer import Launch, Timer, Timing

MIB = 1 << 20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--output")
    args = ap.parse_args()
    cp = device.cupy()
    info = device.info()
    arch = info["arch"]
    built = calibrate.compile_kernel("cal_hbm_read", arch)
    fn = cp.RawModule(path=built.cubin_path).get_function("mem_read")
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    timer = Timer(Timing(budget_ms=200.0))
    big = cp.random.default_rng(0).random((2048 * MIB) // 4, dtype=cp.float32)
    out = cp.zeros(sms * 8 * 256, dtype=cp.float32)
    sentinel = np.float32(-1.2345e30)
    rows = []
    for mib in (16, 32, 64, 96, 128, 256, 512, 2048):
        nbytes = mib * MIB
        for per_sm in (1, 2, 4, 8):
            grid = sms * per_sm
            a = (big, np.int64(nbytes // 16), np.int32(1), sentinel, out)
            t = timer.time([Launch(f"read{mib}", lambda a=a, g=grid: fn((g,), (256,), a))])
            ms = float(np.median(t.samples[0]))
            rows.append(
                {
                    "mib": mib,
                    "blocks_per_sm": per_sm,
                    "median_us": ms * 1e3,
                    "gbs": nbytes / (ms * 1e-3) / 1e9,
                }
            )
    # the same launch reading nothing (n4 = 0): what events around a kernel of this grid cost
    # with no bytes to move (launch, block scheduling, the end of the grid, the events)
    for per_sm in (1, 4, 8):
        grid = sms * per_sm
        a = (big, np.int64(0), np.int32(1), sentinel, out)
        t = timer.time([Launch("read0", lambda a=a, g=grid: fn((g,), (256,), a))])
        empty_us = float(np.median(t.samples[0])) * 1e3
        rows.append({"mib": 0, "blocks_per_sm": per_sm, "median_us": empty_us, "gbs": 0.0})
    best2g = max(r["gbs"] for r in rows if r["mib"] == 2048)
    print(f"2 GiB rate {best2g:,.0f} GB/s")
    print("MiB  blk/SM   us     GB/s  %2GiB  excess_us")
    for r in rows:
        ideal = r["mib"] * MIB / (best2g * 1e9) * 1e6  # 0 for the empty launches
        r["excess_us"] = r["median_us"] - ideal
        print(
            f"{r['mib']:5d} {r['blocks_per_sm']:3d} {r['median_us']:9.2f} {r['gbs']:8,.0f} "
            f"{100 * r['gbs'] / best2g:5.1f} {r['excess_us']:7.2f}"
        )
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"device": info, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
