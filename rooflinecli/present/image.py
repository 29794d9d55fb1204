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

What is drawn (series, ceilings, their layout) is rooflinecli.present.image_layout's; this
module draws it.
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
from pathlib import Path
from typing import Any

from rooflinecli import files, names
from rooflinecli.errors import RooflineError
from rooflinecli.present import MAX_POINTS, terminal_chart
from rooflinecli.present.image_layout import (
    AXES_HEIGHT_IN,
    COMPUTE_COLOR,
    DPI,
    ID_SIZE,
    KIND_TEXT,
    KINDS,
    LEGEND_SIZE,
    LEVEL_NAMES,
    MARKER,
    MARKER_SIZE,
    MEMORY_COLOR,
    PEAK_NAMES,
    POINT_COLORS,
    TITLE_SIZE,
    WIDTH_IN,
    Ceiling,
    Layout,
    Series,
    ceilings,
    kind_of,
    layout,
    series,
    title,
)

__all__ = [  # what to draw, re-exported from its module
    "AXES_HEIGHT_IN",
    "COMPUTE_COLOR",
    "Ceiling",
    "DPI",
    "ID_SIZE",
    "KINDS",
    "KIND_TEXT",
    "LEGEND_SIZE",
    "LEVEL_NAMES",
    "Layout",
    "MARKER",
    "MARKER_SIZE",
    "MEMORY_COLOR",
    "PEAK_NAMES",
    "POINT_COLORS",
    "Series",
    "TITLE_SIZE",
    "WIDTH_IN",
    "ceilings",
    "kind_of",
    "layout",
    "series",
    "title",
]


def _matplotlib() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise RooflineError(
            "plotting needs matplotlib: pip install 'roofline[plot]' (or pip install matplotlib)"
        ) from None
    return matplotlib


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

    order = sorted(items, key=lambda it: -it[0].anchor.tflops)  # top down
    for s, color in order:
        px, py = to_px((s.anchor.ai, s.anchor.tflops))
        ext = _text_size(renderer, fig, s.ident, ID_SIZE, "bold")
        w, h = float(ext.width) + 2, float(ext.height) + 1
        c = _candidates(px, py, r, w, h)
        x0, y0 = c[:, 0], c[:, 1]
        x1, y1 = x0 + w, y0 + h
        ok = (x0 >= area.x0 + 2) & (x1 <= area.x1 - 2) & (y0 >= area.y0 + 2) & (y1 <= area.y1 - 2)
        ok &= _free(x0, y0, x1, y1, ids)
        best = ok & _free(x0, y0, x1, y1, markers)
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


def _free(x0: Any, y0: Any, x1: Any, y1: Any, boxes: list[Any]) -> Any:
    """Which of the boxes (x0, y0)-(x1, y1) overlap none of `boxes`."""
    import numpy as np

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


