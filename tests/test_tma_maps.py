"""The tensor maps of the TMA stages (rooflinecli/gpu/tma.py), checked without a GPU: which
matrix, which view and which box each map gets (the encoder itself is replaced)."""

import dataclasses

import pytest

from rooflinecli.errors import RooflineError
from rooflinecli.gpu import tma
from rooflinecli.stages import gemm as stages

TMA_STAGES = [s for s in stages.STAGES if s.params.get("TMA")]
PAIR = stages.BY_NAME["mma_tma_ws"].with_params({"CLUSTER_M": 2})


@pytest.fixture
def encoded(monkeypatch):
    calls: list[tuple] = []

    def fake(array, rows, row_len, box_rows, box_cols, dtype=None):
        calls.append((array, rows, row_len, box_rows, box_cols))
        return len(calls)

    monkeypatch.setattr(tma, "encode_tensor_map", fake)
    return calls


@pytest.mark.parametrize("stage", TMA_STAGES + [PAIR], ids=lambda s: s.name)
def test_maps_view_a_m_by_k_b_k_by_n_c_m_by_n(stage, encoded):
    """A: M x K in boxes of BM rows x BK; B: the contract's K x N in boxes of BK rows x 64
    columns (one 128-byte swizzle row; a BN-wide tile is BN / 64 of them, also for a cluster
    pair, which splits the boxes, not the box); C (TMA_C=1): M x N in 64 x 64 boxes."""
    m, n, k = 1001, 600, 1032
    args = tma.extra_args(stage, "A", "B", "C", m, n, k, "bf16")
    p = stage.params
    expect = [("A", m, k, p["BM"], p["BK"]), ("B", k, n, p["BK"], 64)]
    if p.get("TMA_C"):
        expect.append(("C", m, n, tma.C_BOX_ROWS, tma.C_BOX_COLS))
    assert encoded == expect
    assert args == tuple(range(1, len(expect) + 1))


def test_no_maps_without_tma_and_none_for_a_transposed_b(encoded):
    assert tma.extra_args(stages.BY_NAME["mma_multistage"], "A", "B", "C", 64, 64, 64) == ()
    nk = dataclasses.replace(stages.BY_NAME["wgmma_tma"], b_layout="nk")
    with pytest.raises(RooflineError, match="row-major B"):
        tma.extra_args(nk, "A", "B", "C", 64, 64, 64)
    assert encoded == []


class _Dev:
    """A device array as the encoder sees it: only a pointer."""

    def __init__(self, ptr: int = 1 << 20):
        self.__cuda_array_interface__ = {"data": (ptr, False)}


@pytest.fixture
def driver_calls(monkeypatch):
    """cuTensorMapEncodeTiled replaced: each call's dimensions, byte strides and box, as ints."""
    driver = pytest.importorskip("cuda.bindings.driver")
    calls: list[dict] = []

    class Map:
        opaque = list(range(16))

    def fake(dtype, rank, ptr, dims, strides, box, elem_strides, *modes):
        calls.append(
            dict(
                rank=rank,
                ptr=ptr,
                dims=[int(x) for x in dims],
                strides=[int(x) for x in strides],
                box=[int(x) for x in box],
                elem_strides=[int(x) for x in elem_strides],
                dtype=dtype,
            )
        )
        return driver.CUresult.CUDA_SUCCESS, Map()

    monkeypatch.setattr(driver, "cuTensorMapEncodeTiled", fake)
    return driver, calls


def test_attention_maps_are_3d_per_head_views(driver_calls):
    """Q: [B*H, seq, D] in boxes of 64 d x BLOCK_M rows x 1 head; K and V: [B*Hkv, seq, D] in
    boxes of 64 x BLOCK_N x 1; byte strides D*2 and seq*D*2 (e.g. 128*2 = 256, 77*256 = 19712)."""
    driver, calls = driver_calls
    b, h, hkv, n, d = 2, 6, 2, 77, 128
    args = tma.attention_extra_args(
        {"BLOCK_N": 128}, _Dev(), _Dev(), _Dev(), _Dev(), b, h, hkv, n, d, "bf16"
    )
    assert len(args) == 3
    assert [list(a["b"]) for a in args] == [list(range(16))] * 3
    assert [c["dims"] for c in calls] == [[128, 77, 12], [128, 77, 4], [128, 77, 4]]
    assert [c["strides"] for c in calls] == [[256, 19712]] * 3
    assert [c["box"] for c in calls] == [[64, 128, 1]] * 3
    assert all(c["rank"] == 3 and c["elem_strides"] == [1, 1, 1] for c in calls)
    assert all(
        c["dtype"] == driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 for c in calls
    )


def test_attention_maps_follow_block_sizes_and_reject_bad_shapes(driver_calls):
    _, calls = driver_calls
    tma.attention_extra_args(
        {"BLOCK_M": 64, "BLOCK_N": 176}, _Dev(), _Dev(), _Dev(), _Dev(), 1, 4, 4, 1000, 64, "fp16"
    )
    assert [c["box"] for c in calls] == [[64, 64, 1], [64, 176, 1], [64, 176, 1]]
    assert [c["strides"] for c in calls] == [[128, 128000]] * 3
    with pytest.raises(RooflineError, match="multiple of 64"):
        tma.attention_extra_args({}, _Dev(), _Dev(), _Dev(), _Dev(), 1, 4, 4, 100, 96, "fp16")
    with pytest.raises(RooflineError, match="multiple of kv_heads"):
        tma.attention_extra_args({}, _Dev(), _Dev(), _Dev(), _Dev(), 1, 6, 4, 100, 64, "fp16")


def test_gemm_maps_through_the_nd_encoder_keep_their_2d_view(driver_calls):
    """encode_tensor_map (the GEMM stages') is the N-D encoder with two dimensions: rows of
    row_len elements, one byte stride (row_len * 2), box (box_cols, box_rows)."""
    _, calls = driver_calls
    tma.encode_tensor_map(_Dev(), 1001, 1032, 128, 64, "fp16")
    assert calls[0]["rank"] == 2
    assert (calls[0]["dims"], calls[0]["strides"], calls[0]["box"]) == (
        [1032, 1001],
        [2064],
        [64, 128],
    )
    with pytest.raises(RooflineError, match="16-byte aligned"):
        tma.encode_tensor_map(_Dev(ptr=8), 64, 64, 64, 64, "fp16")
    with pytest.raises(RooflineError, match="does not fit"):
        tma.encode_tensor_map(_Dev(), 64, 256, 64, 128, "fp16")


def test_attention_store_map_of_o_only_with_tma_o(driver_calls):
    """TMA_O=1: a fourth map, over O [B*H, seq, D] in boxes of 64 d x 64 rows (a consumer
    warpgroup's rows), after Q, K, V."""
    _, calls = driver_calls
    q, k, v, o = _Dev(1 << 20), _Dev(2 << 20), _Dev(3 << 20), _Dev(4 << 20)
    args = tma.attention_extra_args({"TMA_O": 1}, q, k, v, o, 2, 4, 4, 77, 128, "fp16")
    assert len(args) == 4
    assert [c["ptr"] for c in calls] == [1 << 20, 2 << 20, 3 << 20, 4 << 20]
    assert calls[3]["dims"] == [128, 77, 8] and calls[3]["box"] == [64, 64, 1]
    calls.clear()
    assert len(tma.attention_extra_args({"TMA_O": 0}, q, k, v, o, 2, 4, 4, 77, 128, "fp16")) == 3
    assert [c["ptr"] for c in calls] == [1 << 20, 2 << 20, 3 << 20]
