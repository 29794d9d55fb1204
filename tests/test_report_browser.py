"""The report page in a real browser: Chromium from the distribution (/usr/bin/chromium), headless,
driven by Playwright for Python pointed at it (never `playwright install`). One browser for the
module, a fresh page per test, every request that would leave the file refused and counted.

- every record is one point (an SVG path) of the plot;
- the real mouse on a point's pixel, computed from the data and the axes, brings up a tooltip
  that names that record's stage and its TFLOP/s;
- a screenshot of the plot area: enough of it is drawn, the roof lines' colour is there, and
  with every trace hidden the same area is nearly blank (the check can fail);
- the roof-set switch changes the roofs drawn, a legend click hides a series;
- hostile names: no dialog opens, no element is made of them, each appears as written.

Without a browser (no Chromium, or no playwright) the tests skip and say so; under CI=true they
fail instead: CI installs both (.ci/run, the dev extra).
"""

from __future__ import annotations

import io
import math
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import reportdocs

from rooflinecli.present import image, report, terminal_chart

CHROMIUM = "/usr/bin/chromium"
# the flags that keep a headless Chromium off the network of a closed machine
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1400, "height": 1000}
# a screenshot of the plot area with every roof and point: at least this share of its pixels
# differs from the white background (about 6% here); with all traces hidden, under it
DRAWN_SHARE = 0.02
MARKER_PX = 12  # a record's marker is 10 px across (rooflinecli.present.report)


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install playwright: the dev extra)"
    if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    why = _missing()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the browser tests must run under CI: {why}")
        pytest.skip(f"no browser for the report's browser tests: {why}")
    from playwright.sync_api import sync_playwright

    exe = CHROMIUM if Path(CHROMIUM).exists() else str(shutil.which("chromium"))
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, headless=True, args=FLAGS)
        yield b
        b.close()


class Opened:
    """A page of the report loaded offline, with what it tried and what it said."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.page = browser.new_page(viewport=VIEWPORT)
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.outside: list[str] = []

        def dialog(d: Any) -> None:
            self.dialogs.append(d.message)
            d.dismiss()

        def route(r: Any) -> None:
            url = r.request.url
            if url.startswith(("file:", "data:", "blob:")):
                r.continue_()
            else:
                self.outside.append(url)
                r.abort()

        self.page.on("dialog", dialog)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.route("**/*", route)
        self.page.goto(path.as_uri())
        self.page.wait_for_selector("#roofline-1 .main-svg")

    def traces(self, plot: str = "roofline-1") -> list[dict[str, Any]]:
        """Each scatter trace drawn: its meta, name and the centres of its points on the page."""
        return list(
            self.page.evaluate(
                """id => Array.from(document.querySelectorAll('#' + id + ' g.trace.scatter'))
                .map(g => {
                  const t = g.__data__[0].trace;
                  const pts = Array.from(g.querySelectorAll('path.point')).map(p => {
                    const b = p.getBoundingClientRect();
                    return [b.x + b.width / 2, b.y + b.height / 2];
                  });
                  return {meta: t.meta, name: t.name, points: pts};
                })""",
                plot,
            )
        )

    def plot_area(self, plot: str = "roofline-1") -> dict[str, float]:
        box = self.page.locator(f"#{plot} .nsewdrag").first.bounding_box()
        assert box is not None
        return dict(box)

    def to_pixel(self, ai: float, tflops: float, plot: str = "roofline-1") -> tuple[float, float]:
        """Where a point of the data lies on the page: the axes' ranges (log10) over the plot
        area's box."""
        area = self.plot_area(plot)
        xr, yr = self.page.evaluate(
            "id => { const l = document.getElementById(id).layout;"
            " return [l.xaxis.range, l.yaxis.range]; }",
            plot,
        )
        fx = (math.log10(ai) - xr[0]) / (xr[1] - xr[0])
        fy = (math.log10(tflops) - yr[0]) / (yr[1] - yr[0])
        return area["x"] + fx * area["width"], area["y"] + (1 - fy) * area["height"]

    def hover(self, x: float, y: float, plot: str = "roofline-1") -> list[str]:
        """Move the real mouse there (from outside the plot, so that no earlier tooltip is
        left); the tooltip's lines as the page shows them."""
        label = self.page.locator(f"#{plot} .hoverlayer .hovertext")
        self.page.mouse.move(2, 2)
        label.first.wait_for(state="detached", timeout=5000)
        self.page.mouse.move(x, y)
        label.first.wait_for(state="visible", timeout=5000)
        return list(label.first.locator("tspan.line").all_text_contents())

    def wait_drawn(self, test: str, plot: str = "roofline-1") -> None:
        """Until every trace drawn passes `test` (JavaScript of its `trace`): a switch or a
        legend click redraws the plot after the event."""
        self.page.wait_for_function(
            f"""() => Array.from(document.querySelectorAll('#{plot} g.trace.scatter'))
                .every(g => {{ const trace = g.__data__[0].trace; return {test}; }})""",
            timeout=5000,
        )

    def pixels(self, plot: str = "roofline-1") -> Any:
        """A screenshot of the plot area, as an array of RGB pixels (rows x columns x 3)."""
        from PIL import Image

        png = self.page.screenshot(clip=self.plot_area(plot))
        return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The pages the tests open: the committed run with its calibration, and with hostile names."""
    folder = tmp_path_factory.mktemp("report")
    out = {}
    for name, doc, cal in (
        ("run", reportdocs.run_doc(), reportdocs.calibration()),
        ("hostile", reportdocs.hostile_doc(), None),
    ):
        path = folder / f"{name}.html"
        path.write_text(report.render([report.Source(f"{name}.json", doc, cal)]))
        out[name] = path
    return out


@pytest.fixture(scope="module")
def _run_page(browser: Any, pages: dict[str, Path]) -> Iterator[Opened]:
    """The run's page, loaded once for the module (plotly.js takes a few seconds to load)."""
    opened = Opened(browser, pages["run"])
    opened.first = opened.page.evaluate(  # type: ignore[attr-defined]
        "() => document.getElementById('roofline-1').data.map(t => t.visible)"
    )
    yield opened
    opened.page.close()


