"""One overwrite rule for every file the tool writes: an existing file is replaced only with
--force (one shared option), and is left as it was without it, before any work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rooflinecli.cli import cli

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
DOC = str(RESULTS / "gemm-fp32-4096-ladder.json.gz")
ENV = {"COLUMNS": "200", "NO_COLOR": "1"}


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), env=ENV)


# each writer: its command line for a target file, and what it needs
WRITERS = {
    "plot -o": (["plot", DOC, "-o"], "matplotlib"),
    "report -o": (["report", DOC, "-o"], "plotly"),
    "gate --junit": (["gate", DOC, "--baseline", DOC, "--junit"], None),
    "gate --markdown": (["gate", DOC, "--baseline", DOC, "--markdown"], None),
    "gate --html": (["gate", DOC, "--baseline", DOC, "--html"], "plotly"),
    "gate --benchmark-json": (["gate", DOC, "--baseline", DOC, "--benchmark-json"], None),
    "merge -o": (["merge", DOC, "-o"], None),
    "baseline save": (["baseline", "save", DOC], None),
    "model -o": (["model", "gemm", "--m", "64", "-o"], None),
}
SUFFIX = {"plot -o": ".svg", "report -o": ".html", "gate --html": ".html"}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_an_existing_file_is_replaced_only_with_force(writer: str, tmp_path: Path) -> None:
    args, needs = WRITERS[writer]
    if needs:
        pytest.importorskip(needs)
    target = tmp_path / f"out{SUFFIX.get(writer, '.txt')}"
    target.write_text("kept")
    r = invoke(*args, str(target))
    assert r.exit_code == 2, (r.stdout, r.stderr)
    assert r.stderr == f"error: {target} exists: pass --force to replace it\n"
    assert target.read_text() == "kept"
    r = invoke(*args, str(target), "--force")
    assert r.exit_code == 0, r.stderr
    assert target.read_text() != "kept"
