"""`roofline inspect`: what the compiler made of each stage, no GPU needed.

Registers, shared memory, spills and stack from ptxas; theoretical occupancy on a spec; the SASS
instruction mix of the main loop from nvdisasm, per k step: the seed's "2 LDG per FFMA" (naive)
and "8 LDG : 16 FFMA" (4x4 thread tile) as numbers, and exercise 3 (why 4x4 and not 8x8) as
register counts and occupancy side by side.
"""

from __future__ import annotations

from typing import Any

import click

from rooflinecli import paths
from rooflinecli.commands import examples
from rooflinecli.errors import RooflineError
from rooflinecli.options import (
    MODEL_DTYPES,
    extra_stage_option,
    format_option,
    spec_option,
)
from rooflinecli.present import output, table
from rooflinecli.stages import gemm

SCHEMA = "roofline.inspect/1"

# Instructions shown per k step, in order; a column appears when some stage has it in its loop.


def _whole_or_short(v: Any) -> str:
    if isinstance(v, float) and not v.is_integer():
        return f"{v:.3f}".rstrip("0").rstrip(".")
    return f"{int(v):,}"


_fmt_num = table.cell(_whole_or_short)
_fmt_pct = table.pct(1)
_fmt_str = table.text
# "8 LDGSTS.128, 96 LDS.128" as "8×LDGSTS.128, 96×LDS.128": a narrow column wraps between the
# items, never between a count and what it counts
_fmt_widths = table.cell(lambda v: ", ".join(x.replace(" ", "×", 1) for x in str(v).split(", ")))


RESOURCE_COLUMNS: list[table.Column] = [
    ("stage", "stage", str),
    ("dtype", "dtype", str),
    ("threads", "threads", _fmt_num),
    ("registers", "regs", _fmt_num),
    ("smem_bytes", "smem B", _fmt_num),
    ("spill_bytes", "spill B", _fmt_num),
    ("stack_bytes", "stack B", _fmt_num),
    ("blocks_per_sm", "blocks/SM", _fmt_num),
    ("warps_per_sm", "warps/SM", _fmt_num),
    ("occupancy_pct", "occupancy", _fmt_pct),
    ("limited_by", "limited by", _fmt_str),
    ("error", "error", _fmt_str),
]


def _sass_columns(records: list[dict[str, Any]]) -> list[table.Column]:
    cols: list[table.Column] = [
        ("stage", "stage", str),
        ("loop_instructions", "loop instr", _fmt_num),
        ("k_per_iter", "k/iter", _fmt_num),
    ]
    from rooflinecli.stages.inspect import PER_K

    for op in PER_K:
        if any(r.get(f"loop_{op.lower()}") for r in records):
            cols.append((f"{op.lower()}_per_k", f"{op}/k", _fmt_num))
    cols += [
        ("ldg_ffma", "LDG:FFMA", _fmt_str),
        ("lds_ffma", "LDS:FFMA", _fmt_str),
        ("loop_widths", "loop memory ops (width in bits)", _fmt_widths),
        ("kernel_instructions", "kernel instr", _fmt_num),
    ]
    return cols


def _pick(stage_args: tuple[str, ...], dtype: str | None) -> list[gemm.Stage]:
    names = ",".join(a for a in stage_args if a.strip())
    if not names:
        return [
            s for s in gemm.STAGES if not s.reference and (dtype is None or dtype in s.all_dtypes)
        ]
    known = [s.name for s in gemm.STAGES if not s.reference]
    for item in names.split(","):
        base = gemm.BY_NAME.get(item.strip().partition("@")[0])
        if item.strip() and "=" not in item.partition("@")[0] and (base is None or base.reference):
            why = "is a library call: nothing compiled to inspect" if base else "is unknown"
            raise RooflineError(f"stage {item.strip()!r} {why}; stages: {', '.join(known)}")
    chosen = []
    for st in gemm.named(names, dtype, "--stage"):
        if st not in chosen:
            chosen.append(st)
    return chosen


@click.group("inspect")
def inspect_() -> None:
    """What the compiler made (registers, occupancy, SASS), no GPU needed."""


