"""`roofline report` and `gate --html` without a browser: the page is one self-contained file,
the same bytes for the same documents, every record a point of the plot, every roof set and
precision offered, names written as text, the gate's verdict and samples on it. What the page
does in a browser: tests/test_report_browser.py."""

from __future__ import annotations

import json
import re
import statistics
from html.parser import HTMLParser
from typing import Any

import pytest
import reportdocs

from rooflinecli import names, results
from rooflinecli.cli import cli
from rooflinecli.errors import RooflineError
from rooflinecli.present import gate, report

pytest.importorskip("plotly", reason="the report needs plotly (the report extra)")


def _figures(html: str) -> dict[str, tuple[list[dict[str, Any]], dict[str, Any]]]:
    """plot id -> (data, layout) of every Plotly.newPlot call on the page."""
    out = {}
    decoder = json.JSONDecoder()
    for m in re.finditer(r'Plotly\.newPlot\("([\w-]+)",', html):
        data, end = decoder.raw_decode(html, m.end())
        layout, _ = decoder.raw_decode(html, end + 1)
        out[m.group(1)] = (data, layout)
    return out


def _page(*docs: dict[str, Any], calibration: dict[str, Any] | None = None) -> str:
    return report.render(
        [report.Source(f"doc{i}.json", d, calibration) for i, d in enumerate(docs)]
    )


class _Text(HTMLParser):
    """The page as a browser parses it: its elements and the text of each."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.texts: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += attrs
        self._in_script = tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if not self._in_script:
            self.texts.append(data)


def test_the_same_documents_give_the_same_bytes(runner, tmp_path):
    args = ["report", str(reportdocs.RUN), "--calibration", str(reportdocs.CALIBRATION)]
    one, two = tmp_path / "a.html", tmp_path / "b.html"
    for out in (one, two):
        r = runner.invoke(cli, [*args, "-o", str(out)])
        assert r.exit_code == 0, r.stderr
        assert r.stdout.startswith(f"wrote {out} (")
    assert one.read_bytes() == two.read_bytes()
    text = one.read_text()
    # no time but the documents': the only dates on the page are the run's and calibration's
    run, cal = reportdocs.run_doc(), reportdocs.calibration()
    dates = set(re.findall(r"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d", text.split("</head>")[1]))
    assert dates <= {run["created"][:19], cal["created"][:19]}, dates


def test_the_page_needs_nothing_from_outside():
    html = _page(reportdocs.run_doc(), calibration=reportdocs.calibration())
    parsed = _Text()
    parsed.feed(html)
    # every script and style inline: no src, no stylesheet link, no import, no url() to fetch
    assert not [v for k, v in parsed.attrs if k == "src"]
    assert "link" not in parsed.tags and "iframe" not in parsed.tags
    assert "@import" not in html and "url(http" not in html
    assert parsed.tags.count("script") == 3  # Plotly's configuration, plotly.js, the plots
    # the only address on the page is the spec's datasheet, a link the reader may follow
    hrefs = [v for k, v in parsed.attrs if k == "href" and not (v or "").startswith("#")]
    assert hrefs == [reportdocs.run_doc()["spec"]["source"]]


def test_every_record_is_one_point_and_every_roof_set_is_offered():
    doc, cal = reportdocs.run_doc(), reportdocs.calibration()
    plot = report.roofline(doc, cal, "p")
    assert plot is not None
    assert [k for k, _ in plot.sets] == ["datasheet", "derived", "measured", "clock"]
    assert plot.points == len(doc["records"])
    for key, _ in plot.sets:
        mine = [t for t in plot.data if t["meta"]["set"] == key]
        records = [t for t in mine if t["meta"]["kind"] == "record"]
        assert sum(len(t["x"]) for t in records) == len(doc["records"])
        # the first set shows; every other waits for its switch
        assert all(t["visible"] is (key == "datasheet") for t in mine)
        assert [t for t in mine if t["meta"]["kind"] == "roof"], key
    # points as SVG, each an element of the page: scatter, never scattergl
    assert {t["type"] for t in plot.data} == {"scatter"}
    # the measured roofs are the calibration's: FP32 FMA and HBM under the measured set
    roofs_measured = [
        t["name"]
        for t in plot.data
        if t["meta"] == {"set": "measured", "kind": "roof", "dtypes": []}
    ]
    hbm = max(cal["measurements"]["hbm_read_gbs"], cal["measurements"]["hbm_copy_gbs"])
    assert any(f"{hbm:,.0f} GB/s" in n for n in roofs_measured), roofs_measured


def test_every_figure_is_valid_for_plotly():
    """plotly.py's own schema checks every attribute the page hands plotly.js."""
    go = pytest.importorskip("plotly.graph_objects")
    run = reportdocs.run_doc()
    later = results.load(reportdocs.ROOT / "benchmarks/results/gemm-fp32-4096-ladder.json.gz")
    result = gate.evaluate(later, run, where=("later", "run"))
    html = report.render(
        [report.Source("later", later), report.Source("app", results.load(reportdocs.PROFILE_APP))],
        result,
        report.Source("run", run, reportdocs.calibration()),
    )
    figures = _figures(html)
    assert {"gate-samples", "roofline-1", "roofline-2", "roofline-3"} <= set(figures)
    for data, layout in figures.values():
        go.Figure(data=data, layout=layout)  # raises on an unknown attribute or a bad value


