"""The cache's files per GPU: one maker (paths.cache_file), the names worked out by hand."""

from __future__ import annotations

from rooflinecli import paths
from rooflinecli.gpu import calibrate, tune
from rooflinecli.stages import dispatch


def test_cache_files_are_named_by_the_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    name = "NVIDIA H100 80GB HBM3"
    assert dispatch.user_table_path(name) == tmp_path / "dispatch" / "nvidia-h100-80gb-hbm3.json"
    assert tune.tuned_path(name) == tmp_path / "tuned" / "nvidia-h100-80gb-hbm3.json"
    # a driver's version keeps its dots; no driver or clock known: 'unknown' and 0
    got = calibrate.calibration_path("NVIDIA H200", "550.54.15", 1980)
    assert got == tmp_path / "calibration" / "nvidia-h200-drv550.54.15-1980mhz.json"
    got = calibrate.calibration_path("NVIDIA H200", None, None)
    assert got == tmp_path / "calibration" / "nvidia-h200-drvunknown-0mhz.json"


def test_a_slug_has_no_dash_at_either_end(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    assert paths.cache_file("tuned", "  (GPU) #1 ") == tmp_path / "tuned" / "gpu-1.json"
    assert paths.cache_file("x", "a.b c", keep=".") == tmp_path / "x" / "a.b-c.json"
