"""Sensible limits, each said in one line before any work: `plot` draws at most 5,000 points
unless --max-points says more; a sweep (`run gemm --sizes`, `run attention --shapes`,
`tune dispatch --sizes`) takes at most 2,000 shapes unless --max-shapes says more."""

from __future__ import annotations

import sys

import pytest

from rooflinecli import results
from rooflinecli.cli import cli
from rooflinecli.options import MAX_SHAPES
from rooflinecli.present import MAX_POINTS

SPEC = {"name": "testgpu", "display_name": "Test GPU", "memory_bandwidth_gbs": 1000.0,
        "tflops": {"fp32": 10.0}}  # fmt: skip
DEVICE = {"name": "Test GPU", "driver": "570.1"}


def _doc(tmp_path, n, ai_instruction=None):
    records = [
        {"stage": f"s{i}", "dtype": "fp32", "m": 64, "n": 64, "k": 64, "ai_ideal": 100.0,
         "tflops": 1.0 + i % 7, "peak_tflops": 10.0, "verified": True,
         "ai_instruction": ai_instruction}
        for i in range(n)
    ]  # fmt: skip
    path = tmp_path / "run.json"
    path.write_text(results.dumps(results.new_document(SPEC, DEVICE, records)))
    return path


def test_the_limits_are_the_documented_ones(runner):
    assert (MAX_POINTS, MAX_SHAPES) == (5_000, 2_000)
    plot_help = " ".join(runner.invoke(cli, ["plot", "--help"]).output.split())
    assert "At most 5,000 points unless --max-" in plot_help  # click may break at the hyphen
    assert "--max-points" in plot_help and "[default: 5000; x>=1]" in plot_help
    for args in (["run", "gemm"], ["run", "attention"], ["tune", "dispatch"]):
        text = runner.invoke(cli, [*args, "--help"]).output
        assert "at most 2,000" in " ".join(text.split()) and "--max-shapes" in text, args


def test_plot_refuses_more_points_than_its_limit_before_drawing(runner, tmp_path, monkeypatch):
    path = _doc(tmp_path, 60, ai_instruction=10.0)  # each record two points: 120
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # refused before matplotlib is needed
    out = tmp_path / "x.png"
    r = runner.invoke(cli, ["plot", str(path), "-o", str(out), "--max-points", "100"])
    assert r.exit_code == 2, r.output
    assert r.stderr == (
        "error: 120 points to draw (60 records): more than a plot draws (100); pass "
        "--max-points 120 to draw them all, or plot a part of the document\n"
    )
    assert not out.exists()


def test_plot_counts_points_not_records(runner, tmp_path, monkeypatch):
    path = _doc(tmp_path, 60)  # no by-instruction intensity: one point a record
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    r = runner.invoke(cli, ["plot", str(path), "-o", str(tmp_path / "x.png"), "--max-points", "60"])
    assert "points to draw" not in r.output + r.stderr
    assert "plotting needs matplotlib" in r.stderr  # past the limit check, to the drawing


def test_plot_within_the_limit_draws(runner, tmp_path):
    pytest.importorskip("matplotlib")
    path = _doc(tmp_path, 3)
    out = tmp_path / "x.svg"
    r = runner.invoke(cli, ["plot", str(path), "-o", str(out), "--max-points", "3"])
    assert r.exit_code == 0, r.output + r.stderr
    assert out.read_text().lstrip().startswith("<?xml")


def _sizes(n):
    return ",".join(str(16 * (i + 1)) for i in range(n))


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["run", "gemm", "--dry-run", "--sizes"], "--sizes"),
        (["run", "gemm", "--sizes"], "--sizes"),
        (["tune", "dispatch", "--sizes"], "--sizes"),
    ],
)
def test_a_sweep_past_the_limit_is_one_line(runner, args, option):
    r = runner.invoke(cli, [*args, _sizes(MAX_SHAPES + 1)])
    assert r.exit_code == 2, r.output
    assert r.stderr == (
        f"error: {option}: 2,001 shapes, more than a sweep takes (2,000); pass --max-shapes "
        "2001 to run them all\n"
    )


def test_an_attention_sweep_past_the_limit_is_one_line(runner):
    shapes = ",".join(f"1x1x{16 * (i + 1)}x64" for i in range(MAX_SHAPES + 1))
    r = runner.invoke(cli, ["run", "attention", "--shapes", shapes])
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("error: --shapes: 2,001 shapes, more than a sweep takes (2,000)")


def test_max_shapes_raises_the_limit(runner):
    """Past the limit check with --max-shapes: the next check (an unknown stage) speaks, so
    nothing runs even on a GPU."""
    args = ["run", "gemm", "--stages", "nope", "--sizes", _sizes(30)]
    r = runner.invoke(cli, [*args, "--max-shapes", "20"])
    assert "more than a sweep takes (20)" in r.stderr
    r = runner.invoke(cli, [*args, "--max-shapes", "30"])
    assert r.exit_code == 2 and "sweep" not in r.stderr and "nope" in r.stderr, r.stderr
