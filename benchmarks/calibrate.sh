#!/usr/bin/env bash
# The ceilings of this GPU as `roofline calibrate` measures them (HBM read and copy, L2 read,
# FP32 FMA, mma.sync and WGMMA): benchmarks/calibration/h200-full.json and
# h200-2026-12-01.json (the README's calibration table and the plots' measured roofs). The
# calibrations beside the LLM runs are llm.sh's.
#
#   bash benchmarks/calibrate.sh OUTDIR [STEP...]     (default: every step, ~1 min)
#
# Steps: full (the calibration the tests read), roofs (the one the plots and tables read).
source "$(dirname "$0")/lib.sh"
suite "$@"

step_full() { calibration h200-full.json; }
step_roofs() { calibration h200-2026-12-01.json; }

run_steps full roofs
