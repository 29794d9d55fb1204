"""The report's figures: the interactive roofline of a document (every roof set it offers, its
points with their hover text) and the distributions of a gate's or a comparison's samples, as
Plotly figures written to JSON here (rooflinecli.present.report assembles the page)."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rooflinecli import names
from rooflinecli.core import roofs
from rooflinecli.errors import RooflineError
from rooflinecli.present import image, table, terminal_chart

PLOT_HEIGHT = 640  # px, the roofline's; the distributions take DIST_HEIGHT
DIST_HEIGHT = 480
# Plotly's marker symbols for matplotlib's (rooflinecli.present.image.MARKER)
SYMBOL = {"o": "circle", "^": "triangle-up", "s": "square", "D": "diamond", "*": "star"}
ABOVE_ROOF_COLOR = "#d62728"
SIDE_COLORS = ("#7f7f7f", "#1f77b4")  # baseline (or A), current (or B)
# Plotly's configuration: no logo, no link to Plotly's servers, never TeX (a `$` in a name is
# text), a PNG of the plot at twice the pixels from the mode bar
CONFIG = {
    "displaylogo": False,
    "responsive": True,
    "typesetMath": False,
    "showSendToCloud": False,
    "toImageButtonOptions": {"format": "png", "scale": 2},
}
SET_LABELS = {
    "datasheet": "datasheet",
    "derived": "derived (SMs x clock x FLOP/clk/SM)",
    "measured": "measured (roofline calibrate)",
    "clock": "each row's SM clock",
}


def _plotly() -> tuple[str, str]:
    """plotly.js (minified) and its version, from the plotly package (the `report` extra)."""
    try:
        import plotly
        from plotly.offline import get_plotlyjs
    except ImportError:
        raise RooflineError(
            "the report needs plotly: pip install 'roofline[report]' (or pip install plotly)"
        ) from None
    return str(get_plotlyjs()), str(plotly.__version__)


def require() -> None:
    """RooflineError (one line, what to install) unless a page can be made here."""
    _plotly()


def _js(obj: Any) -> str:
    """JSON for a <script>: no `<`, `>` or `&` (no `</script>` can end it early), ASCII only
    (U+2028 and U+2029 escaped too), no NaN."""
    text = json.dumps(obj, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _h(text: Any) -> str:
    return names.html(str(text))


def _p(text: Any) -> str:
    return names.plotly(str(text))


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return float(v)


# --------------------------------------------------------------------------- roof sets


@dataclass
class RoofSet:
    """One roof set a document can stand under, and the document placed under it."""

    key: str  # what the page's switch sends: datasheet, derived, measured, clock
    label: str
    doc: dict[str, Any]


def offered_sets(doc: dict[str, Any], calibration: dict[str, Any] | None) -> list[RoofSet]:
    """The roof sets the page's switch offers (rooflinecli.core.roofs.offered decides which): the
    one the records stand under first. A `profile app` document (placed when it was profiled)
    has its own only."""
    if table.is_app(doc):
        own = roofs.own_set(doc["records"])
        name = str((doc.get("roofs") or {}).get("name") or own)
        return [RoofSet(name, SET_LABELS.get(name, name), doc)]
    return [RoofSet(k, SET_LABELS.get(k, k), d) for k, d in roofs.offered(doc, calibration)]


# --------------------------------------------------------------------------- the roofline


def _fmt(v: Any, digits: int = 2, unit: str = "") -> str:
    n = _num(v)
    return "-" if n is None else f"{n:,.{digits}f}{unit}"


def tflops_text(v: float) -> str:
    """A speed as the hover and the tables write it: 5.39 TFLOP/s."""
    return f"{v:,.2f} TFLOP/s"


def _chunks(text: str, width: int = 96) -> list[str]:
    """A long name in lines of at most `width` characters (cut before escaping)."""
    return [text[i : i + width] for i in range(0, len(text), width)] or [""]


def hover(rec: dict[str, Any] | None, pt: terminal_chart.Point, model: bool) -> str:
    """What hovering a point shows: the stage or kernel, shape, dtype, time, TFLOP/s, intensity,
    % of roof, % of reference, SM clock and verified (Plotly's markup, names escaped)."""
    if rec is None:  # a model's ideal point
        return "<br>".join(
            [f"<b>{_p(pt.label)}</b>", f"{tflops_text(pt.tflops)} (the roof, model)"]
            + [f"intensity {pt.ai:,.2f} FLOP/byte: every byte moved once"]
        )
    kernel = rec.get("kind") == "kernel" and rec.get("kernel")
    head = str(rec.get("label") or rec["stage"]) if kernel else str(rec["stage"])
    lines = [f"<b>{'<br>'.join(_p(c) for c in _chunks(head))}</b>"]
    if kernel:
        lines += [_p(c) for c in _chunks(str(rec["kernel"]))]
    shape = terminal_chart.shape_of(rec)
    if rec.get("kind") == "kernel":
        grid, block = rec.get("grid"), rec.get("block")
        shape = f"grid {_p(table.plain(grid))}, block {_p(table.plain(block))}"
    work = rec.get("work") or rec.get("math_instruction")
    lines.append(f"shape {_p(shape)}, {_p(rec.get('dtype'))}" + (f" ({_p(work)})" if work else ""))
    if rec.get("workload"):
        lines.append(f"workload {_p(rec['workload'])}")
    if model:
        lines.append(f"{tflops_text(pt.tflops)} the roof allows (model)")
    else:
        t = _num(rec.get("time_ms"))
        reps = rec.get("repeats") or rec.get("launches")
        if t is not None:
            lines.append(f"time {t:,.4f} ms" + (f" (median of {_p(reps)})" if reps else ""))
        lines.append(tflops_text(pt.tflops))
    what = image.KIND_TEXT.get(pt.level, "by instruction, on the roof")
    lines.append(f"intensity {pt.ai:,.2f} FLOP/byte: {_p(what)}")
    if pt.above_roof:
        lines.append("<b>above its roof: a measurement error</b>")
    roof_pct, ref_pct = _num(rec.get("pct_of_roof")), _num(rec.get("pct_of_reference"))
    if roof_pct is not None:
        lines.append(f"{roof_pct:.1f}% of roof")
    if rec.get("peak_tflops"):
        lines.append(f"under {_p(roofs.title(rec))}")
    if ref_pct is not None:
        ref = rec.get("compared_with") or "the reference"
        lines.append(f"{ref_pct:.1f}% of {_p(ref)}")
    clock = _num(rec.get("sm_clock_mhz"))
    if clock is not None:
        lines.append(f"SM clock {clock:,.0f} MHz")
    ok = rec.get("verified")
    said = "yes" if ok is True else "FAILED" if ok is False else "not checked"
    lines.append(f"verified: {said}")
    return "<br>".join(lines)


def _symbol(pt: terminal_chart.Point) -> str:
    if pt.above_roof:
        return "x"
    if pt.model and pt.level == "instr":
        return "square-open"
    base = SYMBOL.get(image.MARKER.get(pt.level, "o"), "circle")
    return f"{base}-open" if pt.level == "instr" else base


def _precisions_of(c: image.Ceiling, lay: image.Layout) -> list[str]:
    """The precisions (record dtypes) whose records a compute ceiling bounds; [] for any."""
    if c.kind != "compute":
        return []
    dtypes = [rid.split(":")[0] for rid, roof in lay.roof_of.items() if roof.peak_key == c.name]
    if c.name == "FP32 FMA":
        dtypes = [rid.split(":")[0] for rid in lay.roof_of if "fp32" in rid.split(":")]
    elif c.name in ("WGMMA", "mma.sync"):
        dtypes = [rid for rid in lay.roof_of if rid in ("fp16", "bf16")]
    return list(dict.fromkeys(dtypes))


@dataclass
class Plot:
    """One interactive plot: Plotly's data and layout, the roof sets and precisions it can be
    switched between, and what it could not draw."""

    plot_id: str
    data: list[dict[str, Any]]
    layout: dict[str, Any]
    sets: list[tuple[str, str]] = field(default_factory=list)  # (key, label)
    precisions: list[str] = field(default_factory=list)
    not_drawn: list[tuple[str, list[str]]] = field(default_factory=list)
    points: int = 0  # record points per roof set

    def script(self) -> str:
        return (
            f"Plotly.newPlot({_js(self.plot_id)},{_js(self.data)},{_js(self.layout)},"
            f"{_js(CONFIG)});\n"
        )


def _log_range(lo: float, hi: float) -> list[float]:
    return [math.log10(lo), math.log10(hi)]


def _set_traces(
    lay: image.Layout, key: str, visible: bool, model: bool, groups: dict[str, str]
) -> tuple[list[dict[str, Any]], int]:
    """The traces of one roof set: its roofs, ridge points, and every record's points."""
    meta = {"set": key}
    out = _roof_traces(lay, meta, visible)
    by_key: dict[str, list[image.Series]] = {}
    for s in lay.series:
        by_key.setdefault(s.key, []).append(s)
    records = 0
    for k, group in by_key.items():
        gid = groups.setdefault(k, f"series-{len(groups) + 1}")
        traces, n = _group_traces(group, gid, lay.colors.get(k, "black"), meta, visible, model)
        out += traces
        records += n
    return out, records


def _roof_traces(lay: image.Layout, meta: dict[str, Any], visible: bool) -> list[dict[str, Any]]:
    """A roof set's roofs (solid from the datasheet, dashed measured) and its ridge points."""
    out: list[dict[str, Any]] = []
    dash_of = ["dash", "dashdot", "dot"]
    for c in lay.ceilings:
        xs, ys = lay.line(c)
        dash = "solid"
        if c.measured:
            dash = dash_of.pop(0) if c.kind == "compute" and dash_of else "dash"
        out.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": list(xs),
                "y": list(ys),
                "name": _p(c.label),
                "line": {"color": c.color, "width": 2, "dash": dash},
                "hoverinfo": "skip",
                "visible": visible,
                "meta": {**meta, "kind": "roof", "dtypes": _precisions_of(c, lay)},
            }
        )
    ridges = list(lay.roof_of.values())
    out.append(
        {
            "type": "scatter",
            "mode": "markers",
            "x": [r.ridge for r in ridges],
            "y": [r.peak_tflops for r in ridges],
            "name": "ridge point",
            "marker": {"color": "black", "size": 7, "symbol": "circle"},
            "hoverinfo": "text",
            "hovertext": [
                f"ridge point {r.ridge:,.2f} FLOP/byte: {_p(r.peak_key)} {r.peak_tflops:,.1f} "
                f"TFLOP/s over {r.bandwidth_gbs:,.0f} GB/s"
                for r in ridges
            ],
            "visible": visible,
            "meta": {**meta, "kind": "ridge", "dtypes": []},
        }
    )
    return out


