"""The roofline as an image: PNG, SVG, or an SVG inside a minimal HTML page (matplotlib).

matplotlib is an optional extra (`pip install 'roofline[plot]'`), imported only when a plot is
drawn. Roofs and points come from rooflinecli/chart.py, so the image and the terminal chart agree.
"""

from __future__ import annotations

import html
import io
import math
from pathlib import Path
from typing import Any

from rooflinecli import files
from rooflinecli.errors import RooflineError
from rooflinecli.present import terminal_chart as chart

KINDS = ("png", "svg", "html")


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


def _spread(values: list[float], lo: float, hi: float, gap: float = 0.035) -> list[float]:
    """Label heights near `values` (log axis from lo to hi) at least `gap` of the axis apart."""
    if not values:
        return []
    span = math.log10(hi) - math.log10(lo)
    frac = [(math.log10(v) - math.log10(lo)) / span for v in values]
    order = sorted(range(len(frac)), key=lambda i: frac[i])
    placed = [0.0] * len(frac)
    prev = -1.0
    for i in order:  # upwards: no label closer than `gap` to the one below
        placed[i] = max(frac[i], prev + gap)
        prev = placed[i]
    ceiling = 0.97
    for i in reversed(order):  # downwards: nothing pushed off the top
        placed[i] = min(placed[i], ceiling)
        ceiling = placed[i] - gap
    return [10.0 ** (math.log10(lo) + f * span) for f in placed]


def figure(doc: dict[str, Any]) -> Any:
    """A matplotlib Figure of the document's roofline (no pyplot: no global state)."""
    _matplotlib()
    from matplotlib.figure import Figure

    roof_of = chart.roofs(doc)
    pts, _unplaced = chart.points(doc)
    good = [p for p in pts if not p.above_roof]
    bad = [p for p in pts if p.above_roof]
    xs = [p.ai for p in pts] + [r.ridge for r in roof_of.values()]
    x0 = 10.0 ** math.floor(math.log10(min(xs)) - 0.5)
    x1 = 10.0 ** math.ceil(math.log10(max(xs)) + 0.5)

    fig = Figure(figsize=(10, 6.5), dpi=110)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    bw = next(iter(roof_of.values())).bandwidth_gbs
    for roof in roof_of.values():
        ax.plot([x0, roof.ridge], [roof.memory(x0), roof.peak_tflops], color="tab:blue", lw=2)
        ax.plot([roof.ridge, x1], [roof.peak_tflops] * 2, color="tab:red", lw=2)
        ax.annotate(
            f"{roof.peak_key} peak {roof.peak_tflops:g} TFLOP/s",
            (roof.ridge, roof.peak_tflops),
            xytext=(8, 5),
            textcoords="offset points",
            ha="left",
            color="tab:red",
        )
        ax.plot([roof.ridge], [roof.peak_tflops], "o", color="black", ms=5)
        ax.axvline(roof.ridge, color="grey", ls=":", lw=1)
        ax.annotate(
            f"ridge {chart.fmt_value(roof.ridge)} FLOP/B",
            (roof.ridge, roof.peak_tflops),
            xytext=(6, -14),
            textcoords="offset points",
            color="black",
        )
    x_label = x0 * 2
    ax.annotate(
        f"memory {bw:,.0f} GB/s",
        (x_label, x_label * bw / 1000.0),
        xytext=(8, -4),
        textcoords="offset points",
        color="tab:blue",
    )
    ys = [p.tflops for p in pts] + [r.peak_tflops for r in roof_of.values()]
    y0 = min(min(ys), min(r.memory(x0) for r in roof_of.values())) / 2
    y1 = max(ys) * 3
    label_ys = [0.0] * len(good)
    groups: list[list[int]] = []  # chains of points less than a label's width apart in x
    for i in sorted(range(len(good)), key=lambda j: good[j].ai):
        if groups and math.log10(good[i].ai / good[groups[-1][-1]].ai) < 0.7:
            groups[-1].append(i)
        else:
            groups.append([i])
    for members in groups:
        for i, y in zip(members, _spread([good[i].tflops for i in members], y0, y1), strict=True):
            label_ys[i] = y
    for i, (p, ly) in enumerate(zip(good, label_ys, strict=True)):
        color = f"C{i % 10}"
        ax.plot([p.ai], [p.tflops], "s" if p.model else "o", ms=6, color=color)
        ax.annotate(
            f"{p.label} ({chart.fmt_value(p.tflops)})",
            (p.ai, p.tflops),
            xytext=(p.ai * 1.25, ly),
            textcoords="data",
            fontsize=8,
            va="center",
            arrowprops={"arrowstyle": "-", "color": color, "lw": 0.6},
        )
    for p in bad:
        ax.plot([p.ai], [p.tflops], "x", ms=8, color="red")
        ax.annotate(
            f"{p.label} ({chart.fmt_value(p.tflops)}): above its roof, a measurement error",
            (p.ai, p.tflops),
            xytext=(-6, 6),
            textcoords="offset points",
            ha="right",
            fontsize=8,
            color="red",
        )
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("performance (TFLOP/s)")
    ax.grid(True, which="major", ls="-", lw=0.4, alpha=0.5)
    ax.set_title(chart.title(doc), fontsize=10)
    fig.tight_layout()
    return fig


def render(doc: dict[str, Any], kind: str) -> bytes:
    """The image as bytes: png, svg, or html (the SVG inside a minimal page)."""
    fig = figure(doc)
    buf = io.BytesIO()
    if kind == "png":
        fig.savefig(buf, format="png", metadata={"Software": None})
        return buf.getvalue()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    svg = buf.getvalue().decode("utf-8")
    if kind == "svg":
        return svg.encode("utf-8")
    body = svg[svg.index("<svg") :]  # drop the XML prolog and doctype: not allowed inline
    name = html.escape(chart.title(doc))
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{name}</title>\n</head>\n<body>\n{body}</body>\n</html>\n"
    )
    return page.encode("utf-8")


def save(doc: dict[str, Any], path: str | Path) -> str:
    """Draw the document's roofline into `path` (format from its suffix); returns the format."""
    kind = kind_of(path)
    if not doc.get("records"):
        raise RooflineError("nothing to plot: the document has no records")
    data = render(doc, kind)
    files.write_output(path, data, document=False)
    return kind
