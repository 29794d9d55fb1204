#!/usr/bin/env bash
# Session 8, first call (issue 15): what the WGMMA and SIMT targets are up against.
#   1. A public Hopper GEMM series (pranjalssh/fast.cu, kernels 11 and 12: 128 x 256 tiles, 2x1
#      clusters with TMA multicast, Hilbert order; 103% of cuBLAS at 8192^3 in its own harness)
#      timed with our timer beside cuBLAS and our best stages, 8192^3 and 4096^3, default timing
#      (benchmarks/probe_peer.py). Its headers travel in .peer/ (carried, not committed).
#   2. Which kernels cuBLAS runs at 4096^3 and 8192^3 (bf16, fp32) and how busy their pipes are,
#      beside ours: ncu --clock-control none, launch statistics and speed of light.
# GPU wall time: about 150 s (build ~40 s, probe ~40 s, ncu ~70 s).
# Usage: bash benchmarks/gpu_s8a.sh OUTDIR
set -u
export PYTHONUNBUFFERED=1
OUT=${1:?usage: gpu_s8a.sh OUTDIR}
mkdir -p "$OUT" /tmp/peer
bash benchmarks/peer/build.sh /tmp/peer/libpeer.so "$OUT/nvcc.log"
echo "== peer probe"
timeout 200 python3 benchmarks/probe_peer.py --lib /tmp/peer/libpeer.so --sizes 8192,4096 \
  --output "$OUT/peer-fastcu-bf16.json" 2>&1 | tee "$OUT/peer.log" | cut -c1-200
echo "  rc=${PIPESTATUS[0]}"
echo "== ncu: cuBLAS beside ours"
S="--section LaunchStats --section SpeedOfLight --section ComputeWorkloadAnalysis"
CASES=("bf16 wgmma_stagger,wgmma_streamk 4096x4096x4096" "bf16 wgmma_stagger 8192x8192x8192")
[ -n "${S8A_BF16_ONLY:-}" ] || CASES+=("fp32 serpentine_ffma 4096x4096x4096" "fp32 serpentine_ffma 8192x8192x8192")
for case in "${CASES[@]}"; do
  set -- $case
  timeout 150 ncu --clock-control none $S --kernel-name regex:'gemm|xmma|cutlass|nvjet' \
    --csv python3 benchmarks/probe_odd_cublas.py "$1" "$2" "$3" > "$OUT/ncu-$1-$3.csv" 2> "$OUT/ncu-$1-$3.err"
  echo "  $case rc=$?"
  python3 - "$OUT/ncu-$1-$3.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows:
    print("   no rows"); sys.exit()
head = rows[0]
ki, mi, vi = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
seen = {}
for r in rows[1:]:
    seen.setdefault(r[ki][:100], {})[r[mi]] = r[vi]
keep = ("Duration", "SM Frequency", "Grid Size", "Block Size", "Registers Per", "Cluster Size",
        "Compute (SM) Throughput", "Memory Throughput", "DRAM Throughput", "Dynamic Shared",
        "Executed Ipc Active", "Issue Slots Busy", "Waves Per SM")
for k, v in seen.items():
    print("   ", k)
    print("      ", "; ".join(f"{m}={x}" for m, x in v.items() if m.startswith(keep)))
PY
done