def _group_traces(
    group: list[image.Series],
    gid: str,
    color: str,
    meta: dict[str, Any],
    visible: bool,
    model: bool,
) -> tuple[list[dict[str, Any]], int]:
    """One legend entry's traces (a stage at every shape it ran, or the ideal points): its main
    points, and where they have more (memory levels, by instruction) the links and those points;
    with how many records it shows."""
    out: list[dict[str, Any]] = []
    records = 0
    recs = [s.record for s in group]
    kind = "record" if all(r is not None for r in recs) else "ideal"
    dtypes = sorted({str(r["dtype"]) for r in recs if r is not None})
    if len(group) == 1:
        name = group[0].name
    else:  # one stage at several shapes: the legend names the stage
        first = group[0].record
        name = str((first or {}).get("label") or (first or {}).get("stage") or group[0].name)
    if kind == "ideal":
        name = "ideal: every byte moved once, on the roof"
    mains = [s.points[0] for s in group]
    out.append(
        {
            "type": "scatter",
            "mode": "markers",
            "x": [p.ai for p in mains],
            "y": [p.tflops for p in mains],
            "name": _p(name),
            "legendgroup": gid,
            "marker": {
                "color": [ABOVE_ROOF_COLOR if p.above_roof else color for p in mains],
                "size": [14 if p.level == "ideal" else 10 for p in mains],
                "symbol": [_symbol(p) for p in mains],
                "line": {"width": 1.5, "color": color},
            },
            "hoverinfo": "text",
            "hovertext": [hover(s.record, s.points[0], model) for s in group],
            "visible": visible,
            "meta": {**meta, "kind": kind, "dtypes": dtypes},
        }
    )
    if kind == "record":
        records += len(mains)
    out += _level_traces(group, _p(name), gid, color, meta, dtypes, visible, model)
    return out, records


