"""Host-side extras for the Tensor Core stages: TMA tensor maps.

Stages whose params hold TMA=1 (23_mma_tma_ws.cu, 24_wgmma_tma.cu, 25_wgmma_ws.cu,
26_wgmma_persistent.cu, 27_wgmma_cluster.cu, 28_wgmma_stagger.cu, 29_wgmma_streamk.cu) load
their tiles with the copy engine, which needs a CUtensorMap per operand, encoded on the host and
passed by value as extra kernel parameters after the 8 of the contract (stage 29 takes its
workspace after them: rooflinecli.gpu.runner.workspace_args):

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

Stage 31 (31_wgmma_swapab.cu) takes the same two maps, A's box BM rows (its tile's rows of C)
x BK.

With TMA_C=1 as well (23_mma_tma_ws.cu and 26-29) a third map follows, over C
(M x N row-major): the kernel stores its results through the copy engine in boxes of
C_BOX_ROWS x C_BOX_COLS, 128-byte swizzled, and the engine skips elements outside C (the M and
N tails).

The attention stage (43_attn_wgmma.cu) takes three maps after the attention contract's ten
arguments (`attention_extra_args`): Q, K and V as 3-D views [batch * heads, seq, head_dim] (K and
V over kv_heads), boxes of 64 d columns x BLOCK_M or BLOCK_N rows x one head, so the engine
zero-fills rows past seq of each head; with TMA_O=1 a fourth, over O, for the stores.
`encode_tiled` is the encoder of any rank (2 to 5); `encode_tensor_map` is its 2-D case.

The maps hold the device addresses: rebuild them whenever A, B or C is reallocated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rooflinecli.errors import RooflineError
from rooflinecli.stages.gemm import Stage

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


def _elem_bytes(array: Any, dtype: str | None) -> int:
    """1 for FP8 codes (uint8 storage), else 2: the element sizes TMA stages take."""
    name = dtype or str(getattr(array, "dtype", ""))
    return 1 if name in ("fp8", "e4m3", "e5m2", "uint8") else 2


def _data_type(driver: Any, array: Any, dtype: str | None) -> Any:
    """The tensor map's element type. For a plain tile copy any type of the size moves the same
    bytes (and zero fill is all-zero bits in each), so raw uint16 storage of bf16 is fine, and
    FP8 codes travel as uint8."""
    types = driver.CUtensorMapDataType
    name = dtype or str(getattr(array, "dtype", ""))
    if _elem_bytes(array, dtype) == 1:
        return types.CU_TENSOR_MAP_DATA_TYPE_UINT8
    if name in ("fp16", "float16"):
        return types.CU_TENSOR_MAP_DATA_TYPE_FLOAT16
    if name in ("bf16", "bfloat16"):
        return types.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    if name in ("uint16", "int16"):
        return types.CU_TENSOR_MAP_DATA_TYPE_UINT16
    raise RooflineError(f"TMA stages take 16-bit or FP8 inputs, got {name!r}")


def _struct_scalar(words: list[int]) -> Any:
    import numpy as np

    dt = np.dtype([("b", np.uint64, 16)], align=True)
    value = np.zeros((), dtype=dt)
    value["b"] = words
    return value[()]


def encode_tiled(
    array: Any,
    dims: Sequence[int],
    box: Sequence[int],
    dtype: str | None = None,
    swizzle: bool = True,
) -> Any:
    """A tiled tensor map over a packed row-major tensor of 2-byte (FP8: 1-byte) elements,
    128-byte swizzled (or, swizzle=False, laid out in shared memory as in global: box rows of up
    to 256 elements), zeros outside: `dims` and `box` list the extents innermost first (dims[0]
    is the contiguous one, e.g. (row_len, rows) for a matrix), as cuTensorMapEncodeTiled takes
    them."""
    try:
        from cuda.bindings import driver
    except ImportError as exc:
        raise RooflineError(
            f"TMA stages need cuda-bindings (cuda.bindings.driver): {exc}"
        ) from None
    shape = "x".join(str(d) for d in reversed(dims))
    if len(dims) != len(box) or not 2 <= len(dims) <= 5:
        raise RooflineError(f"TMA maps have 2 to 5 dimensions, one box extent each ({shape})")
    ptr = _device_pointer(array)
    if ptr % 16:
        raise RooflineError("TMA needs a 16-byte aligned base address")
    elem = _elem_bytes(array, dtype)
    if (dims[0] * elem) % 16:
        raise RooflineError(
            f"TMA needs rows of a multiple of 16 bytes ({shape}: rows of {dims[0]})"
        )
    box_text = "x".join(str(b) for b in reversed(box))
    if not all(1 <= b <= 256 for b in box):
        raise RooflineError(f"TMA box {box_text}: each extent is 1 to 256")
    if swizzle and box[0] * elem > TMA_SWIZZLE_BYTES:
        raise RooflineError(f"TMA box {box_text} does not fit the 128-byte swizzle")
    if not swizzle and (box[0] * elem) % 16:
        raise RooflineError(f"TMA box {box_text}: unswizzled rows are a multiple of 16 bytes")
    strides, stride = [], elem
    for extent in dims[:-1]:  # byte strides of dimensions 1.. (dimension 0 is packed)
        stride *= extent
        strides.append(driver.cuuint64_t(stride))
    err, tmap = driver.cuTensorMapEncodeTiled(
        _data_type(driver, array, dtype),
        len(dims),
        ptr,
        [driver.cuuint64_t(d) for d in dims],
        strides,
        [driver.cuuint32_t(b) for b in box],
        [driver.cuuint32_t(1)] * len(dims),
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B
        if swizzle
        else driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,  # zeros outside
    )
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RooflineError(f"cuTensorMapEncodeTiled failed ({err}) for {shape}, box {box_text}")
    return _struct_scalar([int(w) for w in tmap.opaque])


def encode_tensor_map(
    array: Any, rows: int, row_len: int, box_rows: int, box_cols: int, dtype: str | None = None
) -> Any:
    """A 2-D tiled tensor map over a row-major rows x row_len matrix of 2-byte elements."""
    return encode_tiled(array, (row_len, rows), (box_cols, box_rows), dtype)


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


# The attention stage (43_attn_wgmma.cu): boxes of 64 d columns (one 128-byte swizzle row) by
# BLOCK_M query rows (Q) or BLOCK_N key rows (K, V); a HEAD_DIM-wide tile is HEAD_DIM / 64 boxes.
ATTN_BOX_COLS = TMA_SWIZZLE_BYTES // 2
ATTN_BLOCK_M, ATTN_BLOCK_N = 128, 128  # the stage's defaults when params do not say
ATTN_O_BOX_ROWS = 64  # TMA_O=1: each consumer warpgroup stores its 64 rows of O


def attention_extra_args(
    params: Mapping[str, int],
    q: Any,
    k: Any,
    v: Any,
    o: Any,
    batch: int,
    heads: int,
    kv_heads: int,
    seq: int,
    head_dim: int,
    dtype: str | None = None,
) -> tuple[Any, ...]:
    """The TMA maps the attention stage takes after the contract's ten arguments: Q, K and V, each
    a 3-D view [batch * heads (or kv_heads), seq, head_dim] of the contract's 4-D tensor, so the
    copy engine zero-fills rows past seq within each head (a box never reads the next head).
    With TMA_O=1 a fourth map follows, over O [batch * heads, seq, head_dim] in boxes of 64 d x
    64 rows (one consumer warpgroup's rows): the stage stores O through it, rows past seq
    skipped by the engine; otherwise O is written from registers."""
    if head_dim % ATTN_BOX_COLS:
        raise RooflineError(f"TMA attention needs head_dim a multiple of {ATTN_BOX_COLS}")
    if kv_heads < 1 or heads % kv_heads:
        raise RooflineError(f"heads ({heads}) must be a multiple of kv_heads ({kv_heads})")
    block_m = int(params.get("BLOCK_M", ATTN_BLOCK_M))
    block_n = int(params.get("BLOCK_N", ATTN_BLOCK_N))
    tma_q = encode_tiled(q, (head_dim, seq, batch * heads), (ATTN_BOX_COLS, block_m, 1), dtype)
    kv_dims = (head_dim, seq, batch * kv_heads)
    kv_box = (ATTN_BOX_COLS, block_n, 1)
    maps = (tma_q, encode_tiled(k, kv_dims, kv_box, dtype), encode_tiled(v, kv_dims, kv_box, dtype))
    if int(params.get("TMA_O", 0)) == 1:
        o_box = (ATTN_BOX_COLS, ATTN_O_BOX_ROWS, 1)
        return (*maps, encode_tiled(o, (head_dim, seq, batch * heads), o_box, dtype))
    return maps
