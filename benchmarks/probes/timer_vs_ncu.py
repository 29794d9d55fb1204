"""Does the gated timer measure what the GPU spends in a kernel? Each stage's event time (the
median of every repeat, gated) against Nsight Compute's kernel time of the same launch.

    python benchmarks/probes/timer_vs_ncu.py EVENTS.json DTYPE OUT.json

EVENTS.json is a `roofline run gemm --format json` document. For each of its records, `roofline
profile gemm`'s own path (rooflinecli.gpu.profile.profile_gemm: ncu, `--clock-control none`,
filtered to the stage's NVTX range) profiles the stage's timed launch at the record's shape, and
the record keeps ncu's gpu__time_duration as ncu_time_ms. Prints one line per stage: event us,
ncu us, the difference and whether it is within max(2%, 0.5 us); OUT.json keeps the rows.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rooflinecli import paths
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import profile


def compare(rec: dict[str, Any], dtype: str) -> dict[str, Any]:
    """One record's event time beside ncu's kernel time of the same stage and shape."""
    name, shape = rec["stage"], (rec["m"], rec["n"], rec["k"])
    row: dict[str, Any] = {
        "stage": name,
        "shape": shape,
        "event_us": rec["time_ms"] * 1e3,
        "timing_method": rec.get("timing_method"),
    }
    try:  # one stage at a time: a stage that fails under ncu must not stop the rest
        _doc, (got,), _info = profile.profile_gemm(shape, [name], dtype, None, timeout=300)
    except RooflineError as exc:
        got = {"ncu_time_ms": None, "counters_reason": exc.message}
    ncu_ms = got.get("ncu_time_ms")
    row["ncu_us"] = ncu_ms * 1e3 if ncu_ms else None
    row["ncu_kernels"] = len(got.get("ncu_kernels") or [])
    if row["ncu_us"]:
        diff = row["event_us"] - row["ncu_us"]
        row["diff_us"] = diff
        row["within"] = abs(diff) <= max(0.02 * row["ncu_us"], 0.5)
    else:
        row["error"] = got.get("counters_reason")
    return row


def main(events_path: str, dtype: str, out_path: str) -> None:
    doc = paths.read_json(events_path, "results file")
    rows = []
    for rec in doc["records"]:
        if not rec.get("time_ms"):  # skipped or failed: nothing to compare
            print(f"{dtype} {rec['stage']:18s} no event time: {rec.get('error')}", flush=True)
            continue
        row = compare(rec, dtype)
        rows.append(row)
        ncu_txt = f"{row['ncu_us']:9.2f}" if row.get("ncu_us") else "        -"
        verdict = {True: "within", False: "OUTSIDE", None: "?"}[row.get("within")]
        print(f"{dtype} {row['stage']:18s} event {row['event_us']:9.2f} us  ncu {ncu_txt} us  "
              f"diff {row.get('diff_us', float('nan')):+7.2f} us  {verdict} "
              f"max(2%, 0.5 us) {row.get('error') or ''}", flush=True)  # fmt: skip
    Path(out_path).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
