"""The column sets of each kind of table (a run's, a model's, `run llm`'s, `profile app`'s, a
comparison's, the gate's, a dry run's) and the cell formats they use: what a table shows, which
rooflinecli.present.table writes in each format."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from rooflinecli import results
from rooflinecli.errors import RooflineError
from rooflinecli.present import View


def missing(v: Any) -> bool:
    """None or NaN: a field that does not apply, shown as '-'."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def cell(render: Callable[[Any], str]) -> Callable[[Any], str]:
    """A column formatter: '-' for a missing value, `render(v)` otherwise, and the value as
    text when it is not of the kind `render` expects (load() refuses such documents)."""

    def fmt(v: Any) -> str:
        if missing(v):
            return "-"
        try:
            return render(v)
        except (TypeError, ValueError):
            return str(v)

    return fmt


def fixed(digits: int) -> Callable[[Any], str]:
    return cell(lambda v: f"{v:,.{digits}f}")


def pct(digits: int = 1) -> Callable[[Any], str]:
    return cell(lambda v: f"{v:.{digits}f}%")


integer = cell(lambda v: f"{int(v):,}")
sci = cell(lambda v: f"{float(v):.3e}")
text = cell(str)
ai = cell(lambda v: f"{v:,.2f}" if v < 100 else f"{v:,.1f}")  # FLOP/byte
_verified = cell(lambda v: "yes" if bool(v) else "FAILED")


# (field, header, formatter)
Column = tuple[str, str, Callable[[Any], str]]

RUN_COLUMNS: list[Column] = [
    ("stage", "stage", str),
    ("time_ms", "time ms", fixed(3)),
    ("tflops", "TFLOP/s", fixed(2)),
    ("pct_of_reference", "% ref", fixed(1)),
    ("pct_of_peak", "% peak", fixed(1)),
    ("ai_ideal", "AI ideal", ai),
    ("ai_instruction", "AI instr", ai),
    ("roof", "roof", str),
    ("attainable_tflops", "attain TF/s", fixed(1)),
    ("pct_of_roof", "% roof", fixed(1)),
    ("registers", "regs", integer),
    ("smem_bytes", "smem B", integer),
    ("spill_bytes", "spill B", integer),
    ("occupancy_pct", "occ %", fixed(0)),
    ("sm_clock_mhz", "SM MHz", integer),
    ("noise_pct", "noise %", fixed(2)),
    ("verified", "verified", _verified),
]
# shown only when some record has a value (older documents, and runs without nvidia-smi, lack
# the clock; runs without --max-noise the noise)
OPTIONAL_FIELDS = frozenset({"sm_clock_mhz", "noise_pct"})


class ColumnSet(NamedTuple):
    """The columns a kind of record table can show, and which of them it shows by default.

    compact: the default, chosen to fit 100 terminal columns with whole stage names (what a
    kernel engineer reads first: time, speed, against the reference and the roof, the clock,
    the check); the verdict under the table says which roof binds. wide: what --wide shows
    (None: every column). --columns picks any of `columns` by field name."""

    columns: tuple[Column, ...]
    compact: tuple[str, ...]
    wide: tuple[str, ...] | None = None
    key: tuple[str, ...] = ("stage",)  # lead every table, named in --columns or not

    @property
    def names(self) -> list[str]:
        return [c[0] for c in self.columns]


def select(cset: ColumnSet, view: View | None = None) -> list[Column]:
    """The columns `view` asks for: compact by default, --wide, or --columns by field name (the
    set's key columns, the stage, lead when not named). An unknown name is one RooflineError
    line listing the valid ones."""
    view = view or View()
    by_field = {c[0]: c for c in cset.columns}
    if view.names:
        unknown = [n for n in view.names if n not in by_field]
        if unknown:
            raise RooflineError(
                f"unknown column{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
                f"columns: {', '.join(cset.names)}"
            )
        lead = [k for k in cset.key if k not in view.names]
        names = list(dict.fromkeys(lead + list(view.names)))
    elif view.wide:
        names = list(cset.wide) if cset.wide is not None else cset.names
    else:
        names = list(cset.compact)
    return [by_field[n] for n in names]


RUN = ColumnSet(
    tuple(RUN_COLUMNS),
    compact=(
        "stage", "time_ms", "tflops", "pct_of_reference", "pct_of_roof", "sm_clock_mhz",
        "noise_pct", "verified",
    ),
)  # fmt: skip

