#!/usr/bin/env bash
# Stage 42 (kernels/42_attn_fa2_mma.cu) on the GPU: correctness on odd shapes, then timing against
# PyTorch SDPA (flash = FlashAttention-2, cuDNN), then alternative tile configurations.
# Usage: bash benchmarks/gpu_fa2.sh OUTDIR      Expected run time: about 120 s on an H200 (150 s cap).
# Every call of benchmarks/check_attention.py writes its log (OUTDIR/*.log) and JSON lines
# (OUTDIR/*.jsonl); stdout gets one line per case (PASS/FAIL, error, TFLOP/s, ratio to torch).
set -u
export PYTHONUNBUFFERED=1
OUTDIR=${1:?usage: gpu_fa2.sh OUTDIR}
mkdir -p "$OUTDIR"
START=$(date +%s)
FILE=kernels/42_attn_fa2_mma.cu

# cfg NAME D BLOCK_M BLOCK_N WARP_M STAGES MIN_BLOCKS Q_IN_SMEM: the -D list, threads and shared
# memory of one configuration (the kernel's SMEM_BYTES formula) in $ARGS.
cfg() {
  local d=$2 bm=$3 bn=$4 wm=$5 st=$6 mb=$7 qs=$8
  local stage=$((2 * bn * d * 2)) q=$((bm * d * 2)) smem
  if [ "$qs" = 1 ]; then smem=$((st * stage + q))
  else smem=$((st * stage + (q > stage ? q - stage : 0))); fi
  ARGS="--threads $((32 * bm / wm)) --block-m $bm --smem $smem --head-dim $d -D BLOCK_M=$bm \
-D BLOCK_N=$bn -D WARP_M=$wm -D STAGES=$st -D MIN_BLOCKS=$mb -D Q_IN_SMEM=$qs --label $1"
}

# run NAME LIMIT_S ARGS...: one check_attention.py call, its log and jsonl under OUTDIR; its
# time limit is cut to what is left of BUDGET_S, and it is skipped when under 10 s are left
BUDGET_S=${BUDGET_S:-148}
run() {
  local name=$1 limit=$2
  shift 2
  local left=$(( BUDGET_S - ($(date +%s) - START) ))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -lt 10 ]; then echo "== $name skipped (budget spent)"; return; fi
  echo "== $name ($(( $(date +%s) - START )) s)"
  timeout "$limit" python3 benchmarks/check_attention.py --file "$FILE" --entry attn_fa2_mma \
    --out "$OUTDIR/$name.jsonl" "$@" > "$OUTDIR/$name.log" 2>&1
  local rc=$?
  grep -E "^(PASS|FAIL|LAUNCH-FAIL|COMPILE-FAIL|# )" "$OUTDIR/$name.log" | grep -v "failure(s)$" \
    | sed -e 's/ Hkv/\/kv/' | cut -c1-200
  [ $rc -eq 0 ] || { echo "   rc=$rc (124: timeout); last lines:"; tail -3 "$OUTDIR/$name.log" | cut -c1-200; }
}

ODD=1x2x2x77,2x3x1x1000,1x4x2x129,1x2x2x1,1x2x1x64,1x1x1x200
# the registry's configurations (best guess): D=128 8 warps x 16 rows, Q in registers;
# D=64 4 warps x 32 rows, 2 blocks per SM
cfg d128 128 128 64 16 2 1 0; D128=$ARGS
cfg d64 64 128 64 32 2 2 0; D64=$ARGS

# 1. correctness: both dtypes, both head dims, causal and not, GQA, odd seq (~25 s)
run check-d128 40 $D128 --dtype fp16,bf16 --causal 0,1 --check $ODD
run check-d64 40 $D64 --dtype fp16,bf16 --causal 0,1 --check $ODD

# 2. timing against torch at the shapes, D=128 bf16, B*N = 16384, H = 16 (~30 s)
run time-d128 60 $D128 --dtype bf16 --causal 0,1 --torch --budget-ms 150 \
  --time 32x16x16x512,8x16x16x2048,2x16x16x8192,1x16x16x16384

# 3. alternatives at N = 8192, D=128 bf16, no torch (compare with time-d128's N8192 lines): 4 warps
# of 16 rows, 2 blocks/SM (and N=512); 3 stages; 4 warps of 32 rows with Q re-read from shared
# memory (half the ldmatrix bytes per MMA for K and V) with 32-key tiles (240 registers) and
# 64-key tiles (FlashAttention-2's shape; 88 B spilled, one local load per tile; timed at all
# four N); 128-key tiles (half the barriers and rescales)
cfg d128-m64 128 64 64 16 2 2 0;       run alt-d128-m64 30 $ARGS --dtype bf16 --causal 0,1 --budget-ms 80 --check 1x3x1x333 --time 32x16x16x512,2x16x16x8192
cfg d128-st3 128 128 64 16 3 1 0;      run alt-d128-st3 25 $ARGS --dtype bf16 --causal 0,1 --budget-ms 80 --check 1x3x1x333 --time 2x16x16x8192
cfg d128-w32qs 128 128 32 32 2 2 1;    run alt-d128-w32qs 25 $ARGS --dtype bf16 --causal 0,1 --budget-ms 80 --check 1x3x1x333 --time 2x16x16x8192
cfg d128-w32qs64 128 128 64 32 2 2 1;  run alt-d128-w32qs64 30 $ARGS --dtype bf16 --causal 0,1 --budget-ms 80 --check 1x3x1x333 \
  --time 32x16x16x512,8x16x16x2048,2x16x16x8192,1x16x16x16384
cfg d128-n128 128 128 128 16 2 1 0;    run alt-d128-n128 25 $ARGS --dtype bf16 --causal 0,1 --budget-ms 80 --check 1x3x1x333 --time 2x16x16x8192

# 4. D=64 (32 heads) against torch at N = 2048 and 8192, and one alternative (~20 s)
run time-d64 40 $D64 --dtype bf16 --causal 0,1 --torch --budget-ms 100 --time 8x32x32x2048,2x32x32x8192
cfg d64-w16 64 128 64 16 2 1 0;        run alt-d64-w16 25 $ARGS --dtype bf16 --causal 0,1 --budget-ms 80 --check 1x3x1x333 --time 2x32x32x8192

echo "== done in $(( $(date +%s) - START )) s; logs and jsonl in $OUTDIR"
