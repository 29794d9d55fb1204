"""Host-side extras for the Tensor Core stages: TMA tensor maps.

Stages whose params hold TMA=1 (23_mma_tma_ws.cu, 24_wgmma_tma.cu, 25_wgmma_ws.cu,
26_wgmma_persistent.cu, 27_wgmma_cluster.cu, 28_wgmma_stagger.cu) load their tiles with the
copy engine, which needs a CUtensorMap per operand, encoded on the host and passed by value as
extra kernel parameters after the 8 of the contract:

    ENTRY(M, N, K, alpha, A, B, beta, C, const __grid_constant__ TmaMap tma_a, ... tma_b)

`extra_args` builds them with cuda.bindings.driver.cuTensorMapEncodeTiled (imported lazily: the
CLI must import without it) from the arrays' device pointers. Each map is a 2-D view of a
row-major matrix, 128-byte swizzled, zeros outside the matrix (which is how the kernels handle
M, N and K tails):

  * A (M x K): boxes of BM rows x BK columns (BK = 64 two-byte elements: one swizzle row);
  * B (K x N, the contract's row-major B, b_layout "kn"): boxes of BK rows x B_BOX_COLS = 64
    columns. A 128-byte swizzled box is at most 128 bytes wide, so the kernels load a BK x BN
    tile as BN / 64 boxes side by side (box j at j * BK * 128 bytes of shared memory); the
    box does not depend on BN, nor on CLUSTER_M (the pairs of stages 23, 27 and 28 each load
    half the boxes and multicast them).

Row strides must be whole 16-byte units: K % 8 == 0 (A) and N % 8 == 0 (B, C); M is free (the
registry's needs_multiple / multiple_of say so). The 128 bytes of a map travel as a NumPy
structured scalar of dtype [("b", np.uint64, 16)] (align=True), which CuPy copies into the
parameter buffer.

With TMA_C=1 as well (23_mma_tma_ws.cu and 26-28) a third map follows, over C
(M x N row-major): the kernel stores its results through the copy engine in boxes of
C_BOX_ROWS x C_BOX_COLS, 128-byte swizzled, and the engine skips elements outside C (the M and
N tails).

The maps hold the device addresses: rebuild them whenever A, B or C is reallocated.
"""

from __future__ import annotations

from typing import Any

from rooflinecli.build.stages import Stage
from rooflinecli.errors import RooflineError

TMA_SWIZZLE_BYTES = 128  # the kernels' WGMMA descriptors assume 128-byte swizzled tiles
# B's box: BK rows (k) x 64 columns (n) of the K x N matrix, one 128-byte swizzle row per k
B_BOX_COLS = TMA_SWIZZLE_BYTES // 2
# the TMA-store epilogue's box: a consumer warpgroup's 64 rows x one 128-byte swizzle row
C_BOX_ROWS, C_BOX_COLS = 64, 64


def needs_tensor_maps(stage: Stage) -> bool:
    return int(stage.params.get("TMA", 0)) == 1


def _device_pointer(x: Any) -> int:
    iface = getattr(x, "__cuda_array_interface__", None)
    if iface is not None:
        return int(iface["data"][0])
    return int(x.data.ptr)  # a CuPy array without the interface (never seen; cheap to allow)


def _data_type(driver: Any, array: Any, dtype: str | None) -> Any:
    """The tensor map's element type. For a plain tile copy any 16-bit type moves the same
    bytes (and zero fill is all-zero bits in each), so raw uint16 storage of bf16 is fine."""
    types = driver.CUtensorMapDataType
    name = dtype or str(getattr(array, "dtype", ""))
    if name in ("fp16", "float16"):
        return types.CU_TENSOR_MAP_DATA_TYPE_FLOAT16
    if name in ("bf16", "bfloat16"):
        return types.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    if name in ("uint16", "int16"):
        return types.CU_TENSOR_MAP_DATA_TYPE_UINT16
    raise RooflineError(f"TMA stages take 16-bit inputs, got {name!r}")


def _struct_scalar(words: list[int]) -> Any:
    import numpy as np

    dt = np.dtype([("b", np.uint64, 16)], align=True)
    value = np.zeros((), dtype=dt)
    value["b"] = words
    return value[()]


def encode_tensor_map(
    array: Any, rows: int, row_len: int, box_rows: int, box_cols: int, dtype: str | None = None
) -> Any:
    """A 2-D tiled tensor map over a row-major rows x row_len matrix of 2-byte elements."""
    try:
        from cuda.bindings import driver
    except ImportError as exc:
        raise RooflineError(
            f"TMA stages need cuda-bindings (cuda.bindings.driver): {exc}"
        ) from None
    ptr = _device_pointer(array)
    if ptr % 16:
        raise RooflineError("TMA needs a 16-byte aligned base address")
    if (row_len * 2) % 16:
        raise RooflineError(
            f"TMA needs rows of a multiple of 16 bytes ({rows}x{row_len}: rows of {row_len})"
        )
    if box_cols * 2 > TMA_SWIZZLE_BYTES or not 1 <= box_rows <= 256:
        raise RooflineError(f"TMA box {box_rows}x{box_cols} does not fit the 128-byte swizzle")
    err, tmap = driver.cuTensorMapEncodeTiled(
        _data_type(driver, array, dtype),
        2,
        ptr,
        [driver.cuuint64_t(row_len), driver.cuuint64_t(rows)],  # innermost dimension first
        [driver.cuuint64_t(row_len * 2)],  # byte stride of dimension 1 (dimension 0 is packed)
        [driver.cuuint32_t(box_cols), driver.cuuint32_t(box_rows)],
        [driver.cuuint32_t(1), driver.cuuint32_t(1)],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,  # zeros outside
    )
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RooflineError(
            f"cuTensorMapEncodeTiled failed ({err}) for {rows}x{row_len}, box {box_rows}x{box_cols}"
        )
    return _struct_scalar([int(w) for w in tmap.opaque])


def extra_args(
    stage: Stage, A: Any, B: Any, C: Any, M: int, N: int, K: int, dtype: str | None = None
) -> tuple[Any, ...]:
    """Kernel arguments to append after the contract's 8: () unless the stage uses TMA.

    B is the contract's K x N row-major matrix (the TMA stages' b_layout is "kn").
    dtype ("fp16"/"bf16") overrides the element type read off A (needed for none: see above).
    """
    if not needs_tensor_maps(stage):
        return ()
    if stage.b_layout != "kn":
        raise RooflineError(f"stage {stage.name}: TMA maps are built for row-major B (K x N)")
    p = stage.params
    bm, bn, bk = int(p["BM"]), int(p["BN"]), int(p["BK"])
    if bn % B_BOX_COLS:
        raise RooflineError(f"stage {stage.name}: BN = {bn} is not whole {B_BOX_COLS}-column boxes")
    tma_a = encode_tensor_map(A, M, K, bm, bk, dtype)
    tma_b = encode_tensor_map(B, K, N, bk, B_BOX_COLS, dtype)
    if int(p.get("TMA_C", 0)) == 1:  # the TMA-store epilogue: a map over C too
        return (tma_a, tma_b, encode_tensor_map(C, M, N, C_BOX_ROWS, C_BOX_COLS, dtype))
    return (tma_a, tma_b)