GPU_COLUMN: Column = ("gpu_label", "GPU", str)  # a fleet document's: the GPU a row ran on


def with_gpu(cset: ColumnSet) -> ColumnSet:
    """A column set for a fleet document's records: the GPU beside each row's key."""
    lead = list(cset.key)
    cols = [c for c in cset.columns if c[0] in lead] + [GPU_COLUMN]
    cols += [c for c in cset.columns if c[0] not in lead]
    compact = (*lead, "gpu_label", *(n for n in cset.compact if n not in lead))
    wide = (
        None
        if cset.wide is None
        else (*lead, "gpu_label", *(n for n in cset.wide if n not in lead))
    )
    return ColumnSet(tuple(cols), compact, wide, (*lead, "gpu_label"))


class Rows:
    """Records as the rows of a table: what the table and Markdown writers need of a frame, so
    `model` and `show` print without importing pandas."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = [results.complete_record(r) for r in records]
        self.columns: set[str] = set().union(*(r.keys() for r in self.records))

    def iterrows(self) -> Iterator[tuple[int, dict[str, Any]]]:
        return enumerate(self.records)

    def filled(self, field: str) -> bool:
        return any(not missing(r.get(field)) for r in self.records)


def present(columns: list[Column], df: Rows) -> list[Column]:
    """The columns minus optional ones that no row fills."""
    return [c for c in columns if c[0] not in OPTIONAL_FIELDS or df.filled(c[0])]


# `roofline profile app`: one row per kernel and grid (rooflinecli/gpu/profile_app.py)
APP_COLUMNS: list[Column] = [
    ("label", "kernel [grid]", str),
    ("launches", "launches", integer),
    ("time_ms", "median ms", fixed(3)),
    ("time_ms_total", "total ms", fixed(3)),
    ("work", "work", str),
    ("tflops", "TFLOP/s", fixed(2)),
    ("gbs_dram", "DRAM GB/s", fixed(0)),
    ("ai_dram", "AI DRAM", ai),
    ("ai_l2", "AI L2", ai),
    ("ai_l1", "AI L1", ai),
    ("ai_smem", "AI smem", ai),
    ("binding_level", "bound by", str),
    ("attainable_tflops", "attain TF/s", fixed(1)),
    ("pct_of_roof", "% roof", fixed(1)),
]
LEFT_FIELDS = ("stage", "roof", "label", "work", "binding_level")


def is_app(doc: dict[str, Any]) -> bool:
    """A `roofline profile app` document (records are kernels, not GEMM stages)."""
    return doc.get("command") == "profile app"


def app_title(doc: dict[str, Any]) -> str:
    argv = " ".join((doc.get("program") or {}).get("argv") or ["?"])
    if len(argv) > 80:
        argv = argv[:77] + "..."
    device = (doc.get("device") or {}).get("name", "?")
    roofs = doc.get("roofs") or {}
    return (
        f"Kernels of `{argv}` under Nsight Compute on {device} "
        f"(spec {(doc.get('spec') or {}).get('name', '?')}, {roofs.get('name', '?')} roofs)"
    )


def app_notes(doc: dict[str, Any]) -> list[str]:
    """What the table cannot say: roofs not calibrated, counts ncu could not make, levels
    without an intensity. One line each, distinct reasons once."""
    out = [f"  {n}" for n in (doc.get("roofs") or {}).get("notes") or []]
    code = (doc.get("program") or {}).get("exit_code")
    if code:
        out.append(f"  the program exited with {code}")
    seen: dict[tuple[str, str], list[str]] = {}
    for r in doc["records"]:
        for key, what in (
            ("flops_note", "FLOPs"),
            ("roof_note", "roof"),
            ("ai_dram_note", "AI DRAM"),
            ("ai_l2_note", "AI L2"),
            ("ai_l1_note", "AI L1"),
            ("ai_smem_note", "AI smem"),
        ):
            text = r.get(key)
            if text and not (key.startswith("ai_") and text == "no FLOPs counted"):
                seen.setdefault((what, str(text)), []).append(str(r.get("label") or r["stage"]))
    for (what, text), who in seen.items():
        names = ", ".join(who) if len(who) <= 3 else f"{', '.join(who[:3])} and {len(who) - 3} more"
        out.append(f"  {names}: {what}: {text}")
    return out


MODEL_COLUMNS: list[Column] = [
    ("stage", "stage", str),
    ("flops", "FLOPs", sci),
    ("bytes_ideal", "bytes ideal", sci),
    ("ai_ideal", "AI ideal", ai),
    ("ai_instruction", "AI instr", ai),
    ("ridge_point", "ridge", ai),
    ("roof", "roof", str),
    ("attainable_tflops", "attain TF/s", fixed(1)),
    ("attainable_instruction_tflops", "attain@instr", fixed(2)),
]
# FLOPs, bytes and ridge are the same for every stage of a shape (the title has the ridge)
MODEL = ColumnSet(
    tuple(MODEL_COLUMNS),
    compact=(
        "stage", "ai_ideal", "ai_instruction", "roof", "attainable_tflops",
        "attainable_instruction_tflops",
    ),
)  # fmt: skip

# `model attention`: the fused and the unfused version of one shape, side by side
ATTENTION_MODEL = ColumnSet(
    (
        ("stage", "version", str),
        ("flops", "FLOPs", sci),
        ("bytes_ideal", "bytes", sci),
        ("ai_ideal", "AI", ai),
        ("ridge_point", "ridge", ai),
        ("roof", "roof", str),
        ("attainable_tflops", "attain TF/s", fixed(1)),
    ),
    compact=("stage", "flops", "bytes_ideal", "ai_ideal", "roof", "attainable_tflops"),
)

# `run llm`: one table per batch, so the compact table names the weight GEMM (the workload
# repeats the preset and the batch of the title)
LLM_COLUMNS: list[Column] = (
    [("workload", "workload", str), ("gemm", "gemm", str)]
    + [c for c in RUN_COLUMNS if c[0] not in ("registers", "spill_bytes", "ai_instruction")][:-1]
    + [("time_us_per_token", "us/token", fixed(1)), RUN_COLUMNS[-1]]
)
LLM = ColumnSet(
    tuple(LLM_COLUMNS),
    compact=(
        "gemm", "stage", "time_ms", "pct_of_reference", "pct_of_roof", "time_us_per_token",
        "noise_pct", "verified",
    ),
    wide=tuple(c[0] for c in LLM_COLUMNS if c[0] != "gemm"),
    key=("gemm", "stage"),
)  # fmt: skip


# Comparisons and gate verdicts (`roofline compare`, `roofline gate`): rows, not result records.


_ratio = cell(lambda v: f"{v:.3f}x")
_change = cell(lambda v: f"{v:+.1f}%")
_band = cell(lambda v: f"±{v:.1f}%")


COMPARE_COLUMNS: list[Column] = [
    ("stage", "stage", str),
    ("workload", "workload", str),  # only `run llm` rows have one; the column shows only then
    ("shape", "shape", str),
    ("dtype", "dtype", str),
    ("a_tflops", "A TFLOP/s", fixed(2)),
    ("b_tflops", "B TFLOP/s", fixed(2)),
    ("tflops_ratio", "B/A TFLOP/s", _ratio),
    ("a_time_ms", "A ms", fixed(3)),
    ("b_time_ms", "B ms", fixed(3)),
    ("time_ratio", "B/A time", _ratio),
]

GATE_COLUMNS: list[Column] = [
    ("stage", "stage", str),
    ("workload", "workload", str),
    ("shape", "shape", str),
    ("dtype", "dtype", str),
    ("baseline_tflops", "baseline TFLOP/s", fixed(2)),
    ("tflops", "current TFLOP/s", fixed(2)),
    ("change_pct", "change", _change),
    ("noise_pct", "noise", _band),
    ("verdict", "verdict", str),
    ("reason", "reason", str),
]

# `run gemm --dry-run`: what would run, compiled for the target without a GPU
DRY_RUN_COLUMNS: list[Column] = [
    ("stage", "stage", str),
    ("shape", "shape", str),
    ("grid", "grid", text),
    ("block", "block", text),
    ("smem_bytes", "smem B", integer),
    ("registers", "regs", integer),
    ("spill_bytes", "spill B", integer),
    ("status", "status", str),
]

TEXT_FIELDS = (
    "stage", "workload", "roof", "shape", "dtype", "verdict", "reason",
    "path", "format", "source", "device", "title", "status",
)  # fmt: skip


# Columns that name what a row is: never cut with an ellipsis (rooflinecli.present.table), and
# left in Markdown and HTML.
NAME_FIELDS = frozenset({"stage", "workload", "gemm", "gpu_label"})
