"""The measured roofline: Nsight Compute counters for each stage's timed launch.

The tool runs a small library entry point under `ncu` as a subprocess, one stage at a time:

    ncu --clock-control none --nvtx --nvtx-include "roofline@STAGE/" --metrics ... \
        --export REPORT python -m rooflinecli.gpu.profile_target --stage STAGE --m M --n N --k K \
        --dtype DT --output RUN.json

profile_target calls the runner directly (one timed launch, no L2 flush). runner._nvtx_range
pushes a range named after the stage, in domain "roofline", around each timed launch (the
verification and warm-up launches are outside it), so ncu profiles exactly that launch; cuBLAS's
kernels are found the same way. The report is then printed with
`ncu --import REPORT --csv --page raw --print-units base` and parsed here: hardware FLOPs
(rooflinecli.gpu.ncu: SIMT instructions and Tensor Core operations), bytes at DRAM, L2, L1 and
shared memory, the intensity at each level, and the kernel time ncu saw.

Speed comes from ncu's kernel time (gpu__time_duration.sum): the CUDA-event time of the profiled
launch covers ncu's replays of it (52-353x the kernel time on the H200) and is kept only as
time_ms_under_ncu, never used for speed.

Parsing and arithmetic are pure Python (tested on the CPU); only profile_gemm() runs anything.
"""

from __future__ import annotations

import csv
import glob
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rooflinecli.errors import RooflineError
from rooflinecli.gpu import ncu
from rooflinecli.paths import executable_from_env

ENV_VAR = "ROOFLINE_NCU"
NVTX_DOMAIN = "roofline"

# what profile gemm reads: rooflinecli.gpu.ncu's catalogue, plus DRAM sectors (the seed's
# exercise 2)
COUNTS: tuple[ncu.Count, ...] = (*ncu.COUNTS, ncu.DRAM_SECTORS)
TIME_METRIC = "gpu__time_duration.sum"
# every metric any alternative may ask for (the first listed alternative of each count is asked)
METRICS: tuple[str, ...] = tuple(dict.fromkeys(m for c in COUNTS for m in c.metrics))

FLOPS_TOLERANCE = 1e-3  # flops_hw must equal 2MNK within 0.1%

# ncu's unit names (with --print-units base they are plain; auto-scaled ones are handled too)
_UNIT_SCALE: dict[str, float] = {
    "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
    "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
    "Kibyte": 1024.0, "Mibyte": 1024.0**2, "Gibyte": 1024.0**3,
    "nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0,
    "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0,
}  # fmt: skip
# ncu on a machine where the user may not read the GPU's performance counters: its code, or
# (in versions and wrappers that print only the sentence) the sentence itself
_PERM_RE = re.compile(
    r"ERR_NVGPUCTRPERM|does not have permission to access NVIDIA GPU Performance Counters",
    re.IGNORECASE,
)
NO_COUNTER_ACCESS = (
    "ERR_NVGPUCTRPERM: no permission to read the GPU's performance counters "
    "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)"
)


def counter_access_problem(text: str) -> str | None:
    """NO_COUNTER_ACCESS where ncu's output says it could not read the counters, else None."""
    return NO_COUNTER_ACCESS if _PERM_RE.search(text) else None


# --------------------------------------------------------------------------- finding ncu


def _candidates() -> list[Path]:
    out: list[Path] = []
    found = shutil.which("ncu")
    if found:
        out.append(Path(found))
    out.append(Path("/usr/local/cuda/bin/ncu"))
    out += [Path(p) for p in sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True)]
    out += [Path(p) for p in sorted(glob.glob("/usr/local/cuda-*/bin/ncu"), reverse=True)]
    return out


def find_ncu() -> Path:
    """$ROOFLINE_NCU, then PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-compute/*, cuda-*."""
    named = executable_from_env(ENV_VAR)
    if named is not None:
        return named
    for p in _candidates():
        if p.is_file() and os.access(p, os.X_OK):
            return p
    raise RooflineError(
        "Nsight Compute (ncu) not found on PATH, in /usr/local/cuda/bin or "
        f"/opt/nvidia/nsight-compute: install it or set {ENV_VAR}"
    )


