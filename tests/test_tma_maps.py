"""The tensor maps of the TMA stages (rooflinecli/gpu/tma.py), checked without a GPU: which
matrix, which view and which box each map gets (the encoder itself is replaced)."""

import dataclasses

import pytest

from rooflinecli.build import stages
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import tma

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