def _level_traces(
    group: list[image.Series],
    name: str,
    gid: str,
    color: str,
    meta: dict[str, Any],
    dtypes: list[str],
    visible: bool,
    model: bool,
) -> list[dict[str, Any]]:
    """A legend entry's points past the first of each record (memory levels, by instruction),
    and the lines that join each record's points; none where its records have one point."""
    rest = [(s, p) for s in group for p in s.points[1:]]
    if not rest:
        return []
    out: list[dict[str, Any]] = []
    link_x: list[float | None] = []
    link_y: list[float | None] = []
    for s in group:
        if len(s.points) > 1:
            line = sorted(s.points, key=lambda p: p.ai)
            link_x += [p.ai for p in line] + [None]
            link_y += [p.tflops for p in line] + [None]
    out.append(
        {
            "type": "scatter",
            "mode": "lines",
            "x": link_x,
            "y": link_y,
            "name": name,
            "legendgroup": gid,
            "showlegend": False,
            "line": {"color": color, "width": 1},
            "opacity": 0.7,
            "hoverinfo": "skip",
            "visible": visible,
            "meta": {**meta, "kind": "link", "dtypes": dtypes},
        }
    )
    out.append(
        {
            "type": "scatter",
            "mode": "markers",
            "x": [p.ai for _, p in rest],
            "y": [p.tflops for _, p in rest],
            "name": name,
            "legendgroup": gid,
            "showlegend": False,
            "marker": {
                "color": [ABOVE_ROOF_COLOR if p.above_roof else color for _, p in rest],
                "size": 9,
                "symbol": [_symbol(p) for _, p in rest],
                "line": {"width": 1.5, "color": color},
            },
            "hoverinfo": "text",
            "hovertext": [hover(s.record, p, model) for s, p in rest],
            "visible": visible,
            "meta": {**meta, "kind": "level", "dtypes": dtypes},
        }
    )
    return out


