"""What a roofline image draws, without drawing it: the records as series of points (an id, a
marker, a colour each), the ceilings (roofs, solid from the datasheet, dashed measured), and the
layout of both on the axes (their extents). rooflinecli.present.image draws them with matplotlib;
the report's roofline (rooflinecli.present.report_figures) draws the same layout with Plotly."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rooflinecli.core import kernel_names
from rooflinecli.core.roofs import Roof
from rooflinecli.errors import RooflineError
from rooflinecli.present import terminal_chart

KINDS = ("png", "svg", "html")

WIDTH_IN = 12.0  # figure width, inches
AXES_HEIGHT_IN = 5.6  # the plot itself, above the legend of ids
DPI = 110
ID_SIZE = 8.5  # points, the ids on the chart
LEGEND_SIZE = 8.0
TITLE_SIZE = 12.0
MARKER_SIZE = 7.0

LEVEL_NAMES = {"DRAM": "DRAM", "L2": "L2", "L1": "L1", "SMEM": "shared memory"}
MEMORY_COLOR = {"DRAM": "#1f4e9c", "L2": "#2e8b57", "L1": "#8e44ad", "SMEM": "#b9770e"}
COMPUTE_COLOR = "#222222"
PEAK_NAMES = {
    "fp32": "FP32 peak",
    "fp64": "FP64 peak",
    "tf32_tensor_dense": "TF32 Tensor Core peak",
    "fp16_tensor_dense": "FP16 Tensor Core peak",
    "bf16_tensor_dense": "BF16 Tensor Core peak",
    "fp8_tensor_dense": "FP8 Tensor Core peak",
}
# strong colours for the records (a stage keeps its colour across shapes): tab10, then the dark
# shades of tab20b/tab20c; no pale ones, which vanish on white
POINT_COLORS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
    "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363",
)  # fmt: skip
# marker per kind of point: a run's ideal intensity or DRAM, the cache levels, by instruction
MARKER = {None: "o", "DRAM": "o", "L2": "^", "L1": "s", "SMEM": "D", "instr": "o", "ideal": "*"}
KIND_TEXT = {
    None: "speed at the ideal intensity (every byte moved once)",
    "DRAM": "DRAM intensity (Nsight Compute)",
    "L2": "L2 intensity (Nsight Compute)",
    "L1": "L1 intensity (Nsight Compute)",
    "SMEM": "shared-memory intensity (Nsight Compute)",
    "instr": "same speed at the by-instruction intensity (loads as issued)",
}


def kind_of(path: str | Path) -> str:
    ext = Path(path).suffix.lower().lstrip(".")
    if ext == "htm":
        ext = "html"
    if ext not in KINDS:
        raise RooflineError(f"cannot tell the format of {path}: end it in .png, .svg or .html")
    return ext


def _pos(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0


# --------------------------------------------------------------------------- what to draw


def title(doc: dict[str, Any]) -> str:
    """The figure's title: the terminal chart's, or what an LLM or tune document measured."""
    device = (doc.get("device") or {}).get("name", "?")
    spec = (doc.get("spec") or {}).get("name", "?")
    preset, batches = doc.get("preset"), doc.get("batches")
    if isinstance(preset, dict) and isinstance(batches, list) and batches:
        dtypes = "/".join(dict.fromkeys(str(r["dtype"]) for r in doc["records"]))
        name = preset.get("display_name") or preset.get("name") or "?"
        at = ", ".join(str(b) for b in batches)
        return f"Roofline: {name} weight GEMMs at batch {at} ({dtypes}) on {device} (spec {spec})"
    text = terminal_chart.title(doc)
    tune = doc.get("tune")
    if isinstance(tune, dict) and tune.get("stage"):
        text += f": tile parameters of {tune['stage']} tried by roofline tune"
    elif str(doc.get("command", "")).startswith("profile"):
        text += ": intensities measured by Nsight Compute"
    return text


@dataclass(frozen=True)
class Ceiling:
    """One roof line: a memory slope (GB/s) or a compute ceiling (TFLOP/s)."""

    kind: str  # "memory" or "compute"
    name: str  # DRAM, L2, ... or the compute roof's name
    value: float
    source: str  # "datasheet", "measured", "derived", ...

    @property
    def measured(self) -> bool:
        return self.source.startswith("measured")

    @property
    def label(self) -> str:
        if self.kind == "memory":
            return f"{LEVEL_NAMES.get(self.name, self.name)} {self.value:,.0f} GB/s ({self.source})"
        name = PEAK_NAMES.get(self.name, self.name)
        return f"{name} {self.value:,.1f} TFLOP/s ({self.source})"

    @property
    def color(self) -> str:
        return MEMORY_COLOR.get(self.name, "#555555") if self.kind == "memory" else COMPUTE_COLOR


@dataclass
class Series:
    """One record on the chart: its points (joined by a line), id and legend entry."""

    ident: str
    name: str
    value: str
    key: str  # what its colour stands for: the stage
    points: list[terminal_chart.Point]
    flagged: bool = False
    record: dict[str, Any] | None = None  # the record it draws (None: a model's ideal point)

    @property
    def anchor(self) -> terminal_chart.Point:
        """Where the id goes: the right end (ideal intensity, or DRAM)."""
        return max(self.points, key=lambda p: p.ai)


def _name(doc: dict[str, Any]) -> Any:
    name = terminal_chart.namer(doc)
    # a kernel of `profile app` by its function's own name and grid: `void at::<unnamed>::
    # cunn_SoftMaxForwardReg<...>(...)` is cunn_SoftMaxForwardReg [4096x1x1], two kernels that
    # read the same told apart (rooflinecli.core.kernel_names)
    kernels = {
        id(r): text
        for r, text in zip(
            doc["records"], kernel_names.labels(doc["records"], scoped=False), strict=True
        )
    }

    def of(rec: dict[str, Any]) -> str:
        if rec.get("kind") == "kernel" and rec.get("kernel"):
            return str(name(rec, kernels[id(rec)])).removesuffix(" -")  # "-": no dtype
        work = str(rec.get("workload") or "")
        if work.count(":") == 2:  # run llm: preset:gemm:bN names the GEMM better than its shape
            _, gemm, batch = work.split(":")
            return f"{rec['stage']} {gemm} {batch.replace('b', 'batch ', 1)}"
        return str(name(rec))

    return of


def series(
    doc: dict[str, Any], by_instruction: bool = True
) -> tuple[list[Series], list[terminal_chart.Unplaced]]:
    """Every record's points (ids numbered in record order), and the records not drawn."""
    recs = doc["records"]
    roof_of = terminal_chart.roofs(doc)
    name = _name(doc)
    out: list[Series] = []
    unplaced: list[terminal_chart.Unplaced] = []

    def add(
        label: str,
        value: str,
        key: str,
        pts: list[terminal_chart.Point],
        rec: dict[str, Any] | None = None,
    ) -> None:
        flagged = any(p.above_roof for p in pts)
        out.append(Series(str(len(out) + 1), label, value, key, pts, flagged, rec))

    if doc.get("device") is None:  # a model document: the roof's speed, not a measurement
        seen: set[tuple[str, str, Any]] = set()
        many = len({(terminal_chart.shape_of(r), str(r["dtype"])) for r in recs}) > 1
        for rec in recs:
            roof = roof_of[terminal_chart.roof_id(rec)]
            shape = (terminal_chart.shape_of(rec), str(rec["dtype"]))
            if (*shape, rec.get("ai_ideal")) not in seen and _pos(rec.get("ai_ideal")):
                seen.add((*shape, rec.get("ai_ideal")))
                ai = float(rec["ai_ideal"])
                best = roof.at(ai)
                what = "ideal, every byte once" + (f" {' '.join(shape)}" if many else "")
                if rec.get("op") == "attention":  # fused and unfused: two ideals, named
                    what = name(rec)
                pt = terminal_chart.Point(what, ai, best, best, "ideal", True)
                add(what, f"{terminal_chart.fmt_value(best)} TFLOP/s", "", [pt])
            ai_i = rec.get("ai_instruction")
            if _pos(ai_i):
                ai, label = float(ai_i), name(rec)
                best = roof.at(ai)
                pt = terminal_chart.Point(label, ai, best, best, "instr", True)
                add(
                    label,
                    f"{terminal_chart.fmt_value(best)} TFLOP/s by instruction",
                    rec["stage"],
                    [pt],
                    rec,
                )
            else:
                unplaced.append(terminal_chart.Unplaced(name(rec), "no by-instruction intensity"))
        return out, unplaced

    for rec in recs:
        label = name(rec)
        got = terminal_chart.run_points(rec, roof_of, label)
        if isinstance(got, terminal_chart.Unplaced):
            unplaced.append(got)
            continue
        pts = list(got)
        ai_i = rec.get("ai_instruction")
        # a real kernel loads every byte at least once: a by-instruction intensity above the
        # ideal one comes from per-tile counts that do not apply (tiles of padding at M=1)
        if by_instruction and _pos(ai_i) and float(ai_i) < max(p.ai for p in pts):
            tf = pts[0].tflops
            peak = roof_of[terminal_chart.roof_id(rec)].peak_tflops
            pts.append(
                terminal_chart.Point(
                    f"{label} by instruction", float(ai_i), tf, peak, "instr", False
                )
            )
        # a stage keeps its colour across shapes; kernels of a program are told apart by name
        value = f"{terminal_chart.fmt_value(pts[0].tflops)} TFLOP/s"
        add(label, value, str(rec["stage"]), pts, rec)
        gemm_pts = terminal_chart.chain_gemm_points(rec, roof_of, label)
        if gemm_pts:  # the token's GEMMs at their kernel times: the distance the gaps add
            fastest = max(p.tflops for p in gemm_pts)
            add(f"{label}, each GEMM (kernel time)",
                f"up to {terminal_chart.fmt_value(fastest)} TFLOP/s", str(rec["stage"]),
                gemm_pts, rec)  # fmt: skip
    return out, unplaced


