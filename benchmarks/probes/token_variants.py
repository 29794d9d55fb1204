"""Stage 57 (decode_token) in variants of its -D parameters, on one chain, beside cuBLAS's graph
chain: each variant built, checked against the float32 chain (eager, replayed, last timed
replay), then every way replayed interleaved round by round, every sample kept.

    python benchmarks/probes/token_variants.py --preset llama-7b --dtype bf16 --batch 1 \\
        --variants PREFETCH=0 PREFETCH=8 PREFETCH=16,STAGES=6 --stamps --output OUT.json

Prints one line per way (median µs per token, cuBLAS / it, GB/s of weights read) and writes
them, with the samples, the SM clock and the device, to --output. With --stamps, each variant's
stamping build (STAMPS=1) is replayed beside it too: where its token goes (the blocks' waits
for their input, the gaps between their runs, the tail), and what the stamps cost.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rooflinecli import results  # noqa: E402
from rooflinecli.core import chain, llm  # noqa: E402
from rooflinecli.gpu import chain_runner  # noqa: E402
from rooflinecli.gpu.loop import setup  # noqa: E402
from rooflinecli.stages import gemm  # noqa: E402
from rooflinecli.stages.token import TOKEN_BY_NAME  # noqa: E402


def variant(text: str):  # type: ignore[no-untyped-def]
    base = TOKEN_BY_NAME["decode_token"]
    params = dict(base.params)
    for item in filter(None, text.split(",")):
        key, value = item.split("=")
        params[key] = int(value)
    return replace(base, params=MappingProxyType(params))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="llama-7b")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--variants", nargs="+", default=["PREFETCH=0"])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--read-gbs", type=float, default=None, help="the read roof (calibrate)")
    ap.add_argument("--stamps", action="store_true", help="each variant's timeline too")
    ap.add_argument("--output", default=None)
    a = ap.parse_args()
    cp, dev, spec, arch, _cc, _limits = setup(None)
    preset = llm.resolve(a.preset)
    full = chain.build(preset, a.batch)
    bufs = chain_runner.Buffers(cp, full, a.dtype, 0)
    ref = bufs.reference()
    stream = cp.cuda.Stream(non_blocking=True)
    ways = [chain_runner.cublas(cp, stream, bufs, gemm.reference_for(a.dtype), arch)]
    for v in a.variants:
        ways.append(chain_runner.token_way(cp, stream, bufs, arch, dev["sm_count"], variant(v),
                                           f"token@{v}"))  # fmt: skip
    live = [w for w in ways if w.absent is None]
    for w in ways:
        if w.absent:
            print(f"{w.name}: absent: {w.absent}")
    checks = {}
    for w in live:
        checks[w.name] = [chain_runner.verify(cp, w, ref, bufs, r)["ok"] for r in (False, True)]
    timer = chain_runner.Timer(chain_runner.replay_timing(5, a.repeats))
    clock = chain_runner.time_replays(timer, stream, live).clock
    for w in live:
        checks[w.name].append(chain_runner.verify_last(cp, w, ref, bufs)["ok"])
    nbytes = full.weight_bytes(a.dtype)
    cub = statistics.median(live[0].samples_ms)
    rows = []
    for w in live:
        med = statistics.median(w.samples_ms)
        gbs = nbytes / (med * 1e-3) / 1e9
        roof = f", {100 * gbs / a.read_gbs:.1f}% of the read roof" if a.read_gbs else ""
        print(f"{w.name}: {med * 1e3:,.1f} us, cuBLAS / it {cub / med:.3f}, {gbs:,.0f} GB/s"
              f"{roof}, checks {checks[w.name]}", flush=True)  # fmt: skip
        rows.append({"way": w.name, "median_us": med * 1e3, "cublas_over": cub / med,
                     "gbs": gbs, "verified": all(checks[w.name]), "checks": checks[w.name],
                     "samples_ms": w.samples_ms, "build": w.build})  # fmt: skip
        if a.stamps and w.stamped is not None:
            t = chain_runner.stamp_way(timer, stream, w)
            rows[-1]["timeline"] = t
            if "timeline_reason" in t:
                print(f"  {t['timeline_reason']}")
            else:
                print(f"  stamped {t['traced_token_us']:,.1f} us: waits "
                      f"{100 * t['wait_share']:.1f}%, gaps {100 * t['gap_share']:.1f}%, tail "
                      f"{t['tail_us']:.1f} us, stamps cost {100 * t['tracing_overhead']:+.2f}%",
                      flush=True)  # fmt: skip
    if a.output:
        body = {"schema": "roofline.probe-token-variants/1", "device": dev, "preset": a.preset,
                "dtype": a.dtype, "batch": a.batch,
                "read_gbs": a.read_gbs, "clock": clock, "ways": rows,
                "environment": results.environment()}  # fmt: skip
        Path(a.output).write_text(json.dumps(body, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
