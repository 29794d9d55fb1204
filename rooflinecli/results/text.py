"""A document as JSON text: NaN and infinity as null; as a file holds it, lists of numbers on one
line."""

from __future__ import annotations

import math
from typing import Any


def _clean(obj: Any) -> Any:
    """NaN/inf are not JSON: write them as null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return _clean(obj.item())
    return obj


def dumps(doc: dict[str, Any]) -> str:
    import json  # here: `model` into a table writes no JSON, and json compiles 6 regexes

    return json.dumps(_clean(doc), indent=2) + "\n"


def file_text(doc: dict[str, Any]) -> str:
    """A document as a file holds it: dumps' layout, but a list of numbers (every timing
    sample) on one line, a third of the bytes. The same JSON value as dumps."""
    return _layout(_clean(doc), "") + "\n"


def _layout(obj: Any, indent: str) -> str:
    import json

    inner = indent + "  "
    if isinstance(obj, dict) and obj:
        items = [f"{inner}{json.dumps(str(k))}: {_layout(v, inner)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(obj, list) and any(isinstance(v, dict | list) for v in obj):
        return "[\n" + ",\n".join(inner + _layout(v, inner) for v in obj) + "\n" + indent + "]"
    return json.dumps(obj)