def test_hover_says_what_each_record_is():
    doc = reportdocs.run_doc()
    plot = report.roofline(doc, None, "p")
    assert plot is not None
    texts = [
        h
        for t in plot.data
        if t["meta"]["kind"] == "record" and t["visible"]
        for h in t["hovertext"]
    ]
    for rec, text in zip(doc["records"], texts, strict=True):
        lines = text.split("<br>")
        assert lines[0] == f"<b>{names.plotly(rec['stage'])}</b>"
        assert report.tflops_text(rec["tflops"]) in lines
        assert (
            f"shape {rec['m']}x{rec['n']}x{rec['k']}, fp32 (FFMA)" in lines[1]
            or rec["kind"] == "reference"
        )
        assert f"{rec['pct_of_roof']:.1f}% of roof" in lines
        assert f"SM clock {rec['sm_clock_mhz']:,.0f} MHz" in lines
        assert "verified: yes" in lines
        assert any(line.startswith(f"time {rec['time_ms']:,.4f} ms") for line in lines)


def test_hostile_names_are_text_everywhere_on_the_page():
    path = reportdocs.HOSTILE[5]  # a file may be named so too: the title and headings hold it
    html = report.render([report.Source(path, reportdocs.hostile_doc())])
    head, body = html.split("</head>", 1)
    plots = body.rsplit("<script>", 1)[1]  # the plots' data
    parsed = _Text()
    parsed.feed(body)
    assert parsed.tags.count("script") == 1 and "img" not in parsed.tags and "b" not in parsed.tags
    text = "".join(parsed.texts)
    for name in reportdocs.HOSTILE:
        assert name in text, name  # in the tables, as written
        # the plots' JSON holds it as Plotly is to draw it as text, and never as written
        assert report._js(names.plotly(name))[1:-1] in plots
        if set(name) & set("<>&\"'$"):
            assert name not in plots
    assert "<" not in plots.split("Plotly.newPlot", 1)[1].rsplit("</script>", 1)[0]
    assert f"<title>Roofline report: {names.html(path)}</title>" in head


