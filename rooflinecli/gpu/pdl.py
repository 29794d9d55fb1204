"""Programmatic dependent launch: a kernel launched through cuLaunchKernelEx with the programmatic
stream serialization attribute may start while the kernel before it on the stream still runs
(its griddepcontrol.wait holds it before it reads that kernel's output). CuPy's launch has no
attributes, so a stage with `pdl=True` goes through here: the CUfunction of CuPy's loaded
kernel, CuPy's current stream, the same arguments. Inside stream capture the graph keeps the
programmatic edge. `driver` is cuda-bindings' `cuda.bindings.driver` (tests pass a stand-in)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

from rooflinecli.errors import RooflineError

# the launch attribute (its id is 6 in cuda.h; its value 1 allows the overlap)
ATTRIBUTE = "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION"


def _driver() -> Any:
    try:
        from cuda.bindings import driver
    except ImportError as e:
        raise RooflineError(
            f"programmatic dependent launch needs cuda-bindings (pip install cuda-bindings): {e}"
        ) from e
    return driver


def pack(args: Sequence[Any]) -> tuple[Any, list[Any]]:
    """(the void** array cuLaunchKernelEx takes, the storage it points into: keep it alive until
    the launch returns). NumPy scalars keep their C type; device arrays (anything with
    `.data.ptr`, as CuPy's) and plain ints pass as 64-bit pointers."""
    import numpy as np

    held: list[Any] = []
    for a in args:
        c: Any
        if isinstance(a, np.generic):
            c = np.ctypeslib.as_ctypes_type(a.dtype)(a.item())  # type: ignore[arg-type]
        elif hasattr(a, "data") and hasattr(a.data, "ptr"):
            c = ctypes.c_uint64(int(a.data.ptr))
        elif isinstance(a, int) and not isinstance(a, bool):
            c = ctypes.c_uint64(a)
        else:
            raise RooflineError(f"cannot pass a {type(a).__name__} to a kernel launch")
        held.append(c)
    ptrs = (ctypes.c_void_p * max(len(held), 1))(*[ctypes.addressof(c) for c in held])
    held.append(ptrs)
    return ptrs, held


def _check(driver: Any, result: Any) -> None:
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        name = getattr(err, "name", str(int(err)))
        raise RooflineError(f"cuLaunchKernelEx failed: {name}")


def function_ptr(fn: Any) -> int:
    """The CUfunction behind a CuPy kernel: a RawKernel's loaded `Function` is `.kernel` (its
    `.ptr` the handle); a `Function` (RawModule.get_function in older CuPy) has `.ptr` itself."""
    inner = getattr(fn, "kernel", None)
    ptr = getattr(inner, "ptr", None) if inner is not None else None
    if ptr is None:
        ptr = getattr(fn, "ptr", None)
    if ptr is None:
        raise RooflineError(f"cannot find the CUfunction of a {type(fn).__name__}")
    return int(ptr)


def launcher(
    function_ptr: int,
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    shared_bytes: int,
    args: Sequence[Any],
    stream_ptr: Callable[[], int],
    driver: Any = None,
) -> Callable[[], None]:
    """A call that launches the kernel at `function_ptr` (a CUfunction, e.g. CuPy's
    `Function.ptr`) on the stream `stream_ptr()` names at each call (CuPy's current stream, so
    that a capture sees it), with programmatic stream serialization allowed."""
    drv = driver if driver is not None else _driver()
    function = drv.CUfunction(function_ptr)
    ptrs, held = pack(args)
    attr = drv.CUlaunchAttribute()
    attr.id = getattr(drv.CUlaunchAttributeID, ATTRIBUTE)
    attr.value.programmaticStreamSerializationAllowed = 1
    config = drv.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = (int(g) for g in grid)
    config.blockDimX, config.blockDimY, config.blockDimZ = (int(b) for b in block)
    config.sharedMemBytes = int(shared_bytes)
    config.attrs = [attr]
    config.numAttrs = 1

    def launch() -> None:
        config.hStream = drv.CUstream(stream_ptr())
        _check(drv, drv.cuLaunchKernelEx(config, function, ctypes.addressof(ptrs), 0))

    launch.held = held  # type: ignore[attr-defined]  # the arguments live as long as the call
    return launch
