"""Documents the report tests draw: committed H200 runs, the same with hostile names, and pages
made from them (rooflinecli.present.report). Shared by tests/test_report.py and the browser
tests (tests/test_report_browser.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from rooflinecli import results

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "results" / "gemm-fp32-4096-interleaved.json.gz"
CALIBRATION = ROOT / "benchmarks" / "calibration" / "h200-2026-12-01.json"
PROFILE_APP = ROOT / "benchmarks" / "results" / "profile-app-torch.json.gz"

# Names from the issue "Every door a user opens works": markup, Rich markup, TeX, a spreadsheet
# formula, a Markdown pipe, an HTML attribute handler and a C++ template. Each must render as
# text, never as markup or script.
HOSTILE = (
    "<script>alert(1)</script>",
    "[/bold]",
    "$\\frac{a}{$",
    '=HYPERLINK("https://evil.example","x")',
    "a|b",
    "<img src=x onerror=alert(1)>",
    "void gemm<128, 256>(float*)",
    "<b>bold</b> & 'quoted' \"double\"",
)


def run_doc() -> dict[str, Any]:
    return results.load(RUN)


def calibration() -> dict[str, Any]:
    return json.loads(CALIBRATION.read_text())


def hostile_doc() -> dict[str, Any]:
    """The committed run with its first stages renamed to the hostile names (the reference keeps
    its name, so every ratio to it stays)."""
    doc = copy.deepcopy(run_doc())
    for rec, name in zip(doc["records"], HOSTILE, strict=False):
        rec["stage"] = name
    doc["environment"] = {**(doc.get("environment") or {}), "host": HOSTILE[0]}
    return doc


def write(tmp_path: Path, name: str, doc: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path
