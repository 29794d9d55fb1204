"""The package's shape, held: no import cycle in rooflinecli/, no module over 700 lines, no
function over 80 lines, no command function with more than 8 parameters, every command's
--help ending with its examples; and from `run gemm --m 4096` (and `--dtype fp8`) to the one
runner loop, at most 8 of our frames, none of them a command's or an option's after the
command's own (docs/architecture.md names them).

What still exceeds a limit is named below, each with why; an entry that no longer exceeds it
fails the test, so the lists only shrink.
"""

from __future__ import annotations

import ast
import inspect
import shlex
import sys
from pathlib import Path

import click
import pkgsource
import pytest
from click.testing import CliRunner
from fakes import FakeCupy

from rooflinecli.cli import cli

PKG = Path(__file__).resolve().parent.parent / "rooflinecli"
ROOT = PKG.parent
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 80
MAX_COMMAND_PARAMETERS = 8

# modules over 700 lines, with why
LONG_MODULES = {
    "stages/gemm.py": "the stage registry's data (one entry per kernel file)",
}
# functions over 80 lines (path:qualified name), with why
LONG_FUNCTIONS: dict[str, str] = {}


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def _name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _rel(path: Path) -> str:
    return path.relative_to(PKG).as_posix()


def _imports(path: Path, known: set[str]) -> set[str]:
    """The modules of ours `path` imports, at its top or inside a function: a name imported
    from a package is the submodule where there is one."""
    here = _name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    out: set[str] = set()
    for node in pkgsource.imports(path):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            subs = {f"{mod}.{a.name}" for a in node.names} & known
            out |= subs
            if mod in known and len(subs) < len(node.names):
                out.add(mod)
    return out - {here}


