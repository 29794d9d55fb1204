"""A log-log roofline chart drawn as plain text on a character grid (no plotting dependency).

`render(doc)` draws any results document: the memory roof (a slope of one on log-log axes), the
compute roof of the records' precision (flat), the ridge point where they meet, and one lettered
point per record at (intensity, TFLOP/s), with a legend below. The same points and roofs feed
`roofline plot` (rooflinecli/present/image.py), so the two pictures never disagree.

- Run documents: each record at (ai_ideal, tflops). A record that carries measured hierarchical
  intensities (ai_dram, ai_l2, ai_l1, ai_smem from Nsight Compute) is drawn once per level
  instead. `profile app` records (kernels, no GEMM shape) are drawn the same way; one without a
  roof (no FLOPs counted, or a precision the spec has no peak for) is listed, not drawn.
- Model documents (device null): each stage at its by-instruction intensity and the speed the
  roof allows there; one "ideal" point per shape (every byte moved once) marks the best case.
- A point above its roof cannot be a real speed (wrong timing, or a wrong spec): it is listed in
  the legend with "!" and not drawn. L2 and L1 points are checked against the compute roof only:
  the spec gives the DRAM bandwidth, not the caches'.

Plain text, deterministic for a given document and size (tests compare it exactly).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rooflinecli import names
from rooflinecli.core import attention, model, roof_keys
from rooflinecli.core.roofs import Roof
from rooflinecli.errors import RooflineError

MARKERS = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
MANY = "*"  # a cell holding several points
LEVELS: tuple[tuple[str, str], ...] = (
    ("ai_dram", "DRAM"),
    ("ai_l2", "L2"),
    ("ai_l1", "L1"),
    ("ai_smem", "SMEM"),
)
# Relative slack before a point counts as above its roof (float rounding only, not noise).
ABOVE_ROOF_SLACK = 1e-9


@dataclass(frozen=True)
class Point:
    """A record (or one memory level of it) placed on the chart."""

    label: str  # stage, plus shape/dtype/level where needed to tell points apart
    ai: float  # FLOP/byte
    tflops: float
    ceiling: float  # the most its roof allows at this intensity
    level: str | None  # "DRAM", "L2", "L1", "ideal", "instr" or None (ai_ideal of a run)
    model: bool  # a model document: the speed is the roof's, not a measurement

    @property
    def above_roof(self) -> bool:
        return self.tflops > self.ceiling * (1.0 + ABOVE_ROOF_SLACK)


@dataclass(frozen=True)
class Unplaced:
    label: str
    why: str


def fmt_value(v: float) -> str:
    """5.3, 682.7, 1,365.3; small values keep two significant digits (0.25, 0.05)."""
    return f"{v:,.1f}" if v >= 1 else f"{v:.2g}"


def _finite_pos(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def shape_of(rec: dict[str, Any]) -> str:
    if rec.get("op") == "attention":  # 'B4 H16 N4096 D128 causal'
        return attention.label(rec)
    if rec.get("m") is None:  # a kernel of `profile app`, or measure() without a shape
        return "-"
    return f"{rec['m']}x{rec['n']}x{rec['k']}"


def _rooted(rec: dict[str, Any]) -> bool:
    """A `profile app` kernel without a roof (its `roof_note` says why) is listed, not drawn."""
    return not (rec.get("kind") == "kernel" and not _finite_pos(rec.get("peak_tflops")))


def roof_id(rec: dict[str, Any]) -> str:
    """Which roof of a chart a record answers to: its dtype's, or, for a record placed under
    another peak than its dtype's (a 16-bit stage whose math is FFMA: the fp32 peak), that one."""
    dtype = str(rec["dtype"])
    key = rec.get("roof_key") or rec.get("peak_key")
    return f"{dtype}:{key}" if key == "fp32" and dtype != "fp32" else dtype


