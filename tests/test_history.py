"""The project speaks of itself, its results and how to reproduce them, never of how it was made:
no rounds of work, borrowed machines, numbered calls or tickets in the README, docs, kernels,
specs, presets, dispatch tables, code, tests, benchmark scripts, Makefile or CI, and no file
named after a round (`NAME-s8.json`). History belongs in commit messages. Results documents
keep what they recorded (benchmarks/ JSON is not read here)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# case-insensitive, one line at a time
PATTERNS = [
    r"session [0-9]",
    r"session's (first|own)",
    r"\blent\b",
    r"device\s+call",
    r"\bcalls? [0-9]",
    r"gpu_s[0-9]",
    r"logs/s[0-9]",
    r"device[-_ ]log",
    r"\bissue [0-9]",
]
HISTORY = re.compile("|".join(f"(?:{p})" for p in PATTERNS), re.IGNORECASE)
ROUND_FILE = re.compile(r"-s[0-9]\.json$")

# what is read: a folder (every text file under it) or a file, and which files of it
AREAS = {
    "README.md": ("README.md", None),
    "docs": ("docs", None),
    "kernels": ("kernels", None),
    "specs": ("specs", None),
    "presets": ("presets", None),
    "dispatch": ("dispatch", None),
    "rooflinecli": ("rooflinecli", None),
    "tests": ("tests", None),
    "benchmarks": ("benchmarks", lambda p: p.suffix != ".json"),  # scripts, not documents
    "Makefile": ("Makefile", None),
    ".ci": (".ci", None),
}
SKIP_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


def committed() -> list[Path]:
    """The repository's files: git's list in a checkout, else every file but caches and venvs."""
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, text=True, check=True
        ).stdout
        files = [ROOT / f for f in out.split("\0") if f]
        if files:
            return [f for f in files if f.is_file()]
    except (OSError, subprocess.CalledProcessError):
        pass
    skip = SKIP_DIRS | {".git", ".venv", "build", "dist", ".whl", ".peer"}
    return [
        p
        for p in ROOT.rglob("*")
        if p.is_file() and not skip & set(p.relative_to(ROOT).parts) and ".egg-info" not in str(p)
    ]


def hits(text: str, name: str) -> list[str]:
    """`name:line: text` for every line that speaks of how the project was made."""
    return [
        f"{name}:{i}: {line.strip()[:120]}"
        for i, line in enumerate(text.splitlines(), 1)
        if HISTORY.search(line)
    ]


def area_files(area: str) -> list[Path]:
    top, keep = AREAS[area]
    base = ROOT / top
    files = [p for p in committed() if p == base or base in p.parents]
    files = [p for p in files if not SKIP_DIRS & set(p.parts)]
    return sorted(p for p in files if keep is None or keep(p))


@pytest.mark.parametrize("area", sorted(AREAS))
def test_no_history_in(area: str) -> None:
    found = []
    for path in area_files(area):
        if path == Path(__file__).resolve():  # the patterns and their examples, defined here
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # pictures and other binaries say nothing
            continue
        found += hits(text, str(path.relative_to(ROOT)))
    assert not found, f"{len(found)} lines speak of how the project was made:\n" + "\n".join(found)


def test_no_file_is_named_after_a_round() -> None:
    named = sorted(str(p.relative_to(ROOT)) for p in committed() if ROUND_FILE.search(p.name))
    assert not named, named


@pytest.mark.parametrize(
    "line",
    [
        "Session 8's closing call",
        "the session's first commit",
        "on the lent H200",
        "one device call of two minutes",
        "in call 3, at commit 8a6b313",
        "calls 2 and 4",
        "benchmarks/gpu_s8a.sh",
        "benchmarks/logs/s6/fa2/",
        "device-log-s5-call2.txt",
        "the device log of the run",
        "issue 14's targets",
    ],
)
def test_each_pattern_finds_history(line: str) -> None:
    assert hits(line, "f") == [f"f:1: {line}"]


@pytest.mark.parametrize(
    "line",
    [
        '@pytest.fixture(scope="session")',
        "def pytest_sessionstart(session):",
        "a 20-launch run, recalls 3 stages",  # "recalls" is not "calls"
        "the stage is excellent at it",
        "benchmarks/results/gemm-bf16-8192-wgmma-30.json",
        "tissue 5",
    ],
)
def test_what_is_not_history(line: str) -> None:
    assert hits(line, "f") == []


def test_a_file_named_after_a_round_is_found() -> None:
    assert ROUND_FILE.search("gemm-bf16-8192-s8.json")
    assert not ROUND_FILE.search("gemm-bf16-8192-wgmma-30.json")
