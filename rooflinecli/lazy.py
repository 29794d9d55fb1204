"""Heavy modules (pandas, NumPy) imported on first use, so that `roofline --help` and
`roofline model gemm` start without them (tests/test_startup.py guards this)."""

from __future__ import annotations

import importlib
from typing import Any


class Module:
    """Stands for a module until an attribute is first read, then imports it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)
