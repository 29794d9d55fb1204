"""The commands README.md and the pages under docs/ show, found and run as written (for
tests/test_doc_commands.py on the CPU and tests/gpu/test_doc_commands_gpu.py on a GPU).

How a command is found:
- on a page of docgen.pages (README.md and docs/*.md but the generated CLI reference), in a
  fenced code block whose info string is `console`, `sh`, `shell` or `bash`; other blocks
  (`text` synopses, `python`, `toml`, output) are not commands;
- in a `console` block, a line that starts with `$ ` (the lines after it are its output); in the
  other shell blocks, every line that is neither blank nor a comment;
- a line ending in a backslash continues on the next one.

What is run: a line whose program (the first word after any `NAME=value` assignments) is
`roofline`, as written, through bash, with the installed entry point first on PATH. `make run`
stands for the `roofline` commands of the Makefile's `run` recipe, each run the same way: the
make target itself would install first. `make test` is not run: it is this suite (its recipe is
checked instead). Lines of other programs (git, pytest, python) are the user's, not the tool's:
they are listed in OTHER_PROGRAMS, and any other program fails the test that finds it.

Where a command reads a file that an earlier step of its page makes (a GPU run, a Python
snippet), PLACEHOLDERS puts a committed document of the same kind in its place. Each command
runs in a folder of its own that holds those, `examples/`, `specs/`, `presets/` and
`benchmarks/results/` and `benchmarks/calibration/` of the checkout (links), so what it writes
lands there, never in the checkout.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import children

from rooflinecli import docgen
from rooflinecli.stages import gemm

ROOT = Path(__file__).resolve().parent.parent
SHELL_BLOCKS = ("console", "sh", "shell", "bash")
OTHER_PROGRAMS = ("git", "pytest", "python")
MAKE_TARGETS = ("run", "test")  # the two a page may show in a block: the set-up
# a command needs a GPU (or ncu) when it is one of these, unless it is a dry run
NEEDS_GPU = ("run", "profile", "calibrate", "tune")
# what such a command says on a machine without one, and nothing else
NO_GPU = re.compile(r"error: (no CUDA device found|Nsight Compute \(ncu\) not found)\b[^\n]*\n?")
RUN_DOC = ROOT / "benchmarks" / "results" / "gemm-fp32-4096-ladder.json.gz"
PLACEHOLDERS = {
    "current.json": RUN_DOC,  # docs/gate.md: `run gemm --output current.json`
    "baseline.json": RUN_DOC,  # docs/gate.md, docs/measure.md: a baseline kept beside it
    "benchmarks/baseline.json": RUN_DOC,  # docs/gate.md: `baseline save ... --force`
    "mine.json": RUN_DOC,  # docs/measure.md: what `measure` and `document` wrote
    "bench.json": RUN_DOC,  # docs/measure.md: the pytest fixture's document
}
LINKED = ("examples", "specs", "presets", "benchmarks/results", "benchmarks/calibration")
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)


@dataclass(frozen=True)
class Command:
    """One command line of a page, where it stands, and the words bash will run."""

    page: str  # relative to the checkout
    line: int  # of the page, 1-based
    text: str  # as written (for `make run`: one command of its recipe)
    program: str
    argv: tuple[str, ...]  # the words after the assignments
    env: tuple[tuple[str, str], ...] = ()  # the assignments before the program

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}:{self.text}"

    @property
    def needs_gpu(self) -> bool:
        return (
            self.program == "roofline"
            and len(self.argv) > 1
            and self.argv[1] in NEEDS_GPU
            and "--dry-run" not in self.argv
        )

    @property
    def needs_ncu(self) -> bool:
        return self.program == "roofline" and self.argv[1:2] == ("profile",)


def shell_lines(text: str) -> list[tuple[int, str]]:
    """(line number, command) of every command in the page's shell blocks (module docstring)."""
    out: list[tuple[int, str]] = []
    for m in FENCE.finditer(text):
        if m[1] not in SHELL_BLOCKS:
            continue
        first = text.count("\n", 0, m.start(2)) + 1
        pending: tuple[int, str] | None = None
        for i, raw in enumerate(m[2].splitlines()):
            line = raw.rstrip()
            if pending is not None:  # the line before ended in a backslash
                start, head = pending
                pending = None
                line = head + " " + line.strip()
                number = start
            else:
                number = first + i
                if m[1] == "console":
                    if not line.startswith("$ "):
                        continue  # output
                    line = line[2:]
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
            if line.endswith("\\"):
                pending = (number, line[:-1].rstrip())
                continue
            out.append((number, line.strip()))
    return out