def _candidates(px: float, py: float, r: float, w: float, h: float) -> Any:
    """Where an id of w x h pixels may go beside its point (px, py) of radius r: rows of
    (x0, y0, penalty), nearest first."""
    import numpy as np

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
    return c[np.argsort(score, kind="stable")]


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

    lay = layout(doc, calibration, by_instruction)
    all_series, colors = lay.series, lay.colors

    # the legend of ids below the axes: as many columns as fit the width
    fig = Figure(figsize=(WIDTH_IN, AXES_HEIGHT_IN), dpi=DPI)
    renderer = FigureCanvasAgg(fig).get_renderer()
    entries, ncol, rows = _id_entries(fig, renderer, lay)
    # the title over the axes, wrapped to their width (measured once the layout has run)
    guess = WIDTH_IN * fig.dpi - 380
    heading = _wrap_to(renderer, fig, title(doc), TITLE_SIZE, guess)
    title_lines = heading.count("\n") + 1
    height = AXES_HEIGHT_IN + 0.25 * title_lines + 0.45 + rows * 0.2
    fig.set_size_inches(WIDTH_IN, height)

    ax = fig.add_subplot(1, 1, 1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    drawn_levels = {p.level for s in all_series for p in s.points}
    handles, labels = _draw_roofs(ax, lay, drawn_levels)
    _draw_points(ax, lay)
    _marker_legend(handles, labels, drawn_levels, doc.get("device") is None, lay)
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
        _id_legend(fig, lay, entries, ncol)
    _axes(ax, lay)
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


def _id_entries(fig: Any, renderer: Any, lay: Layout) -> tuple[list[str], int, int]:
    """The legend of ids: its entries (one per series, then what was not drawn, one entry per
    reason), its columns (as many as fit the width) and its rows."""
    all_series = lay.series
    entries = [f"{s.ident}  {s.name}  {s.value}" for s in all_series]
    for s in all_series:
        if s.flagged:
            entries[int(s.ident) - 1] += ": above its roof, a measurement error"
    widest = max(entries, key=len, default="")
    text_px = _text_size(renderer, fig, widest, LEGEND_SIZE).width if widest else 0.0
    col_px = max(text_px, 180.0) + 2.6 * LEGEND_SIZE * fig.dpi / 72 + 12
    ncol = max(1, min(len(entries) or 1, int((WIDTH_IN * fig.dpi - 30) // col_px)))
    chars = max(30, int(len(widest) * max(text_px, 180.0) / max(text_px, 1.0)))
    for why, labels_of in not_drawn(lay.unplaced):  # one entry per reason, wrapped to the column
        entries.append(textwrap.fill(f"not drawn ({why}): {', '.join(labels_of)}", chars))
    lines = sum(e.count("\n") + 1 for e in entries)
    rows = math.ceil(lines / ncol) + max((e.count("\n") for e in entries), default=0)
    return entries, ncol, rows


def _draw_roofs(ax: Any, lay: Layout, drawn_levels: set[Any]) -> tuple[list[Any], list[str]]:
    """The roofs and ridge points, with their legend entries (handles, labels)."""
    from matplotlib.lines import Line2D

    roofs = lay.ceilings
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
    for roof in lay.roof_of.values():
        ax.plot([roof.ridge], [roof.peak_tflops], "o", color="black", ms=5, zorder=4)
        ax.axvline(roof.ridge, color="grey", ls=":", lw=0.8, zorder=0)
    ridges = ", ".join(f"{terminal_chart.fmt_value(r.ridge)}" for r in lay.roof_of.values())
    handles.append(Line2D([], [], color="black", marker="o", ms=5, ls="none"))
    labels.append(f"ridge point {ridges} FLOP/B")
    roofed = {c.name for c in memories}
    for lvl in ("L2", "L1", "SMEM"):
        if lvl in drawn_levels and lvl not in roofed:
            handles.append(Line2D([], [], ls="none"))
            labels.append(f"no {LEVEL_NAMES[lvl]} roof: not measured")
    return handles, labels


def _draw_points(ax: Any, lay: Layout) -> None:
    """Every series' points, joined by a thin line where a record has more than one."""
    for s in lay.series:
        color = lay.colors[s.key]
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


def _marker_legend(
    handles: list[Any], labels: list[str], drawn_levels: set[Any], model: bool, lay: Layout
) -> None:
    """What the markers mean, added to the legend's handles and labels."""
    from matplotlib.lines import Line2D

    kinds = [k for k in (None, "DRAM", "L2", "L1", "SMEM", "instr") if k in drawn_levels]
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
    if any(s.flagged for s in lay.series):
        handles.append(Line2D([], [], marker="X", color="red", ls="none"))
        labels.append("above its roof: a measurement error")


def _id_legend(fig: Any, lay: Layout, entries: list[str], ncol: int) -> None:
    """The legend of ids below the axes: each series' marker and its entry."""
    from matplotlib.lines import Line2D

    colors = lay.colors
    id_handles: list[Any] = []
    for s in lay.series:
        p = s.anchor
        mark = "X" if s.flagged else ("*" if p.level == "ideal" else MARKER.get(p.level, "o"))
        if p.model and p.level == "instr":
            mark = "s"
        fill = "white" if p.level == "instr" else colors[s.key]
        id_handles.append(
            Line2D([], [], marker=mark, color=colors[s.key], mfc=fill, mew=1.4, ls="none")
        )
    id_handles += [Line2D([], [], ls="none") for _ in not_drawn(lay.unplaced)]
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


def _axes(ax: Any, lay: Layout) -> None:
    """The axes' extents, ticks (in view only) and labels."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    (x0, x1), (y0, y1) = lay.x, lay.y
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
