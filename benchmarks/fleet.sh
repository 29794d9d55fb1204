#!/usr/bin/env bash
# Every GPU of a node at once (docs/fleet.md): `run gemm --m 4096 --gpus ...` beside the same
# run on one GPU alone, with a warm compile cache, and `roofline fleet` on the merged document.
# Documents: fleet-gemm-fp32-4096-gpus0.json.gz (--gpus 0), fleet-gemm-fp32-4096-gpus-all.json
# (--gpus all), each with the wall times of the fleet run and of the one-GPU run added as its
# `wall` field; fleet-ranks-torchrun.json.gz (step ranks: torchrun's ranks, merged).
#
#   bash benchmarks/fleet.sh OUTDIR [STEP...]     (default: one all ranks, ~2 min on a node of 8)
source "$(dirname "$0")/lib.sh"
suite "$@"

# wall NAME DOC LIMIT ARGS...: `roofline run gemm ARGS`, its wall time into the shell's WALL
wall() {
  local name=$1 doc=$2 limit=$3 t0 t1
  shift 3
  t0=$(date +%s.%N)
  step "$name" "$limit" $R run gemm --m 4096 --quiet --force --format markdown "$@" --output "$doc"
  t1=$(date +%s.%N)
  WALL=$(python3 -c "print(round($t1 - $t0, 2))")
}

# fleet_run DOC GPUS: the one-GPU run (warming the cache first), the --gpus run into DOC, both
# wall times
fleet_run() {
  local tag=${1%.json.gz} gpus=$2 alone fleet doc="$OUT/$1"
  tag=${tag#fleet-gemm-fp32-4096-}
  wall "warm-$tag" "$OUT/warm.json" 300
  wall "alone-$tag" "$OUT/alone.json" 300
  alone=$WALL
  wall "fleet-$tag" "$doc" 300 --gpus "$gpus"
  fleet=$WALL
  rm -f "$OUT/warm.json" "$OUT/alone.json"
  echo "   one GPU alone ${alone} s, --gpus $gpus ${fleet} s"
  python3 - "$doc" "$gpus" "$alone" "$fleet" << 'PY'
import json
import sys

path, gpus, alone, fleet = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
with open(path) as f:
    doc = json.load(f)
doc["wall"] = {
    "command": f"roofline run gemm --m 4096 --gpus {gpus}",
    "fleet_wall_s": fleet,
    "one_gpu_wall_s": alone,
    "ratio": round(fleet / alone, 3),
    "cache": "warm (the same run once before each timed one)",
    "script": "benchmarks/fleet.sh",
}
with open(path, "w") as f:
    json.dump(doc, f, indent=1)
PY
  step "verdict-$tag" 60 $R fleet "$doc"
}

step_one() {
  fleet_run fleet-gemm-fp32-4096-gpus0.json.gz 0
}

step_all() {
  fleet_run fleet-gemm-fp32-4096-gpus-all.json.gz all
}

# ranks: the launcher path for real, under torchrun (one rank a GPU of this node): each rank
# writes {host}-{rank}.json, `roofline merge` makes fleet-ranks-torchrun.json.gz of them
step_ranks() {
  local dir="$OUT/ranks" n
  n=$(nvidia-smi -L 2> /dev/null | wc -l)
  mkdir -p "$dir"
  step ranks 300 python3 -m torch.distributed.run --standalone --nproc_per_node="${n:-1}" \
    -m rooflinecli run gemm --sizes 4096 --stages cublas,multistage --quiet --force \
    --output "$dir/{host}-{rank}.json"
  step merge 60 $R merge "$dir"/*.json --force --output "$OUT/fleet-ranks-torchrun.json.gz"
  rm -rf "$dir"
}

run_steps one all ranks
