"""One line per pick of a `--stages best` document (run gemm or run llm): the stage, its class,
its time beside the reference's, its % of roof, and over the document's shapes the geometric
mean of cuBLAS time / ours (a shape whose pick did not verify makes it "-"); for run llm, the
per-token rows. With --winners, for a `tune dispatch` (or any run) document: per shape the
fastest verified stage, its time and the reference's.

    python benchmarks/summarize_best.py DOC.json
    python benchmarks/summarize_best.py --winners DOC.json
"""

from __future__ import annotations

import math
import sys

from rooflinecli import results
from rooflinecli.core import reference


def _reference(doc: dict, rec: dict) -> float | None:
    """The time of the reference the record is held to (rooflinecli.core.reference)."""
    held = reference.of(rec, doc["records"])
    return held.get("time_ms") if held else None


def winners(path: str) -> None:
    doc = results.load(path)  # older records name their reference on load
    shapes = dict.fromkeys((r["m"], r["n"], r["k"]) for r in doc["records"])
    for r in doc["records"]:  # tests/test_committed_results.py takes no such record: say so
        if r.get("verified") is False:
            why = str(r.get("error") or f"rel_error {r.get('rel_error')}")[:120]
            print(f"NOT VERIFIED: {r['stage']} {r['m']}x{r['n']}x{r['k']} {r['dtype']}: {why}")
    for key in shapes:
        ok = [
            r for r in doc["records"]
            if r.get("kind") == "stage" and (r["m"], r["n"], r["k"]) == key
            and r.get("verified") is True and r.get("time_ms")
        ]  # fmt: skip
        shape = "x".join(map(str, key))
        if not ok:
            print(f"{shape} {doc['records'][0]['dtype']}: no stage verified")
            continue
        best = min(ok, key=lambda r: r["time_ms"])
        ref = _reference(doc, best)
        ratio = f"{100 * ref / best['time_ms']:.1f}% of cuBLAS speed" if ref else "-"
        print(
            f"{shape} {best['dtype']}: {best['stage']} {best['time_ms'] * 1e3:.1f} us, cuBLAS "
            f"{ref * 1e3 if ref else float('nan'):.1f} us ({ratio}); {len(ok)} verified"
        )


def main(path: str) -> None:
    doc = results.load(path)
    seen = set()
    ratios: list[float | None] = []
    for r in doc["records"]:
        if not r.get("dispatch_class"):
            continue
        key = (r["m"], r["n"], r["k"])
        if key in seen:
            continue
        seen.add(key)
        t = r.get("time_ms")
        ref = _reference(doc, r)
        ratio = f"{ref / t:.2f}x cuBLAS speed" if t and ref else "-"
        ratios.append(ref / t if t and ref and r.get("verified") is True else None)
        pct = r.get("pct_of_roof")
        print(
            f"{r['m']}x{r['n']}x{r['k']} {r['dtype']}: {r['stage']} "
            f"({r['dispatch_class']}) {t * 1e3 if t else float('nan'):.1f} us, cuBLAS "
            f"{ref * 1e3 if ref else float('nan'):.1f} us ({ratio}), "
            f"{pct if pct is None else round(pct, 1)}% of roof, verified {r.get('verified')}"
        )
    if ratios and doc.get("command") == "run gemm":
        dtype = doc["records"][0]["dtype"]
        known = [x for x in ratios if x is not None]
        if len(known) < len(ratios):
            lost = len(ratios) - len(known)
            print(f"geomean {dtype}: - ({lost} of {len(ratios)} shapes unverified)")
        else:
            mean = math.exp(sum(math.log(x) for x in known) / len(known))
            print(f"geomean {dtype}: {100 * mean:.1f}% of cuBLAS speed over {len(ratios)} shapes")
    for row in doc.get("per_token", []):
        cells = ", ".join(
            f"{k[4:]}: {v:.1f} us/token" if v is not None else f"{k[4:]}: -"
            for k, v in row.items()
            if k.startswith("us_b")
        )
        print(f"per token, {row['stage']}: {cells}")


if __name__ == "__main__":
    if sys.argv[1] == "--winners":
        for name in sys.argv[2:]:
            winners(name)
    else:
        main(sys.argv[1])
