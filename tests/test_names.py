"""A module of the package is imported under its own name: `import X as Y` only to
dodge a name clash hides which module a call goes to. Where the module's name clashes with a
local, the local is renamed; where it clashes with a public parameter, the function is imported
from the module instead. Read from the syntax tree, imports inside functions included."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pkgsource

PKG = Path(__file__).resolve().parent.parent / "rooflinecli"

# (file, imported name, alias) that may stay, each with its reason
ALLOWED: set[tuple[str, str, str]] = set()


def _own_aliases(path: Path, root: Path = PKG) -> set[tuple[str, str, str]]:
    """(file relative to root, name, alias) of every aliased import of the package itself."""
    rel = path.relative_to(root).as_posix()
    found = set()
    for node in pkgsource.imports(path):  # parsed once for this file and test_layers.py
        if isinstance(node, ast.Import):
            own = [a for a in node.names if a.name.split(".")[0] == "rooflinecli"]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            own = node.names if node.level or module.split(".")[0] == "rooflinecli" else []
        else:
            continue
        found |= {(rel, a.name, a.asname) for a in own if a.asname and a.asname != a.name}
    return found


@functools.cache  # the package read and parsed once for both tests below
def _all_own_aliases() -> frozenset[tuple[str, str, str]]:
    return frozenset({hit for path in sorted(PKG.rglob("*.py")) for hit in _own_aliases(path)})


def test_package_modules_keep_their_names() -> None:
    extra = sorted(_all_own_aliases() - ALLOWED)
    assert not extra, "import these under their own names (rename the clashing local): " + (
        "; ".join(f"{f}: {name} as {alias}" for f, name, alias in extra)
    )


def test_allow_list_has_no_stale_entries() -> None:
    stale = sorted(ALLOWED - _all_own_aliases())
    assert not stale, f"no longer aliased, drop from ALLOWED: {stale}"


def test_an_alias_is_caught(tmp_path: Path) -> None:
    """The reader sees aliases in every import form, inside functions too, and nothing else."""
    sub = tmp_path / "rooflinecli" / "gpu"
    sub.mkdir(parents=True)
    src = sub / "x.py"
    src.write_text(
        "import numpy as np\n"
        "import rooflinecli.core.specs as s1\n"
        "from rooflinecli.core import roofs\n"
        "from rooflinecli.core import specs as specs\n"
        "from . import ncu as catalog\n"
        "def f():\n"
        "    from rooflinecli.stages import gemm as registry\n"
    )
    assert _own_aliases(src, tmp_path / "rooflinecli") == {
        ("gpu/x.py", "rooflinecli.core.specs", "s1"),
        ("gpu/x.py", "ncu", "catalog"),
        ("gpu/x.py", "gemm", "registry"),
    }
