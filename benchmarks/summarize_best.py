"""One line per pick of a `--stages best` document (run gemm or run llm): the stage, its class,
its time beside the reference's, its % of roof; for run llm, the per-token rows.

    python benchmarks/summarize_best.py DOC.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(path: str) -> None:
    doc = json.loads(Path(path).read_text())
    seen = set()
    for r in doc["records"]:
        if not r.get("dispatch_class"):
            continue
        key = (r["m"], r["n"], r["k"])
        if key in seen:
            continue
        seen.add(key)
        t = r.get("time_ms")
        ref = next(
            (x.get("time_ms") for x in doc["records"]
             if x.get("kind") == "reference" and (x["m"], x["n"], x["k"]) == key),
            None,
        )  # fmt: skip
        ratio = f"{ref / t:.2f}x cuBLAS speed" if t and ref else "-"
        pct = r.get("pct_of_roof")
        print(
            f"{r['m']}x{r['n']}x{r['k']} {r['dtype']}: {r['stage']} "
            f"({r['dispatch_class']}) {t * 1e3 if t else float('nan'):.1f} us, cuBLAS "
            f"{ref * 1e3 if ref else float('nan'):.1f} us ({ratio}), "
            f"{pct if pct is None else round(pct, 1)}% of roof, verified {r.get('verified')}"
        )
    for row in doc.get("per_token", []):
        cells = ", ".join(
            f"{k[4:]}: {v:.1f} us/token" if v is not None else f"{k[4:]}: -"
            for k, v in row.items()
            if k.startswith("us_b")
        )
        print(f"per token, {row['stage']}: {cells}")


if __name__ == "__main__":
    main(sys.argv[1])
