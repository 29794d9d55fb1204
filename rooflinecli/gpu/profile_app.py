"""Any program on the measured roofline: `roofline profile app -- CMD [ARGS...]`.

The program runs once under Nsight Compute (clocks left alone, every child process followed),
profiling only the kernels asked for (a name regex, an NVTX range, launches to skip, a count):

    ncu --clock-control none --target-processes all [--kernel-name regex:R] [--nvtx
        --nvtx-include RANGE] [--launch-skip N] [--launch-count N] --metrics ... --export REPORT
        CMD ARGS...
    ncu --import REPORT --csv --page raw --print-units base --print-kernel-base demangled

Each launch's counters (rooflinecli.gpu.ncu says which metrics and what each counts) give its time,
FLOPs by instruction (SIMT FP64/FP32/FP16) and by Tensor Core operation (per precision), bytes at
DRAM, L2, L1 and shared memory, and the intensity at each level. Launches of the same kernel with
the same grid are one record (count, total and median time), keyed `KERNEL [GRID]` in `stage`
and `name`, so show, plot, compare and gate treat it like a stage. Each record sits under the
roofs of its precision: the calibration `roofline calibrate` cached for this GPU where there is
one (a roof it does not measure is taken from the datasheet, and the record says so), else the
datasheet; the level whose roof allows the least is named as binding.

A kernel's name is the program's: kept as it is (templates, scopes, lambdas), except that a
control character in it becomes U+FFFD and an oversize one is cut (names.from_program), so one odd
name never costs the run its results, and every reader of the document accepts it.

What ncu cannot count is said in the record, never estimated. The pure parts (grouping, placing,
the document) run on the CPU; run_under_ncu() runs the program.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rooflinecli import names
from rooflinecli.core import kernel_names, roof_keys
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import ncu, profile

COUNTS = ncu.COUNTS
# a record's work sits under its dominant precision's roof; below this share, the record says
# how much of its work ran elsewhere
MIXED_SHARE = 0.9


# --------------------------------------------------------------------------- the ncu run


@dataclass
class Filters:
    """Which launches ncu profiles (all of them when nothing is given)."""

    kernel: str | None = None  # a regex on the kernel's function name
    nvtx: str | None = None  # ncu's --nvtx-include syntax: "RANGE/" (push/pop), "DOMAIN@RANGE/"
    launch_skip: int | None = None
    launch_count: int | None = None

    def args(self) -> list[str]:
        out: list[str] = []
        if self.kernel:
            out += ["--kernel-name", f"regex:{self.kernel}"]
        if self.nvtx:
            out += ["--nvtx", "--nvtx-include", self.nvtx]
        if self.launch_skip:
            out += ["--launch-skip", str(self.launch_skip)]
        if self.launch_count:
            out += ["--launch-count", str(self.launch_count)]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "nvtx": self.nvtx,
            "launch_skip": self.launch_skip,
            "launch_count": self.launch_count,
        }


def ncu_command(
    exe: Path, metrics: list[str], report: Path, filters: Filters, program: list[str]
) -> list[str]:
    return [
        str(exe), "--clock-control", "none", "--target-processes", "all", *filters.args(),
        "--metrics", ",".join(metrics), "--export", str(report), "--force-overwrite", *program,
    ]  # fmt: skip


def import_command(exe: Path, report: Path) -> list[str]:
    return [
        str(exe), "--import", str(report), "--csv", "--page", "raw", "--print-units", "base",
        "--print-kernel-base", "demangled",
    ]  # fmt: skip


@dataclass
class Run:
    """What one program run under ncu gave."""

    rows: list[dict[str, Any]]
    plan: ncu.Plan
    info: dict[str, Any] = field(default_factory=dict)


def _run(
    cmd: list[str], timeout: float, env: dict[str, str] | None
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise RooflineError(f"timed out after {timeout:.0f} s: {' '.join(cmd[-3:])}") from None
    except OSError as exc:
        raise RooflineError(f"cannot run {cmd[0]}: {exc.strerror}") from None


def run_under_ncu(
    program: list[str],
    filters: Filters,
    timeout: float = 3600.0,
    reports_dir: Path | None = None,
    env: dict[str, str] | None = None,
) -> Run:
    """Run `program` once under ncu; the kernels it profiled, parsed. RooflineError when ncu is
    missing, may not read the counters, or profiled nothing (with ncu's or the program's reason)."""
    if not program:
        raise RooflineError("no program to profile: give it after --, e.g. -- python app.py")
    exe = profile.find_ncu()
    info: dict[str, Any] = {"ncu": str(exe), "version": profile.ncu_version(exe)}
    p = ncu.plan(COUNTS, profile.query_available(exe))
    info["filters"] = filters.to_dict()
    with tempfile.TemporaryDirectory(prefix="roofline-app-") as tmp:
        report = Path(tmp) / "app.ncu-rep"
        proc = _run(ncu_command(exe, p.metrics, report, filters, program), timeout, env)
        out = proc.stdout + proc.stderr
        info["program_exit_code"] = proc.returncode
        perm = profile.counter_access_problem(out)
        if perm:
            raise RooflineError(perm)
        if not report.is_file():
            why = profile._first_error(out) or _last_line(proc.stderr)
            raise RooflineError(
                "ncu profiled no kernel"
                + (f": {why}" if why else ": check --kernel/--nvtx/--launch-skip")
                + (f" (the program exited with {proc.returncode})" if proc.returncode else "")
            )
        if reports_dir is not None:
            reports_dir.mkdir(parents=True, exist_ok=True)
            shutil.copy2(report, reports_dir / report.name)
        imported = _run(import_command(exe, report), timeout, env)
        rows = profile.parse_raw_csv(imported.stdout)
        if not rows:
            why = profile._first_error(imported.stdout + imported.stderr)
            raise RooflineError(f"ncu --import gave no kernels{': ' + why if why else ''}")
    return Run(rows, p, info)


def _last_line(text: str) -> str | None:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and "==PROF==" not in ln]
    return lines[-1][:200] if lines else None


# --------------------------------------------------------------------------- records (pure)


def parse_dim3(text: str | None) -> list[int] | None:
    """'(256, 256, 1)' -> [256, 256, 1]."""
    nums = re.findall(r"\d+", text or "")
    return [int(x) for x in nums] if nums else None


def short_name(kernel: str, width: int = kernel_names.WIDTH) -> str:
    """A demangled name for tables and charts: no 'void ', no parameter list, long template
    arguments cut ("vectorized_elementwise_kernel<4, ...>"); rooflinecli.core.kernel_names."""
    return kernel_names.short(kernel, width)


def grid_text(grid: list[int] | None) -> str:
    return "x".join(str(d) for d in grid) if grid else "?"


def group(rows: list[dict[str, Any]]) -> list[tuple[str, list[int] | None, list[dict[str, Any]]]]:
    """Launches of the same kernel with the same grid, in the order first seen."""
    out: dict[tuple[str, str], tuple[str, list[int] | None, list[dict[str, Any]]]] = {}
    for row in rows:
        # room left for the grid the record's name adds (`KERNEL [GRID]`)
        kernel = names.from_program(str(row.get("kernel") or "?"), names.MAX_NAME - 64)
        grid = parse_dim3(row.get("grid"))
        key = (kernel, grid_text(grid))
        out.setdefault(key, (kernel, grid, []))[2].append(row)
    return list(out.values())


def kernel_record(
    kernel: str, grid: list[int] | None, rows: list[dict[str, Any]], p: ncu.Plan
) -> dict[str, Any]:
    """One record for the launches of one kernel and grid: counts per launch (the mean), times
    (median, total, spread), FLOPs, bytes and intensities; notes for what was not counted."""
    n = len(rows)
    total = profile.sum_metrics(rows)
    w = ncu.work(total, p)
    times = [ncu.value(r["metrics"], p, "time") for r in rows]
    ms = [t * 1e3 for t in times if t is not None]
    time_total = sum(ms) if len(ms) == n and ms else None
    blocks = list(dict.fromkeys(grid_text(parse_dim3(r.get("block"))) for r in rows))
    name = f"{kernel} [{grid_text(grid)}]"
    dom = w.dominant()
    rec: dict[str, Any] = {
        "stage": name,
        "name": name,
        "label": f"{short_name(kernel)} [{grid_text(grid)}]",
        "kind": "kernel",
        "kernel": kernel,
        "grid": grid,
        "block": parse_dim3(rows[0].get("block")),
        "blocks": blocks if len(blocks) > 1 else None,
        "dtype": dom[0] if dom else "-",
        "pipe": dom[1] if dom else None,
        "work": f"{dom[0]} {dom[1]}" if dom else "none",
        "m": None,
        "n": None,
        "k": None,
        "launches": n,
        "repeats": n,
        "time_ms": statistics.median(ms) if ms else None,
        "time_ms_total": time_total,
        "time_ms_min": min(ms) if ms else None,
        "time_ms_max": max(ms) if ms else None,
        "time_ms_stdev": statistics.stdev(ms) if len(ms) > 1 else None,
    }
    rec.update(_work_fields(total, w, p, n, time_total))
    return rec


def _work_fields(
    total: dict[str, float | None], w: ncu.Work, p: ncu.Plan, n: int, time_total: float | None
) -> dict[str, Any]:
    """A kernel record's work, per launch (the mean of `n`): FLOPs by kind (and the rate over
    the launches' total time), bytes at each level, intensities with why one is missing, the
    counters; the record is nobody's check (verified None)."""
    nb = ncu.level_bytes(total, p)
    wgmma = ncu.value(total, p, "wgmma_inst")
    flops_total = w.total
    one = {lvl: v / n if v is not None else None for lvl, v in nb.items()}  # per launch
    ai, ai_notes = ncu.intensities(
        flops_total / n if flops_total is not None else None,
        one,
        None,
        wgmma / n if wgmma is not None else None,
        profile._why_missing(p),
    )
    notes = _work_notes(w, flops_total)

    def per(v: float | None) -> float | None:
        return v / n if v is not None else None

    return {
        "flops": per(flops_total),
        "flops_by": {k: per(v) for k, v in w.by.items() if v is None or v > 0},
        "flops_note": "; ".join(notes) or None,
        "tflops": (
            flops_total / (time_total * 1e9) if flops_total and time_total and w.complete else None
        ),
        "flops_complete": w.complete,
        "bytes_dram": one["dram"],
        "bytes_dram_read": one["dram_read"],
        "bytes_dram_write": one["dram_write"],
        "bytes_l2": one["l2"],
        "bytes_l1": one["l1"],
        "bytes_smem": one["smem"],
        "bytes_smem_tma": one["smem_tma"],
        "wgmma_instructions": per(wgmma),
        "gbs_dram": nb["dram"] / (time_total * 1e-3) / 1e9 if nb["dram"] and time_total else None,
        "ai_dram": ai["dram"],
        "ai_l2": ai["l2"],
        "ai_l1": ai["l1"],
        "ai_smem": ai["smem"],
        "ai_dram_note": ai_notes["dram"],
        "ai_l2_note": ai_notes["l2"],
        "ai_l1_note": ai_notes["l1"],
        "ai_smem_note": ai_notes["smem"],
        "ai_ideal": None,
        "verified": None,  # nobody checked this kernel's output: neither passed nor failed
        "counters": {m: per(total.get(m)) for m in p.metrics},
    }