def ncu_version(ncu_path: Path) -> str | None:
    try:
        out = subprocess.run(
            [str(ncu_path), "--version"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"Version\s+([\w.]+)", out.stdout)
    if m:
        return m.group(1)
    lines = out.stdout.strip().splitlines()
    return lines[-1] if lines else None


# --------------------------------------------------------------------------- parsing (pure)


def parse_query_metrics(text: str) -> set[str]:
    """Base metric names from `ncu --query-metrics` (first word of each table row)."""
    names = set()
    for line in text.splitlines():
        m = re.match(r"^([a-z0-9]+__[A-Za-z0-9_]+)\s", line.strip() + " ")
        if m:
            names.add(m.group(1))
    return names


def parse_number(value: str, unit: str = "") -> float | None:
    """'68,719,476,736' -> 6.87e10; scaled to base units (bytes, seconds); 'n/a' -> None."""
    v = value.strip().replace(",", "")
    if not v or v.lower() in ("n/a", "nan", "(!) n/a"):
        return None
    try:
        x = float(v)
    except ValueError:
        return None
    return x * _UNIT_SCALE.get(unit.strip(), 1.0)


def parse_raw_csv(text: str) -> list[dict[str, Any]]:
    """Rows of `ncu --csv --page raw`: a header of column names (metric names among them),
    a row of units, then one row per profiled kernel. Lines ncu or the application printed
    around it (==PROF==, ==WARNING==, program output) are skipped.

    Returns one dict per kernel: id, kernel, block, grid, process, stream, cc, metrics
    {name: value in base units (bytes, seconds, counts)} and text {name: a value that is not a
    number}."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID",')), None)
    if start is None:
        return []
    body = [ln for ln in lines[start:] if ln.startswith('"')]
    table = list(csv.reader(io.StringIO("\n".join(body))))
    header = table[0]
    rows = table[1:]
    units = [""] * len(header)
    if rows and rows[0] and rows[0][0] == "":
        units = rows[0] + [""] * (len(header) - len(rows[0]))
        rows = rows[1:]
    col = {name: i for i, name in enumerate(header)}
    metric_cols = [(i, name) for i, name in enumerate(header) if "__" in name]
    out = []
    for row in rows:
        if len(row) < len(header):
            continue

        def cell(name: str, row: list[str] = row) -> str | None:
            return row[col[name]] if name in col else None

        metrics = {name: parse_number(row[i], units[i]) for i, name in metric_cols}
        out.append(
            {
                "id": cell("ID"),
                "kernel": cell("Kernel Name"),
                "block": cell("Block Size"),
                "grid": cell("Grid Size"),
                "process": cell("Process ID"),
                "stream": cell("Stream"),
                "cc": cell("CC"),
                "metrics": metrics,
                # values that are not numbers (device__attribute_display_name, ...)
                "text": {
                    name: row[i]
                    for i, name in metric_cols
                    if metrics[name] is None and row[i].strip() not in ("", "n/a")
                },
            }
        )
    return out


def sum_metrics(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """Counters of all kernels of one GEMM added up (cuBLAS may launch more than one)."""
    total: dict[str, float | None] = {}
    for row in rows:
        for name, val in row["metrics"].items():
            if val is None or (name in total and total[name] is None):
                total[name] = None  # a launch ncu gave no value for: the sum is unknown
            else:
                total[name] = (total.get(name) or 0.0) + val
    return total


def _why_missing(p: ncu.Plan) -> dict[str, str]:
    """Per memory level: why its bytes cannot be counted (a metric this GPU does not list)."""
    parts = {"dram": ("dram_read", "dram_write"), "l2": ("l2",), "l1": ("l1",)}
    parts["smem"] = ("smem_sass", "tma_load", "tma_store")
    return {
        lvl: "; ".join(p.missing[k] for k in keys if k in p.missing)
        for lvl, keys in parts.items()
        if any(k in p.missing for k in keys)
    }


def derive(
    counters: dict[str, float | None],
    flops_model: float,
    p: ncu.Plan | None = None,
    bytes_ideal: float | None = None,
) -> dict[str, Any]:
    """Hardware FLOPs, bytes per level, intensities and checks from summed counters.

    p: the metrics asked of ncu (None: whatever the counters hold). A level that carried almost
    none of the kernel's bytes gets no intensity, and ai_<level>_note says why (ncu.intensities)."""
    p = p or ncu.plan(COUNTS, ncu.available_in(counters))
    w = ncu.work(counters, p)
    flops_hw = w.total
    nb = ncu.level_bytes(counters, p)
    t = ncu.value(counters, p, "time")
    ncu_ms = t * 1e3 if t is not None else None
    flops = flops_hw if flops_hw else flops_model
    wgmma = ncu.value(counters, p, "wgmma_inst")
    ai, notes = ncu.intensities(flops, nb, bytes_ideal, wgmma, _why_missing(p))
    ratio = flops_hw / flops_model if flops_hw is not None and flops_model else None
    sectors = ncu.value(counters, p, "dram_read_sectors")
    return {
        "flops_hw": flops_hw,
        "flops_hw_fp32": w.by.get("fp32 simt"),
        "flops_hw_tensor": w.tensor,
        "flops_hw_by": {k: v for k, v in w.by.items() if v},
        "flops_note": "; ".join(w.notes) or None,
        "flops_hw_ratio": ratio,
        "flops_check": None if ratio is None else abs(ratio - 1.0) <= FLOPS_TOLERANCE,
        "bytes_dram": nb["dram"],
        "bytes_dram_read": nb["dram_read"],
        "bytes_dram_write": nb["dram_write"],
        "bytes_dram_read_sectors": sectors * 32 if sectors is not None else None,
        "bytes_l2": nb["l2"],
        "bytes_l1": nb["l1"],
        "bytes_smem": nb["smem"],
        "bytes_smem_tma": nb["smem_tma"],
        "wgmma_instructions": wgmma,
        "ai_dram": ai["dram"],
        "ai_l2": ai["l2"],
        "ai_l1": ai["l1"],
        "ai_smem": ai["smem"],
        "ai_dram_note": notes["dram"],
        "ai_l2_note": notes["l2"],
        "ai_l1_note": notes["l1"],
        "ai_smem_note": notes["smem"],
        "ncu_time_ms": ncu_ms,
        "tflops_ncu": flops_model / (ncu_ms * 1e9) if ncu_ms else None,
    }


COUNTER_FIELDS: tuple[str, ...] = (
    "flops_hw", "flops_hw_fp32", "flops_hw_tensor", "flops_hw_by", "flops_note",
    "flops_hw_ratio", "flops_check", "bytes_dram", "bytes_dram_read", "bytes_dram_write",
    "bytes_dram_read_sectors", "bytes_l2", "bytes_l1", "bytes_smem", "bytes_smem_tma",
    "wgmma_instructions", "ai_dram", "ai_l2", "ai_l1", "ai_smem", "ai_dram_note", "ai_l2_note",
    "ai_l1_note", "ai_smem_note", "ncu_time_ms", "tflops_ncu",
)  # fmt: skip


def speed_from_ncu(record: dict[str, Any], ncu_ms: float | None, under_ncu: bool) -> None:
    """time_ms, tflops and the percentages from ncu's kernel time, in place.

    The CUDA-event time of a launch ncu profiled covers ncu's replays of it: it moves to
    time_ms_under_ncu and is never used for speed. Without ncu's time, a record that ran under
    ncu has no time at all; one that did not keeps its event time."""
    from rooflinecli.core import roofs

    if not under_ncu:
        record.setdefault("time_ms_under_ncu", None)
        return
    record["time_ms_under_ncu"] = record.get("time_ms")
    timed = record.get("tflops") is not None  # verified and timed by the run
    record.update(time_ms=ncu_ms, time_ms_min=ncu_ms, time_ms_max=ncu_ms, time_ms_stdev=None)
    if ncu_ms and timed and record.get("attainable_tflops") and record.get("peak_tflops"):
        roofs.place(record, ncu_ms)
    else:
        record.update(tflops=None, pct_of_roof=None, pct_of_peak=None)


def attach(
    record: dict[str, Any],
    rows: list[dict[str, Any]] | None,
    reason: str | None,
    p: ncu.Plan | None = None,
    under_ncu: bool = True,
) -> None:
    """Add the counters of `rows` (ncu's kernels for this record) to a run record, in place;
    without rows: every counter field null and counters_reason says why. under_ncu: the record's
    launch ran under ncu (its event time covers the replays), so its speed comes from catalog."""
    if not rows:
        record.update(dict.fromkeys(COUNTER_FIELDS))
        record.update(counters=None, counters_reason=reason or "ncu profiled no kernel")
        record["time_ratio_ncu"] = None
        speed_from_ncu(record, None, under_ncu)
        return
    counters = sum_metrics(rows)
    record.update(derive(counters, float(record["flops"]), p, record.get("bytes_ideal")))
    record["counters"] = counters
    record["counters_reason"] = None
    record["ncu_kernels"] = [r["kernel"] for r in rows]
    t, tn = record.get("time_ms"), record.get("ncu_time_ms")
    record["time_ratio_ncu"] = t / tn if t and tn else None
    speed_from_ncu(record, tn, under_ncu)


# --------------------------------------------------------------------------- running (GPU)


def nvtx_available() -> bool:
    try:
        return importlib.util.find_spec("nvtx") is not None
    except (ImportError, ValueError):
        return False


def run_command(
    shape: tuple[int, int, int],
    stage: str,
    dtype: str,
    spec_arg: str | None,
    json_out: Path,
) -> list[str]:
    """The process that profiles one stage (its timed launch): the library entry point
    rooflinecli.gpu.profile_target, which calls the runner directly (no CLI in between)."""
    m, n, k = shape
    cmd = [
        sys.executable, "-m", "rooflinecli.gpu.profile_target", "--stage", stage,
        "--m", str(m), "--n", str(n), "--k", str(k), "--dtype", dtype, "--output", str(json_out),
    ]  # fmt: skip
    if spec_arg:
        cmd += ["--spec", spec_arg]
    return cmd


def ncu_command(
    ncu_path: Path,
    metrics: list[str],
    report: Path,
    target: list[str],
    stage: str,
    entry: str | None,
    use_nvtx: bool,
    launch_count: int | None = None,
) -> list[str]:
    """ncu filtered to the stage's NVTX range (push/pop range in domain 'roofline': the
    'domain@range/' form), or without nvtx to the first launch of the stage's kernel."""
    cmd = [str(ncu_path), "--clock-control", "none", "--target-processes", "all"]
    if use_nvtx:
        cmd += ["--nvtx", "--nvtx-include", f"{NVTX_DOMAIN}@{stage}/"]
    else:
        cmd += ["--kernel-name", entry or stage, "--launch-count", "1"]
    if launch_count and use_nvtx:
        cmd += ["--launch-count", str(launch_count)]
    cmd += ["--metrics", ",".join(metrics), "--export", str(report), "--force-overwrite"]
    return cmd + target


def _first_error(text: str) -> str | None:
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("error:") or s.startswith("==ERROR=="):
            return s.removeprefix("error:").removeprefix("==ERROR==").strip()
    return None


def _run(cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    # the child imports this very package, installed or not
    root = str(Path(__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=path)
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise RooflineError(f"timed out after {timeout:.0f} s: {' '.join(cmd[:3])} ...") from None
    except OSError as exc:
        raise RooflineError(f"cannot run {cmd[0]}: {exc.strerror}") from None


def _load_run(json_out: Path, proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The child's results document; its one-line error when it wrote none."""
    if json_out.is_file():
        try:
            return json.loads(json_out.read_text())
        except ValueError:
            pass
    why = _first_error(proc.stderr) or _first_error(proc.stdout) or f"exit {proc.returncode}"
    raise RooflineError(f"run gemm failed: {why}")


def query_available(ncu_path: Path) -> set[str] | None:
    try:
        out = subprocess.run(
            [str(ncu_path), "--query-metrics"], capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = parse_query_metrics(out.stdout)
    # a listing we misread must not silently drop metrics: it has to know the kernel time
    return names if "gpu__time_duration" in names else None


def profile_gemm(
    shape: tuple[int, int, int],
    stage_names: list[str],
    dtype: str,
    spec_arg: str | None,
    launch_count: int | None = None,
    reports_dir: Path | None = None,
    timeout: float = 900.0,
    progress: Callable[[str], None] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """Profile each stage (reference last) in its own child run. Returns (the last child's
    results document, the records with counters attached, facts about the profiler)."""
    from rooflinecli.core import reference
    from rooflinecli.stages import gemm

    tick = progress or (lambda _label: None)
    ncu_path, info, asked = _profiler()
    records: list[dict[str, Any]] = []
    doc: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="roofline-profile-") as tmp:
        folder = Path(tmp)
        for name in stage_names:
            stage = gemm.BY_NAME[name]
            tick(name)
            json_out = folder / f"{name}.json"
            target = run_command(shape, name, dtype, spec_arg, json_out)
            use_nvtx = bool(info["nvtx"])
            reason = _no_counters_reason(info, ncu_path, use_nvtx, stage.reference)
            rows = None
            under_ncu = ncu_path is not None and info["problem"] is None and reason is None
            report = folder / f"{name}.ncu-rep"
            try:
                if under_ncu:
                    assert ncu_path is not None
                    cmd = ncu_command(
                        ncu_path, asked.metrics, report, target, name, stage.entry, use_nvtx,
                        launch_count,
                    )  # fmt: skip
                    proc, doc = _child_run_under_ncu(cmd, json_out, timeout)
                else:
                    doc = _load_run(json_out, _run(target, timeout))
            except RooflineError as exc:
                if not records:  # the first stage: likely no GPU at all; say so once
                    raise
                records.append(_failed(name, dtype, shape, exc.message))
                continue
            if under_ncu:
                assert ncu_path is not None
                rows, reason = _counters_of(ncu_path, report, proc, reports_dir, timeout, info)
                if not use_nvtx and rows:
                    reason = None
                    info.setdefault(
                        "note",
                        "no nvtx package: counters are from each kernel's first launch "
                        "(the verification launch), found by kernel name",
                    )
            rec = _record_for(doc, name, shape)
            attach(rec, rows, reason, asked, under_ncu)
            records.append(rec)
    reference.add_ratios(records)  # both sides at ncu's kernel time
    return doc, records, info


def _profiler() -> tuple[Path | None, dict[str, Any], ncu.Plan]:
    """ncu (None where it is not found: info's `problem` says why), the facts about it a
    profile document keeps (version, whether NVTX ranges can be filtered on, the metrics asked
    and dropped, what cannot be counted) and the plan of metrics to ask for."""
    info: dict[str, Any] = {
        "ncu": None,
        "version": None,
        "metrics": [],
        "dropped_metrics": [],
        "nvtx": nvtx_available(),
        "problem": None,
    }
    try:
        ncu_path = find_ncu()
    except RooflineError as exc:
        ncu_path, info["problem"] = None, exc.message
    asked = ncu.plan(COUNTS, None)
    if ncu_path is not None:
        info["ncu"], info["version"] = str(ncu_path), ncu_version(ncu_path)
        asked = ncu.plan(COUNTS, query_available(ncu_path))
    metrics = asked.metrics
    info["metrics"], info["dropped_metrics"] = metrics, asked.dropped(COUNTS)
    info["not_counted"] = asked.missing
    return ncu_path, info, asked


def _no_counters_reason(
    info: dict[str, Any], ncu_path: Path | None, use_nvtx: bool, is_reference: bool
) -> str | None:
    """Why a stage's run gets no counters before it starts (no ncu, no counter access, or the
    reference without the nvtx package to find its kernel by), or None: it runs under ncu."""
    reason = info["problem"]
    if ncu_path is not None and not use_nvtx and is_reference:
        reason = (
            "the nvtx Python package is missing: the cuBLAS kernel is found only by "
            "its NVTX range (pip install nvtx)"
        )
    return reason


def _child_run_under_ncu(
    cmd: list[str], json_out: Path, timeout: float
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """The child run under ncu (`cmd`): its process and its results document. RooflineError
    when it broke, or when ncu stopped before the run for want of counter access (said once)."""
    proc = _run(cmd, timeout)
    if not json_out.is_file():  # ncu stopped before the run: say why, once
        perm = counter_access_problem(proc.stdout + proc.stderr)
        if perm:
            raise RooflineError(f"no hardware counters: {perm}")
    return proc, _load_run(json_out, proc)


def _counters_of(
    ncu_path: Path,
    report: Path,
    proc: subprocess.CompletedProcess[str],
    reports_dir: Path | None,
    timeout: float,
    info: dict[str, Any],
) -> tuple[list[dict[str, Any]] | None, str | None]:
    """The kernels ncu profiled in the child run (its report imported; a copy kept in
    `reports_dir`), or None and why not: no counter access (then info's `problem` too), or no
    report, with ncu's error where it gave one."""
    rows: list[dict[str, Any]] | None = None
    reason: str | None
    out = proc.stdout + proc.stderr
    if counter_access_problem(out):
        info["problem"] = reason = NO_COUNTER_ACCESS
    elif not report.is_file():
        err = _first_error(out)
        reason = f"ncu: {err}" if err else "ncu profiled no kernel in the NVTX range"
    else:
        rows, reason = _import_rows(ncu_path, report, timeout)
        if reports_dir is not None:
            reports_dir.mkdir(parents=True, exist_ok=True)
            shutil.copy2(report, reports_dir / report.name)
    return rows, reason


def _import_rows(
    ncu_path: Path, report: Path, timeout: float
) -> tuple[list[dict[str, Any]] | None, str | None]:
    proc = _run(
        [str(ncu_path), "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"],
        timeout,
    )
    rows = parse_raw_csv(proc.stdout)
    if not rows:
        why = _first_error(proc.stdout + proc.stderr)
        return None, f"ncu --import gave no rows{': ' + why if why else ''}"
    return rows, None


def _failed(name: str, dtype: str, shape: tuple[int, int, int], why: str) -> dict[str, Any]:
    """A stage whose run broke (a crash, a timeout): a record that says so, no counters."""
    m, n, k = shape
    rec: dict[str, Any] = {"stage": name, "dtype": dtype, "m": m, "n": n, "k": k,
                           "flops": 2 * m * n * k, "verified": False, "error": why}  # fmt: skip
    attach(rec, None, f"the run failed: {why}")
    return rec


def _record_for(doc: dict[str, Any], stage: str, shape: tuple[int, int, int]) -> dict[str, Any]:
    for rec in doc.get("records", []):
        if rec.get("stage") == stage and (rec.get("m"), rec.get("n"), rec.get("k")) == shape:
            return dict(rec)
    raise RooflineError(f"run gemm wrote no record for {stage} at {shape[0]}x{shape[1]}x{shape[2]}")


# --------------------------------------------------------------------------- old documents

MIGRATION_NCU_TIME = "profile-speed-from-ncu-time"


def migrate_times(doc: dict[str, Any], by: str = "rooflinecli.gpu.profile.migrate_times") -> bool:
    """A `profile gemm` document written before speed came from ncu's kernel time: its time_ms,
    tflops and percentages came from the CUDA-event time of the launch ncu replayed. Recompute
    them from the ncu_time_ms each record already holds (the event time moves to
    time_ms_under_ncu), keep everything else, and list the change under `migrations`. In place;
    False when there was nothing to do (not a profile document, or migrated already)."""
    from datetime import UTC, datetime

    from rooflinecli.core import reference

    if doc.get("command") != "profile gemm":
        return False
    done = doc.get("migrations") or []
    if any(m.get("id") == MIGRATION_NCU_TIME for m in done):
        return False
    records = doc["records"]
    for rec in records:
        if "time_ms_under_ncu" in rec:
            continue
        # counters were read: the record's launch ran under ncu, its event time covers replays
        speed_from_ncu(rec, rec.get("ncu_time_ms"), rec.get("counters") is not None)
    reference.add_ratios(records)
    doc["migrations"] = [
        *done,
        {
            "id": MIGRATION_NCU_TIME,
            "date": datetime.now(UTC).date().isoformat(),
            "by": by,
            "what": "time_ms, tflops, pct_of_roof, pct_of_peak and pct_of_reference recomputed "
            "from ncu's kernel time (ncu_time_ms, gpu__time_duration.sum); the CUDA-event time "
            "measured under ncu's replays moved to time_ms_under_ncu; time_ms_min/max set to "
            "ncu's time, time_ms_stdev null (one profiled launch)",
        },
    ]
    return True