def roofline(doc: dict[str, Any], calibration: dict[str, Any] | None, plot_id: str) -> Plot | None:
    """The interactive roofline of a document, every roof set it can stand under one switch
    apart; None when it has nothing to draw (no record has a roof), said in its section."""
    try:
        sets = [(s, image.layout(s.doc, calibration)) for s in offered_sets(doc, calibration)]
    except RooflineError:
        return None
    model = doc.get("device") is None
    data: list[dict[str, Any]] = []
    groups: dict[str, str] = {}
    points = 0
    for i, (rs, lay) in enumerate(sets):
        traces, n = _set_traces(lay, rs.key, i == 0, model, groups)
        data += traces
        if i == 0:  # every set draws the same records
            points = n
    lays = [lay for _, lay in sets]
    x0, x1 = min(lay.x[0] for lay in lays), max(lay.x[1] for lay in lays)
    y0, y1 = min(lay.y[0] for lay in lays), max(lay.y[1] for lay in lays)
    first = lays[0]
    layout = {
        "title": {"text": _p(image.title(doc)), "font": {"size": 15}, "x": 0.01},
        "height": PLOT_HEIGHT,
        "margin": {"l": 70, "r": 20, "t": 60, "b": 60},
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "hovermode": "closest",
        "hoverlabel": {"align": "left", "bgcolor": "white", "font": {"size": 12}},
        "xaxis": {
            "type": "log",
            "range": _log_range(x0, x1),
            "title": {"text": "arithmetic intensity (FLOP/byte)"},
            "gridcolor": "#e6e6e6",
            "linecolor": "#444",
            "mirror": True,
        },
        "yaxis": {
            "type": "log",
            "range": _log_range(y0, y1),
            "title": {"text": "performance (TFLOP/s)"},
            "gridcolor": "#e6e6e6",
            "linecolor": "#444",
            "mirror": True,
        },
        "legend": {
            "title": {"text": "click an entry to hide or show it"},
            "font": {"size": 11},
            "tracegroupgap": 2,
        },
    }
    precisions = sorted({str(r["dtype"]) for s in first.series if (r := s.record)})
    return Plot(
        plot_id,
        data,
        layout,
        sets=[(rs.key, rs.label) for rs, _ in sets],
        precisions=precisions if len(precisions) > 1 else [],
        not_drawn=image.not_drawn(first.unplaced),
        points=points,
    )


