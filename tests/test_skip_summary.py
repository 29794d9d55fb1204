"""`make test` ends with its result and one line of skips grouped by reason (tests/skips.py,
written by tests/conftest.py), not a line per skipped test; `-rs` still lists each."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace

import children
from skips import skip_summary

HERE = Path(__file__).resolve().parent
SAMPLE = HERE / "fixtures" / "skips" / "sample_skips.py"


def _pytest(*args: str) -> list[str]:
    out = children.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(SAMPLE), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=HERE.parent,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout.strip().splitlines()


def test_the_run_ends_with_the_skips_in_one_line_then_the_result():
    lines = _pytest()
    assert lines[-2] == (
        "skipped 5 (-rs lists each): 3 no CUDA device; 2 ... was made after the restructuring"
    )
    assert lines[-1].startswith("1 passed, 5 skipped in ")
    assert not any(line.startswith("SKIPPED") for line in lines)
    # the progress line: a dot for the test that ran, no 's' for each skip
    assert lines[0].startswith(".") and "s" not in lines[0].split("[")[0], lines[0]


def test_rs_lists_each_skip_on_demand():
    lines = _pytest("-rs")
    assert sum(line.startswith("SKIPPED") for line in lines) == 3  # equal reasons folded
    assert any("a.json was made after the restructuring" in line for line in lines)


def _report(path, line, reason):
    return SimpleNamespace(nodeid=f"{path}::t", longrepr=(path, line, f"Skipped: {reason}"))


def test_reasons_of_one_place_are_one_reason_and_the_commonest_come_first():
    reports = [
        _report("a.py", 1, "needs hypothesis"),
        *(_report("b.py", 9, f"tune-{i}.json was made after the restructuring") for i in range(4)),
        _report("c.py", 3, "no CUDA device"),
        _report("d.py", 3, "no CUDA device"),
    ]
    assert skip_summary(reports) == (
        "skipped 7 (-rs lists each): 4 ... was made after the restructuring; 2 no CUDA device; "
        "1 needs hypothesis"
    )


def test_past_the_most_reasons_the_rest_is_counted():
    reports = [_report(f"t{i}.py", i, f"reason {i} here") for i in range(7)]
    line = skip_summary(reports, most=3)
    assert line is not None and line.endswith("; 4 for 4 other reasons")
    assert skip_summary([]) is None
