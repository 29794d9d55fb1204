"""Why a stage lands where it does: tiles, waves and the last wave's idle SMs, and the time the
roofs allow, from the record alone (rooflinecli.core.waves), and in the verdict's line."""

from __future__ import annotations

import pytest

from rooflinecli import paths
from rooflinecli.core import waves
from rooflinecli.present import verdict


def rec(**kw):
    base = {"tiles": 64, "sm_count": 132, "grid": [64, 1, 1], "blocks_per_sm": 1}
    base.update(flops=2 * 256 * 4096 * 4096, attainable_tflops=800.0, time_ms=0.0259)
    return {**base, **kw}


def test_one_wave_names_the_share_of_the_sms_it_fills():
    assert waves.sentence(rec()) == (
        "64 tiles on 132 SMs: one wave at 48%; the roofs allow 10.7 us, it took 25.9 us (2.4x)"
    )


@pytest.mark.parametrize(
    ("grid", "per_sm", "tiles", "want_waves", "want_last"),
    [
        ([300, 1, 1], 1, 300, 300 / 132, 36 / 132),  # 2 full waves and 36 tiles
        ([20, 15, 1], 2, 300, 300 / 264, 36 / 264),  # two blocks a SM: 264 at once
        ([132, 1, 1], 1, 1024, 1024 / 132, 100 / 132),  # persistent: 132 blocks walk 1024 tiles
        ([64, 1, 3], 1, 64, 192 / 132, 60 / 132),  # split-K: 3 runs of K a tile
    ],
)
def test_waves_count_tiles_over_the_blocks_resident_at_once(grid, per_sm, tiles, want_waves,
                                                            want_last):  # fmt: skip
    w = waves.waves(rec(grid=grid, blocks_per_sm=per_sm, tiles=tiles))
    assert w is not None
    assert w.waves == pytest.approx(want_waves) and w.last_busy == pytest.approx(want_last)


@pytest.mark.parametrize("field", ["tiles", "sm_count", "grid"])
def test_a_record_that_does_not_say_what_it_launched_has_no_sentence(field):
    r = rec()
    del r[field]
    assert waves.sentence(r) is None
    assert waves.sentence(rec(**{field: "64"})) is None


def test_no_roof_time_without_a_finite_speed():
    assert waves.sentence(rec(attainable_tflops=None)) == "64 tiles on 132 SMs: one wave at 48%"
    assert waves.roof_time_ms(rec(flops=float("nan"))) is None


def test_the_verdict_line_says_it_after_the_position():
    r = rec(kind="stage", stage="wgmma_tma", roof="compute", ai_ideal=200.0, ridge_point=206.0,
            tflops=20.7, pct_of_roof=2.6, peak_tflops=989.4)  # fmt: skip
    line = verdict.stage_line(r, None, None, None, with_bound=False)
    assert line.endswith(
        ". 64 tiles on 132 SMs: one wave at 48%; the roofs allow 10.7 us, it took 25.9 us (2.4x)."
    )
    del r["tiles"]
    assert "tiles" not in verdict.stage_line(r, None, None, None, with_bound=False)


def test_more_blocks_than_tiles_share_the_tiles_k():
    """Split-K along grid z, or a grid of every SM over fewer tiles (a stream-K GEMV)."""
    split = waves.sentence(rec(grid=[64, 1, 3], attainable_tflops=None))
    assert split == "192 blocks (64 tiles x 3 runs of K) on 132 SMs: 1.45 waves, the last at 45%"
    few = waves.sentence(rec(tiles=48, grid=[264, 1, 1], blocks_per_sm=2, attainable_tflops=None))
    assert few == "48 tiles split along K over 264 blocks on 132 SMs: 100% of the SMs busy"
    some = waves.sentence(rec(tiles=16, grid=[64, 1, 1], attainable_tflops=None))
    assert some == "16 tiles split along K over 64 blocks on 132 SMs: 48% of the SMs busy"


def test_a_stream_k_stage_cuts_its_last_wave_along_k():
    r = rec(tiles=1024, grid=[132, 1, 1], splits_k=True, attainable_tflops=None)
    assert waves.sentence(r) == (
        "1024 tiles on 132 SMs: 7.76 waves, the last one's tiles split along K over every SM"
    )
    assert "the last at 76%" in str(waves.sentence({**r, "splits_k": False}))


# (M, N) -> the width wgmma_fp8_fill takes of 128, 192 and 256 at BM = 128 on 132 SMs, and why:
# the share of the slots' time the output's tiles fill times the tile's intensity (BM BN /
# (BM + BN): 64 at 128, 76.8 at 192, 85.3 at 256), the widest within 2% of the best
@pytest.mark.parametrize(
    ("m", "n", "bn"),
    [
        (8192, 8192, 256),  # fill 0.970 at 256 and 128, 0.985 at 192: 256 does the most
        (4096, 11008, 256),  # fill 0.947 at 256, 0.993 at 128: too little for the narrower tile
        (512, 128256, 256),  # fill 0.949 at 256, 0.964 at 192, 0.979 at 128
        (1024, 6144, 192),  # 256: 192 tiles, 1.45 waves (0.727); 192: 256 tiles (0.970)
        (6144, 1536, 192),  # 256: 288 tiles in 3 waves (0.727); 192: 384 (0.970)
        (1024, 4096, 256),  # 128 tiles, one wave (0.970); 192: 176 tiles, two waves (0.646)
        (256, 12288, 192),  # 16-bit at 256 rows: 128 tiles at 192 (0.970), 96 at 256 (0.727)
    ],
)
def test_the_tile_width_that_fills_the_sms(m, n, bn):
    assert waves.fill_width(m, n, 128, (128, 192, 256), 132) == bn


