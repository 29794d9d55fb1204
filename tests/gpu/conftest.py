"""GPU tests: skipped (not failed) without a CUDA device. Decided when a test runs, never at
collection, so collecting on a machine without a GPU or without CuPy cannot crash."""

import pytest


def _device_or_reason() -> str | None:
    try:
        import cupy
    except Exception as exc:  # no CuPy, or a CuPy without its CUDA libraries
        return f"CuPy unavailable ({type(exc).__name__})"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device"
    except Exception as exc:
        return f"no CUDA device ({type(exc).__name__})"
    return None


@pytest.fixture(autouse=True)
def _needs_gpu(request):
    if request.node.get_closest_marker("gpu") is None:
        return
    reason = _device_or_reason()
    if reason:
        pytest.skip(reason)
