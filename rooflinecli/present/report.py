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

The figures are rooflinecli.present.report_figures'; this module assembles the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rooflinecli import __version__
from rooflinecli.core import kernel_names
from rooflinecli.errors import RooflineError
from rooflinecli.present import document, table, verdict
from rooflinecli.present.report_figures import (
    ABOVE_ROOF_COLOR,
    CONFIG,
    DIST_HEIGHT,
    PLOT_HEIGHT,
    SET_LABELS,
    SIDE_COLORS,
    SYMBOL,
    Plot,
    RoofSet,
    _h,
    _js,
    _plotly,
    distributions,
    hover,
    offered_sets,
    require,
    roofline,
    sample_tflops,
    tflops_text,
)

__all__ = [  # the figures, re-exported from their module
    "ABOVE_ROOF_COLOR",
    "CONFIG",
    "DIST_HEIGHT",
    "PLOT_HEIGHT",
    "Plot",
    "RoofSet",
    "SET_LABELS",
    "SIDE_COLORS",
    "SYMBOL",
    "_js",
    "distributions",
    "hover",
    "offered_sets",
    "require",
    "roofline",
    "sample_tflops",
    "tflops_text",
]


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
