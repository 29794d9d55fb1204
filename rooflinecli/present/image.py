"""The roofline as an image: PNG, SVG, or an SVG inside a minimal HTML page (matplotlib).

matplotlib is an optional extra (`pip install 'roofline[plot]'`), imported only when a plot is
drawn. Records and roofs come from rooflinecli/present/terminal_chart.py, so the image and the
terminal chart agree on where every record sits.

What a figure holds, so that it can go into a talk as it is:
- One short id per record beside its point (never on another id, a marker or off the axes),
  and a legend below the axes that maps each id to its stage, shape and speed.
- Run documents: each record at its ideal intensity (every byte moved once), and, hollow, at its
  by-instruction intensity (loads as issued: the seed's naive 0.25 FLOP/byte), the two joined
  by a thin line at the measured speed. For square GEMMs every stage has the same ideal
  intensity; the by-instruction one tells them apart. It is not drawn where it exceeds the ideal
  (a tile of M=1 is mostly padding, so per-tile counts do not apply).
- Profile documents: each record once per memory level Nsight Compute measured (DRAM, L2, L1,
  shared memory) and by instruction, joined the same way; each level has its own roof where one
  is known: DRAM from the records' roof set, L2 (and any other level) from a calibration
  (`roofline calibrate`) or from the roofs a record was placed under (`roof_levels`).
- Model documents: each stage on the roof at its by-instruction intensity, one ideal point per
  shape.
- The legend at the right names every ceiling and says where it comes from: the datasheet
  (solid lines) or measured by `roofline calibrate` (dashed).
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
import re
import textwrap
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rooflinecli import files, names
from rooflinecli.core import kernel_names
from rooflinecli.core.roofs import Roof
from rooflinecli.errors import RooflineError
from rooflinecli.present import MAX_POINTS, terminal_chart

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


def _matplotlib() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise RooflineError(
            "plotting needs matplotlib: pip install 'roofline[plot]' (or pip install matplotlib)"
        ) from None
    return matplotlib


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


# --------------------------------------------------------------------------- layout helpers


def _wrap_to(renderer: Any, fig: Any, text: str, size: float, width_px: float) -> str:
    """`text` wrapped into lines no wider than width_px at `size` points."""
    from matplotlib.text import Text

    def width(s: str) -> float:
        t = Text(0, 0, s, fontsize=size, figure=fig)
        return float(t.get_window_extent(renderer).width)

    if width(text) <= width_px:
        return text
    # no glyph of a name is narrower than a fifth of an em: no line of more characters than
    # this fits, so the search starts there, not at a 4,000-character kernel name's length
    # (which measured some 2,000 wrappings of it)
    most = int(width_px / (0.2 * size * fig.dpi / 72)) + 2
    start = len(text) if len(text) <= most else most - (most - len(text)) % 2  # same parity
    for chars in range(start, 8, -2):
        lines = textwrap.wrap(text, chars, break_on_hyphens=False)
        if all(width(line) <= width_px for line in lines):
            return "\n".join(lines)
    return "\n".join(textwrap.wrap(text, 8))


def _text_size(renderer: Any, fig: Any, s: str, size: float, weight: str = "normal") -> Any:
    from matplotlib.text import Text

    t = Text(0, 0, s, fontsize=size, fontweight=weight, figure=fig)
    return t.get_window_extent(renderer)


@functools.cache
def _in_view_locator() -> Any:
    """A LogLocator that gives only the ticks inside the view, the only ones drawn.

    matplotlib's gives a decade more on each side, and an axis makes a tick (two lines, a grid
    line and two texts) for each location it gets, then updates them all each time its extent is
    asked for: about a dozen times per layout pass, and once more to draw. On our axes a third
    of the minor ticks lie outside the view. The margin kept is wider than the tolerance with
    which matplotlib decides that a tick is inside (1e-10 of the view, in log space), so every
    tick it would draw is still there and the picture is the same."""
    import numpy as np
    from matplotlib.ticker import LogLocator

    class InView(LogLocator):  # type: ignore[misc]
        def tick_values(self, vmin: float, vmax: float) -> Any:
            locs = np.asarray(super().tick_values(vmin, vmax))
            lo, hi = sorted((vmin, vmax))
            return locs[(locs >= lo * (1 - 1e-6)) & (locs <= hi * (1 + 1e-6))]

    return InView


def _palette(keys: list[str]) -> dict[str, Any]:
    distinct = [k for k in dict.fromkeys(keys) if k]
    out: dict[str, Any] = {k: POINT_COLORS[i % len(POINT_COLORS)] for i, k in enumerate(distinct)}
    out[""] = "black"
    return out


def not_drawn(unplaced: list[terminal_chart.Unplaced]) -> list[tuple[str, list[str]]]:
    """Records not drawn, grouped by why (the shape a reason names is left out of the group)."""
    groups: dict[str, list[str]] = {}
    for u in unplaced:
        why = re.sub(r"\s*\(got [^)]*\)", "", u.why)
        groups.setdefault(why, []).append(u.label)
    return list(groups.items())


def _place_ids(fig: Any, ax: Any, items: list[tuple[Series, Any]], renderer: Any) -> None:
    """Put each series' id beside its anchor point: on no other id and no marker, inside the
    axes; a thin leader line joins an id that had to move away from its point. Where markers
    leave no room (hundreds of points), an id may cover a marker; where ids leave none, the
    point keeps no id (the legend still lists it)."""
    import numpy as np
    from matplotlib import patheffects

    area = ax.get_window_extent(renderer)
    to_px = ax.transData.transform
    to_data = ax.transData.inverted().transform
    px_per_pt = fig.dpi / 72.0
    r = (MARKER_SIZE / 2 + 1.5) * px_per_pt
    markers: list[tuple[float, float, float, float]] = []
    for s, _ in items:
        for p in s.points:
            x, y = to_px((p.ai, p.tflops))
            markers.append((x - r, y - r, x + r, y + r))
    ids: list[tuple[float, float, float, float]] = []

    def free(x0: Any, y0: Any, x1: Any, y1: Any, boxes: list[Any]) -> Any:
        if not boxes:
            return np.ones(len(x0), dtype=bool)
        b = np.array(boxes)
        hit = (
            (x0[:, None] < b[None, :, 2])
            & (x1[:, None] > b[None, :, 0])
            & (y0[:, None] < b[None, :, 3])
            & (y1[:, None] > b[None, :, 1])
        )
        return ~hit.any(axis=1)

    order = sorted(items, key=lambda it: -it[0].anchor.tflops)  # top down
    for s, color in order:
        px, py = to_px((s.anchor.ai, s.anchor.tflops))
        ext = _text_size(renderer, fig, s.ident, ID_SIZE, "bold")
        w, h = float(ext.width) + 2, float(ext.height) + 1
        # candidates (x0, y0, penalty): 14 columns each side, 61 rows, right before left in
        # each row, then straight above and below the point
        step = h / 2 + 0.5
        cols = np.arange(14.0)[:, None]
        grid = np.empty((14, 61, 2, 3))
        grid[:, :, 0, 0] = px + r + 1 + cols * (w + 3)
        grid[:, :, 1, 0] = px - r - 1 - w - cols * (w + 3)
        grid[:, :, :, 1] = (py - h / 2 + np.arange(-30.0, 31.0) * step)[None, :, None]
        grid[:, :, :, 2] = (0.0, 6.0)  # the right side reads first
        ends = [(px - w / 2, py + r + 1, 1.0), (px - w / 2, py - r - 1 - h, 1.0)]
        c = np.concatenate([grid.reshape(-1, 3), ends])
        cx, cy = c[:, 0] + w / 2, c[:, 1] + h / 2
        score = np.hypot(cx - px, (cy - py) * 1.3) + c[:, 2]
        c = c[np.argsort(score, kind="stable")]
        x0, y0 = c[:, 0], c[:, 1]
        x1, y1 = x0 + w, y0 + h
        ok = (x0 >= area.x0 + 2) & (x1 <= area.x1 - 2) & (y0 >= area.y0 + 2) & (y1 <= area.y1 - 2)
        ok &= free(x0, y0, x1, y1, ids)
        best = ok & free(x0, y0, x1, y1, markers)
        if best.any():
            ok = best
        elif not ok.any():
            continue
        bx, by = (float(v) for v in c[int(np.argmax(ok)), :2])
        ids.append((bx, by, bx + w, by + h))
        tx, ty = to_data((bx + 1, by + h / 2))
        ax.text(
            tx,
            ty,
            s.ident,
            fontsize=ID_SIZE,
            fontweight="bold",
            color=color,
            ha="left",
            va="center",
            zorder=6,
            path_effects=[patheffects.withStroke(linewidth=2.5, foreground="white")],
        )
        # the nearest point of the id's box to its marker: far from it, a leader line
        nx, ny = min(max(px, bx), bx + w), min(max(py, by), by + h)
        if math.hypot(nx - px, ny - py) > r + 3:
            d = math.hypot(nx - px, ny - py)
            sx, sy = px + (nx - px) * r / d, py + (ny - py) * r / d
            (ax0, ay0), (ax1, ay1) = to_data((sx, sy)), to_data((nx, ny))
            ax.plot([ax0, ax1], [ay0, ay1], color=color, lw=0.6, alpha=0.8, zorder=2)


# --------------------------------------------------------------------------- the figure


def figure(
    doc: dict[str, Any], calibration: dict[str, Any] | None = None, by_instruction: bool = True
) -> Any:
    """A matplotlib Figure of the document's roofline (no pyplot: no global state). Its text is
    literal (names.MATPLOTLIB_RC): a name's `$` is a dollar sign, never mathtext."""
    with _literal_text():
        return _figure(doc, calibration, by_instruction)


