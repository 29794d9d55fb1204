"""One line per record of every results document in a folder: the device scripts' closing
summary (benchmarks/gpu_*.sh).

    python3 benchmarks/summarize_runs.py OUTDIR [NAME.json ...]

Each line: document, shape, stage, the parameters that differ from the registry's, TFLOP/s, % of
the reference timed beside it, the SM clock, and whether it verified (with the error if not).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rooflinecli.stages import gemm as stages  # noqa: E402


def main(argv: list[str]) -> int:
    folder = Path(argv[0])
    paths = [folder / n for n in argv[1:]] or sorted(folder.glob("*.json"))
    for path in paths:
        try:
            recs = json.loads(path.read_text())["records"]
        except (OSError, ValueError, KeyError) as exc:
            print(f"{path.name}: unreadable ({exc})")
            continue
        for r in recs:
            base = stages.BY_NAME.get(str(r.get("stage", "")).split("@")[0])
            diff = ",".join(
                f"{k}={v}"
                for k, v in (r.get("params") or {}).items()
                if base is not None and base.params.get(k) != v
            )
            pct, tf = r.get("pct_of_reference"), r.get("tflops")
            ok = "ok" if r.get("verified") else "NOT VERIFIED " + str(r.get("error") or "")
            shape = f"{r.get('m')}x{r.get('n')}x{r.get('k')}"
            print(
                f"{path.stem:28} {shape:16} {r['stage']:34} {diff:24} {tf or 0:7.1f} "
                f"{pct or 0:6.1f}% {r.get('sm_clock_mhz') or '-'} MHz {ok}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