def roofs(doc: dict[str, Any]) -> dict[str, Roof]:
    """roof_id -> its roof, for every roof among the records (records' peaks, else the spec's):
    a dtype's, and a second one where some records of that dtype sit under another peak."""
    spec = doc.get("spec") or {}
    bw: Any = spec.get("memory_bandwidth_gbs")
    if not _finite_pos(bw):
        raise RooflineError("the document's spec gives no memory_bandwidth_gbs: nothing to chart")
    out: dict[str, Roof] = {}
    for rec in doc["records"]:
        rid = roof_id(rec)
        if rid in out or not _rooted(rec):
            continue
        key = roof_keys.of_record(rec)
        peak: Any = rec.get("peak_tflops")
        if not _finite_pos(peak):
            peak = (spec.get("tflops") or {}).get(key)
        if not _finite_pos(peak):
            raise RooflineError(f"the document's spec gives no {key} peak: nothing to chart")
        rec_bw = rec.get("bandwidth_gbs")  # a record placed against another roof set
        out[rid] = Roof(key, float(peak), float(rec_bw) if _finite_pos(rec_bw) else float(bw))
    if not out:
        raise RooflineError("no record has a compute roof (no FLOPs counted): nothing to chart")
    return out


def points(doc: dict[str, Any]) -> tuple[list[Point], list[Unplaced]]:
    """Every point to draw (or flag), in record order, and the records that have none."""
    recs = doc["records"]
    roof_of = roofs(doc)
    name = namer(doc)
    placed: list[Point] = []
    unplaced: list[Unplaced] = []
    if doc.get("device") is None:  # a model document
        seen: set[tuple[str, str, Any]] = set()
        for rec in recs:
            roof = roof_of[roof_id(rec)]
            # GEMM stages of a shape share one ideal point; attention's fused and unfused
            # versions are two (their bytes differ), each named
            ideal = (shape_of(rec), rec["dtype"], rec.get("ai_ideal"))
            if ideal not in seen and _finite_pos(rec.get("ai_ideal")):
                seen.add(ideal)
                ai = float(rec["ai_ideal"])
                best = roof.at(ai)
                what = name(rec) if rec.get("op") == "attention" else name(rec, "ideal")
                placed.append(Point(what, ai, best, best, "ideal", True))
            ai_i = rec.get("ai_instruction")
            if _finite_pos(ai_i):
                ai = float(ai_i)
                placed.append(Point(name(rec), ai, roof.at(ai), roof.at(ai), "instr", True))
        return placed, unplaced

    for rec in recs:
        got = run_points(rec, roof_of, name(rec))
        if isinstance(got, Unplaced):
            unplaced.append(got)
        else:
            placed.extend(got)
    return placed, unplaced


def namer(doc: dict[str, Any]) -> Callable[..., str]:
    """name(rec, what="") for the records of `doc`: the stage (or its label, or `what`), plus
    the shape and dtype where the document holds several."""
    recs = doc["records"]
    many_shapes = len({shape_of(r) for r in recs}) > 1
    many_dtypes = len({r["dtype"] for r in recs}) > 1

    def name(rec: dict[str, Any], what: str = "") -> str:
        parts = [str(rec.get("label") or rec["stage"]) if not what else what]
        if many_shapes:
            parts.append(shape_of(rec))
        if many_dtypes:
            parts.append(str(rec["dtype"]))
        return " ".join(parts)

    return name


def speed(rec: dict[str, Any]) -> Any:
    """The TFLOP/s to place: under Nsight Compute the event time covers ncu's replays, so the
    kernel time it measured (tflops_ncu) gives the speed."""
    return rec.get("tflops_ncu") if _finite_pos(rec.get("tflops_ncu")) else rec.get("tflops")


def chain_gemm_points(rec: dict[str, Any], roof_of: dict[str, Roof], label: str) -> list[Point]:
    """A chain record's GEMMs, each at its ideal intensity and the speed of its kernel time from
    the timeline (one replayed token): where each sits against the roof without the gaps."""
    if not _rooted(rec) or not isinstance(rec.get("gemms"), list):
        return []
    roof = roof_of[roof_id(rec)]
    elem = 4 if rec.get("dtype") == "fp32" else 2
    pts = []
    for g in rec["gemms"]:
        us = g.get("kernel_us")
        if not isinstance(g, dict) or not _finite_pos(us):
            continue
        m, n, k = int(g["m"]), int(g["n"]), int(g["k"])
        flops = model.gemm_flops(m, n, k)
        ai = model.intensity(flops, model.gemm_bytes_ideal(m, n, k, elem))
        pts.append(Point(f"{label} {g.get('name')}", ai, model.tflops(flops, us / 1e3),
                         roof.at(ai), None, False))  # fmt: skip
    return pts