@contextlib.contextmanager
def _literal_text() -> Iterator[None]:
    """Text drawn as written (names.MATPLOTLIB_RC), and a glyph the font lacks (a kernel named
    in Japanese) drawn as a box without a Python warning on stderr."""
    with _matplotlib().rc_context(names.MATPLOTLIB_RC), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font")
        yield


def _figure(doc: dict[str, Any], calibration: dict[str, Any] | None, by_instruction: bool) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.layout_engine import ConstrainedLayoutEngine
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter, NullFormatter

    lay = layout(doc, calibration, by_instruction)
    roof_of, all_series, unplaced, roofs, colors = (
        lay.roof_of,
        lay.series,
        lay.unplaced,
        lay.ceilings,
        lay.colors,
    )

    # the legend of ids below the axes: as many columns as fit the width
    fig = Figure(figsize=(WIDTH_IN, AXES_HEIGHT_IN), dpi=DPI)
    renderer = FigureCanvasAgg(fig).get_renderer()
    entries = [f"{s.ident}  {s.name}  {s.value}" for s in all_series]
    for s in all_series:
        if s.flagged:
            entries[int(s.ident) - 1] += ": above its roof, a measurement error"
    widest = max(entries, key=len, default="")
    text_px = _text_size(renderer, fig, widest, LEGEND_SIZE).width if widest else 0.0
    col_px = max(text_px, 180.0) + 2.6 * LEGEND_SIZE * fig.dpi / 72 + 12
    ncol = max(1, min(len(entries) or 1, int((WIDTH_IN * fig.dpi - 30) // col_px)))
    chars = max(30, int(len(widest) * max(text_px, 180.0) / max(text_px, 1.0)))
    for why, labels_of in not_drawn(unplaced):  # one entry per reason, wrapped to the column
        entries.append(textwrap.fill(f"not drawn ({why}): {', '.join(labels_of)}", chars))
    lines = sum(e.count("\n") + 1 for e in entries)
    rows = math.ceil(lines / ncol) + max((e.count("\n") for e in entries), default=0)
    # the title over the axes, wrapped to their width (measured once the layout has run)
    guess = WIDTH_IN * fig.dpi - 380
    heading = _wrap_to(renderer, fig, title(doc), TITLE_SIZE, guess)
    title_lines = heading.count("\n") + 1
    height = AXES_HEIGHT_IN + 0.25 * title_lines + 0.45 + rows * 0.2
    fig.set_size_inches(WIDTH_IN, height)

    ax = fig.add_subplot(1, 1, 1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    pts = [p for s in all_series for p in s.points]
    (x0, x1), (y0, y1) = lay.x, lay.y
    computes = [c for c in roofs if c.kind == "compute"]
    memories = [c for c in roofs if c.kind == "memory"]

    handles: list[Any] = []
    labels: list[str] = []
    for c in memories:  # each slope up to the highest compute ceiling
        style = "--" if c.measured else "-"
        xs, ys = lay.line(c)
        ax.plot(xs, ys, color=c.color, lw=2, ls=style, zorder=1)
        handles.append(Line2D([], [], color=c.color, lw=2, ls=style))
        labels.append(c.label)
    dashes: list[Any] = ["--", "-.", (0, (1, 1.5))]  # measured compute ceilings told apart
    for c in computes:  # each ceiling from where the fastest slope meets it
        style = dashes.pop(0) if c.measured and dashes else ("--" if c.measured else "-")
        xs, ys = lay.line(c)
        ax.plot(xs, ys, color=c.color, lw=2, ls=style, zorder=1)
        handles.append(Line2D([], [], color=c.color, lw=2, ls=style))
        labels.append(c.label)
    for roof in roof_of.values():
        ax.plot([roof.ridge], [roof.peak_tflops], "o", color="black", ms=5, zorder=4)
        ax.axvline(roof.ridge, color="grey", ls=":", lw=0.8, zorder=0)
    ridges = ", ".join(f"{terminal_chart.fmt_value(r.ridge)}" for r in roof_of.values())
    handles.append(Line2D([], [], color="black", marker="o", ms=5, ls="none"))
    labels.append(f"ridge point {ridges} FLOP/B")
    drawn_levels = {p.level for p in pts}
    roofed = {c.name for c in memories}
    for lvl in ("L2", "L1", "SMEM"):
        if lvl in drawn_levels and lvl not in roofed:
            handles.append(Line2D([], [], ls="none"))
            labels.append(f"no {LEVEL_NAMES[lvl]} roof: not measured")

    for s in all_series:
        color = colors[s.key]
        if len(s.points) > 1:
            line = sorted(s.points, key=lambda p: p.ai)
            ax.plot(
                [p.ai for p in line],
                [p.tflops for p in line],
                color=color,
                lw=0.9,
                alpha=0.7,
                zorder=2,
            )
        for p in s.points:
            if p.above_roof:
                ax.plot([p.ai], [p.tflops], "X", ms=MARKER_SIZE + 1, color="red", zorder=5)
                continue
            marker = "s" if p.model and p.level == "instr" else MARKER.get(p.level, "o")
            hollow = p.level == "instr"
            ms = MARKER_SIZE + 4 if p.level == "ideal" else MARKER_SIZE
            ax.plot(
                [p.ai],
                [p.tflops],
                marker,
                ms=ms,
                color=color,
                mfc="white" if hollow else color,
                mew=1.4,
                zorder=5,
            )
    # what the markers mean
    kinds = [k for k in (None, "DRAM", "L2", "L1", "SMEM", "instr") if k in drawn_levels]
    model = doc.get("device") is None
    for k in kinds:
        if model:
            text = "a stage at its by-instruction intensity, on the roof"
            mark, fill = "s", "white"
        else:
            text, mark, fill = KIND_TEXT[k], MARKER.get(k, "o"), "white" if k == "instr" else "grey"
        handles.append(Line2D([], [], marker=mark, color="grey", mfc=fill, mew=1.4, ls="none"))
        labels.append(text)
    if "ideal" in drawn_levels:
        handles.append(Line2D([], [], marker="*", color="black", ms=10, ls="none"))
        labels.append("ideal: every byte moved once, on the roof")
    if any(s.flagged for s in all_series):
        handles.append(Line2D([], [], marker="X", color="red", ls="none"))
        labels.append("above its roof: a measurement error")
    labels = [textwrap.fill(t, 34) for t in labels]
    fig.legend(
        handles,
        labels,
        loc="outside right upper",
        fontsize=LEGEND_SIZE,
        title="roofs: solid datasheet, broken measured",
        title_fontsize=LEGEND_SIZE,
        frameon=False,
    )
    if entries:
        id_handles: list[Any] = []
        for s in all_series:
            p = s.anchor
            mark = "X" if s.flagged else ("*" if p.level == "ideal" else MARKER.get(p.level, "o"))
            if p.model and p.level == "instr":
                mark = "s"
            fill = "white" if p.level == "instr" else colors[s.key]
            id_handles.append(
                Line2D([], [], marker=mark, color=colors[s.key], mfc=fill, mew=1.4, ls="none")
            )
        id_handles += [Line2D([], [], ls="none") for _ in not_drawn(unplaced)]
        fig.legend(
            id_handles,
            entries,
            loc="outside lower center",
            ncol=ncol,
            fontsize=LEGEND_SIZE,
            frameon=False,
            handletextpad=0.3,
            columnspacing=1.2,
        )
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    plain = FuncFormatter(lambda v, _pos: f"{v:,.0f}" if v >= 1 else f"{v:g}")
    in_view = _in_view_locator()
    for axis, lo, hi in ((ax.xaxis, x0, x1), (ax.yaxis, y0, y1)):
        # the log scale's own locators (1 of each decade; 2-9 between), ticks in view only
        major = (1.0, 2.0, 5.0) if math.log10(hi / lo) < 2.0 else (1.0,)  # few decades: 1, 2, 5
        axis.set_major_locator(in_view(base=10.0, subs=major))
        axis.set_minor_locator(in_view(base=10.0, subs="auto"))
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("performance (TFLOP/s)")
    ax.grid(True, which="major", ls="-", lw=0.4, alpha=0.5)
    # y given: the title sits right above the axes, where matplotlib would put it (nothing is
    # labelled above them), without measuring both axes again each time it is asked where it is
    ax.set_title(heading, fontsize=TITLE_SIZE, y=1.0)
    # The constrained layout places the axes and the legends, run here rather than attached to
    # the figure: an attached engine runs at every draw, and savefig draws the whole figure once
    # more, unrendered, before the real draw (it does so for any engine, even "none" after one).
    # Placed once, the axes stay where they are (the ids below are placed in their pixels).
    engine = ConstrainedLayoutEngine()
    engine.execute(fig)
    fitted = _wrap_to(renderer, fig, title(doc), TITLE_SIZE, ax.get_window_extent(renderer).width)
    if fitted != heading:
        more = fitted.count("\n") - heading.count("\n")
        fig.set_size_inches(WIDTH_IN, height + 0.25 * more)
        ax.set_title(fitted, fontsize=TITLE_SIZE, y=1.0)
        engine.execute(fig)
    _place_ids(fig, ax, [(s, colors[s.key]) for s in all_series], renderer)
    return fig


def render(
    doc: dict[str, Any],
    kind: str,
    calibration: dict[str, Any] | None = None,
    by_instruction: bool = True,
) -> bytes:
    """The image as bytes: png, svg, or html (the SVG inside a minimal page)."""
    buf = io.BytesIO()
    with _literal_text():  # the ticks' texts are made at the draw
        fig = figure(doc, calibration, by_instruction)
        if kind == "png":
            fig.savefig(buf, format="png", metadata={"Software": None})
            return buf.getvalue()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    svg = buf.getvalue().decode("utf-8")
    if kind == "svg":
        return svg.encode("utf-8")
    body = svg[svg.index("<svg") :]  # drop the XML prolog and doctype: not allowed inline
    name = names.html(title(doc))
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{name}</title>\n</head>\n<body>\n{body}</body>\n</html>\n"
    )
    return page.encode("utf-8")


def save(
    doc: dict[str, Any],
    path: str | Path,
    calibration: dict[str, Any] | None = None,
    by_instruction: bool = True,
    max_points: int = MAX_POINTS,
    force: bool = False,
) -> str:
    """Draw the document's roofline into `path` (format from its suffix), replacing a file
    there only with `force`; returns the format.
    A document of more than `max_points` points to draw is refused in one line, before
    matplotlib draws anything."""
    kind = kind_of(path)
    if not doc.get("records"):
        raise RooflineError("nothing to plot: the document has no records")
    drawn, _unplaced = series(doc, by_instruction)
    points = sum(len(s.points) for s in drawn)
    if points > max_points:
        raise RooflineError(
            f"{points:,} points to draw ({len(doc['records']):,} records): more than a plot "
            f"draws ({max_points:,}); pass --max-points {points} to draw them all, or plot a "
            "part of the document"
        )
    data = render(doc, kind, calibration, by_instruction)
    files.write_output(path, data, document=False, force=force)
    return kind
