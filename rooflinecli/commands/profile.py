"""`roofline profile`: each stage's timed launch under Nsight Compute, on the measured roofline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rooflinecli import results
from rooflinecli.commands import Command, examples
from rooflinecli.errors import GateFailure, RooflineError
from rooflinecli.options import (
    SIZE,
    Emit,
    columns_option,
    dtype_option,
    emits,
    format_option,
    gather,
    gather_shape,
    gpus_option,
    output_option,
    reports_option,
    spec_option,
)
from rooflinecli.present import output, table
from rooflinecli.present.output import Line, Part, Records, of_document
from rooflinecli.present.progress import progress
from rooflinecli.stages import gemm

_num = table.fixed
_mb = table.cell(lambda v: f"{v / 1e6:,.1f}")
_ai = table.ai
_ratio = table.cell(lambda v: f"{v:.4f}")
_status = table.text


PROFILE_COLUMNS: list[table.Column] = [
    ("stage", "stage", str),
    ("time_ms", "ncu ms", _num(3)),
    ("tflops", "TFLOP/s", _num(2)),
    ("time_ms_under_ncu", "event ms under ncu", _num(3)),
    ("flops_hw_ratio", "FLOPs hw/2MNK", _ratio),
    ("bytes_dram", "DRAM MB", _mb),
    ("bytes_l2", "L2 MB", _mb),
    ("bytes_l1", "L1 MB", _mb),
    ("bytes_smem", "smem MB", _mb),
    ("ai_instruction", "AI instr", _ai),
    ("ai_smem", "AI smem", _ai),
    ("ai_l1", "AI L1", _ai),
    ("ai_l2", "AI L2", _ai),
    ("ai_dram", "AI DRAM", _ai),
    ("ai_ideal", "AI ideal", _ai),
    ("counters_reason", "no counters because", _status),
]
# the default table: ncu's time and speed, and the intensity at each level beside the
# instruction's and the ideal one (event time, bytes and the FLOP check: --wide; the check also
# prints below the table)
PROFILE = table.ColumnSet(
    tuple(PROFILE_COLUMNS),
    compact=(
        "stage", "time_ms", "tflops", "ai_instruction", "ai_smem", "ai_l1", "ai_l2", "ai_dram",
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
        t, tn = r.get("time_ms_under_ncu"), r.get("ncu_time_ms")
        times = f"event {t:.3f} ms vs ncu {tn:.3f} ms ({t / tn:.2f}x)" if t and tn else "no times"
        lines.append(f"{name}: {flops}; {times}")
    return lines


def notes(records: list[dict[str, Any]]) -> list[str]:
    """Why a level has no intensity, what could not be counted: one line per distinct reason,
    naming the stages it applies to."""
    seen: dict[tuple[str, str], list[str]] = {}
    for r in records:
        for key, what in (
            ("flops_note", "FLOPs"),
            ("ai_dram_note", "AI DRAM"),
            ("ai_l2_note", "AI L2"),
            ("ai_l1_note", "AI L1"),
            ("ai_smem_note", "AI smem"),
        ):
            if r.get(key):
                seen.setdefault((what, str(r[key])), []).append(str(r["stage"]))
    every = len(records)
    return [
        f"{what} of {'every stage' if len(who) == every > 1 else ', '.join(who)}: {text}"
        for (what, text), who in seen.items()
    ]


@click.group("profile")
def profile_group() -> None:
    """Hardware counters of each stage under Nsight Compute (ncu) on a GPU."""


@profile_group.command(
    "gemm",
    cls=Command,
    epilog=examples(
        "roofline profile gemm --m 4096 --stages smem_tile,wgmma_persistent --dtype fp16",
        "roofline profile gemm --m 8192 --reports ncu-reports -o profile.json",
    ),
)
@gather_shape
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
@reports_option("Keep ncu's .ncu-rep report of each stage in this folder.")
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
@format_option
@columns_option
@output_option
@emits
def profile_gemm_command(
    shape: tuple[int, int, int],
    stage_list: str | None,
    dtype: str,
    spec_arg: str | None,
    launch_count: int | None,
    reports_dir: str | None,
    emit: Emit,
) -> None:
    """Run each stage under ncu: hardware FLOPs, bytes at DRAM/L2/L1, measured intensities.

    Only the timed launch is profiled (its NVTX range, domain "roofline"); each record gets
    flops_hw, bytes_dram/l2/l1/smem, ai_dram/l2/l1/smem and ncu_time_ms; time_ms, TFLOP/s and
    the percentages come from ncu's kernel time. Without ncu it stops before any stage runs
    (exit 2). Without permission to read counters the stages still run and the records say why
    counters are null; the command then exits 2.
    """
    from rooflinecli.gpu import profile

    table.select(PROFILE, emit.view)  # an unknown --columns name: one line, before any work
    chosen = gemm.select(stage_list, dtype)
    if not stage_list:  # the default ladder, as `run`'s: only the stages built for this M
        chosen = gemm.built_for(chosen, [shape[0]])
    for st in chosen:
        why = st.refuses(*shape)
        if why:
            raise RooflineError(why)
    profile.find_ncu()  # no ncu: one line now, before any stage runs
    with progress(not emit.quiet, "profiling", total=len(chosen)) as tick:
        doc, records, info = profile.profile_gemm(
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
    emit.write(out)
    output.emit(of_document(out, _profile_parts(out, doc, info, shape, dtype, emit)), emit.fmt)
    if all(r.get("counters") is None for r in records):
        reason = next((r["counters_reason"] for r in records if r.get("counters_reason")), "")
        raise RooflineError(f"no hardware counters: {reason}")
    failed = sorted({r["stage"] for r in records if r.get("verified") is False})
    if failed:
        raise GateFailure(f"verification failed: {', '.join(failed)}")


def _profile_parts(
    out: dict[str, Any], doc: dict[str, Any], info: dict[str, Any],
    shape: tuple[int, int, int], dtype: str, emit: Emit,
) -> list[Part]:  # fmt: skip
    """The table of a `profile gemm` document, its checks and notes."""
    title = (
        f"GEMM {shape[0]}x{shape[1]}x{shape[2]} {dtype} under Nsight Compute "
        f"({info.get('version') or 'no ncu'}) on {(doc.get('device') or {}).get('name', '?')}"
    )
    caption = (
        "AI at each level = hardware FLOPs / bytes that level moved (ncu counters; smem: shared "
        "memory, TMA included). A level that moved under 1% of the bytes of the levels outside "
        "it has no AI (the notes say why). AI instr is what the load instructions alone would "
        "give; the gap to AI DRAM is what L1 and L2 absorbed. ncu ms: gpu__time_duration.sum, "
        "the time TFLOP/s and every percentage come from; event ms under ncu: CUDA events "
        "around the profiled launch, which ncu replays (never a speed)."
    )
    parts: list[Part] = [Records(out, PROFILE, title, caption, emit.view)]
    said = [f"check: {line}" for line in out["checks"]]
    said += [f"note: {line}" for line in notes(out["records"])]
    said += [
        f"note: {note}"
        for note in [info.get("note")]
        + [f"metric not available here, left out: {d}" for d in info["dropped_metrics"]]
        if note
    ]
    parts += [Line(text, markdown=False, rich=True) for text in said]
    return parts


def _filters(
    kernel: str | None, nvtx_range: str | None, launch_skip: int | None, launch_count: int | None
) -> Any:
    """--kernel, --nvtx, --launch-skip and --launch-count: which launches ncu profiles."""
    from rooflinecli.gpu import profile_app

    return profile_app.Filters(kernel, nvtx_range, launch_skip, launch_count)


@profile_group.command(
    "app",
    cls=Command,
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    epilog=examples(
        "roofline profile app -- python examples/torch_app.py",
        "roofline profile app --kernel gemm --launch-count 5 -o app.json -- ./my_benchmark",
    ),
)
@gpus_option()
@gather("filters", ("kernel", "nvtx_range", "launch_skip", "launch_count"), _filters)
@click.option(
    "--kernel", metavar="REGEX", default=None, help="Only kernels whose name matches (a regex)."
)
@click.option(
    "--nvtx",
    "nvtx_range",
    metavar="RANGE",
    default=None,
    help='Only kernels inside this NVTX range, in ncu\'s syntax: "NAME/" (push/pop range), '
    '"DOMAIN@NAME/" (in a domain), "NAME" (start/end range).',
)
@click.option(
    "--launch-skip", type=click.IntRange(0), default=None, help="Skip this many matching launches."
)
@click.option(
    "--launch-count", type=click.IntRange(1), default=None, help="Profile at most this many."
)
@spec_option
@click.option(
    "--calibration",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="A calibration file from `roofline calibrate` (default: the one cached for this GPU).",
)
@reports_option("Keep ncu's .ncu-rep report in this folder.")
@click.option(
    "--timeout",
    type=click.FloatRange(1),
    default=3600.0,
    show_default=True,
    help="Seconds the program may run under ncu.",
)
@format_option
@output_option
@click.argument(
    "program", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- CMD [ARGS]..."
)
@emits
def profile_app_command(
    filters: Any,
    spec_arg: str | None,
    calibration: str | None,
    reports_dir: str | None,
    timeout: float,
    program: tuple[str, ...],
    emit: Emit,
) -> None:
    """Run any program under ncu: each kernel's time, FLOPs, bytes, intensities and roof.

    Runs CMD once under Nsight Compute (--clock-control none, child processes followed) and
    profiles the kernels asked for (default: every launch; ncu replays each one, so a long
    program takes long: narrow it with --kernel, --nvtx, --launch-skip, --launch-count).
    Launches of one kernel with one grid are one row: launches, median and total time, FLOPs
    counted by instruction (SIMT FP64/FP32/FP16, Tensor Core operations per precision), bytes
    and intensity at DRAM, L2, L1 and shared memory, and its place under this GPU's calibrated
    roofs (the datasheet's where a roof is not calibrated; the notes say which) with the level
    that binds. What ncu cannot count is null, with the reason. --output writes a results
    document that show, plot, compare and gate read. Exit 1 when the program failed.
    """
    from rooflinecli.gpu import profile_app

    argv = list(program)
    if argv and argv[0] == "--":
        argv = argv[1:]
    doc = profile_app.profile_app(
        argv,
        filters,
        spec_arg,
        calibration,
        Path(reports_dir) if reports_dir else None,
        timeout,
    )
    emit.write(doc)
    parts: list[Part] = [Records(doc, table.APP_COLUMNS, table.app_title(doc))]
    parts += [Line(line) for line in table.app_notes(doc)]
    output.emit(of_document(doc, parts), emit.fmt)
    code = (doc.get("program") or {}).get("exit_code")
    if code:
        raise GateFailure(f"the program exited with {code} (its kernels are shown above)")