def _work_notes(w: ncu.Work, flops_total: float | None) -> list[str]:
    """What the FLOP count says of itself (ncu.work's notes), and the mix where the dominant
    precision and pipe did less than MIXED_SHARE of the work."""
    dom = w.dominant()
    notes = list(w.notes)
    if dom is not None and flops_total:
        share = (w.by[f"{dom[0]} {dom[1]}"] or 0.0) / flops_total
        if share < MIXED_SHARE:
            others = ", ".join(
                f"{k} {100 * v / flops_total:.0f}%"
                for k, v in w.by.items()
                if v and k != f"{dom[0]} {dom[1]}"
            )
            notes.append(f"mixed work: {100 * share:.0f}% {dom[0]} {dom[1]}, {others}")
    return notes


# --------------------------------------------------------------------------- roofs (pure)


@dataclass
class Roofs:
    """The roofs records are placed under: compute per peak key, bandwidth per memory level."""

    compute: dict[str, tuple[float, str]]  # peak key -> (TFLOP/s, where from)
    memory: dict[str, tuple[float, str] | None]  # level -> (GB/s, where from), None: no roof
    name: str  # "measured" or "datasheet"
    source: str
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "compute_tflops": {k: {"tflops": v, "from": s} for k, (v, s) in self.compute.items()},
            "memory_gbs": {
                ncu.LEVEL_NAMES[lvl]: ({"gbs": r[0], "from": r[1]} if r else None)
                for lvl, r in self.memory.items()
            },
            "notes": self.notes,
        }