def run_points(rec: dict[str, Any], roof_of: dict[str, Roof], label: str) -> list[Point] | Unplaced:
    """The points of one record of a run: one per measured memory level, else one at ai_ideal."""
    if not _rooted(rec):
        return Unplaced(label, str(rec.get("roof_note") or "no roof"))
    roof = roof_of[roof_id(rec)]
    tf = speed(rec)
    if not _finite_pos(tf):
        if rec.get("verified") is False:
            why = "failed verification"
        else:
            why = str(rec.get("error") or "not timed")
        return Unplaced(label, why)
    levels = [(lvl, float(rec[key])) for key, lvl in LEVELS if _finite_pos(rec.get(key))]
    if levels:
        # the spec knows DRAM bandwidth only: cache-level points answer to the peak alone
        return [
            Point(
                f"{label} {lvl}",
                ai,
                float(tf),
                roof.at(ai) if lvl == "DRAM" else roof.peak_tflops,
                lvl,
                False,
            )
            for lvl, ai in levels
        ]
    if _finite_pos(rec.get("ai_ideal")):
        ai = float(rec["ai_ideal"])
        return [Point(label, ai, float(tf), roof.at(ai), None, False)]
    return Unplaced(label, "no intensity recorded")


def _decades(values: list[float]) -> tuple[int, int]:
    lo = math.floor(math.log10(min(values)) + 1e-12)
    hi = math.ceil(math.log10(max(values)) - 1e-12)
    return (lo, hi) if hi > lo else (lo, lo + 1)


def _decade_label(e: int) -> str:
    return str(10**e) if e >= 0 else f"{10.0**e:.{-e}f}"


def _round(v: float) -> int:
    return int(math.floor(v + 0.5))


def title(doc: dict[str, Any]) -> str:
    spec = doc.get("spec") or {}
    recs = doc["records"]
    if doc.get("command") == "profile app":
        argv = " ".join((doc.get("program") or {}).get("argv") or ["?"])
        argv = argv if len(argv) <= 60 else argv[:57] + "..."
        gpu = (doc.get("device") or {}).get("name", "?")
        return f"Roofline: kernels of `{argv}` on {gpu} (spec {spec.get('name', '?')})"
    shapes = list(dict.fromkeys(shape_of(r) for r in recs))
    dtypes = list(dict.fromkeys(str(r["dtype"]) for r in recs))
    op = "Attention" if any(r.get("op") == "attention" for r in recs) else "GEMM"
    what = f"{op} {', '.join(shapes)} {'/'.join(dtypes)}"
    device = doc.get("device")
    if device is None:
        gpu = spec.get("display_name", "?")
        return f"Roofline model: {what} on {gpu} ({spec.get('name', '?')})"
    return f"Roofline: {what} on {device.get('name', '?')} (spec {spec.get('name', '?')})"


SPREAD = 4  # columns either side of its cell a point that shares the cell may be drawn at


def _spread(
    cells: dict[tuple[int, int], list[str]], grid: list[list[str]], width: int
) -> dict[tuple[int, int], list[str]]:
    """Points that share a cell drawn side by side in its row, each in a free cell (blank, no
    point's) within SPREAD columns of it, nearest first, in their order left to right. Returns
    the cells so drawn, each with its marks (drawn here); a cell whose points find too few free
    cells is left out (one marker and its list)."""
    taken = set(cells)
    done: dict[tuple[int, int], list[str]] = {}
    for (r, c), marks in cells.items():
        if len(marks) < 2:
            continue
        near = sorted(
            range(max(0, c - SPREAD), min(width, c + SPREAD + 1)), key=lambda x: abs(x - c)
        )
        free = [x for x in near if x == c or ((r, x) not in taken and grid[r][x] == " ")]
        if len(free) < len(marks):
            continue
        spots = sorted(free[: len(marks)])
        for x, mark in zip(spots, marks, strict=True):
            grid[r][x] = mark
            taken.add((r, x))
        done[(r, c)] = marks
    return done


