"""Kernel names as a reader can tell them apart: a demangled C++ name shortened for a table or a
plot, and, where two kernels of one program would read the same, the part that tells them apart.

`void at::<unnamed>::distribution_elementwise_grid_stride_kernel<float, 4, ...>(int, ...)` reads
`at::<unnamed>::distribution_elementwise_grid_stride_kernel<...>` (cut to a width by dropping
scopes), never `at::<...>`: the template list that shortens is the function's own, not the
`<unnamed>` of an anonymous namespace. Kernels whose short names and grids still match get the
first template argument in which they differ (`vectorized_elementwise_kernel<..., FillFunctor<
c10::Half>, ...>`), and, where even that does not tell them apart, a number (`#1`, `#2`) in the
order of the records. Pure Python.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, NamedTuple

WIDTH = 48  # characters of a short name, before its grid
ARG_WIDTH = 32  # characters of the template argument that tells two kernels apart


class Parsed(NamedTuple):
    """A demangled name without `void ` and its parameter list: scopes, function, template."""

    scopes: tuple[str, ...]  # at, <unnamed>, ...
    name: str  # the function's own name
    args: tuple[str, ...] | None  # its template arguments, None without a template


def _split(text: str, sep: str) -> list[str]:
    """`text` split at `sep` outside <...>, (...) and [...]."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith(sep, i):
            out.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    out.append(text[start:])
    return out


def parse(kernel: str) -> Parsed:
    """The parts of a demangled kernel name (any text: a C name is a function without scopes)."""
    name = kernel.strip().removeprefix("void ").strip()
    depth, cut = 0, len(name)
    for i, ch in enumerate(name):  # the parameter list: the first '(' outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0 and i > 0 and not name[:i].endswith("::"):
            cut = i
            break
    name = name[:cut].strip()
    parts = _split(name, "::")
    last = parts[-1]
    args = None
    if "<" in last and last.endswith(">"):  # the function's own template arguments
        at = last.index("<")
        args = tuple(a.strip() for a in _split(last[at + 1 : -1], ","))
        last = last[:at]
    return Parsed(tuple(parts[:-1]), last, args)


def short(kernel: str, width: int = WIDTH, scoped: bool = True) -> str:
    """A kernel's name for a table (scoped: its scopes and `<...>` for a template), or for a plot
    (the function alone). Scopes are dropped from the left, then the end cut, to fit `width`."""
    p = parse(kernel)
    if not p.name:  # nothing readable: the text as it came, cut
        text = kernel.strip()
        return text if len(text) <= width else text[: width - 3] + "..."
    if not scoped:
        return p.name if len(p.name) <= width else p.name[: width - 3] + "..."
    tail = p.name
    if p.args is not None:
        whole = f"{p.name}<{', '.join(p.args)}>"
        tail = whole if len("::".join((*p.scopes, whole))) <= width else f"{p.name}<...>"
    scopes = list(p.scopes)
    while scopes and len("::".join((*scopes, tail))) > width:
        scopes.pop(0)
    text = "::".join((*scopes, tail))
    return text if len(text) <= width else text[: width - 3] + "..."


def grid_text(grid: Any) -> str:
    return "x".join(str(d) for d in grid) if isinstance(grid, list | tuple) and grid else "?"


def _telling(kernels: Sequence[str], base: str, width: int) -> list[str] | None:
    """For kernels whose short names read the same: each with the first template argument in
    which they differ, or None where that does not tell them apart."""
    parsed = [parse(k) for k in kernels]
    lists = [p.args for p in parsed]
    if any(a is None for a in lists) or len({len(a or ()) for a in lists}) != 1:
        return None
    n = len(lists[0] or ())
    at = next((i for i in range(n) if len({(a or ())[i] for a in lists}) > 1), None)
    if at is None:
        return None
    head = base.removesuffix("<...>")
    args = [(a or ())[at] for a in lists]
    # where the arguments start to differ: a long one is shown from a little before there
    common = len(os.path.commonprefix(args))
    out = []
    keep = ARG_WIDTH
    for arg in args:
        if len(arg) > keep:
            start = max(0, min(common - keep // 3, len(arg) - keep))
            piece = arg[start : start + keep]
            arg = ("..." if start else "") + piece + ("..." if start + keep < len(arg) else "")
        out.append(f"{head}<{'..., ' if at else ''}{arg}{', ...' if at < n - 1 else ''}>")
    return out if len(set(out)) == len(out) else None


def labels(records: Sequence[dict[str, Any]], scoped: bool = True, width: int = WIDTH) -> list[str]:
    """`short name [grid]` of every kernel record, none the same as another's; other records
    (stages) keep their label or stage."""
    out = [
        f"{short(str(r['kernel']), width, scoped)} [{grid_text(r.get('grid'))}]"
        if r.get("kernel")
        else str(r.get("label") or r.get("stage"))
        for r in records
    ]
    groups: dict[str, list[int]] = {}
    for i, (r, text) in enumerate(zip(records, out, strict=True)):
        if r.get("kernel"):
            groups.setdefault(text, []).append(i)
    for text, idx in groups.items():
        if len(idx) < 2:
            continue
        base = short(str(records[idx[0]]["kernel"]), width, scoped)
        grid = text[text.rindex(" [") :]
        telling = _telling([str(records[i]["kernel"]) for i in idx], base, width)
        for n, i in enumerate(idx, start=1):
            out[i] = f"{telling[n - 1]}{grid}" if telling else f"{text} #{n}"
    # a telling label may still meet another kernel's: number what is left the same
    seen: dict[str, list[int]] = {}
    for i, text in enumerate(out):
        if records[i].get("kernel"):
            seen.setdefault(text, []).append(i)
    for text, idx in seen.items():
        if len(idx) > 1:
            for n, i in enumerate(idx, start=1):
                out[i] = f"{text} #{n}"
    return out


def relabel(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of the records in which no two kernels share a `label`: a label another kernel
    also has (documents written before labels were told apart: `at::<...> [1056x1x1]` twice)
    is replaced by labels(); every other label stays as the document has it."""
    old = [str(r.get("label") or "") for r in records]
    seen: dict[str, int] = {}
    for r, text in zip(records, old, strict=True):
        if r.get("kernel"):
            seen[text] = seen.get(text, 0) + 1
    fresh = labels(records)
    out = [
        {**r, "label": new} if r.get("kernel") and (not text or seen[text] > 1) else dict(r)
        for r, text, new in zip(records, old, fresh, strict=True)
    ]
    # a new label that meets a kept one: numbered, as labels() numbers its own
    count: dict[str, list[int]] = {}
    for i, r in enumerate(out):
        if r.get("kernel"):
            count.setdefault(str(r["label"]), []).append(i)
    for text, idx in count.items():
        for n, i in enumerate(idx if len(idx) > 1 else [], start=1):
            out[i]["label"] = f"{text} #{n}"
    return out