# --------------------------------------------------------------------------- distributions


def sample_tflops(rec: dict[str, Any] | None) -> tuple[list[float], str]:
    """A record's repeats as TFLOP/s (its FLOPs over each time in samples_ms), or its one
    recorded speed when it kept none; and which of the two it is."""
    if rec is None:
        return [], "missing"
    flops = _num(rec.get("flops"))
    raw = rec.get("samples_ms")
    if flops and isinstance(raw, list):
        times = [t for t in (_num(x) for x in raw) if t is not None and t > 0]
        if times:
            return [flops / (t * 1e9) for t in times], f"{len(times)} samples"
    tf = _num(terminal_chart.speed(rec))
    return ([tf], "the recorded speed (no samples)") if tf else ([], "no speed")


def distributions(
    pairs: Sequence[tuple[str, dict[str, Any] | None, dict[str, Any] | None]],
    sides: tuple[str, str],
    plot_id: str,
    title: str,
) -> Plot:
    """Each check's samples as a box with its points, the two sides side by side. Each repeat
    is drawn as its TFLOP/s against the median of the first side (of the second where the
    first has none): stages of 1 and 50 TFLOP/s share one axis, and a spread of 0.1% shows."""
    data = []
    refs: list[float | None] = []
    for _label, first, second in pairs:
        got = sample_tflops(first)[0] or sample_tflops(second)[0]
        refs.append(statistics.median(got) if got else None)
    for side, color, pick in ((sides[0], SIDE_COLORS[0], 1), (sides[1], SIDE_COLORS[1], 2)):
        xs: list[str] = []
        ys: list[float] = []
        text: list[str] = []
        for (label, *recs), ref in zip(pairs, refs, strict=True):
            got, what = sample_tflops(recs[pick - 1])
            if not ref:
                continue
            xs += [_p(label)] * len(got)
            ys += [100.0 * (v / ref - 1.0) for v in got]
            text += [
                f"{_p(side)}: {_p(label)}<br>{tflops_text(v)}, {100.0 * (v / ref - 1.0):+.2f}% "
                f"against {sides[0] if sample_tflops(recs[0])[0] else sides[1]}'s median "
                f"{tflops_text(ref)}<br>({_p(what)})"
                for v in got
            ]
        data.append(
            {
                "type": "box",
                "name": _p(side),
                "x": xs,
                "y": ys,
                "boxpoints": "all",
                "jitter": 0.4,
                "pointpos": 0,
                "marker": {"color": color, "size": 4, "opacity": 0.7},
                "line": {"color": color, "width": 1.5},
                "fillcolor": "rgba(0,0,0,0)",
                "hoverinfo": "text",
                "hovertext": text,
                "meta": {"kind": "samples", "side": side},
            }
        )
    layout = {
        "title": {"text": _p(title), "font": {"size": 15}, "x": 0.01},
        "height": DIST_HEIGHT,
        "boxmode": "group",
        "margin": {"l": 70, "r": 20, "t": 60, "b": 40},
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "hovermode": "closest",
        "hoverlabel": {"align": "left", "bgcolor": "white"},
        "xaxis": {
            "type": "category",
            "tickangle": -30,
            "automargin": True,
            "linecolor": "#444",
            "mirror": True,
        },
        "yaxis": {
            "title": {"text": f"TFLOP/s per repeat, % against {_p(sides[0])}'s median"},
            "ticksuffix": "%",
            "zeroline": True,
            "zerolinecolor": "#999",
            "gridcolor": "#e6e6e6",
            "linecolor": "#444",
            "mirror": True,
        },
    }
    return Plot(plot_id, data, layout)
