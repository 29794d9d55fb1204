"""A chain of one GEMM (`run llm --chain --chain-shape MxNxK`) against `run gemm --no-flush` at
the same shape: per side (our pick, cuBLAS) the chain's median replay over the per-GEMM median,
and whether they agree within 3% (a graph replay of one kernel should cost what the same kernel
costs launched alone with a warm L2).

    python benchmarks/chain_single.py CHAIN.json.gz GEMM.json.gz
"""

from __future__ import annotations

import sys
from pathlib import Path

from rooflinecli import paths

WITHIN = 0.03


def _time(doc: dict, kind: str) -> tuple[str, float | None]:
    for r in doc["records"]:
        if r.get("kind") == kind and r.get("time_ms"):
            return str(r.get("stage")), float(r["time_ms"])
    return "-", None


def main(chain_path: str, gemm_path: str) -> int:
    missing = [p for p in (chain_path, gemm_path) if not Path(p).is_file()]
    if missing:
        print(f"one-gemm: not measured ({', '.join(missing)} missing)")
        return 1
    chain = paths.read_json(chain_path, "results file")
    gemm = paths.read_json(gemm_path, "results file")
    worst = 0.0
    for kind in ("stage", "reference"):
        c_name, c_ms = _time(chain, kind)
        g_name, g_ms = _time(gemm, kind)
        if c_ms is None or g_ms is None:
            print(f"one-gemm {kind}: chain {c_name} {c_ms}, run gemm {g_name} {g_ms}: not measured")
            worst = float("inf")
            continue
        ratio = c_ms / g_ms
        worst = max(worst, abs(ratio - 1))
        print(f"one-gemm {kind}: chain {c_name} {c_ms * 1e3:.2f} us, run gemm --no-flush "
              f"{g_name} {g_ms * 1e3:.2f} us, ratio {ratio:.3f}")  # fmt: skip
    ok = worst <= WITHIN
    print(f"one-gemm within {WITHIN:.0%}: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