def _roof_set(doc: dict[str, Any], rid: str) -> str:
    for rec in doc["records"]:
        if terminal_chart.roof_id(rec) == rid and rec.get("roof_set"):
            return str(rec["roof_set"])
    return "datasheet"


def ceilings(
    doc: dict[str, Any], roof_of: dict[str, Roof], calibration: dict[str, Any] | None = None
) -> list[Ceiling]:
    """Every roof to draw: the records' own (their roof set), the levels they carry, and what a
    calibration measured (HBM, L2, the compute ceilings of the document's precisions)."""
    out: list[Ceiling] = []

    def add(c: Ceiling) -> None:
        same = [o for o in out if o.kind == c.kind and abs(o.value - c.value) <= 1e-3 * c.value]
        if c.kind == "memory":
            same = [o for o in same if o.name == c.name]
        if not same:
            out.append(c)

    for dtype, roof in roof_of.items():
        add(Ceiling("memory", "DRAM", roof.bandwidth_gbs, _roof_set(doc, dtype)))
    for dtype, roof in roof_of.items():
        add(Ceiling("compute", roof.peak_key, roof.peak_tflops, _roof_set(doc, dtype)))
    # roofs a record was placed under, level by level (profile app), or the document's
    levels: list[Any] = []
    for rec in doc["records"]:
        levels += rec.get("roof_levels") or []
    doc_roofs = doc.get("roofs")
    mem = doc_roofs.get("memory_gbs") if isinstance(doc_roofs, dict) else None
    if isinstance(mem, dict):
        levels += [{"level": k, **v} for k, v in mem.items() if isinstance(v, dict)]
    for lv in levels:
        if isinstance(lv, dict) and _pos(lv.get("gbs")):
            level = str(lv.get("level") or "?").upper().replace("SHARED", "SMEM")
            add(Ceiling("memory", level, float(lv["gbs"]), str(lv.get("from") or "record")))
    if calibration:
        m = calibration.get("measurements") or {}
        when = str(calibration.get("created") or "")[:10]
        src = f"measured {when}".strip()
        hbm = [float(m[k]) for k in ("hbm_read_gbs", "hbm_copy_gbs") if _pos(m.get(k))]
        if hbm:
            add(Ceiling("memory", "DRAM", max(hbm), src))
        if _pos(m.get("l2_read_gbs")):
            add(Ceiling("memory", "L2", float(m["l2_read_gbs"]), src))
        dtypes = {part for rid in roof_of for part in rid.split(":")}  # "bf16:fp32": both
        if "fp32" in dtypes and _pos(m.get("fp32_fma_tflops")):
            add(Ceiling("compute", "FP32 FMA", float(m["fp32_fma_tflops"]), src))
        if dtypes & {"fp16", "bf16"}:
            for key, what in (("fp16_wgmma_tflops", "WGMMA"), ("fp16_mma_sync_tflops", "mma.sync")):
                if _pos(m.get(key)):
                    add(Ceiling("compute", what, float(m[key]), src))
    return out


