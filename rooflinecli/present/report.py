"""The report: one self-contained HTML page of results documents, to keep beside a CI run or to
send to a colleague (`roofline report`, `roofline gate --html`).

Per document, the page holds:
- the interactive roofline (Plotly, its JavaScript inline, so the page opens offline): every
  roof the document carries (the records' own, the memory levels they carry, what a calibration
  measured per instruction; solid datasheet, dashed measured) and every record as a point, each
  an SVG element. Hovering a point says what the record is and how fast it ran; clicking a
  legend entry hides or shows a series; the roof set (datasheet, derived from the SM clock,
  measured, each row's own clock) and the precision can be switched;
- the tables and the verdict in words that `show` prints;
- where the run was made: device, driver, CUDA, commit and command.

For a gate (a run and its baseline) or two documents compared: the verdict per check, and each
stage's samples as a distribution (box and points) for both sides.

The points, roofs and extents are the matplotlib figure's (rooflinecli.present.image.layout), the
tables are show's (rooflinecli.present.document, table, verdict). Every name from a document is
written through rooflinecli.names: `html` for the page, `plotly` for what Plotly draws. The same
documents give the same bytes: fixed element ids, no time but the documents' own, JSON written
here rather than by whichever engine plotly.py finds installed.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rooflinecli import __version__, names
from rooflinecli.core import kernel_names, roofs
from rooflinecli.errors import RooflineError
from rooflinecli.present import document, image, table, terminal_chart, verdict

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
    by_key: dict[str, list[image.Series]] = {}
    for s in lay.series:
        by_key.setdefault(s.key, []).append(s)
    records = 0
    for k, group in by_key.items():
        gid = groups.setdefault(k, f"series-{len(groups) + 1}")
        color = lay.colors.get(k, "black")
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
        rest = [(s, p) for s in group for p in s.points[1:]]
        if not rest:
            continue
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
                "name": _p(name),
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
                "name": _p(name),
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
    return out, records


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


# --------------------------------------------------------------------------- the page


@dataclass
class Source:
    """A document on the page: where it was read from, itself, and its calibration."""

    path: str
    doc: dict[str, Any]
    calibration: dict[str, Any] | None = None


@dataclass
class Page:
    """What a page is made of: its sections' HTML and the plots their scripts draw."""

    sections: list[str] = field(default_factory=list)
    plots: list[Plot] = field(default_factory=list)
    nav: list[tuple[str, str]] = field(default_factory=list)  # (anchor, label)


def _controls(plot: Plot) -> str:
    out = []
    if len(plot.sets) > 1:
        opts = "".join(f'<option value="{_h(k)}">{_h(label)}</option>' for k, label in plot.sets)
        out.append(
            f'<label>roofs <select id="{plot.plot_id}-roofs" data-plot="{plot.plot_id}">'
            f"{opts}</select></label>"
        )
    if plot.precisions:
        opts = '<option value="">all</option>' + "".join(
            f'<option value="{_h(p)}">{_h(p)}</option>' for p in plot.precisions
        )
        out.append(
            f'<label>precision <select id="{plot.plot_id}-precision" '
            f'data-plot="{plot.plot_id}">{opts}</select></label>'
        )
    return f'<div class="controls">{"".join(out)}</div>\n' if out else ""


def _plot_div(plot: Plot) -> str:
    height = plot.layout.get("height", PLOT_HEIGHT)
    return f'<div id="{plot.plot_id}" class="plot" style="height:{height}px"></div>\n'


def _dl(rows: list[tuple[str, Any]]) -> str:
    """A table of what a run was, each value as text (a https:// source is a link)."""
    out = ['<table class="facts"><tbody>']
    for key, value in rows:
        if value is None or value == "" or value == []:
            continue
        text = table.plain(value)
        cell = _h(text)
        if key == "spec source" and text.startswith("https://") and '"' not in text:
            cell = f'<a href="{_h(text)}" rel="noreferrer">{cell}</a>'
        out.append(f'<tr><th class="l">{_h(key)}</th><td class="l">{cell}</td></tr>')
    out.append("</tbody></table>")
    return "\n".join(out) + "\n"


