# shellcheck shell=bash
# The step library every script of the benchmark suite sources (bash). A script is
#
#   source "$(dirname "$0")/lib.sh"
#   suite "$@"                          # OUTDIR [STEP...]: $OUT, the repository root, the record
#   step_NAME() { doc DOC.json.gz LIMIT run gemm ...; ... }
#   run_steps ladder odd ...            # the steps asked for, or these defaults
#
# and is run as `bash benchmarks/SCRIPT.sh OUTDIR [STEP...]` on a machine with the GPU. Every
# results document lands in OUTDIR under the name benchmarks/results/ keeps it by; each step's
# output goes to OUTDIR/logs/STEP.log (never committed), and OUTDIR/environment.txt records the
# device, driver, CUDA, CuPy, NVRTC and the commit. The documents record these themselves too:
# the commit comes from ROOFLINE_COMMIT where the checkout has no .git (set it to
# `git rev-parse HEAD` when copying a tree to the GPU machine).

set -u
export PYTHONUNBUFFERED=1 COLUMNS=${COLUMNS:-200}
R="python3 -m rooflinecli"
SUITE_START=$(date +%s)
# every step is cut at this many seconds after the script started (DEADLINE_S overrides)
DEADLINE_S=${DEADLINE_S:-3600}

# suite OUTDIR [STEP...]: make OUTDIR, go to the repository root, install if asked, record the
# environment. Sets OUT (absolute) and STEPS (the steps named on the command line).
suite() {
  OUT=${1:?usage: bash $0 OUTDIR [STEP...]}
  shift
  STEPS=("$@")
  mkdir -p "$OUT/logs" && OUT=$(cd "$OUT" && pwd)
  cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
  [ -n "${SUITE_INSTALL:-}" ] && install_here
  environment | tee "$OUT/environment.txt"
  ARCH=$(gpu_arch)
}

# install_here: the checkout into the current Python (SUITE_INSTALL=1); wheels under .whl/
# (ignored by git) first, for a machine without network access.
install_here() {
  if ls .whl/*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/roofline-site .whl/*.whl && export PYTHONPATH=/tmp/roofline-site:$PYTHONPATH
  fi
  python3 -m pip install -q --no-build-isolation --no-deps -e . > "$OUT/logs/install.log" 2>&1 \
    || { tail -5 "$OUT/logs/install.log"; exit 2; }
}

# environment: what the documents of this run were measured with (one line each)
environment() {
  echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit ${ROOFLINE_COMMIT:-$(git rev-parse HEAD 2> /dev/null || echo unknown)}"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,temperature.gpu \
    --format=csv,noheader 2> /dev/null | sed 's/^/gpu /' || echo "gpu none (nvidia-smi failed)"
  python3 - << 'PY' 2> /dev/null || echo "cuda unknown (CuPy missing?)"
import cupy
from cupy.cuda import runtime

drv, rt = runtime.driverGetVersion(), runtime.runtimeGetVersion()
print(f"cuda driver {drv // 1000}.{drv % 1000 // 10}, runtime {rt // 1000}.{rt % 1000 // 10}")
print(f"cupy {cupy.__version__}")
try:
    from cuda.bindings import nvrtc

    print("nvrtc {}.{}".format(*nvrtc.nvrtcVersion()[1:]))
except ImportError:
    pass
PY
}

# gpu_arch: the architecture the kernels are compiled for (sm_90a on an H200)
gpu_arch() {
  local cc
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2> /dev/null | head -n 1 | tr -d .)
  case "$cc" in
    90 | 100) echo "sm_${cc}a" ;;
    "") echo sm_90a ;;
    *) echo "sm_$cc" ;;
  esac
}

# left LIMIT: LIMIT seconds, or what is left before the deadline if that is less (at least 1)
left() {
  local l=$((DEADLINE_S - ($(date +%s) - SUITE_START)))
  if [ "$l" -lt "$1" ]; then echo $((l > 1 ? l : 1)); else echo "$1"; fi
}

# step NAME LIMIT COMMAND...: run COMMAND under a time limit, its output in logs/NAME.log; print
# its exit status and the table rows it printed. Returns COMMAND's exit status.
step() {
  local name=$1 limit
  limit=$(left "$2")
  shift 2
  echo "== $name ($(($(date +%s) - SUITE_START)) s, limit ${limit} s)"
  timeout -k 5 "$limit" "$@" > "$OUT/logs/$name.log" 2>&1
  local rc=$?
  echo "   rc=$rc$([ $rc = 124 ] && echo ' (timed out)')"
  grep -E '^\| ' "$OUT/logs/$name.log" | cut -c1-160 | tail -"${SHOW_ROWS:-30}"
  [ $rc = 0 ] || grep -iE 'error|fail' "$OUT/logs/$name.log" | tail -3 | cut -c1-200
  return $rc
}

# doc NAME LIMIT SUBCOMMAND ARGS...: one `roofline SUBCOMMAND ARGS` that writes the results
# document OUTDIR/NAME (its markdown table in logs/NAME.log)
doc() {
  local name=$1 limit=$2
  shift 2
  step "${name%.json.gz}" "$limit" $R "$@" --quiet --format markdown --force --output "$OUT/$name"
}

# calibration NAME: `roofline calibrate`'s roofs of this GPU, as JSON, into OUTDIR/NAME
calibration() {
  echo "== calibrate -> $1"
  timeout "$(left 180)" $R calibrate --format json > "$OUT/$1" 2> "$OUT/logs/calibrate.log"
  echo "   rc=$?"
}

# precompile ITEM...: compile stages and variants (stage@P=V, stage:all) in parallel first, so
# that the timed runs do not wait on NVRTC one kernel at a time
precompile() {
  step precompile 120 python3 benchmarks/precompile_stage.py "$ARCH" "$@"
}

# run_steps DEFAULT...: the steps named on the command line (else DEFAULT), each a function
# step_NAME of the calling script
run_steps() {
  local s list=("$@")
  [ ${#STEPS[@]} -gt 0 ] && list=("${STEPS[@]}")
  for s in "${list[@]}"; do
    if declare -F "step_$s" > /dev/null; then
      "step_$s"
    else
      echo "unknown step $s; steps: $(declare -F | sed -n 's/^declare -f step_//p' | tr '\n' ' ')"
      return 2
    fi
  done
  echo "== done in $(($(date +%s) - SUITE_START)) s: $(cd "$OUT" && ls ./*.json ./*.json.gz 2> /dev/null | tr '\n' ' ')"
}