def roofs_for(spec: Any, calibration: dict[str, Any] | None) -> Roofs:
    """Measured roofs where the calibration has them, the datasheet's (said so) elsewhere."""
    from rooflinecli.core import roofs

    sets = roofs.roof_sets(spec, calibration)
    measured = sets.get("measured")
    notes: list[str] = []
    compute: dict[str, tuple[float, str]] = {}
    for key, peak in spec.tflops.items():
        in_sets = roof_keys.in_sets(key)
        got = measured.get(in_sets) if measured and in_sets else None
        if got:
            compute[key] = (float(got), "measured")
        else:
            why = "no calibration" if not measured else "not calibrated"
            compute[key] = (float(peak), f"datasheet ({why})")
    memory: dict[str, tuple[float, str] | None] = {}
    if measured and measured.get("bandwidth_gbs"):
        memory["dram"] = (float(measured["bandwidth_gbs"]), "measured")
    else:
        memory["dram"] = (float(spec.memory_bandwidth_gbs), "datasheet")
    l2 = measured.get("l2_gbs") if measured else None
    memory["l2"] = (float(l2), "measured") if l2 else None
    memory["l1"] = memory["smem"] = None
    if measured:
        name, source = "measured", str(measured.get("source"))
        notes.append(
            "roofs `roofline calibrate` does not measure come from the datasheet: "
            + ", ".join(k for k, (_, s) in compute.items() if s.startswith("datasheet"))
        )
    else:
        name, source = "datasheet", f"spec {spec.name}"
        notes.append(
            "no calibration of this GPU cached: datasheet roofs, and no L2 roof "
            "(run `roofline calibrate` on it, or pass --calibration)"
        )
    notes.append("no roof for L1 or shared memory: neither is calibrated; their intensities are "
                 "shown, not placed")  # fmt: skip
    if not l2 and measured:
        notes.append("the calibration has no L2 read rate: no L2 roof")
    return Roofs(compute, memory, name, source, notes)