def test_fill_counts_edge_tiles_by_their_part_inside_the_output():
    # 3000 rows are 23.4 tiles of 128; at BN = 256, 16 columns: 384 tiles in three waves of 132
    assert waves.fill(3000, 4096, 128, 256, 132) == pytest.approx(3000 / 128 * 16 / 396)
    assert waves.fill(128, 256, 128, 256, 132) == pytest.approx(1 / 132)
    with pytest.raises(ValueError):
        waves.fill_width(128, 256, 128, (), 132)


def test_a_pair_s_row_tile_past_m_takes_a_block():
    # 128 x 16384 in pairs of row tiles: one row tile launches as a pair, so BN = 128's 128
    # tiles take 256 blocks (two waves of 128, half idle) and BN = 256's 64 take one wave
    assert waves.fill(128, 16384, 128, 128, 128, rows_multiple=2) == pytest.approx(0.5)
    assert waves.fill_width(128, 16384, 128, (128, 192, 256), 128, rows_multiple=2) == 256
    assert waves.fill_width(128, 16384, 128, (128, 192, 256), 128) == 128


# the documents that measured stage 26 and stage 32 at each fixed width (wgmma_persistent's and
# wgmma_fp8_persistent's BN) on an H100: stage name -> BN
MEASURED_WIDTHS = {
    "gemm-bf16-fill-h100.json.gz": {
        "wgmma_persistent": 256, "wgmma_persistent@BN=128,STAGES=6": 128,
        "wgmma_persistent@BN=192": 192,
    },
    "widths-bf16-m512-h100.json.gz": {
        "wgmma_persistent": 256, "wgmma_persistent@BN=128": 128, "wgmma_persistent@BN=192": 192,
    },
    "gemm-fp8-widths-h100.json.gz": {
        "wgmma_fp8_persistent": 256, "wgmma_fp8_persistent@BN=192,STAGES=5": 192,
    },
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(MEASURED_WIDTHS))
def test_the_width_chosen_runs_within_two_percent_of_the_fastest_measured(name):
    """At every shape of the committed documents that timed each fixed width, the width
    fill_width chooses ran within 2% of the fastest of them: the rule stands on measurements,
    not on its own arithmetic alone."""
    from collections import defaultdict
    from pathlib import Path

    doc = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / name
    speed: dict[tuple[int, int], dict[int, float]] = defaultdict(dict)
    measured = paths.read_json(doc, "results file")
    sms = measured["device"]["sm_count"]
    for r in measured["records"]:
        bn = MEASURED_WIDTHS[name].get(r["stage"])
        if bn and r.get("verified") and r.get("tflops"):
            speed[(r["m"], r["n"])][bn] = r["tflops"]
    assert len(speed) >= 5
    for (m, n), by in speed.items():
        pick = waves.fill_width(m, n, 128, tuple(sorted(by)), sms)
        assert by[pick] >= 0.98 * max(by.values()), (m, n, pick, by)


def test_the_persistent_grid_rule() -> None:
    """One rule for every persistent grid (the registry's and the FP8 stages'): a block per
    tile up to the cap, whole clusters; the whole cap for stream-K; with `even`, a whole number
    of blocks per tile where the tiles fit."""
    assert waves.persistent_blocks(64, 132) == 64
    assert waves.persistent_blocks(500, 132) == 132
    assert waves.persistent_blocks(64, 132, cluster=2) == 64
    assert waves.persistent_blocks(500, 131, cluster=2) == 130
    assert waves.persistent_blocks(32, 132, fill=True) == 132
    assert waves.persistent_blocks(32, 132, fill=True, even=True) == 128
    assert waves.persistent_blocks(112, 132, fill=True, even=True) == 112
    assert waves.persistent_blocks(200, 132, fill=True, even=True) == 132


def test_the_busy_share_counts_the_last_wave_s_idle_slots():
    """172 tiles on 132 SMs: two waves of 132 slots, 172 of 264 busy; a stream-K stage cuts its
    last wave along K over every block: all busy. 40 tiles split three ways along K on 132 SMs
    of two slots each: 120 of 264 slots; 64 tiles in one wave leave 68 SMs idle."""
    w = waves.waves({"tiles": 172, "grid": [132, 1, 1], "sm_count": 132, "blocks_per_sm": 1})
    assert w is not None
    assert waves.busy_share(w) == pytest.approx(172 / 264)
    assert waves.busy_share(w, splits_k=True) == 1.0
    split = waves.waves({"tiles": 40, "grid": [8, 5, 3], "sm_count": 132, "blocks_per_sm": 2})
    assert split is not None and waves.busy_share(split) == pytest.approx(120 / 264)
    few = waves.waves({"tiles": 64, "grid": [64, 1, 1], "sm_count": 132, "blocks_per_sm": 1})
    assert few is not None and waves.busy_share(few) == pytest.approx(64 / 132)
    assert waves.busy_share(few, splits_k=True) == pytest.approx(64 / 132)