def render(doc: dict[str, Any], width: int = 72, height: int = 20) -> str:
    """The chart of a results document as plain text: `width` x `height` cells of plot area."""
    if width < 20 or height < 5:
        raise RooflineError(f"chart too small ({width}x{height}): at least 20x5")
    if not doc.get("records"):
        raise RooflineError("nothing to chart: the document has no records")
    roof_of = roofs(doc)
    pts, unplaced = points(doc)
    drawn = [p for p in pts if not p.above_roof]
    flagged = [p for p in pts if p.above_roof]

    # the ridge point, and enough of the slope left of it to see it rise
    xs = [p.ai for p in drawn] + [r.ridge for r in roof_of.values()]
    xs += [r.ridge / 3 for r in roof_of.values()]
    lx0, lx1 = _decades(xs)
    ys = [p.tflops for p in drawn] + [r.peak_tflops for r in roof_of.values()]
    ys += [r.memory(10.0**lx0) for r in roof_of.values()]  # the slope enters at the left edge
    ly0, ly1 = _decades(ys)

    def col(ai: float) -> int:
        return _round((math.log10(ai) - lx0) / (lx1 - lx0) * (width - 1))

    def row(tf: float) -> int:
        return _round((ly1 - math.log10(tf)) / (ly1 - ly0) * (height - 1))

    def x_at(c: int) -> float:
        return 10.0 ** (lx0 + c * (lx1 - lx0) / (width - 1))

    grid = [[" "] * width for _ in range(height)]

    def put(r: int, c: int, ch: str) -> None:
        if 0 <= r < height and 0 <= c < width:
            grid[r][c] = ch

    _draw_roofs(grid, roof_of, row, col, x_at)

    markers = [MARKERS[i] if i < len(MARKERS) else MANY for i in range(len(drawn))]
    cells: dict[tuple[int, int], list[str]] = {}
    for p, mark in zip(drawn, markers, strict=True):
        cells.setdefault((row(p.tflops), col(p.ai)), []).append(mark)
    crowded = _spread(cells, grid, width)
    for (r, c), marks in cells.items():
        if (r, c) not in crowded:
            put(r, c, marks[0] if len(marks) == 1 else MANY)
    spread = {marks[0]: cells_ for cells_, marks in crowded.items() if marks}

    # the compute roof's value just above it, at the right, where nothing is drawn
    for roof in roof_of.values():
        text = f"{roof.peak_key} {roof.peak_tflops:g} TFLOP/s"
        r = row(roof.peak_tflops) - 1
        start = width - len(text)
        if r >= 0 and start > 0 and all(ch == " " for ch in grid[r][start - 1 :]):
            grid[r][start:] = list(text)

    ticks = {row(10.0**e): _decade_label(e) for e in range(ly0, ly1 + 1)}
    pad = max(len(t) for t in ticks.values())
    lines = [title(doc), "TFLOP/s".rjust(pad + 3)]
    for r in range(height):
        lines.append(f"{ticks.get(r, '').rjust(pad)} |{''.join(grid[r])}".rstrip())
    lines += _x_axis(pad, width, lx0, lx1, col)

    lines += _key(roof_of, drawn, markers, cells, spread, flagged, unplaced)
    return "".join(f"{line}\n" for line in _wrapped(lines, max(LINE, pad + 3 + width)))


def _draw_roofs(
    grid: list[list[str]],
    roof_of: dict[Any, Roof],
    row: Callable[[float], int],
    col: Callable[[float], int],
    x_at: Callable[[int], float],
) -> None:
    """The roofs on the grid: the slope drawn without gaps however steep, then the flat peak,
    and the ridge point with a dotted line down from it."""
    height, width = len(grid), len(grid[0])

    def put(r: int, c: int, ch: str) -> None:
        if 0 <= r < height and 0 <= c < width:
            grid[r][c] = ch

    for roof in roof_of.values():
        prev: int | None = None
        for c in range(width):
            x = x_at(c)
            if roof.memory(x) < roof.peak_tflops:
                r = row(roof.memory(x))
                # a slope steeper than one row per column: fill up from the previous column's row
                bottom = prev - 1 if prev is not None and prev - 1 > r else r
                for rr in range(r, min(bottom, height - 1) + 1):
                    put(rr, c, "/")
                prev = r
            else:
                put(row(roof.peak_tflops), c, "-")
        rc, rr = col(roof.ridge), row(roof.peak_tflops)
        for below in range(rr + 1, height):
            if grid[below][rc] == " ":
                grid[below][rc] = ":"
        put(rr, rc, "+")