def environment_rows(src: Source) -> list[tuple[str, Any]]:
    """The run's device, driver, CUDA, commit and command, and the rest of what it records."""
    doc = src.doc
    dev = doc.get("device") or {}
    env = doc.get("environment") or {}
    spec = doc.get("spec") or {}
    program = doc.get("program") or {}
    rows: list[tuple[str, Any]] = [
        ("document", src.path),
        ("command", doc.get("command")),
        ("program", program.get("argv")),
        ("created", doc.get("created")),
        ("device", dev.get("name") if dev else "none: an analytic model"),
        ("compute capability", dev.get("compute_capability")),
        ("SMs", dev.get("sm_count")),
        ("max SM clock (MHz)", dev.get("clock_sm_max_mhz")),
        ("target", dev.get("arch")),
        ("driver", dev.get("driver")),
        ("CUDA driver", dev.get("cuda_driver")),
        ("CUDA runtime", dev.get("cuda_runtime")),
        ("CuPy", dev.get("cupy")),
        ("NVRTC", dev.get("nvrtc")),
        ("commit", env.get("commit")),
        ("host", env.get("host")),
        ("Python", env.get("python")),
        ("tool version", doc.get("tool_version")),
        ("spec", f"{spec.get('display_name', '?')} ({spec.get('name', '?')})"),
        ("spec source", spec.get("source")),
    ]
    for key, value in (doc.get("settings") or {}).items():
        rows.append((f"setting {key}", value))
    cal = src.calibration
    if cal:
        cal_dev = (cal.get("device") or {}).get("name", "?")
        rows.append(("calibration", f"{cal_dev}, {cal.get('created', '?')}"))
    return rows


def _tables(doc: dict[str, Any]) -> str:
    """The tables and the verdict `show` prints, as HTML."""
    out: list[str] = []
    if table.is_app(doc):
        df = table.frame(doc["records"])
        out.append(table.html(df, table.present(table.APP_COLUMNS, df), table.app_title(doc)))
        notes = [n.strip() for n in table.app_notes(doc)]
        if notes:
            out.append('<ul class="notes">' + "".join(f"<li>{_h(n)}</li>" for n in notes))
            out.append("</ul>")
        return "\n".join(out) + "\n"
    columns = table.select(document.columns_of(doc))
    for heading, recs in document.tables(doc):
        df = table.frame(recs)
        out.append(table.html(df, table.present(columns, df), heading))
        said = verdict.lines(recs) + [n.strip() for n in table.notes(recs)]
        if said:
            out.append('<ul class="verdict">' + "".join(f"<li>{_h(x)}</li>" for x in said))
            out.append("</ul>")
    return "\n".join(out) + "\n"


def document_section(page: Page, index: int, src: Source) -> None:
    """A document's section: its roofline, its tables and verdict, where it was made."""
    doc = src.doc
    if table.is_app(doc):  # kernels that read the same told apart, in the plot and tables
        doc = {**doc, "records": kernel_names.relabel(doc["records"])}
    anchor = f"doc-{index}"
    parts = [f'<section id="{anchor}" class="document">', f"<h2>{_h(src.path)}</h2>"]
    if not doc.get("records"):
        parts.append("<p>The document holds no records.</p>")
    else:
        plot = roofline(doc, src.calibration, f"roofline-{index}")
        if plot is None:
            parts.append("<p>No record has a compute roof (no FLOPs counted): no roofline.</p>")
        else:
            page.plots.append(plot)
            parts.append(_controls(plot) + _plot_div(plot))
            parts.append(
                '<p class="key">Filled markers: each record at its ideal intensity (every byte '
                "moved once), or at DRAM as Nsight Compute measured it; triangles, squares and "
                "diamonds: L2, L1 and shared memory; hollow: the same speed at the "
                "by-instruction intensity (loads as issued). Solid roofs: the datasheet's; "
                "broken: measured. A red cross sits above its roof: a measurement error.</p>"
            )
            for why, who in plot.not_drawn:
                text = f"Not drawn ({why}): {', '.join(who)}"
                parts.append(f'<p class="not-drawn">{_h(text)}</p>')
        parts.append("<h3>Tables</h3>")
        parts.append(_tables(doc))
    parts.append("<h3>The run</h3>")
    parts.append(_dl(environment_rows(src)))
    parts.append("</section>")
    page.sections.append("\n".join(parts) + "\n")
    page.nav.append((anchor, src.path))