def parse(page: str, number: int, text: str) -> Command:
    words = shlex.split(text, comments=True)
    env = []
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        env.append((name, value))
    program = words[0] if words else ""
    return Command(page, number, text, program, tuple(words), tuple(env))


def page_commands(root: Path = ROOT) -> list[Command]:
    """Every command line of every page, as written."""
    return [
        parse(page.relative_to(root).as_posix(), number, text)
        for page in docgen.pages(root)
        for number, text in shell_lines(page.read_text())
    ]


def make_recipe(target: str, root: Path = ROOT) -> str:
    """The recipe of a Makefile target: its tab-indented lines, joined where they continue."""
    text = (root / "Makefile").read_text()
    m = re.search(rf"^{re.escape(target)}:[^\n]*\n((?:\t[^\n]*\n)+)", text, re.M)
    assert m, f"the Makefile has no {target} target"
    return re.sub(r"\\\n\t?\s*", " ", m[1])


def make_run_commands(root: Path = ROOT) -> list[str]:
    """The roofline commands `make run` runs: on a GPU the first, else the second too."""
    return [
        f"roofline {args.strip()}"
        for args in re.findall(r"\$\(BIN\)/roofline ([^;]+);", make_recipe("run", root))
    ]


def tool_commands(root: Path = ROOT) -> list[Command]:
    """What the tests run: every `roofline` command of the pages, and `make run`'s (above)."""
    out: list[Command] = []
    for cmd in page_commands(root):
        if cmd.program == "roofline":
            out.append(cmd)
        elif cmd.program == "make" and cmd.argv[1:] == ("run",):
            out += [parse(cmd.page, cmd.line, text) for text in make_run_commands(root)]
    return out


def _option(argv: tuple[str, ...], name: str) -> list[str]:
    return [argv[i + 1] for i, word in enumerate(argv[:-1]) if word == name]


def builds(cmd: Command) -> list[tuple[gemm.Stage, dict[str, Any]]]:
    """The registry stages a command compiles (for the suite's prebuild marks: built once a
    session, in its helper, rather than again in the command): `inspect gemm --stage S`, and a
    dry run's default ladder."""
    argv = cmd.argv
    if argv[1:3] == ("inspect", "gemm"):
        names = _option(argv, "--stage")
        arch = (_option(argv, "--arch") or ["sm_90a"])[0]
        return [(gemm.BY_NAME[n].for_arch(arch), {"arch": arch}) for n in names]
    if argv[1:3] == ("run", "gemm") and "--dry-run" in argv and not _option(argv, "--stages"):
        dtype = (_option(argv, "--dtype") or ["fp32"])[0]
        arch = (_option(argv, "--arch") or ["sm_90a"])[0]
        ms = [int(m) for m in _option(argv, "--m")] or [4096]
        ladder = gemm.built_for(gemm.select(None, dtype), ms)
        return [(s.for_arch(arch), {"arch": arch, "dtype": dtype}) for s in ladder if s.file]
    return []


def entry_point(folder: Path) -> Path:
    """The folder whose `roofline` is the installed entry point (beside this interpreter), or
    one holding a stand-in for `python -m rooflinecli` where the install made none."""
    here = Path(sys.executable).parent
    if (here / "roofline").is_file():
        return here
    shim = folder / "roofline"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rooflinecli "$@"\n')
    shim.chmod(0o755)
    return folder


def workdir(folder: Path) -> Path:
    """A folder to run one command in (module docstring)."""
    (folder / "benchmarks").mkdir(parents=True)
    for name in LINKED:
        (folder / name).symlink_to(ROOT / name, target_is_directory=True)
    for name, source in PLACEHOLDERS.items():
        shutil.copyfile(source, folder / name)
    return folder


def run(cmd: Command, folder: Path, timeout: float, **env: str) -> subprocess.CompletedProcess[str]:
    """The command line as written, through bash, in `workdir(folder)`."""
    bin_dir = entry_point(folder.parent)
    cwd = workdir(folder)
    full = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", **env}
    full["PATH"] = f"{bin_dir}{os.pathsep}{full.get('PATH', '')}"
    # the package under test is this checkout's, also where the install does not reach a child
    full["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), full.get("PYTHONPATH")) if p)
    return children.run(
        ["bash", "-c", cmd.text],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
