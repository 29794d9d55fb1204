"""docs/report-example.html is what `make docs` writes now: the Makefile's `roofline report` line,
run again on the committed documents, gives the same bytes (the page is deterministic and its
plotly.js is the dev extra's pinned plotly)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from rooflinecli.cli import cli

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "report-example.html"


def _report_args() -> list[str]:
    """The arguments of the docs target's `roofline report` line, variables expanded."""
    make = (ROOT / "Makefile").read_text()
    values = dict(re.findall(r"^([A-Z_]+) :?= (.*)$", make, flags=re.M))
    line = next(ln for ln in make.splitlines() if "roofline report" in ln and ln.startswith("\t"))
    line = re.sub(r"\$\(([A-Z_]+)\)", lambda m: values.get(m.group(1), m.group(0)), line)
    args = shlex.split(line.split("roofline report", 1)[1])
    assert args[-2:] == ["-o", "docs/report-example.html"], args
    return args[:-2]


def test_the_example_page_is_current(runner, tmp_path, monkeypatch):
    plotly = pytest.importorskip("plotly", reason="the report needs plotly (the report extra)")
    monkeypatch.chdir(ROOT)  # the page names the documents as the Makefile gives them
    made = re.search(r"plotly\.js of plotly ([\w.]+)", PAGE.read_text(errors="replace"))
    assert made, "docs/report-example.html does not say which plotly made it"
    assert made.group(1) == plotly.__version__, (
        f"docs/report-example.html embeds plotly {made.group(1)}, this environment has "
        f"{plotly.__version__}: install the dev extra (its pinned plotly), or run `make docs`"
    )
    out = tmp_path / "example.html"
    r = runner.invoke(cli, ["report", *_report_args(), "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    assert out.read_bytes() == PAGE.read_bytes(), "docs/report-example.html is stale: make docs"
