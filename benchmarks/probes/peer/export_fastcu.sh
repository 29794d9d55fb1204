#!/usr/bin/env bash
# Put the public fast.cu headers that benchmarks/probes/peer/fastcu_wrap.cu includes where
# benchmarks/probes/peer/build.sh looks for them (.peer/fastcu, ignored by git; copy it to the GPU
# machine with the tree):
# from a clone of https://github.com/pranjalssh/fast.cu (MIT), at the commit it is checked out at.
# Usage: bash benchmarks/probes/peer/export_fastcu.sh PATH_TO_FAST_CU_CLONE
set -eu
SRC=${1:?usage: export_fastcu.sh PATH_TO_FAST_CU_CLONE}
DST="$(cd "$(dirname "$0")/../.." && pwd)/.peer/fastcu"
mkdir -p "$DST/examples/matmul"
for f in matmul_11.cuh matmul_12.cuh; do
  git -C "$SRC" show "HEAD:examples/matmul/$f" > "$DST/examples/matmul/$f"
done
git -C "$SRC" rev-parse HEAD > "$DST/COMMIT"
echo "exported fast.cu $(cat "$DST/COMMIT") to $DST"