def _x_axis(pad: int, width: int, lx0: int, lx1: int, col: Callable[[float], int]) -> list[str]:
    """The x axis under the plot area: its ticks, their decade labels, its title."""
    lines: list[str] = []
    axis = ["-"] * width
    labels = [" "] * (width + 8)
    for e in range(lx0, lx1 + 1):
        c = col(10.0**e)
        axis[c] = "+"
        text = _decade_label(e)
        # centred under its tick, but never past the 80th column (the last tick's label)
        start = max(0, min(c - len(text) // 2, LINE - pad - 2 - len(text)))
        if all(ch == " " for ch in labels[max(0, start - 1) : start + len(text) + 1]):
            labels[start : start + len(text)] = list(text)
    lines.append(f"{' ' * pad} +{''.join(axis)}")
    lines.append(f"{' ' * (pad + 2)}{''.join(labels)}".rstrip())
    xtitle = "arithmetic intensity (FLOP/byte)"
    lines.append(" " * (pad + 2 + max(0, (width - len(xtitle)) // 2)) + xtitle)

    return lines


def _key(
    roof_of: dict[Any, Roof],
    drawn: list[Point],
    markers: list[str],
    cells: dict[tuple[int, int], list[str]],
    spread: dict[str, Any],
    flagged: list[Point],
    unplaced: list[Unplaced],
) -> list[str]:
    """The lines under the chart: each roof, each point by its marker, the cells that hold
    several, and what is not drawn and why."""
    lines: list[str] = []
    bw = next(iter(roof_of.values())).bandwidth_gbs
    lines.append(f"/ memory roof {bw:,.0f} GB/s")
    for roof in roof_of.values():
        lines.append(
            f"- {roof.peak_key} roof {roof.peak_tflops:g} TFLOP/s; + ridge point "
            f"{fmt_value(roof.ridge)} FLOP/B"
        )
    for p, mark in zip(drawn, markers, strict=True):
        if p.model:
            how = " (every byte once)" if p.level == "ideal" else " (by instruction)"
            lines.append(
                f"{mark} {p.label} attainable {fmt_value(p.tflops)} TFLOP/s @ "
                f"{fmt_value(p.ai)} FLOP/B{how}"
            )
        else:
            lines.append(
                f"{mark} {p.label} {fmt_value(p.tflops)} TFLOP/s @ {fmt_value(p.ai)} FLOP/B"
            )
    for marks in cells.values():
        if len(marks) > 1 and not any(m in spread for m in marks):
            lines.append(f"{MANY} one cell holds {' '.join(marks)}")
    if spread:
        lines.append(
            "points sharing a cell are drawn side by side around it; intensities as listed"
        )
    for p in flagged:
        lines.append(
            f"! {p.label} {fmt_value(p.tflops)} TFLOP/s @ {fmt_value(p.ai)} FLOP/B is above its "
            f"roof ({fmt_value(p.ceiling)} TFLOP/s): a measurement error, not drawn"
        )
    for u in unplaced:
        lines.append(f"? {u.label}: not drawn ({u.why})")
    return lines


LINE = 80  # the width the chart's title and notes wrap at (its plot area is narrower)


def _wrapped(lines: list[str], limit: int) -> list[str]:
    """The chart's lines as text (names never send a control code), a title or note longer than
    `limit` wrapped at its spaces, the lines after its first indented; a word longer than the
    limit (a path, a kernel's name) stays whole."""
    import textwrap

    out: list[str] = []
    for line in lines:
        text = names.plain(line)
        if len(text) <= limit:
            out.append(text)
            continue
        out += textwrap.wrap(
            text, limit, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
        ) or [text]
    return out
