"""Device arrays of one element type (rooflinecli.core.elements): float32 values stored as the
type, read back as float32, and poisoned with its NaN. bf16 lives as its bit patterns (uint16):
CuPy has no bfloat16, so its conversions are written out here, round to nearest even."""

from __future__ import annotations

from rooflinecli.core.elements import element


def to_bf16_bits(cp, x):  # type: ignore[no-untyped-def]
    """float32 -> bfloat16 bit patterns (uint16), round to nearest even."""
    u = x.astype(cp.float32).view(cp.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(cp.uint16)


def from_bf16_bits(cp, b):  # type: ignore[no-untyped-def]
    """bfloat16 bit patterns (uint16) -> float32, exactly."""
    return (b.astype(cp.uint32) << 16).view(cp.float32)


def store(cp, x, dtype: str):  # type: ignore[no-untyped-def]
    """float32 values as the dtype's device array (bf16 as its bits)."""
    el = element(dtype)
    if el.bits:
        return to_bf16_bits(cp, x)
    return x.astype(getattr(cp, el.storage))


def as_f32(cp, x, dtype: str):  # type: ignore[no-untyped-def]
    """The dtype's device array as float32 values (exact: every element type here fits)."""
    if element(dtype).bits:
        return from_bf16_bits(cp, x)
    return x.astype(cp.float32)


def poison(x, dtype: str) -> None:  # type: ignore[no-untyped-def]
    """The type's NaN in every element (an element a kernel misses stays NaN), queued on the
    current stream."""
    x.fill(element(dtype).poison)


def torch_dtype(dtype: str):  # type: ignore[no-untyped-def]
    """The PyTorch dtype of the element type (PyTorch imported here, only when asked)."""
    import torch

    return getattr(torch, element(dtype).torch)
