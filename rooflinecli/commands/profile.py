"""`roofline profile`: each stage's timed launch under Nsight Compute, on the measured roofline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rooflinecli import files, results
from rooflinecli.build import stages
from rooflinecli.errors import GateFailure, RooflineError
from rooflinecli.options import (
    SIZE,
    columns_option,
    dtype_option,
    format_option,
    output_option,
    resolve_shape,
    spec_option,
)
from rooflinecli.present import View
from rooflinecli.present import table as report
from rooflinecli.present.progress import progress

_num = report.fixed
_mb = report.cell(lambda v: f"{v / 1e6:,.1f}")
_ai = report.ai
_ratio = report.cell(lambda v: f"{v:.4f}")
_status = report.text


PROFILE_COLUMNS: list[report.Column] = [
    ("stage", "stage", str),
    ("time_ms", "event ms", _num(3)),
    ("ncu_time_ms", "ncu ms", _num(3)),
    ("tflops_ncu", "TFLOP/s (ncu)", _num(2)),
    ("flops_hw_ratio", "FLOPs hw/2MNK", _ratio),
    ("bytes_dram", "DRAM MB", _mb),
    ("bytes_l2", "L2 MB", _mb),
    ("bytes_l1", "L1 MB", _mb),
    ("ai_instruction", "AI instr", _ai),
    ("ai_l1", "AI L1", _ai),
    ("ai_l2", "AI L2", _ai),
    ("ai_dram", "AI DRAM", _ai),
    ("ai_ideal", "AI ideal", _ai),
    ("counters_reason", "no counters because", _status),
]
# the default table: what ncu measured, and the intensity at each level beside the instruction's
# and the ideal one (event ms, bytes and the FLOP check: --wide; the check also prints below)
PROFILE = report.ColumnSet(
    tuple(PROFILE_COLUMNS),
    compact=(
        "stage", "ncu_time_ms", "tflops_ncu", "ai_instruction", "ai_l1", "ai_l2", "ai_dram",
        "ai_ideal",
    ),
)  # fmt: skip


def checks(records: list[dict[str, Any]]) -> list[str]:
    """One line per record: hardware FLOPs against 2MNK, event time against ncu's."""
    lines = []
    for r in records:
        name = r["stage"]
        if r.get("counters") is None:
            lines.append(f"{name}: no counters ({r.get('counters_reason')})")
            continue
        ratio = r.get("flops_hw_ratio")
        if ratio is None:
            flops = "no FLOP counters"
        else:
            verdict = "ok" if r.get("flops_check") else "MISMATCH"
            flops = f"flops_hw = {ratio:.5f} x 2MNK ({verdict}, tolerance 0.1%)"
            if not r.get("flops_check") and (abs(ratio - 0.5) < 0.01 or abs(ratio - 2) < 0.02):
                flops += "; a factor of 2: Tensor Core ops may count one per multiply-add"
        t, tn = r.get("time_ms"), r.get("ncu_time_ms")
        times = f"event {t:.3f} ms vs ncu {tn:.3f} ms ({t / tn:.2f}x)" if t and tn else "no times"
        lines.append(f"{name}: {flops}; {times}")
    return lines


@click.group()
def profile() -> None:
    """Hardware counters of each stage under Nsight Compute (ncu) on a GPU."""


@profile.command("gemm")
@click.option("--m", type=SIZE, required=True, help="Rows of C.")
@click.option("--n", type=SIZE, default=None, help="Columns of C (default: M).")
@click.option("--k", type=SIZE, default=None, help="Inner dimension (default: M).")
@click.option(
    "--stages",
    "stage_list",
    default=None,
    metavar="LIST",
    help="Comma-separated stages (default: all of the dtype). The reference always comes along.",
)
@dtype_option
@spec_option
@click.option(
    "--launch-count",
    type=click.IntRange(1, 1000),
    default=None,
    help="Passed to ncu: at most this many launches profiled per stage.",
)
@click.option(
    "--reports",
    "reports_dir",
    type=click.Path(file_okay=False, writable=True),
    default=None,
    help="Keep ncu's .ncu-rep report of each stage in this folder.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
@format_option
@columns_option
@output_option
def profile_gemm(
    m: int,
    n: int | None,
    k: int | None,
    stage_list: str | None,
    dtype: str,
    spec_arg: str | None,
    launch_count: int | None,
    reports_dir: str | None,
    quiet: bool,
    fmt: str,
    view: View,
    output: str | None,
    force: bool,
) -> None:
    """Run each stage under ncu: hardware FLOPs, bytes at DRAM/L2/L1, measured intensities.

    Only the timed launch is profiled (its NVTX range, domain "roofline"); each record gets
    flops_hw, bytes_dram/l2/l1, ai_dram/l2/l1 and ncu_time_ms. Without ncu it stops before
    any stage runs (exit 2). Without permission to read counters the stages still run and the
    records say why counters are null; the command then exits 2.
    """
    from rooflinecli.gpu import profile as prof

    shape = resolve_shape(m, n, k)
    report.select(PROFILE, view)  # an unknown --columns name: one line, before any work
    chosen = stages.select(stage_list, dtype)
    for st in chosen:
        why = st.refuses(*shape)
        if why:
            raise RooflineError(why)
    prof.find_ncu()  # no ncu: one line now, before any stage runs
    with progress(not quiet, "profiling", total=len(chosen)) as tick:
        doc, records, info = prof.profile_gemm(
            shape,
            [s.name for s in chosen],
            dtype,
            spec_arg,
            launch_count=launch_count,
            reports_dir=Path(reports_dir) if reports_dir else None,
            progress=lambda name: tick(f"{name} at {shape[0]}x{shape[1]}x{shape[2]}"),
        )
    out = results.new_document(
        doc.get("spec") or {},
        doc.get("device"),
        records,
        command="profile gemm",
        environment=doc.get("environment"),
        profiler=info,
        checks=checks(records),
    )
    if output:
        files.write_output(output, results.dumps(out), force=force)
    title = (
        f"GEMM {shape[0]}x{shape[1]}x{shape[2]} {dtype} under Nsight Compute "
        f"({info.get('version') or 'no ncu'}) on {(doc.get('device') or {}).get('name', '?')}"
    )
    caption = (
        "AI at each level = hardware FLOPs / bytes that level moved (ncu counters). AI instr is "
        "what the load instructions alone would give; the gap to AI DRAM is what L1 and L2 "
        "absorbed. event ms: CUDA events around the one profiled launch, which ncu serializes "
        "and replays; ncu ms: its gpu__time_duration.sum."
    )
    report.emit(out, fmt, PROFILE, title=title, caption=caption, view=view)
    if fmt == "table":
        con = report.console()
        for line in out["checks"]:
            con.print(f"check: {line}")
        for note in [info.get("note")] + [
            f"metric not available here, left out: {d}" for d in info["dropped_metrics"]
        ]:
            if note:
                con.print(f"note: {note}")
    if all(r.get("counters") is None for r in records):
        reason = next((r["counters_reason"] for r in records if r.get("counters_reason")), "")
        raise RooflineError(f"no hardware counters: {reason}")
    failed = sorted({r["stage"] for r in records if r.get("verified") is False})
    if failed:
        raise GateFailure(f"verification failed: {', '.join(failed)}")