def place(rec: dict[str, Any], roofs: Roofs) -> None:
    """Under its precision's compute roof and every memory level with a roof and an intensity:
    attainable = the least any allows; the level (or compute) that sets it is `binding_level`."""
    key = roof_keys.of_pipe(rec["dtype"], rec.get("pipe"))
    dram = roofs.memory.get("dram")
    fields = dict.fromkeys(
        ("peak_key", "peak_tflops", "roof", "binding_level", "binding_roof", "attainable_tflops",
         "pct_of_roof", "pct_of_peak", "ridge_point", "roof_levels"),
    )  # fmt: skip
    fields.update(roof_set=roofs.name, bandwidth_gbs=dram[0] if dram else None, roof_note=None)
    rec.update(fields)
    if rec.get("flops_complete") is False:
        rec["roof_note"] = "FLOPs not known (ncu gave no value for some): not placed"
        return
    if rec.get("pipe") is None:
        rec["roof_note"] = "no FLOPs counted: data movement only, no place under a FLOP roof"
        return
    if key is None or key not in roofs.compute:
        what = f"{rec['dtype']} {rec['pipe']}"
        rec["roof_note"] = f"no {what} roof: the spec gives no peak for it"
        return
    peak, psrc = roofs.compute[key]
    levels: list[dict[str, Any]] = [
        {
            "level": ncu.LEVEL_NAMES[lvl],
            "gbs": roof[0] if roof else None,
            "from": roof[1] if roof else None,
            "ai": rec.get(f"ai_{lvl}"),
            "attainable_tflops": (
                min(peak, rec[f"ai_{lvl}"] * roof[0] / 1000.0) if roof and rec.get(f"ai_{lvl}")
                else None
            ),
        }
        for lvl, roof in roofs.memory.items()
    ]  # fmt: skip
    best: tuple[str, float, str] = ("compute", peak, f"{key} {peak:,.1f} TFLOP/s ({psrc})")
    for lv in levels:
        att = lv["attainable_tflops"]
        if att is not None and att < best[1]:
            best = (
                str(lv["level"]),
                float(att),
                f"{lv['level']} {lv['gbs']:,.0f} GB/s ({lv['from']})",
            )
    tf = rec.get("tflops")
    rec.update(
        peak_key=key,
        peak_tflops=peak,
        peak_from=psrc,
        roof="compute" if best[0] == "compute" else "memory",
        binding_level=best[0],
        binding_roof=best[2],
        attainable_tflops=best[1],
        pct_of_roof=100.0 * tf / best[1] if tf else None,
        pct_of_peak=100.0 * tf / peak if tf else None,
        ridge_point=peak * 1000.0 / dram[0] if dram else None,
        roof_levels=levels,
    )
    if psrc.startswith("datasheet") and roofs.name == "measured":
        rec["roof_note"] = f"{key} is not calibrated: its roof is the datasheet's"


