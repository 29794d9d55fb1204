"""rooflinecli.stats: the bootstrap of the median, the ratio interval and the noise statistic."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rooflinecli.core import stats


@pytest.mark.parametrize("n", [1, 2, 7, 8, 200, 201])
def test_bootstrap_medians_match_resampling(n: int) -> None:
    """The O(1) draw has the distribution of the median of a resample with replacement."""
    x = np.sort(np.random.default_rng(n).lognormal(0.0, 0.3, n))
    fast = stats.bootstrap_medians(x, np.random.default_rng(1), 100_000)
    idx = np.random.default_rng(2).integers(0, n, (20_000, n))
    slow = np.median(x[idx], axis=1)
    qs = [0.005, 0.05, 0.25, 0.5, 0.75, 0.95, 0.995]
    spread = x[-1] - x[0] or 1.0
    assert np.quantile(fast, qs) == pytest.approx(np.quantile(slow, qs), abs=0.01 * spread)
    if n % 2:
        assert set(np.unique(fast)) <= set(x)  # an odd resample's median is one of the values


def test_ratio_interval_is_reproducible_and_centred() -> None:
    rng = np.random.default_rng(0)
    b, c = rng.normal(1.0, 0.01, 500), rng.normal(1.1, 0.011, 500)
    first = stats.ratio_interval(b, c)
    assert first == stats.ratio_interval(list(b), list(c))  # fixed seed: same verdict twice
    assert first.estimate == pytest.approx(np.median(c) / np.median(b))
    assert first.low < first.estimate < first.high
    assert 1.095 < first.low and first.high < 1.105
    assert first.level == 0.99


def test_compare_gives_the_runners_noise_figure() -> None:
    rng = np.random.default_rng(6)
    b, c = rng.normal(1.0, 0.02, 300), rng.normal(1.0, 0.01, 301)
    both = stats.compare(b, c)
    assert both.baseline_noise_pct == stats.noise_pct(b)  # the same draws, not just the same rule
    assert both.current_noise_pct == stats.noise_pct(c)
    assert both.ratio == stats.ratio_interval(b, c)
    same = stats.compare(b, b).ratio  # the same samples draw the same medians: a ratio of 1
    assert (same.low, same.estimate, same.high) == (1.0, 1.0, 1.0)


def test_outliers_do_not_widen_the_interval() -> None:
    rng = np.random.default_rng(3)
    body = rng.normal(1.0, 0.01, 400)
    dirty = body.copy()
    dirty[::20] *= 5.0  # 5% of the repeats 5x slower
    clean_iv, dirty_iv = stats.median_interval(body), stats.median_interval(dirty)
    assert dirty_iv.high - dirty_iv.low < 1.5 * (clean_iv.high - clean_iv.low)
    assert np.std(dirty) > 20 * np.std(body)  # the standard deviation is not robust


def test_noise_pct() -> None:
    rng = np.random.default_rng(4)
    quiet, loud = rng.normal(1.0, 0.001, 200), rng.normal(1.0, 0.05, 200)
    assert stats.noise_pct(quiet) < 0.05
    assert 0.5 < stats.noise_pct(loud) < 2.0
    assert stats.noise_pct(quiet) == stats.noise_pct(quiet)
    more = rng.normal(1.0, 0.05, 5000)  # more repeats, less noise: what --max-noise waits for
    assert stats.noise_pct(more) < stats.noise_pct(loud) / 3
    assert stats.noise_pct([1.0] * (stats.MIN_SAMPLES - 1)) == math.inf
    assert stats.noise_pct([2.0] * stats.MIN_SAMPLES) == 0.0


@pytest.mark.parametrize("bad", [[], [1.0, -1.0], [1.0, float("nan")], "abc", [[1.0]], None])
def test_bad_samples(bad: object) -> None:
    assert stats.as_samples(bad) is None
    with pytest.raises(ValueError):
        stats.ratio_interval([1.0, 2.0], bad)  # type: ignore[arg-type]


def test_fifty_records_of_a_thousand_samples() -> None:
    # no wall-clock bound (a timed unit test is flaky on a shared machine); each interval holds
    # its ratio and each noise figure is small for a 1% spread
    rng = np.random.default_rng(5)
    pairs = [(rng.normal(1, 0.01, 1000), rng.normal(1, 0.01, 1000)) for _ in range(50)]
    for b, c in pairs:
        iv = stats.ratio_interval(b, c)
        assert iv.low <= iv.estimate <= iv.high
        assert 0 < stats.noise_pct(c) < 1
