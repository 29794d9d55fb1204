#!/usr/bin/env bash
# The first run a new user makes: `roofline run gemm --m 4096` (the README's main job, default
# stages, budget and repeats) timed as a whole process from a cold start, then warm. Cold means
# the tool's compile cache, CuPy's kernel cache and the driver's ~/.nv/ComputeCache are empty.
# The document is benchmarks/results/first-run-gemm-fp32-4096.json.gz: the cold run's results
# document, with the wall times of both runs added as its `first_run` field.
#
#   bash benchmarks/first_run.sh OUTDIR [STEP...]     (default: cold, ~1 min)
source "$(dirname "$0")/lib.sh"
suite "$@"

step_cold() {
  local caches cold warm t0 t1 doc="$OUT/first-run-gemm-fp32-4096.json.gz"
  caches=$(mktemp -d)
  export ROOFLINE_CACHE_DIR=$caches/roofline CUPY_CACHE_DIR=$caches/cupy
  rm -rf "$HOME/.nv/ComputeCache"
  t0=$(date +%s.%N)
  step first-run-cold 300 $R run gemm --m 4096 --quiet --force --output "$doc"
  t1=$(date +%s.%N)
  cold=$(python3 -c "print(round($t1 - $t0, 2))")
  t0=$(date +%s.%N)
  step first-run-warm 300 $R run gemm --m 4096 --quiet --force --output "$OUT/warm.json"
  t1=$(date +%s.%N)
  warm=$(python3 -c "print(round($t1 - $t0, 2))")
  rm -f "$OUT/warm.json"
  echo "   cold ${cold} s, warm ${warm} s, $(nproc) cores"
  python3 - "$doc" "$cold" "$warm" "$(nproc)" << 'PY'
import json
import sys

path, cold, warm, cores = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
with open(path) as f:
    doc = json.load(f)
doc["first_run"] = {
    "command": "roofline run gemm --m 4096",
    "cold_wall_s": round(cold, 2),
    "warm_wall_s": round(warm, 2),
    "cold_means": "the tool's compile cache, CuPy's kernel cache and ~/.nv/ComputeCache emptied",
    "cpu_cores": cores,
    "script": "benchmarks/first_run.sh",
}
with open(path, "w") as f:
    json.dump(doc, f, indent=1)
PY
}

run_steps cold
