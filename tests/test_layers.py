"""The import rule: layers import downward only, and no library module imports click.

    errors < paths < core < doc_check < results, stages < gpu, present < plan < api < options
    < commands < cli

A module may import its own package and any layer below; `results` and `stages` do not import
each other, nor do `gpu` and `present`, nor one command module another. Imports inside
functions count too (they are read from the syntax tree, not by importing).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pkgsource

PKG = Path(__file__).resolve().parent.parent / "rooflinecli"

# layer of each top-level part of the package; equal numbers are siblings that must not mix
LAYERS = {
    "errors": 0,
    "paths": 1,
    "files": 1,
    "names": 1,
    "lazy": 0,
    "core": 2,
    "doc_check": 2.5,  # what a results document's numbers must be (below results, its reader)
    "results": 3,
    "stages": 3,
    "gpu": 4,
    "present": 4,
    "plan": 5,
    "api": 6,
    "options": 7,
    "commands": 8,
    "cli": 9,
    "docgen": 10,
    "__main__": 10,
    "__init__": 10,
    "pytest_plugin": 7,
}
CLI_LAYER = 7


def _part(module: str) -> str:
    """'rooflinecli.core.model' -> 'core'; 'rooflinecli' -> '__init__'."""
    bits = module.split(".")
    return bits[1] if len(bits) > 1 else "__init__"


@functools.cache  # each file read and parsed once (pkgsource) for both tests below
def _imports(path: Path) -> tuple[str, ...]:
    here = "rooflinecli." + ".".join(path.relative_to(PKG).with_suffix("").parts)
    out: list[str] = []
    for node in pkgsource.imports(path):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = here.split(".")[: -node.level]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append(mod)
            if mod == "rooflinecli":  # `from rooflinecli import results` names a module
                out += [f"rooflinecli.{a.name}" for a in node.names]
    return tuple(out)


def _name(path: Path) -> str:
    return _part("rooflinecli." + ".".join(path.relative_to(PKG).with_suffix("").parts))


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_part_has_a_layer() -> None:
    parts = {
        _part("rooflinecli." + ".".join(p.relative_to(PKG).with_suffix("").parts))
        for p in _modules()
    }
    assert parts <= set(LAYERS), sorted(parts - set(LAYERS))


def test_layers_import_downward_only() -> None:
    bad = []
    for path in _modules():
        me = _name(path)
        for mod in _imports(path):
            if not mod.startswith("rooflinecli.") or mod == "rooflinecli":
                continue
            other = _part(mod)
            if other not in LAYERS:
                continue
            if other != me and LAYERS[other] >= LAYERS[me] and me != "__init__":
                bad.append(f"{path.relative_to(PKG)} imports {mod}")
            if me == other == "commands" and mod.count(".") >= 2 and path.stem != "__init__":
                if mod.split(".")[2] != path.stem:
                    bad.append(f"{path.relative_to(PKG)} imports {mod}")
    assert not bad, "\n".join(bad)


def test_library_modules_import_no_click() -> None:
    bad = []
    for path in _modules():
        me = _name(path)
        if LAYERS[me] >= CLI_LAYER:
            continue
        for mod in _imports(path):
            if mod == "click" or mod.startswith("click."):
                bad.append(str(path.relative_to(PKG)))
    assert not bad, bad
