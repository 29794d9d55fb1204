#!/usr/bin/env bash
# Build fast.cu's kernels 11 and 12 (exported to .peer/fastcu by export_fastcu.sh) into the shared
# library benchmarks/probes/probe_peer.py loads, with nvcc for sm_90a, linked against the driver's
# libcuda.so.1 (the GPU machine has no libcuda.so link for -lcuda). Run from the repository root.
# Usage: bash benchmarks/probes/peer/build.sh LIB.so LOGFILE
set -u
LIB=${1:?usage: build.sh LIB.so LOGFILE}
LOG=${2:?usage: build.sh LIB.so LOGFILE}
mkdir -p "$(dirname "$LIB")"
LIBCUDA=$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')
nvcc -std=c++17 -O3 -DNDEBUG -w --expt-relaxed-constexpr --expt-extended-lambda --use_fast_math \
  -gencode arch=compute_90a,code=sm_90a -Xcompiler=-fPIC -shared -I.peer/fastcu \
  -o "$LIB" benchmarks/probes/peer/fastcu_wrap.cu \
  ${LIBCUDA:+-L$(dirname "$LIBCUDA")} -l:libcuda.so.1 > "$LOG" 2>&1
rc=$?
echo "peer library: rc=$rc (libcuda: ${LIBCUDA:-none found})"
exit $rc
