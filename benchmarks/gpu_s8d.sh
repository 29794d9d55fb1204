#!/usr/bin/env bash
# Session 8, fourth call (issue 15): where fast.cu's kernel 12 gains on our stages per SM.
# ncu (--clock-control none) over one launch each of cuBLAS, stages 28, 29, 36 (and 36 without
# a cluster) and fast.cu's kernels 11 and 12 at 8192^3 and 4096^3 bf16: instructions issued,
# tensor-pipe activity, stall reasons, shared-memory bank conflicts, L2 and DRAM traffic.
# GPU wall time: about 120 s.
# Usage: bash benchmarks/gpu_s8d.sh OUTDIR
set -u
export PYTHONUNBUFFERED=1
OUT=${1:?usage: gpu_s8d.sh OUTDIR}
mkdir -p "$OUT" /tmp/peer
bash benchmarks/peer/build.sh /tmp/peer/libpeer.so "$OUT/nvcc.log"
MET="smsp__inst_executed.sum,sm__cycles_active.avg,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,lts__t_bytes.sum,dram__bytes_read.sum,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
for size in 8192 4096; do
  timeout 200 ncu --clock-control none --kernel-name regex:'gemm_wgmma|matmulKernel|nvjet' \
    --metrics "$MET" --csv python3 benchmarks/probe_peer.py --lib /tmp/peer/libpeer.so \
    --sizes $size --launch-only 1 \
    --stages wgmma_stagger,wgmma_streamk,wgmma_stmatrix,wgmma_stmatrix@CLUSTER_M=1,LAG=1 \
    > "$OUT/ncu-$size.csv" 2> "$OUT/ncu-$size.err"
  echo "ncu $size rc=$?"
  python3 - "$OUT/ncu-$size.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows:
    print("  no rows"); sys.exit()
h = rows[0]
ki, mi, vi, ui = h.index("Kernel Name"), h.index("Metric Name"), h.index("Metric Value"), h.index("ID")
by = {}
for r in rows[1:]:
    by.setdefault((r[ui], r[ki][:40]), {})[r[mi]] = r[vi]
for (i, k), v in by.items():
    stalls = sorted(((float(x.replace(",", "")), m.split("stalled_")[1].split("_per")[0])
                     for m, x in v.items() if "stalled_" in m), reverse=True)[:6]
    keep = {m.split("__")[1][:34]: x for m, x in v.items() if "stalled_" not in m}
    print(f"  {k}: " + "; ".join(f"{m}={x}" for m, x in keep.items()))
    print("     stalls: " + ", ".join(f"{n}={s:.2f}" for s, n in stalls))
PY
done
