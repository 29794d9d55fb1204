"""Does a GEMM take less time replayed from a CUDA graph than launched on a stream? A chain of one
GEMM (`run llm --chain --chain-shape`) replays a graph; `run gemm --no-flush` launches on the
stream. This times the very same launch both ways, in the same rounds of the one timer (no L2
flush, held rounds, every sample kept), for our stage and for cuBLAS, so that the difference
between the two commands is split into what the launch mechanism costs and what it does not.

    python benchmarks/probes/graph_vs_eager.py --shape 1x4096x4096 --dtype bf16 \\
        --stage gemv_splitk --repeats 200 --output OUT.json

Prints one line per launch (median us, and graph over eager) and writes the samples, the SM
clock and the device to --output.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rooflinecli import results  # noqa: E402
from rooflinecli.core import chain  # noqa: E402
from rooflinecli.gpu import chain_runner  # noqa: E402
from rooflinecli.gpu.loop import setup  # noqa: E402
from rooflinecli.gpu.timer import Launch  # noqa: E402
from rooflinecli.stages import gemm  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="1x4096x4096")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--stage", required=True, help="our stage (as --stages names it)")
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--output", default=None)
    a = ap.parse_args()
    cp, dev, _spec, arch, _cc, _limits = setup(None)
    c = chain.single(*chain.parse_shape(a.shape))
    bufs = chain_runner.Buffers(cp, c, a.dtype, 0)
    ref = bufs.reference()
    stream = cp.cuda.Stream(non_blocking=True)
    (stage, reference) = gemm.select(a.stage, a.dtype)
    ways = [
        chain_runner.ours(cp, stream, bufs, {c.links[0].shape: stage}, arch, dev["sm_count"]),
        chain_runner.cublas(cp, stream, bufs, reference, arch),
    ]
    for w in ways:
        if not all(chain_runner.verify(cp, w, ref, bufs, r)["ok"] for r in (False, True)):
            print(f"{w.name}: failed its check", file=sys.stderr)
            return 1
    # each way's launch as a graph replay and as the eager launches it was captured from
    launches = []
    for w in ways:
        assert w.replay is not None and w.eager is not None
        launches += [Launch(f"{w.name} graph", w.replay), Launch(f"{w.name} eager", w.eager)]
    timer = chain_runner.Timer(chain_runner.replay_timing(10, a.repeats))
    with stream:
        timed = timer.time(launches)
    stream.synchronize()
    rows = []
    med = {x.name: statistics.median(s) for x, s in zip(launches, timed.samples, strict=True)}
    for x, samples in zip(launches, timed.samples, strict=True):
        base = med[x.name.replace(" graph", " eager")]
        print(f"{x.name}: {med[x.name] * 1e3:,.2f} us, over eager {med[x.name] / base:.3f}")
        rows.append({"launch": x.name, "median_us": med[x.name] * 1e3, "samples_ms": samples})
    if a.output:
        body = {"schema": "roofline.probe-graph-vs-eager/1", "device": dev, "shape": a.shape,
                "dtype": a.dtype, "stage": stage.name,
                "clock": timed.clock, "method": timed.method, "launches": rows,
                "environment": results.environment()}  # fmt: skip
        Path(a.output).write_text(json.dumps(body, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
