"""Every committed document (benchmarks/results/ and benchmarks/calibration/) renders as the
fixture says: `roofline show` in every --format and under every roof set, `compare D D` in every
--format, and `report D`. tests/fixtures/render.json holds, per document, the sha256 of each
rendering with its exit code; `python benchmarks/render_fixture.py` remakes it from the code as
it is, and a change that moves a rendering on purpose remakes it and says why in its message."""

from __future__ import annotations

import contextlib
import hashlib
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooflinecli.cli import cli
from rooflinecli.present import FORMATS

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).parent / "fixtures" / "render.json"
# the calibration the roof sets other than the datasheet's are placed against (named, so that no
# cached calibration of the machine that renders decides them)
CALIBRATION = "benchmarks/calibration/h200-2026-12-01.json"
# the documents each calibration places (a SIMT ladder, and Tensor Core stages of both instructions)
PLACED = (
    "benchmarks/results/gemm-fp32-4096-interleaved.json.gz",
    "benchmarks/results/gemm-bf16-8192-interleaved.json.gz",
)
ENV = {"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}


def documents() -> list[str]:
    """Every committed document, as a path relative to the repository's top level."""
    found = [*(ROOT / "benchmarks" / "results").glob("*.json.gz")]
    found += (ROOT / "benchmarks" / "calibration").glob("*.json")
    return sorted(str(p.relative_to(ROOT)) for p in found)


def cases(doc: str) -> dict[str, list[str]]:
    """The command lines a document is rendered by, by label (the command line, the document
    named D). A calibration is rendered through the documents placed under it."""
    if doc.startswith("benchmarks/calibration/"):
        lines: list[list[str]] = [
            ["show", placed, "--format", "json", "--roofs", roof_set, "--calibration", doc]
            for placed in PLACED
            for roof_set in ("derived", "measured", "clock")
        ]
        lines.append(["report", *PLACED, "--calibration", doc, "-o", "PAGE"])
    else:
        lines = [["show", doc, "--format", fmt] for fmt in FORMATS]
        lines += [
            ["show", doc, "--format", "json", "--roofs", roof_set, "--calibration", CALIBRATION]
            for roof_set in ("derived", "measured", "clock")
        ]
        lines += [["compare", doc, doc, "--format", fmt] for fmt in FORMATS]
        lines.append(["report", doc, "-o", "PAGE"])
    return {" ".join("D" if a == doc else a for a in line): line for line in lines}


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


@contextlib.contextmanager
def _at_root() -> Iterator[Path]:
    """The repository's top level as the working folder (documents are named as given), and an
    empty cache (no calibration cached on this machine takes part)."""
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(ROOT):
        yield Path(tmp)


def render(doc: str) -> dict[str, str]:
    """Each case's exit code and the sha256 of what it wrote (the page, for `report`)."""
    out: dict[str, str] = {}
    with _at_root() as tmp:
        runner = CliRunner(env={**ENV, "ROOFLINE_CACHE_DIR": str(tmp / "cache")})
        for label, line in cases(doc).items():
            page = tmp / "page.html"
            page.unlink(missing_ok=True)
            args = [str(page) if a == "PAGE" else a for a in line]
            res = runner.invoke(cli, args)
            if res.exception and not isinstance(res.exception, SystemExit):
                raise res.exception
            data = res.stdout_bytes + b"\0" + res.stderr_bytes
            if line[0] == "report" and page.exists():
                data = page.read_bytes()
            out[label] = f"{res.exit_code} {_digest(data)}"
    return out


def plotly_version() -> str | None:
    try:
        import plotly
    except ImportError:
        return None
    return str(plotly.__version__)


@pytest.mark.parametrize("doc", documents())
def test_committed_document_renders_as_the_fixture_says(doc: str) -> None:
    fixture = json.loads(FIXTURE.read_text())
    want = fixture["documents"].get(doc)
    assert want is not None, f"{doc} is not in {FIXTURE.name}: python benchmarks/render_fixture.py"
    now = render(doc)
    if plotly_version() != fixture["plotly"]:  # the page embeds plotly.js (the dev extra's pin)
        now = {k: v for k, v in now.items() if not k.startswith("report ")}
        want = {k: v for k, v in want.items() if not k.startswith("report ")}
    changed = sorted(k for k in want if now.get(k) != want[k])
    assert set(now) == set(want)
    assert not changed, f"{doc} renders differently in: {'; '.join(changed)}"


def test_the_fixture_holds_every_document_and_no_other() -> None:
    fixture = json.loads(FIXTURE.read_text())
    assert sorted(fixture["documents"]) == documents()
    assert len(documents()) > 100
