"""The process `roofline profile gemm` runs under Nsight Compute: one stage, one timed launch.

    python -m rooflinecli.gpu.profile_target --stage NAME --m M --n N --k K --dtype DT \
        [--spec NAME|PATH] --output RUN.json

A library entry point, not the CLI: it calls runner.run_gemm directly (verify the stage, then
exactly one timed launch inside the stage's NVTX range, no L2 flush) and writes the results
document to --output. Errors go to stderr as one line starting with "error:" and exit 2, which
profile.py reads back. Its argument parsing is argparse's, so nothing here depends on the
command line's flags.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def run(
    stage: str,
    shape: tuple[int, int, int],
    dtype: str,
    spec_arg: str | None,
    output: Path,
) -> None:
    """Verify `stage` at `shape` and time one launch (the one ncu profiles); write the document."""
    from rooflinecli import files, results
    from rooflinecli.errors import RooflineError
    from rooflinecli.gpu import runner
    from rooflinecli.stages import gemm

    if stage not in gemm.BY_NAME:
        raise RooflineError(f"unknown stage {stage!r}")
    chosen = gemm.BY_NAME[stage]
    if dtype not in chosen.all_dtypes:
        raise RooflineError(f"stage {stage} is {'/'.join(chosen.all_dtypes)}, not {dtype}")
    # one timed repeat and no flush: the launch ncu replays is the only one in the NVTX range
    # and no stream hold: ncu may hold each launch until it completes, so a holding kernel
    # queued before the launch would wait for a release that comes only after it (its speed is
    # ncu's time anyway)
    timing = runner.Timing(flush_l2=False, min_repeats=1, max_repeats=1, hold=False)
    device, spec, records = runner.run_gemm(
        [shape],
        [chosen],
        spec_arg,
        timing=timing,
        dtype=dtype,
    )
    doc = results.new_document(
        spec.to_dict(),
        device,
        records,
        command="profile target",
        environment=results.environment(),
        settings={"repeats": 1, "flush_l2": False, "under": "Nsight Compute"},
    )
    files.write_atomic(output, results.file_text(doc))


def main(argv: list[str] | None = None) -> int:
    from rooflinecli.errors import RooflineError

    ap = argparse.ArgumentParser(prog="python -m rooflinecli.gpu.profile_target")
    ap.add_argument("--stage", required=True)
    ap.add_argument("--m", type=int, required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--k", type=int, required=True)
    ap.add_argument("--dtype", default="fp32")
    ap.add_argument("--spec", default=None)
    ap.add_argument("--output", required=True)
    args = ap.parse_args(argv)
    try:
        run(args.stage, (args.m, args.n, args.k), args.dtype, args.spec, Path(args.output))
    except RooflineError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:  # a crash: one line, as the CLI would print it
        if os.environ.get("ROOFLINE_DEBUG"):
            raise
        line = (str(exc).strip().splitlines() or [""])[0][:300]
        print(f"error: {type(exc).__name__}: {line}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
