"""A stand-in for one `--gpus` worker on a machine without a GPU: run as a program with the
worker's command line, it writes a crafted results document where -o says, as the GPU that
CUDA_VISIBLE_DEVICES names (tests/test_fleet.py).

FLEET_TEMPLATE: the document to start from; FLEET_FAIL: GPUs (comma-separated) that fail as a
broken GPU would; FLEET_SLOW: GPU=FACTOR,... times scaled; FLEET_SLEEP: seconds each runs."""

from __future__ import annotations

import json
import os
import sys
import time

from rooflinecli import paths


def main(argv: list[str]) -> int:
    gpu = os.environ["CUDA_VISIBLE_DEVICES"]
    started = time.time()
    time.sleep(float(os.environ.get("FLEET_SLEEP", "0")))
    if gpu in os.environ.get("FLEET_FAIL", "").split(","):
        print(f"error: no CUDA device found (CUDA error on GPU {gpu})", file=sys.stderr)
        return 2
    doc = paths.read_json(os.environ["FLEET_TEMPLATE"], "results file")
    slow = dict(x.split("=") for x in os.environ.get("FLEET_SLOW", "").split(",") if x)
    factor = float(slow.get(gpu, 1.0))
    for rec in doc["records"]:
        for f in ("samples_ms", "reference_samples_ms"):
            if rec.get(f):
                rec[f] = [v * factor for v in rec[f]]
        for f in ("time_ms", "time_ms_min", "time_ms_max"):
            if isinstance(rec.get(f), int | float):
                rec[f] *= factor
        if isinstance(rec.get("tflops"), int | float):
            rec["tflops"] /= factor
    doc["device"].update(
        index=int(gpu), uuid=f"GPU-0000-{gpu}", serial=f"SER{gpu}", pci_bus_id=f"0000:{gpu}:00.0",
        power_limit_w=700.0,
    )  # fmt: skip
    doc["worker"] = {"argv": argv, "started": started, "ended": time.time(),
                     "order": os.environ.get("CUDA_DEVICE_ORDER")}  # fmt: skip
    out = argv[argv.index("-o") + 1]
    with open(out, "w") as fh:
        json.dump(doc, fh)
    print(json.dumps({"ok": True}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
