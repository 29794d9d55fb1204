"""roofline: hand-written CUDA GEMM stages placed on the roofline of the GPU they run on."""

import os
from typing import Any

__version__ = "0.1.0"

# NVRTC 13.0 and the driver keep a compute cache; an NVRTC cache hit returns an empty ptxas
# log, and the resource report (registers, spills) is lost. We cache cubins ourselves, so turn
# theirs off before either library loads.
os.environ.setdefault("CUDA_CACHE_DISABLE", "1")

# The Python API for the user's own kernels, loaded on first use: importing rooflinecli stays
# cheap and never imports CuPy (measure does, when it runs).
_LAZY = {"measure": "rooflinecli.api", "document": "rooflinecli.api"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