def _check_labels(keys: Sequence[Any]) -> list[str]:
    """What the distributions name each check by: the stage (and workload), with its shape and
    dtype only where the checks differ in them."""
    same = len({(k.shape_text, k.dtype) for k in keys}) <= 1
    return [
        " ".join([k.stage, *([k.workload] if k.workload else [])]) if same else str(k.label)
        for k in keys
    ]


def gate_section(page: Page, result: Any, current: Source, baseline: Source | None) -> None:
    """The gate's verdict per check, and each stage's samples for baseline and current."""
    from rooflinecli.present import gate

    state = {"pass": "passed", "fail": "FAILED", "inconclusive": "INCONCLUSIVE"}[result.outcome]
    parts = [f'<section id="gate" class="gate {result.outcome}">', f"<h2>Gate: {state}</h2>"]
    parts.append(f'<p class="summary">{_h(result.summary())}.</p>')
    who = f"Current: {current.path} ({gate.describe(current.doc)})"
    if baseline is not None:
        who += f"; baseline: {baseline.path} ({gate.describe(baseline.doc)})"
    parts.append(f"<p>{_h(who)}</p>")
    rows = [c.row() for c in result.checks]
    classes = [str(c.verdict).lower() for c in result.checks]
    parts.append(table.html_rows(rows, table.GATE_COLUMNS, row_classes=classes))
    rules = "; ".join(f"{name}: {text}" for name, text in gate.RULES.items())
    parts.append(f"<p>{_h(f'Tolerance {result.tolerance_pct:g}% of TFLOP/s. Rules: {rules}.')}</p>")
    if result.mismatches:
        parts.append(f"<p>{_h('Environments differ: ' + '; '.join(result.mismatches))}.</p>")
    cur = gate.index(current.doc, current.path)
    base = gate.index(baseline.doc, baseline.path) if baseline is not None else {}
    keys = [c.key for c in result.checks]
    pairs = [(n, base.get(k), cur.get(k)) for n, k in zip(_check_labels(keys), keys, strict=True)]
    if baseline is not None and pairs:
        plot = distributions(
            pairs,
            ("baseline", "current"),
            "gate-samples",
            "Every repeat of each check, baseline and current",
        )
        page.plots.append(plot)
        parts.append(_plot_div(plot))
    parts.append("</section>")
    page.sections.append("\n".join(parts) + "\n")
    page.nav.append(("gate", "gate"))


def compare_section(page: Page, a: Source, b: Source) -> None:
    """Two documents side by side (`roofline compare`), each stage's samples for both."""
    from rooflinecli.present import gate

    try:
        rows = gate.compare_rows(a.doc, b.doc, where=(a.path, b.path))
        ia, ib = gate.index(a.doc, a.path), gate.index(b.doc, b.path)
    except RooflineError as exc:
        page.sections.append(
            f'<section id="compare"><h2>Comparison</h2><p>{_h(exc.message)}</p></section>\n'
        )
        return
    parts = ['<section id="compare" class="compare">', "<h2>Comparison: B against A</h2>"]
    parts.append(f"<p>{_h(f'A: {a.path}; B: {b.path}')}</p>")
    parts.append(table.html_rows(rows, table.COMPARE_COLUMNS))
    parts.append("<p>B/A TFLOP/s above 1: B is faster. B/A time below 1: B is faster.</p>")
    keys = [*ia, *(k for k in ib if k not in ia)]
    pairs = [(n, ia.get(k), ib.get(k)) for n, k in zip(_check_labels(keys), keys, strict=True)]
    if pairs:
        plot = distributions(pairs, ("A", "B"), "compare-samples", "Every repeat, A and B")
        page.plots.append(plot)
        parts.append(_plot_div(plot))
    parts.append("</section>")
    page.sections.append("\n".join(parts) + "\n")
    page.nav.append(("compare", "comparison"))