def test_no_import_cycle() -> None:
    paths = {_name(p): p for p in _modules()}
    graph = {name: _imports(path, set(paths)) for name, path in paths.items()}
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    cycles: list[list[str]] = []

    def walk(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*trail[trail.index(nxt) :], nxt])
            elif nxt not in state:
                walk(nxt, [*trail, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            walk(name, [name])
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_no_module_over_700_lines() -> None:
    long = {_rel(p): n for p in _modules() if (n := len(p.read_text().splitlines())) > 700}
    assert set(long) <= set(LONG_MODULES), {k: v for k, v in long.items() if k not in LONG_MODULES}
    shorter = sorted(set(LONG_MODULES) - set(long))
    assert not shorter, f"now within the limit, take them off LONG_MODULES: {shorter}"


def _functions(path: Path) -> dict[str, int]:
    """Every function of the module (qualified by its classes) and its length in lines."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                out[name] = max(out.get(name, 0), child.end_lineno - child.lineno + 1)  # type: ignore[operator]
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text()), "")
    return out


def test_no_function_over_80_lines() -> None:
    long = {
        f"{_rel(p)}:{name}": n
        for p in _modules()
        for name, n in _functions(p).items()
        if n > MAX_FUNCTION_LINES
    }
    extra = {k: v for k, v in long.items() if k not in LONG_FUNCTIONS}
    assert not extra, extra
    shorter = sorted(set(LONG_FUNCTIONS) - set(long))
    assert not shorter, f"now within the limit, take them off LONG_FUNCTIONS: {shorter}"


def _commands() -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []

    def walk(cmd: click.Command, path: list[str]) -> None:
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                assert sub is not None
                walk(sub, [*path, name])
        else:
            out.append((" ".join(path), cmd))

    walk(cli, [])
    return out


def test_no_command_function_takes_more_than_8_parameters() -> None:
    wide = {
        name: len(inspect.signature(cmd.callback).parameters)  # type: ignore[arg-type]
        for name, cmd in _commands()
        if len(inspect.signature(cmd.callback).parameters) > MAX_COMMAND_PARAMETERS  # type: ignore[arg-type]
    }
    assert not wide, wide
    assert len(_commands()) >= 22  # every command was found


def test_a_command_that_gathers_its_options_runs_its_steps() -> None:
    """A function with gathering steps is the callback of a Command, which runs them."""
    from rooflinecli.commands import Command

    for name, cmd in _commands():
        if getattr(cmd.callback, "__gathers__", None):
            assert isinstance(cmd, Command), name


@pytest.mark.parametrize("name", [name for name, _cmd in _commands()])
def test_every_help_ends_with_its_examples(name: str) -> None:
    text = CliRunner().invoke(cli, [*name.split(), "--help"]).output
    tail = text.rstrip().split("\n\n")[-1].splitlines()
    assert tail[0].strip() in ("Example:", "Examples:"), text
    assert 1 <= len(tail) - 1 <= 2 and all(
        line.strip().startswith(f"roofline {name}") for line in tail[1:]
    ), tail
    for line in tail[1:]:  # each names options the command has (--help parses them first)
        args = shlex.split(line)[1:]
        cut = args.index("--") if "--" in args else len(args)
        got = CliRunner().invoke(cli, [*args[:cut], "--help", *args[cut:]])
        assert got.exit_code == 0, (line, got.output)


# ---------------------------------------------------------------- from the command to the loop


class _Reached(Exception):
    """Raised by the stand-in loop once it has read the stack."""


def _our_frames() -> list[str]:
    """From the runner loop's caller up to `run gemm`'s callback (excluded), our frames as
    'path:function', the innermost last."""
    from rooflinecli.commands import run as run_command

    callback = run_command.run_gemm.callback.__code__  # type: ignore[union-attr]
    frames: list[str] = []
    f = sys._getframe(2)  # the loop's caller
    while f is not None and f.f_code is not callback:
        path = Path(f.f_code.co_filename).resolve()
        if path.is_relative_to(PKG):
            frames.append(f"{_rel(path)}:{f.f_code.co_name}")
        f = f.f_back  # type: ignore[assignment]
    assert f is not None, "the callback of `run gemm` is not on the stack"
    return frames[::-1]


@pytest.mark.parametrize(
    ("args", "runner_frame"),
    [([], "gpu/runner.py:run_gemm"), (["--dtype", "fp8"], "gpu/fp8.py:run_gemm")],
)
def test_run_gemm_reaches_the_loop_through_the_job(monkeypatch, args, runner_frame) -> None:
    from rooflinecli.gpu import device, loop, runner, timer
    from rooflinecli.gpu import fp8 as gfp8
    from rooflinecli.stages import compiler

    seen: list[list[str]] = []

    def stand_in(*_args, **_kwargs):  # type: ignore[no-untyped-def]
        seen.append(_our_frames())
        raise _Reached

    info = {"name": "NVIDIA H200", "arch": "sm_90a", "compute_capability": "9.0", "sm_count": 132}
    monkeypatch.setattr(device, "cupy", lambda: FakeCupy())
    monkeypatch.setattr(device, "info", lambda: info)
    monkeypatch.setattr(compiler, "precompile", lambda *a, **k: None)
    monkeypatch.setattr(gfp8, "precompile", lambda builds, scaling="tensor": [])
    monkeypatch.setattr(runner, "Timer", lambda timing: None)
    monkeypatch.setattr(timer, "Timer", lambda timing: None)
    monkeypatch.setattr(loop, "run", stand_in)
    CliRunner().invoke(cli, ["run", "gemm", "--m", "4096", "--quiet", *args])
    assert len(seen) == 1, "the runner loop was not reached"
    frames = seen[0]
    assert frames == ["api/gemm.py:run", "api/gemm.py:_run_kind", runner_frame]
    assert len(frames) <= 8
    assert not [f for f in frames if f.startswith(("commands/", "options/"))], frames
    doc = (ROOT / "docs" / "architecture.md").read_text()
    for frame in ["commands/run.py:run_gemm", *frames, "gpu/loop.py:run"]:
        path, func = frame.split(":")
        assert f"`{path.removesuffix('.py')}.{func}`" in doc, frame
