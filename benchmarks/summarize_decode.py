"""Decode GEMMs against the HBM read roof, from `roofline run gemm` documents: per shape each
stage's time, its share of the roof (bytes_ideal / time against ROOF_GBS) and its speed against
the reference timed beside it; then LLaMA-7B's weight GEMMs per token at batch 1 (32 layers of qkv,
o_proj, gate, up, down, and lm_head once) for each stage, for the best per shape, and cuBLAS.
Usage: python3 benchmarks/summarize_decode.py ROOF_GBS DOC.json.gz [DOC.json.gz ...]
       python3 benchmarks/summarize_decode.py --verified DOC.json.gz  (one line: which verified)"""

import sys

from rooflinecli import paths

LLAMA = {  # (n, k): times per token at batch 1
    (12288, 4096): 32,
    (4096, 4096): 32,
    (11008, 4096): 64,
    (4096, 11008): 32,
    (32000, 4096): 1,
}


def verified(path: str) -> None:
    recs = [r for r in paths.read_json(path, "results file")["records"] if r.get("kind") == "stage"]
    ok = sum(bool(r.get("verified")) for r in recs)
    shapes = ", ".join(f"{r['m']}x{r['n']}x{r['k']}={r.get('verified')}" for r in recs)
    print(f"{ok} of {len(recs)} verified: {shapes}")


def main() -> None:
    if sys.argv[1] == "--verified":
        verified(sys.argv[2])
        return
    roof = float(sys.argv[1])
    recs = []
    for path in sys.argv[2:]:
        try:
            recs += paths.read_json(path, "results file")["records"]
        except (OSError, ValueError, KeyError) as exc:
            print(f"{path}: unreadable ({exc})")
    head = ("shape", "dtype", "stage", "us", "GB/s", "%roof", "x ref")
    print("{:>16} {:>5} {:>44} {:>8} {:>7} {:>6} {:>6} ok".format(*head))
    best: dict[tuple[int, int, int, str], float] = {}
    ref: dict[tuple[int, int, int, str], float] = {}
    per_stage: dict[tuple[str, str], dict[tuple[int, int], float]] = {}
    for r in recs:
        if not r.get("time_ms"):
            continue
        key = (r["m"], r["n"], r["k"], r["dtype"])
        us = r["time_ms"] * 1e3
        gbs = r["bytes_ideal"] / (us * 1e-6) / 1e9
        x = (r.get("reference_time_ms") or 0) * 1e3 / us if r.get("reference_time_ms") else 0.0
        shape = f"{r['m']}x{r['n']}x{r['k']}"
        ok = "yes" if r.get("verified") else "NO"
        print(f"{shape:>16} {r['dtype']:>5} {r['stage']:>44} {us:8.2f} {gbs:7.0f} "
              f"{100 * gbs / roof:6.1f} {x:6.2f} {ok}")  # fmt: skip
        if r.get("kind") == "reference":
            ref[key] = min(ref.get(key, 1e9), us)
        elif r.get("verified"):
            best[key] = min(best.get(key, 1e9), us)
            if r["m"] == 1:
                per_stage.setdefault((r["stage"], r["dtype"]), {})[(r["n"], r["k"])] = us
    for dtype in sorted({k[3] for k in best}):
        have = {(n, k) for (m, n, k, d) in best if m == 1 and d == dtype}
        if not set(LLAMA) <= have:
            continue
        bytes_token = sum(c * 2 * n * k for (n, k), c in LLAMA.items())
        roof_us = bytes_token / (roof * 1e9) * 1e6
        ours = sum(c * best[(1, n, k, dtype)] for (n, k), c in LLAMA.items())
        print(f"per token, batch 1, {dtype}: roof {roof:.0f} GB/s allows {roof_us:,.0f} us")
        print(f"  best own per shape {ours:,.0f} us ({100 * roof_us / ours:.1f}% of the roof)")
        if set(LLAMA) <= {(n, k) for (m, n, k, d) in ref if m == 1 and d == dtype}:
            cub = sum(c * ref[(1, n, k, dtype)] for (n, k), c in LLAMA.items())
            print(f"  cuBLAS {cub:,.0f} us ({100 * roof_us / cub:.1f}%); own/cuBLAS speed-up "
                  f"{cub / ours:.3f}x")  # fmt: skip
        for (stage, d), times in sorted(per_stage.items()):
            if d == dtype and set(LLAMA) <= set(times):
                t = sum(c * times[s] for s, c in LLAMA.items())
                print(f"  {stage}: {t:,.0f} us ({100 * roof_us / t:.1f}%)")


if __name__ == "__main__":
    main()