# --------------------------------------------------------------------------- the document


def device_from_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The GPU the kernels ran on, as ncu reported it (name, compute capability, SMs, L2,
    memory, maximum clocks), with the driver from nvidia-smi where there is one."""
    from rooflinecli.gpu import device

    first = rows[0]
    m, text = first.get("metrics") or {}, first.get("text") or {}

    def num(name: str, scale: float = 1.0) -> int | None:
        v = m.get(name)
        return int(v / scale) if v is not None else None

    major, minor = (
        num("device__attribute_compute_capability_major"),
        num("device__attribute_compute_capability_minor"),
    )
    cc = f"{major}.{minor}" if major is not None and minor is not None else first.get("cc")
    visible = device.visible_gpu()
    smi = device.smi("name,driver_version,clocks.max.sm,clocks.max.mem", visible)
    name = text.get("device__attribute_display_name") or (smi[0] if smi else None)
    if not name:
        raise RooflineError("ncu named no device (device__attribute_display_name): pass --spec")
    return {
        "name": name,
        "compute_capability": cc,
        "sm_count": num("device__attribute_multiprocessor_count"),
        "l2_bytes": num("device__attribute_l2_cache_size"),
        "memory_bytes": num("device__attribute_total_memory"),
        "clock_sm_max_mhz": num("device__attribute_max_gpu_frequency_khz", 1000)
        or (int(smi[2]) if smi else None),
        "clock_mem_max_mhz": num("device__attribute_max_mem_frequency_khz", 1000)
        or (int(smi[3]) if smi else None),
        "driver": smi[1] if smi else None,
        "cuda_driver": None,
        "cuda_runtime": None,
        "source": "ncu device attributes" + (", nvidia-smi" if smi else ""),
        **device.identity(device.smi_bus_id(visible)),
    }


def build_document(
    run: Run,
    program: list[str],
    spec_arg: str | None = None,
    calibration: dict[str, Any] | None = None,
    calibration_from: str | None = None,
) -> dict[str, Any]:
    """The results document of one profiled program (pure but for nvidia-smi and the cache)."""
    from rooflinecli import results
    from rooflinecli.core import specs
    from rooflinecli.gpu import calibrate

    device = device_from_rows(run.rows)
    spec = specs.choose(spec_arg, device["name"], default=None).spec
    if calibration is None:
        calibration = calibrate.load_calibration(
            device["name"], device.get("driver"), device.get("clock_sm_max_mhz")
        )
        if calibration is not None:
            calibration_from = str(
                calibrate.calibration_path(
                    device["name"], device.get("driver"), device.get("clock_sm_max_mhz")
                )
            )
    roofs = roofs_for(spec, calibration)
    records = [kernel_record(k, g, rows, run.plan) for k, g, rows in group(run.rows)]
    # two kernels whose short names and grids match read apart (their template, or a number)
    records = kernel_names.relabel(records)
    for rec in records:
        place(rec, roofs)
    records.sort(key=lambda r: -(r.get("time_ms_total") or 0.0))
    return results.new_document(
        spec.to_dict(),
        device,
        records,
        command="profile app",
        kind="profile-app",
        environment=results.environment(),
        program={"argv": list(program), "exit_code": run.info.get("program_exit_code")},
        profiler={
            **run.info,
            "metrics": run.plan.metrics,
            "dropped_metrics": run.plan.dropped(COUNTS),
            **run.plan.to_dict(),
        },
        roofs={**roofs.to_dict(), "calibration": calibration_from},
    )


def profile_app(
    program: list[str],
    filters: Filters,
    spec_arg: str | None = None,
    calibration_path: str | None = None,
    reports_dir: Path | None = None,
    timeout: float = 3600.0,
) -> dict[str, Any]:
    """Run `program` under ncu and return its results document."""
    from rooflinecli.gpu import calibrate

    calibration = calibrate.read_calibration(calibration_path) if calibration_path else None
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    run = run_under_ncu(program, filters, timeout, reports_dir, env)
    return build_document(run, program, spec_arg, calibration, calibration_path)
