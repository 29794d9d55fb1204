"""Heavy modules (pandas, NumPy) imported on first use, so that `roofline --help` and
`roofline model gemm` start without them (tests/test_startup.py guards this)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class Module:
    """Stands for a module until an attribute is first read, then imports it."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        # kept once imported: import_module on every read cost the gate's statistics about 6 us
        # an attribute (some 40 reads a check)
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)
