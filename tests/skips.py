"""One line of the skips of a test run, grouped by reason: what tests/conftest.py's
pytest_terminal_summary writes at the end of `make test` (-rs still lists each)."""

from __future__ import annotations

import os
from typing import Any


def skip_summary(reports: list[Any], most: int = 5) -> str | None:
    """One line: how many tests skipped, grouped by reason, the commonest first. The skips of
    one place in the code are one reason: their reasons, where they differ (a file name), are
    shown by what they share ("... was made after the restructuring")."""
    by_place: dict[tuple[str, int], list[str]] = {}
    for rep in reports:
        where, reason = (str(rep.nodeid), 0), str(rep.longrepr)
        if isinstance(rep.longrepr, tuple) and len(rep.longrepr) == 3:
            path, lineno, reason = rep.longrepr
            where = (str(path), int(lineno or 0))
        by_place.setdefault(where, []).append(reason.removeprefix("Skipped: "))
    counts: dict[str, int] = {}
    for reasons in by_place.values():
        text = _shared(reasons)
        counts[text] = counts.get(text, 0) + len(reasons)
    if not counts:
        return None
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    parts = [f"{n} {text}" for text, n in ranked[:most]]
    rest = ranked[most:]
    if rest:
        n = sum(c for _t, c in rest)
        parts.append(f"{n} for {len(rest)} other reason{'s' if len(rest) > 1 else ''}")
    total = sum(counts.values())
    return f"skipped {total} (-rs lists each): " + "; ".join(parts)


def _shared(reasons: list[str]) -> str:
    """What the reasons have in common: the reason itself, or their shared start and end around
    an ellipsis, cut at word boundaries."""
    first = reasons[0]
    if all(r == first for r in reasons):
        return first
    start = os.path.commonprefix(reasons)
    end = os.path.commonprefix([r[::-1] for r in reasons])[::-1]
    start = start[: start.rfind(" ") + 1] if " " in start else ""
    end = end[end.find(" ") :] if " " in end else ""
    return f"{start}...{end}".strip() if start or end else "various reasons"
