"""Output formats have one home: rooflinecli.present.output decides what each --format writes.
No other module of the package compares a `fmt` or `format` (a name, or an attribute) with
anything: such a switch anywhere else means a command writes a format itself. Read from the
syntax tree."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "rooflinecli"
HOME = PKG / "present" / "output.py"
NAMES = ("fmt", "format")


def _named(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in NAMES
    return isinstance(node, ast.Attribute) and node.attr in NAMES


def switches(path: Path) -> list[int]:
    """Lines of the comparisons (==, !=, in, not in, ...) that involve a name fmt or format."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare) and any(map(_named, [node.left, *node.comparators]))
    )


def test_no_format_switch_outside_the_output_module() -> None:
    found = {
        str(p.relative_to(PKG)): lines
        for p in sorted(PKG.rglob("*.py"))
        if p != HOME and (lines := switches(p))
    }
    assert not found, f"--format switches outside present/output.py: {found}"


def test_the_check_sees_a_switch(tmp_path: Path) -> None:
    """The reader finds every form a switch takes (a test that finds nothing proves nothing)."""
    src = tmp_path / "x.py"
    src.write_text(
        "def f(fmt, o):\n"
        "    if fmt == 'json': pass\n"
        "    if 'csv' != fmt: pass\n"
        "    if fmt in ('a', 'b'): pass\n"
        "    if o.format not in ('table',): pass\n"
        "    if format is None: pass\n"
        "    if fmt_x == 1: pass\n"
    )
    assert switches(src) == [2, 3, 4, 5, 6]
    assert switches(HOME), "the output module holds the switches"