def test_a_profile_app_document_and_a_model_make_pages(runner, tmp_path):
    out = tmp_path / "model.json"
    r = runner.invoke(cli, ["model", "gemm", "--m", "512", "--spec", "h200-sxm", "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    model = results.load(out)
    app = results.load(reportdocs.PROFILE_APP)
    html = _page(app, model)
    figures = _figures(html)
    app_data, _ = figures["roofline-1"]
    kernels = [t for t in app_data if t["meta"]["kind"] == "record"]
    drawn = sum(len(t["x"]) for t in kernels)
    unrooted = [r for r in app["records"] if not r.get("peak_tflops")]
    assert drawn == len(app["records"]) - len(unrooted) > 0
    for rec in unrooted:  # listed under the plot with the reason
        assert names.html(str(rec["label"])) in html
    model_data, _ = figures["roofline-2"]
    ideal = [t for t in model_data if t["meta"]["kind"] == "ideal"]
    assert ideal and all(t["meta"]["set"] == "datasheet" for t in model_data)
    assert "none: an analytic model" in html


def test_the_precision_switch_lists_each_dtype_of_the_records():
    app = results.load(reportdocs.PROFILE_APP)
    plot = report.roofline(app, None, "p")
    assert plot is not None
    dtypes = sorted({str(r["dtype"]) for r in app["records"] if r.get("peak_tflops")})
    assert plot.precisions == (dtypes if len(dtypes) > 1 else [])
    single = report.roofline(reportdocs.run_doc(), None, "q")
    assert single is not None and single.precisions == []


def test_the_gate_section_shows_each_check_and_its_samples():
    run = reportdocs.run_doc()
    later = results.load(reportdocs.ROOT / "benchmarks/results/gemm-fp32-4096-ladder.json.gz")
    result = gate.evaluate(later, run, where=("later.json", "run.json"))
    html = report.render(
        [report.Source("later.json", later)], result, report.Source("run.json", run)
    )
    assert "<h2>Gate: FAILED</h2>" in html
    assert names.html(result.summary()) in html
    for c in result.checks:
        assert f'<tr class="{c.verdict.lower()}">' in html
    data, layout = _figures(html)["gate-samples"]
    assert [t["name"] for t in data] == ["baseline", "current"]
    assert layout["boxmode"] == "group"
    base, cur = gate.index(run, "run"), gate.index(later, "later")
    for trace, side in zip(data, (base, cur), strict=True):
        want = sum(len(r["samples_ms"]) for r in side.values() if r.get("samples_ms"))
        assert len(trace["y"]) == len(trace["x"]) == want
    # each repeat as the TFLOP/s of its time, in % against the baseline's median
    rec, mine = base[result.checks[0].key], later["records"][0]
    ref = statistics.median(rec["flops"] / (t * 1e9) for t in rec["samples_ms"])
    first = mine["flops"] / (mine["samples_ms"][0] * 1e9)
    assert data[1]["y"][0] == pytest.approx(100 * (first / ref - 1))
    assert data[1]["x"][0] == mine["stage"]  # one shape and dtype: named by the stage alone
    # a stage new in the current run stands against its own median
    new = [c.key for c in result.checks if c.verdict == "FAIL"][0]
    ys = [y for x, y in zip(data[1]["x"], data[1]["y"], strict=True) if x == new.stage]
    assert ys and min(ys) <= 0 <= max(ys)


def test_two_documents_are_compared(tmp_path):
    run = reportdocs.run_doc()
    later = results.load(reportdocs.ROOT / "benchmarks/results/gemm-fp32-4096-ladder.json.gz")
    html = _page(run, later)
    assert "<h2>Comparison: B against A</h2>" in html
    data, _ = _figures(html)["compare-samples"]
    assert [t["name"] for t in data] == ["A", "B"]


def test_gate_html_writes_the_page_beside_junit(runner, tmp_path):
    page, junit = tmp_path / "gate.html", tmp_path / "junit.xml"
    later = str(reportdocs.ROOT / "benchmarks/results/gemm-fp32-4096-ladder.json.gz")
    args = ["gate", later, "--baseline", str(reportdocs.RUN)]
    r = runner.invoke(cli, [*args, "--junit", str(junit), "--html", str(page)])
    assert r.exit_code == 1  # three stages are new: missing from the baseline
    assert junit.is_file()
    html = page.read_text()
    assert "<h2>Gate: FAILED</h2>" in html and "missing from the baseline" in html
    assert {"gate-samples", "roofline-1", "roofline-2"} <= set(_figures(html))


@pytest.mark.parametrize(
    "args, message",
    [
        (["-o", "x.html"], "give at least one results document"),
        ([str(reportdocs.RUN), "-o", "x.png"], "end x.png in .html"),
        (
            [
                str(reportdocs.RUN),
                str(reportdocs.RUN),
                "--baseline",
                str(reportdocs.RUN),
                "-o",
                "x.html",
            ],
            "--baseline gates one run",
        ),
    ],
)
def test_usage_errors_are_one_line(runner, tmp_path, args, message):
    r = runner.invoke(cli, ["report", *args])
    assert r.exit_code == 2
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_without_plotly_the_page_says_what_to_install(monkeypatch, runner, tmp_path):
    import builtins

    real = builtins.__import__

    def no_plotly(name, *args, **kwargs):  # type: ignore[no-untyped-def]
        if name.split(".")[0] == "plotly":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_plotly)
    with pytest.raises(RooflineError, match=r"pip install 'roofline\[report\]'"):
        _page(reportdocs.run_doc())
    # gate --html says so before it writes anything (JUnit neither)
    junit = tmp_path / "junit.xml"
    args = ["gate", str(reportdocs.RUN), "--baseline", str(reportdocs.RUN)]
    r = runner.invoke(cli, [*args, "--junit", str(junit), "--html", str(tmp_path / "g.html")])
    assert r.exit_code == 2 and "pip install 'roofline[report]'" in r.stderr
    assert not junit.exists() and not (tmp_path / "g.html").exists()


def test_html_tables_write_cells_as_text():
    from rooflinecli.present import table

    text = table.html_table(["<h>"], [True], [["<script>x</script>"]], title="a & b")
    assert "<script>" not in text and "&lt;script&gt;x&lt;/script&gt;" in text
    assert '<p class="table-title">a &amp; b</p>' in text