def _palette(keys: list[str]) -> dict[str, Any]:
    distinct = [k for k in dict.fromkeys(keys) if k]
    out: dict[str, Any] = {k: POINT_COLORS[i % len(POINT_COLORS)] for i, k in enumerate(distinct)}
    out[""] = "black"
    return out


@dataclass
class Layout:
    """What every picture of a document draws, and where: the records' series, the roofs and
    the axes' extents. The matplotlib figure here and the page's interactive plot
    (rooflinecli/present/report.py) both draw from it, so the two never disagree."""

    roof_of: dict[str, Roof]
    series: list[Series]
    unplaced: list[terminal_chart.Unplaced]
    ceilings: list[Ceiling]
    colors: dict[str, Any]  # series key (the stage) -> its colour
    x: tuple[float, float]  # the axes' extents: intensity (FLOP/byte)
    y: tuple[float, float]  # and TFLOP/s

    @property
    def top(self) -> float:
        """The highest compute ceiling: every memory slope rises to it."""
        return max(c.value for c in self.ceilings if c.kind == "compute")

    @property
    def fastest(self) -> float:
        """The steepest memory slope (GB/s): every compute ceiling starts where it meets it."""
        return max(c.value for c in self.ceilings if c.kind == "memory")

    def line(self, c: Ceiling) -> tuple[tuple[float, float], tuple[float, float]]:
        """((x0, x1), (y0, y1)) of a roof line: a memory slope from the left edge up to the
        highest compute ceiling, a compute ceiling from the fastest slope to the right edge."""
        x0, x1 = self.x
        if c.kind == "memory":
            return (x0, self.top * 1000.0 / c.value), (x0 * c.value / 1000.0, self.top)
        return (c.value * 1000.0 / self.fastest, x1), (c.value, c.value)


def layout(
    doc: dict[str, Any], calibration: dict[str, Any] | None = None, by_instruction: bool = True
) -> Layout:
    """The document's series, roofs and extents (RooflineError when nothing can be drawn)."""
    roof_of = terminal_chart.roofs(doc)
    all_series, unplaced = series(doc, by_instruction)
    roofs = ceilings(doc, roof_of, calibration)
    pts = [p for s in all_series for p in s.points]
    xs = [p.ai for p in pts] + [r.ridge for r in roof_of.values()]
    xs += [r.ridge / 4 for r in roof_of.values()]
    x0, x1 = min(xs) / 2.5, max(xs) * 4.0  # room for the ids right of the last points
    computes = [c.value for c in roofs if c.kind == "compute"]
    ys = [p.tflops for p in pts] + computes
    y0, y1 = min(ys) / 3.0, max(computes) * 1.8
    colors = _palette([s.key for s in all_series])
    return Layout(roof_of, all_series, unplaced, roofs, colors, (x0, x1), (y0, y1))
