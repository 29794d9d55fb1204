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


# --------------------------------------------------------------------------- one home per decision
# Each decision below is made in one module; a second home fails here. The checks read the syntax
# tree of every module of the package and of the benchmark scripts (which read documents too).

BENCHMARKS = PKG.parent / "benchmarks"
PEAK_KEYS = ("fp64", "fp32", "fp64_tensor_dense", "tf32_tensor_dense", "fp16_tensor_dense",
             "bf16_tensor_dense", "fp8_tensor_dense", "int8_tensor_dense")  # fmt: skip


@functools.cache
def _nodes(path: Path) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(ast.parse(path.read_text(), filename=str(path))))


def _sources() -> list[Path]:
    return _modules() + sorted(BENCHMARKS.glob("*.py"))


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(PKG.parent)}:{getattr(node, 'lineno', '?')}"


def _outside(owner: str) -> list[tuple[Path, ast.AST]]:
    """(file, node) for every node of every source file but the owner's."""
    return [(path, node) for path in _sources() if path != PKG / owner for node in _nodes(path)]


def _mentions(node: ast.AST, text: str) -> bool:
    """Whether the node compares something with the string `text`."""
    return any(
        isinstance(c, ast.Compare)
        and any(isinstance(x, ast.Constant) and x.value == text for x in [c.left, *c.comparators])
        for c in ast.walk(node)
    )


def test_the_spec_of_a_run_is_chosen_in_core_specs_only() -> None:
    """core.specs.choose decides which spec a run uses (--spec, the GPU's name, the default);
    nothing else resolves a spec by name or by device, or reads the default."""
    bad = []
    for path, node in _outside("core/specs.py"):
        if isinstance(node, ast.Attribute) and node.attr in ("for_device", "resolve", "DEFAULT"):
            if isinstance(node.value, ast.Name) and node.value.id == "specs":
                bad.append(f"{_where(path, node)} specs.{node.attr}")
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("core.specs"):
            names = {a.name for a in node.names} & {"for_device", "resolve", "DEFAULT"}
            bad += [f"{_where(path, node)} imports {n} from core.specs" for n in sorted(names)]
    assert not bad, "\n".join(bad)


def test_peak_keys_are_mapped_in_core_roof_keys_only() -> None:
    """core.roof_keys holds the one table of which peak places which record: no other dict maps
    anything to a peak key (a precision's, a roof set's, a pipe's)."""
    bad = []
    for path, node in _outside("core/roof_keys.py"):
        values: list[ast.AST] = []
        if isinstance(node, ast.Dict):
            values = [v for v in node.values if v is not None]
        elif isinstance(node, ast.DictComp):
            values = [node.value]
        for v in values:
            peak = isinstance(v, ast.Constant) and v.value in PEAK_KEYS
            made = isinstance(v, ast.JoinedStr) and "_tensor_dense" in ast.unparse(v)
            if peak or made:
                bad.append(f"{_where(path, node)} maps to the peak key {ast.unparse(v)}")
                break
    assert not bad, "\n".join(bad)


def test_a_records_reference_is_looked_up_in_core_reference_only() -> None:
    """core.reference.of says which reference a record is held to: nothing else picks a
    reference record out of a document (the first of a shape, or a table of them by shape)."""
    bad = []
    for path, node in _outside("core/reference.py"):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "next"
            and node.args
            and isinstance(node.args[0], ast.GeneratorExp)
            and _mentions(node.args[0], "reference")
        ):
            bad.append(f"{_where(path, node)} picks the first reference")
        if isinstance(node, ast.If) and _mentions(node.test, "reference"):
            for inner in ast.walk(ast.Module(body=node.body, type_ignores=[])):
                if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute):
                    if inner.func.attr == "setdefault":
                        bad.append(f"{_where(path, inner)} keeps references by key")
    assert not bad, "\n".join(bad)


def test_cache_paths_are_made_in_paths_only() -> None:
    """paths.cache_file names the cache's files per GPU: no other module defines a slug."""
    bad = []
    for path, node in _outside("paths.py"):
        if isinstance(node, ast.FunctionDef) and "slug" in node.name.lower():
            bad.append(f"{_where(path, node)} defines {node.name}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if "[^a-z0-9" in node.value:
                bad.append(f"{_where(path, node)} slugs a name ({node.value!r})")
    assert not bad, "\n".join(bad)


STAGE_LISTS = frozenset({"STAGES", "FP8_STAGES", "ATTENTION_STAGES", "TOKEN_STAGES"})


def test_the_stages_of_every_kind_are_joined_in_stages_registry_only() -> None:
    """stages.registry.all_stages is the one list of every stage of every kind: no other module
    names the lists of two kinds (GEMM's STAGES, FP8_STAGES, ATTENTION_STAGES, TOKEN_STAGES),
    but the GEMM registry, whose STAGES take in the FP8 stages (`--stages` chooses among them)."""
    allowed = {PKG / "stages" / "gemm.py": {"STAGES", "FP8_STAGES"}}
    bad = []
    for path in _sources():
        if path == PKG / "stages" / "registry.py":
            continue
        named: set[str] = set()
        for node in _nodes(path):
            if isinstance(node, ast.Name) and node.id in STAGE_LISTS:
                named.add(node.id)
            elif isinstance(node, ast.Attribute) and node.attr in STAGE_LISTS:
                named.add(node.attr)
            elif isinstance(node, ast.ImportFrom):
                named |= {a.name for a in node.names} & STAGE_LISTS
        if len(named) > 1 and not named <= allowed.get(path, set()):
            bad.append(f"{path.relative_to(PKG.parent)} names {', '.join(sorted(named))}")
    assert not bad, "\n".join(bad)