@pytest.fixture
def run_page(_run_page: Opened) -> Iterator[Opened]:
    """The run's page as it was loaded: each test starts from the first roof set, every trace
    of it shown, whatever the test before switched or hid."""
    page = _run_page.page
    page.select_option("#roofline-1-roofs", "datasheet")
    page.evaluate(
        "v => Plotly.restyle(document.getElementById('roofline-1'), {visible: v})",
        _run_page.first,  # type: ignore[attr-defined]
    )
    _run_page.wait_drawn("trace.meta.set === 'datasheet'")
    yield _run_page
    assert not _run_page.errors, _run_page.errors
    assert not _run_page.outside, f"the page asked the network for {_run_page.outside}"


def test_every_record_is_one_point(run_page):
    doc = reportdocs.run_doc()
    records = [t for t in run_page.traces() if t["meta"]["kind"] == "record"]
    assert sum(len(t["points"]) for t in records) == len(doc["records"])
    assert [t["name"] for t in records] == [r["stage"] for r in doc["records"]]


def test_the_tooltip_at_a_points_pixel_names_its_stage_and_speed(run_page):
    doc = reportdocs.run_doc()
    traces = [t for t in run_page.traces() if t["meta"]["kind"] != "roof"]
    drawn = [(t["name"], xy) for t in traces for xy in t["points"]]
    hovered = 0
    for rec in doc["records"]:
        speed = terminal_chart.speed(rec)
        x, y = run_page.to_pixel(rec["ai_ideal"], speed)
        # the point is drawn where its data says (within a pixel of the axes' arithmetic)
        px, py = next(xy for name, xy in drawn if name == rec["stage"])
        assert abs(px - x) < 1.5 and abs(py - y) < 1.5, (rec["stage"], (px, py), (x, y))
        # where markers overlap (multistage and double_buffer are 3 px apart) Plotly shows one
        # of them: only points clear of every other marker are asked
        if any(math.dist((x, y), xy) < MARKER_PX for name, xy in drawn if name != rec["stage"]):
            continue
        lines = run_page.hover(x, y)
        assert lines[0] == rec["stage"], lines
        assert report.tflops_text(speed) in lines, lines
        hovered += 1
    assert hovered >= len(doc["records"]) // 2


