"""The text roofline chart: exact output for a crafted document, flags, levels, model documents."""

from __future__ import annotations

import pytest

from rooflinecli import results
from rooflinecli.errors import RooflineError
from rooflinecli.present import terminal_chart as chart

SPEC = {
    "name": "testgpu",
    "display_name": "Test GPU",
    "memory_bandwidth_gbs": 1000.0,
    "tflops": {"fp32": 10.0},
}
DEVICE = {"name": "Test GPU", "compute_capability": "9.0", "driver": "570.1"}


def rec(stage: str, ai: float, tf: float | None, **kw: object) -> dict[str, object]:
    r: dict[str, object] = {
        "stage": stage,
        "kind": "stage",
        "dtype": "fp32",
        "m": 64,
        "n": 64,
        "k": 64,
        "ai_ideal": ai,
        "tflops": tf,
        "peak_tflops": 10.0,
        "peak_key": "fp32",
        "verified": tf is not None,
    }
    r.update(kw)
    return r


# bandwidth 1000 GB/s and peak 10 TFLOP/s: ridge at 10 FLOP/byte; the memory roof at 1 FLOP/byte
# is 1 TFLOP/s. x spans 1..100 over 40 columns, y spans 0.1..10 over 10 rows.
GOLDEN = """\
Roofline: GEMM 64x64x64 fp32 on Test GPU (spec testgpu)
TFLOP/s
 10 |                  //+-------------------
    |              ////  :                  a
    |         /////      :
    |     ////           :
    | ////               :
  1 |/                   :
    |b                   :
    |                    :
    |                    :
0.1 |                    :
    ++-------------------+------------------+
     1                  10                 100
         arithmetic intensity (FLOP/byte)
/ memory roof 1,000 GB/s
- fp32 roof 10 TFLOP/s; + ridge point 10.0 FLOP/B
a tiled 5.0 TFLOP/s @ 100.0 FLOP/B
b naive 0.5 TFLOP/s @ 1.0 FLOP/B
! broken 20.0 TFLOP/s @ 100.0 FLOP/B is above its roof (10.0 TFLOP/s): a
  measurement error, not drawn
? bad: not drawn (failed verification)
"""


def golden_doc() -> dict[str, object]:
    records = [
        rec("tiled", 100.0, 5.0),
        rec("naive", 1.0, 0.5),
        rec("broken", 100.0, 20.0),
        rec("bad", 100.0, None, verified=False),
    ]
    return results.new_document(SPEC, DEVICE, records)


def test_golden_chart() -> None:
    assert chart.render(golden_doc(), width=40, height=10) == GOLDEN


def test_point_above_roof_is_flagged_not_drawn() -> None:
    doc = results.new_document(SPEC, DEVICE, [rec("fast", 2.0, 3.0)])  # roof at 2 FLOP/B: 2.0
    text = chart.render(doc, width=40, height=10)
    lines = text.splitlines()
    # wrapped at 80 columns, its second line indented
    at = lines.index(
        "! fast 3.0 TFLOP/s @ 2.0 FLOP/B is above its roof (2.0 TFLOP/s): a measurement"
    )
    assert lines[at + 1] == "  error, not drawn"
    grid = [line.split("|", 1)[1] for line in lines[2:12]]
    assert not any("a" in row for row in grid)  # no marker was handed out


def test_memory_levels_one_point_each() -> None:
    r = rec("warptile", 100.0, 5.0, ai_dram=50.0, ai_l2=8.0, ai_l1=2.0)
    text = chart.render(results.new_document(SPEC, DEVICE, [r]), width=40, height=10)
    legend = text.splitlines()[-3:]
    # L1 at 2 FLOP/B is above the DRAM slope (2 TFLOP/s) but cache levels answer to the peak only
    assert legend == [
        "a warptile DRAM 5.0 TFLOP/s @ 50.0 FLOP/B",
        "b warptile L2 5.0 TFLOP/s @ 8.0 FLOP/B",
        "c warptile L1 5.0 TFLOP/s @ 2.0 FLOP/B",
    ]
    # a DRAM intensity under the measured speed's roof is a measurement error
    r2 = rec("warptile", 100.0, 5.0, ai_dram=2.0)
    text2 = chart.render(results.new_document(SPEC, DEVICE, [r2]), width=40, height=10)
    assert text2.splitlines()[-2].startswith("! warptile DRAM 5.0 TFLOP/s @ 2.0 FLOP/B is above")


def test_points_sharing_a_cell_are_drawn_side_by_side() -> None:
    doc = results.new_document(SPEC, DEVICE, [rec("one", 100.0, 5.0), rec("two", 100.0, 5.01)])
    lines = chart.render(doc, width=40, height=10).splitlines()
    # 5 TFLOP/s at 100 FLOP/B: row 3 of the grid, last column, and the one left of it
    assert lines[5].endswith(" ab")
    assert lines[-1] == (
        "points sharing a cell are drawn side by side around it; intensities as listed"
    )
    assert not any("one cell holds" in line for line in lines)


def test_points_too_many_for_the_room_beside_their_cell_are_one_marker_and_a_list() -> None:
    # 2 * SPREAD + 1 cells of a row at most: one more point than that shares one marker
    many = [rec(f"s{i}", 100.0, 5.0 + i / 1000) for i in range(2 * chart.SPREAD + 2)]
    lines = chart.render(results.new_document(SPEC, DEVICE, many), width=40, height=10)
    assert lines.splitlines()[5].endswith("*")
    assert lines.splitlines()[-1] == "* one cell holds a b c d e f g h i j"


def test_several_shapes_are_named() -> None:
    doc = results.new_document(
        SPEC, DEVICE, [rec("s", 100.0, 5.0), rec("s", 10.0, 1.0, m=8, n=8, k=8)]
    )
    lines = chart.render(doc, width=40, height=10).splitlines()
    assert lines[0] == "Roofline: GEMM 64x64x64, 8x8x8 fp32 on Test GPU (spec testgpu)"
    assert lines[-2:] == [
        "a s 64x64x64 5.0 TFLOP/s @ 100.0 FLOP/B",
        "b s 8x8x8 1.0 TFLOP/s @ 10.0 FLOP/B",
    ]


def test_model_document_points() -> None:
    recs = [
        rec("naive", 100.0, None, ai_instruction=0.25, verified=None),
        rec("tiled", 100.0, None, ai_instruction=2.0, verified=None),
    ]
    doc = results.new_document(SPEC, None, recs)
    lines = chart.render(doc, width=40, height=10).splitlines()
    assert lines[0] == "Roofline model: GEMM 64x64x64 fp32 on Test GPU (testgpu)"
    assert lines[-3:] == [
        "a ideal attainable 10.0 TFLOP/s @ 100.0 FLOP/B (every byte once)",
        "b naive attainable 0.25 TFLOP/s @ 0.25 FLOP/B (by instruction)",
        "c tiled attainable 2.0 TFLOP/s @ 2.0 FLOP/B (by instruction)",
    ]


def test_deterministic_and_sized() -> None:
    doc = golden_doc()
    a, b = chart.render(doc), chart.render(doc)
    assert a == b
    grid_rows = a.splitlines()[2:22]
    assert len(grid_rows) == 20
    assert max(len(r) for r in grid_rows) <= 5 + 72
    with pytest.raises(RooflineError):
        chart.render(doc, width=10, height=3)


def test_no_bandwidth_is_one_clear_error() -> None:
    doc = results.new_document({"name": "x", "tflops": {"fp32": 1.0}}, DEVICE, [rec("a", 1, 1)])
    with pytest.raises(RooflineError, match="memory_bandwidth_gbs"):
        chart.render(doc)
