"""The results page's summary of `--stages best` documents (docgen `best` blocks): cuBLAS's
time over the pick's, per document and per M bucket, computed by hand here."""

import math

from rooflinecli import docgen


def _rec(kind, m, t, stage="s", verified=True):
    rec = {"kind": kind, "stage": stage, "m": m, "n": 64, "k": 64, "dtype": "bf16",
           "time_ms": t, "verified": verified}  # fmt: skip
    if kind == "stage":  # as a run writes it: the reference it is held to, by name
        rec["compared_with"] = "ref"
    return rec


def test_geomeans_the_worst_shape_and_the_buckets():
    doc = {"records": [
        _rec("reference", 1, 1.0, "ref"), _rec("stage", 1, 2.0),      # 0.5
        _rec("reference", 3, 1.0, "ref"), _rec("stage", 3, 0.5),      # 2.0
        _rec("reference", 300, 3.0, "ref"), _rec("stage", 300, 4.0, verified=False),
    ]}  # fmt: skip
    text = docgen._best([doc], ["d.json"])
    head, buckets = text.split("\n\n")
    row = head.splitlines()[2]
    # geomean of 0.5 and 2.0 is 1; one of two verified shapes at 0.90 or better; one failed
    assert "| `d.json` | bf16 | 3 | 1.000 | 1/3 | 1x64x64 0.50 | 1 |" == row
    assert buckets.splitlines()[0] == "| document | M 1 | M 2-4 |"
    assert buckets.splitlines()[2] == "| `d.json` | 0.50 | 2.00 |"


def test_a_pick_without_a_reference_counts_as_not_verified():
    doc = {"records": [_rec("stage", 8, 1.0)]}
    got = docgen._best_ratios(doc)
    assert got == [((8, 64, 64), "s", None)]
    assert math.isnan(docgen._geomean([]))


def test_a_pick_is_held_to_the_reference_it_was_compared_with():
    fast = {
        **_rec("reference", 64, 0.8, stage="cublaslt_fp8_fast"),
        "compared_with": "cublaslt_fp8",
    }
    pick = {**_rec("stage", 64, 1.0, stage="wgmma_fp8"), "compared_with": "cublaslt_fp8_fast"}
    doc = {"records": [_rec("reference", 64, 0.9, stage="cublaslt_fp8"), fast, pick]}
    assert docgen._best_ratios(doc) == [((64, 64, 64), "wgmma_fp8", 0.8)]
    del pick["compared_with"]  # no name: held to none (results.upgrade names one on load)
    assert docgen._best_ratios(doc) == [((64, 64, 64), "wgmma_fp8", None)]