# The switches: a roof set or a precision shows the traces of that set and precision and hides
# the rest; a series hidden from the legend stays hidden (its legend group is kept).
SWITCH_JS = """
(function () {
  function apply(id) {
    var gd = document.getElementById(id);
    var s = document.getElementById(id + "-roofs");
    var p = document.getElementById(id + "-precision");
    var set = s ? s.value : null, prec = p ? p.value : "";
    var hidden = {};
    gd.data.forEach(function (t) {
      if (t.visible === "legendonly" && t.legendgroup) { hidden[t.legendgroup] = true; }
    });
    var vis = gd.data.map(function (t) {
      var m = t.meta || {};
      var on = (!set || !m.set || m.set === set) &&
        (!prec || !m.dtypes || m.dtypes.length === 0 || m.dtypes.indexOf(prec) >= 0);
      if (!on) { return false; }
      return hidden[t.legendgroup] ? "legendonly" : true;
    });
    Plotly.restyle(gd, {visible: vis});
  }
  var selects = document.querySelectorAll("select[data-plot]");
  Array.prototype.forEach.call(selects, function (el) {
    el.value = el.options[0].value;
    el.addEventListener("change", function () { apply(el.getAttribute("data-plot")); });
  });
})();
"""

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto;
  max-width: 1400px; padding: 0 1.5rem 3rem; color: #222; }
h1 { font-size: 1.6rem; margin: 1.2rem 0 0.3rem; }
h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: .2rem;
  overflow-wrap: anywhere; }
h3 { font-size: 1.05rem; margin-top: 1.4rem; }
nav a { margin-right: 1rem; overflow-wrap: anywhere; }
.lead, .key, .not-drawn { color: #444; overflow-wrap: anywhere; }
.key { font-size: .85rem; }
.controls { margin: .6rem 0; }
.controls label { margin-right: 1.5rem; }
table { border-collapse: collapse; margin: .6rem 0 1rem; font-size: .85rem; }
.table-title { font-weight: 600; margin: 1rem 0 .2rem; overflow-wrap: anywhere; }
th, td { border: 1px solid #ddd; padding: .2rem .5rem; vertical-align: top; }
th { background: #f4f4f4; }
td.l, th.l { text-align: left; overflow-wrap: anywhere; }
td.r, th.r { text-align: right; white-space: nowrap; }
table.facts th { width: 14rem; }
ul.verdict li, ul.notes li { margin: .2rem 0; overflow-wrap: anywhere; }
.gate.pass h2 { color: #2e7d32; }
.gate.fail h2 { color: #c62828; }
.gate.inconclusive h2 { color: #b26a00; }
tr.fail td { background: #fdecea; }
tr.inconclusive td { background: #fff4e0; }
footer { margin-top: 3rem; color: #666; font-size: .8rem; }
"""


def render(
    sources: Sequence[Source],
    gate_result: Any = None,
    baseline: Source | None = None,
) -> str:
    """The page of `sources` (and, for a gate, its result against `baseline`) as HTML text.

    Two documents and no gate: a comparison section (B against A) too."""
    if not sources:
        raise RooflineError("nothing to report: give at least one results document")
    plotly_js, plotly_version = _plotly()
    page = Page()
    if gate_result is not None:
        gate_section(page, gate_result, sources[0], baseline)
    elif len(sources) == 2 and all(s.doc.get("device") is not None for s in sources):
        compare_section(page, sources[0], sources[1])
    shown = list(sources) + ([baseline] if baseline is not None else [])
    for i, src in enumerate(shown, start=1):
        document_section(page, i, src)
    title = "Roofline report: " + ", ".join(s.path for s in shown)
    nav = " ".join(f'<a href="#{a}">{_h(label)}</a>' for a, label in page.nav)
    scripts = "".join(p.script() for p in page.plots)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="roofline {_h(__version__)}, plotly.js of plotly '
        f'{_h(plotly_version)}">\n'
        f"<title>{_h(title)}</title>\n<style>{CSS}</style>\n"
        "<script>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>\n"
        f"<script>{plotly_js}</script>\n"
        "</head>\n<body>\n"
        f"<header><h1>Roofline report</h1>\n<nav>{nav}</nav></header>\n"
        + "".join(page.sections)
        + f"<footer>Made by roofline {_h(__version__)} from the documents above; the plots are "
        f"drawn by plotly.js (of plotly {_h(plotly_version)}), carried in this page.</footer>\n"
        f"<script>\n{scripts}{SWITCH_JS}</script>\n"
        "</body>\n</html>\n"
    )