@inspect_.command(
    "gemm",
    epilog=examples(
        "roofline inspect gemm --stage wgmma_persistent --dtype fp16",
        "roofline inspect gemm --arch sm_80 --format json",
    ),
)
@click.option(
    "--stage",
    "stage_args",
    multiple=True,
    metavar="NAME",
    help="A stage or variant (stage@P=V,Q=W) to inspect (repeatable, or a comma list; "
    "default: every stage).",
)
@click.option(
    "--arch", default=None, metavar="SM", help="NVRTC target, e.g. sm_90a (default: the spec's)."
)
@click.option(
    "--dtype",
    type=click.Choice(MODEL_DTYPES),
    default=None,
    help="Build for this element type (default: each stage's own).",
)
@extra_stage_option(
    "Also inspect your own kernel (see examples/my_gemm.toml); a compile error is one "
    "line naming the file."
)
@spec_option
@format_option
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
def inspect_gemm(
    stage_args: tuple[str, ...], arch: str | None, dtype: str | None,
    extra_stages: tuple[str, ...], spec_arg: str | None, fmt: str, quiet: bool,
) -> None:  # fmt: skip
    """Registers, shared memory, spills, occupancy and the SASS mix of each stage's main loop."""
    from rooflinecli.api import default_spec
    from rooflinecli.present.progress import progress
    from rooflinecli.stages import compiler, sass
    from rooflinecli.stages.inspect import check_arch, inspect_stages
    from rooflinecli.stages.userstage import load_user_stage

    paths.cache_dir()  # a cache folder that is a file: one line, not an error in every row
    spec, why = default_spec(spec_arg)
    arch = arch or compiler.arch_for_cc(spec.compute_capability)
    check_arch(arch)  # a bad --arch fails here, in one line
    chosen: list[gemm.Stage] = _pick(stage_args, dtype)
    for path in extra_stages:
        user = load_user_stage(path)
        if dtype is not None and dtype not in user.all_dtypes:
            raise RooflineError(f"{path}: stage {user.name} is {user.dtype}, not {dtype}")
        chosen.append(user)
    sass.find_nvdisasm()  # absent: one line now, not one per stage
    # on a terminal (stderr), a bar over each stage's build and listing: a cold cache takes a
    # while (every stage compiled by NVRTC, then disassembled)
    live = not quiet and output.live(fmt)
    with progress(live, verb="inspect gemm:", total=2 * len(chosen)) as tick:
        tick("starting")  # the bar counts the steps begun before the one now running
        records = inspect_stages(chosen, arch, spec, dtype, step=tick)
    for stage, rec in zip(chosen, records, strict=True):
        toml = getattr(stage, "toml_path", "")
        if toml and rec.get("error"):  # the user's kernel: one line, exit 2
            raise RooflineError(f"stage file {toml}: {rec['error']}")
    doc = {
        "schema": SCHEMA,
        "command": "inspect gemm",
        "arch": arch,
        "nvrtc": compiler.nvrtc_version(),
        "spec": spec.to_dict(),
        "records": records,
    }
    output.emit(_report(doc, records, arch, spec, why), fmt)


def _report(
    doc: dict[str, Any], records: list[dict[str, Any]], arch: str, spec: Any, why: str
) -> output.Report:
    """The resources table and the SASS table of the main loop, each fitted to the console."""
    flat = [
        {
            **{k: v for k, v in r.items() if k != "sass"},
            "params": " ".join(f"{k}={v}" for k, v in r.get("params", {}).items()) or None,
        }
        for r in records
    ]
    tidy = [{k: v for k, v in r.items() if k != "sass"} for r in records]  # CSV: no sass
    fields = set().union(*(r.keys() for r in flat))
    errors = any(r.get("error") for r in flat)
    res_cols = [c for c in RESOURCE_COLUMNS if c[0] in fields and (c[0] != "error" or errors)]
    ok = [r for r in flat if not r.get("error")]
    sass_cols = [c for c in _sass_columns(ok) if any(c[0] in r for r in ok)]
    res_title = (
        f"Resources and theoretical occupancy: {arch} (NVRTC {doc['nvrtc']}), "
        f"occupancy on {spec.display_name} ({spec.name}, {why})"
    )
    sass_title = "SASS of the main loop (nvdisasm), per k step"
    # Each table fits the console, or is split into several led by the stage (output.Frame):
    # no number is split over lines, no stage name cut.
    parts = [
        output.Frame(
            table.Rows(flat),
            res_cols,
            title=res_title,
            caption="smem: static + dynamic per block. Occupancy by CUDA's rules: registers "
            "in 256-register warp units over 4 sub-partitions, shared memory + 1 KiB reserved "
            "per block in 128-byte units, warp and block slots.",
            left=("error",),
        ),
    ]
    if ok:  # else no stage built: the errors above say why
        parts.append(
            output.Frame(
                table.Rows(ok),
                sass_cols,
                title=sass_title,
                caption="Main loop: the innermost backward-branch loop with the most FMA/matrix "
                "instructions. k/iter: k steps one iteration covers (its multiply-adds per "
                "thread over the thread's elements of C; with HGMMA, 16 x HGMMAs per "
                "accumulator tile); X/k = loop count / k/iter. LDG:FFMA in lowest terms from "
                "the loop's counts. Whole-kernel counts (kernel_*) and every opcode: --format "
                "json or csv.",
                prose=("loop_widths",),
                left=("loop_widths",),
            )
        )
    return output.Report(parts, json=doc, csv=tidy)