def _drawn_share(pixels: Any) -> float:
    """The share of pixels that are neither white nor the light grey of the grid: what an empty
    plot area is made of."""
    light = (pixels.min(axis=-1) >= 0xE0) & (np.ptp(pixels, axis=-1) <= 8)
    return float(1.0 - light.mean())


def _near(pixels: Any, color: str, tol: int = 12) -> int:
    want = np.array([int(color[i : i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(pixels.astype(int) - want) <= tol).all(axis=-1).sum())


def test_a_screenshot_of_the_plot_shows_its_roofs_and_points(run_page):
    pixels = run_page.pixels()
    assert _drawn_share(pixels) > DRAWN_SHARE, _drawn_share(pixels)
    assert _near(pixels, image.MEMORY_COLOR["DRAM"]) > 100  # the DRAM roof's blue
    assert _near(pixels, image.MEMORY_COLOR["L2"]) > 100  # the calibration's L2 roof
    # the same area with every trace hidden: the check tells a drawn plot from an empty one
    run_page.page.evaluate(
        "() => Plotly.restyle(document.getElementById('roofline-1'), {visible: false})"
    )
    run_page.wait_drawn("false")
    blank = run_page.pixels()
    assert _drawn_share(blank) < DRAWN_SHARE, _drawn_share(blank)
    assert _near(blank, image.MEMORY_COLOR["DRAM"]) == 0


def test_switching_roofs_and_hiding_a_series(run_page):
    def roofs() -> list[str]:
        return [t["name"] for t in run_page.traces() if t["meta"]["kind"] == "roof"]

    first = roofs()
    assert any("(datasheet)" in n for n in first)
    run_page.page.select_option("#roofline-1-roofs", "measured")
    run_page.wait_drawn("trace.meta.set === 'measured'")
    measured = roofs()
    assert measured != first and all("datasheet" not in n for n in measured)
    assert all(t["meta"]["set"] == "measured" for t in run_page.traces())
    # a click on a legend entry hides its series (and its by-instruction point), not the rest
    before = len(run_page.traces())
    entry = run_page.page.locator("#roofline-1 .legend .traces").filter(has_text="naive_xcol")
    entry.first.click()
    run_page.wait_drawn("trace.name !== 'naive_xcol'")
    assert "naive_xrow" in [t["name"] for t in run_page.traces()]
    assert len(run_page.traces()) == before - 3  # its point, its hollow one and their line
    # it stays hidden across a switch of roof set
    run_page.page.select_option("#roofline-1-roofs", "datasheet")
    run_page.wait_drawn("trace.meta.set === 'datasheet'")
    names = [t["name"] for t in run_page.traces()]
    assert "naive_xcol" not in names and "naive_xrow" in names


def test_hostile_names_stay_text(browser, pages):
    opened = Opened(browser, pages["hostile"])
    page = opened.page
    try:
        scripts = page.evaluate("() => document.scripts.length")
        assert scripts == 3  # Plotly's configuration, plotly.js, the plots: none from a name
        assert page.evaluate("() => document.images.length") == 0
        cells = set(page.locator("table.records td").all_text_contents())
        legend = set(page.locator("#roofline-1 .legendtext").all_text_contents())
        records = [t for t in opened.traces() if t["meta"]["kind"] == "record"]
        by_name = {t["name"]: t["points"][0] for t in records}
        for name in reportdocs.HOSTILE:
            assert name in cells, name
            assert name in legend, (name, legend)
            x, y = by_name[names_plotly(name)]
            assert opened.hover(x, y)[0] == name
        assert not opened.dialogs, opened.dialogs
        assert not opened.errors, opened.errors
    finally:
        page.close()


def names_plotly(name: str) -> str:
    """A trace's name as the page's data holds it (rooflinecli.names.plotly)."""
    from rooflinecli import names

    return names.plotly(name)
