"""The analytic roofline model: pure arithmetic, no CuPy, tested against hand-computed values.

Units: FLOPs and bytes are counts; peaks are TFLOP/s; bandwidth is GB/s; intensity is FLOP/byte.
"""

from __future__ import annotations

DTYPE_BYTES: dict[str, int] = {
    "fp64": 8,
    "fp32": 4,
    "tf32": 4,
    "fp16": 2,
    "bf16": 2,
    "fp8": 1,
    "int8": 1,
}


def gemm_flops(m: int, n: int, k: int) -> int:
    """C = alpha*A@B + beta*C: one multiply-add is 2 FLOPs, M*N*K of them."""
    return 2 * m * n * k


# bytes of an element of C where it differs from the inputs': FP8 GEMMs write bf16
OUTPUT_BYTES: dict[str, int] = {"fp8": 2}


def gemm_bytes_ideal(
    m: int,
    n: int,
    k: int,
    elem_bytes: int,
    beta_nonzero: bool = False,
    out_bytes: int | None = None,
) -> int:
    """Each input read once and C written once (read too when beta != 0): perfect caching.
    A and B are elem_bytes an element, C out_bytes (default: elem_bytes)."""
    out = elem_bytes if out_bytes is None else out_bytes
    return elem_bytes * (m * k + k * n) + out * m * n * (2 if beta_nonzero else 1)


def intensity(flops: float, nbytes: float) -> float:
    """Arithmetic intensity in FLOP/byte."""
    if nbytes <= 0:
        raise ValueError("bytes must be positive")
    return flops / nbytes


def thread_tile_intensity(tm: int, tn: int, elem_bytes: int) -> float:
    """By load instruction: per k a TMxTN tile loads TM + TN elements and does TM*TN FMAs."""
    return (2 * tm * tn) / (elem_bytes * (tm + tn))


def tflops(flops: float, time_ms: float) -> float:
    """Achieved TFLOP/s for `flops` done in `time_ms` milliseconds."""
    if time_ms <= 0:
        raise ValueError("time must be positive")
    return flops / (time_ms * 1e-3) / 1e12
