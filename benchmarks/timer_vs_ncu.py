"""The gated timer's event time of each stage against ncu's kernel time (issue 14).

    python benchmarks/timer_vs_ncu.py EVENTS.json DTYPE OUT.json

EVENTS.json is a `roofline run gemm --format json` document (gated event times, the median of
every repeat). For each of its records, ncu (`--clock-control none`, one metric,
gpu__time_duration.sum, filtered to the stage's NVTX range in domain 'roofline') profiles the
stage's launch in rooflinecli.gpu.profile_target, as `roofline profile gemm` does. Prints one
line per stage: event us, ncu us, the difference and whether it is within max(2%, 0.5 us).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from rooflinecli.stages import gemm as stages
from rooflinecli.gpu import profile


def main(events_path: str, dtype: str, out_path: str) -> None:
    doc = json.loads(Path(events_path).read_text())
    ncu = profile.find_ncu()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in doc["records"]:
            name, shape = r["stage"], (r["m"], r["n"], r["k"])
            if not r.get("time_ms"):  # skipped or failed: nothing to compare
                print(f"{dtype} {name:18s} no event time: {r.get('error')}", flush=True)
                continue
            row = {"stage": name, "shape": shape, "event_us": (r.get("time_ms") or 0) * 1e3,
                   "timing_method": r.get("timing_method")}  # fmt: skip
            report = Path(tmp) / f"{name}.ncu-rep"
            target = profile.run_command(shape, name, dtype, None, Path(tmp) / f"{name}.json")
            entry = stages.BY_NAME[name].entry if name in stages.BY_NAME else None
            cmd = profile.ncu_command(ncu, [profile.TIME_METRIC], report, target, name, entry, True)
            try:
                profile._run(cmd, 300)
                got, why = profile._import_rows(ncu, report, 120)
            except Exception as exc:  # one stage's failure must not stop the rest
                got, why = None, str(exc).splitlines()[0]
            if got:
                # profile._import_rows reads ncu with --print-units base: seconds
                sec = profile.sum_metrics(got).get(profile.TIME_METRIC)
                row["ncu_us"] = sec * 1e6 if sec else None
                row["ncu_kernels"] = len(got)
            else:
                row["ncu_us"], row["error"] = None, why
            if row["ncu_us"] and row["event_us"]:
                diff = row["event_us"] - row["ncu_us"]
                row["diff_us"] = diff
                row["within"] = abs(diff) <= max(0.02 * row["ncu_us"], 0.5)
            rows.append(row)
            ncu_txt = f"{row['ncu_us']:9.2f}" if row.get("ncu_us") else "        -"
            verdict = {True: "within", False: "OUTSIDE", None: "?"}[row.get("within")]
            print(f"{dtype} {name:18s} event {row['event_us']:9.2f} us  ncu {ncu_txt} us  "
                  f"diff {row.get('diff_us', float('nan')):+7.2f} us  {verdict} "
                  f"max(2%, 0.5 us) {row.get('error', '')}", flush=True)  # fmt: skip
    Path(out_path).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
