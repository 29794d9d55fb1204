"""Three roof sets side by side: datasheet, derived from the SM clock, measured by calibrate."""

import json
from pathlib import Path

import pytest

from rooflinecli import paths
from rooflinecli.cli import cli

ROOT = Path(__file__).resolve().parent.parent
RUN = str(ROOT / "benchmarks" / "results" / "gemm-fp32-4096.json.gz")
CAL = str(ROOT / "benchmarks" / "calibration" / "h200-full.json")


def _records(runner, *args):
    r = runner.invoke(cli, ["show", RUN, "--format", "json", *args])
    assert r.exit_code == 0, r.stderr
    return {rec["stage"]: rec for rec in json.loads(r.output)["records"]}


def test_datasheet_is_the_default(runner):
    rec = _records(runner)["cublas"]
    assert rec["roof_set"] == "datasheet"
    assert rec["peak_tflops"] == 67.0 and rec["attainable_tflops"] == 67.0


def test_measured_roofs_come_from_the_calibration(runner):
    cal = paths.read_json(Path(CAL), "results file")["measurements"]
    recs = _records(runner, "--roofs", "measured", "--calibration", CAL)
    cublas = recs["cublas"]
    assert cublas["roof_set"] == "measured"
    assert cublas["peak_tflops"] == cal["fp32_fma_tflops"]
    # the best of the HBM read and copy figures is the measured memory roof
    assert cublas["bandwidth_gbs"] == max(cal["hbm_read_gbs"], cal["hbm_copy_gbs"])
    assert cublas["pct_of_roof"] == pytest.approx(100 * cublas["tflops"] / cal["fp32_fma_tflops"])
    # ratios between stages of one run do not depend on the roofs
    base = _records(runner)
    for name, rec in recs.items():
        assert rec["pct_of_reference"] == pytest.approx(base[name]["pct_of_reference"])
        assert rec["tflops"] == base[name]["tflops"]


def test_derived_roofs_follow_the_clock(runner):
    # 132 SMs x 1980 MHz (the device's maximum SM clock) x 128 lanes x 2 = 66.9 TFLOP/s
    rec = _records(runner, "--roofs", "derived")["naive_xcol"]
    assert rec["roof_set"] == "derived"
    assert rec["peak_tflops"] == pytest.approx(132 * 1980e6 * 256 / 1e12)


def test_measured_without_calibration_is_one_line(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    r = runner.invoke(cli, ["show", RUN, "--roofs", "measured"])
    assert r.exit_code == 2
    assert r.stderr.strip() == (
        "error: no calibration of this device: run `roofline calibrate` on it, "
        "or pass --calibration"
    )


TC = str(ROOT / "benchmarks" / "results" / "gemm-bf16-8192.json.gz")


def test_clock_roofs_are_derived_at_each_rows_own_clock(runner):
    r = runner.invoke(cli, ["show", TC, "--format", "json", "--roofs", "clock"])
    assert r.exit_code == 0, r.stderr
    recs = {rec["stage"]: rec for rec in json.loads(r.output)["records"]}
    plain = {rec["stage"]: rec for rec in paths.read_json(Path(TC), "results file")["records"]}
    for name, rec in recs.items():
        mhz = plain[name]["sm_clock_mhz"]
        assert rec["roof_set"] == f"clock {mhz:,} MHz"
        # 132 SMs x the clock x 4096 dense FP16/BF16 FLOP per clock per SM (Hopper)
        assert rec["peak_tflops"] == pytest.approx(132 * mhz * 1e6 * 4096 / 1e12)
        assert rec["pct_of_roof"] == pytest.approx(100 * rec["tflops"] / rec["peak_tflops"])
        assert rec["pct_of_reference"] == pytest.approx(plain[name]["pct_of_reference"])


def test_clock_roofs_fall_back_to_derived_without_a_recorded_clock(runner):
    old = str(ROOT / "benchmarks" / "results" / "gemm-fp32-8192-all.json.gz")  # made before clocks
    r = runner.invoke(cli, ["show", old, "--format", "json", "--roofs", "clock"])
    assert r.exit_code == 0, r.stderr
    recs = json.loads(r.output)["records"]
    assert {rec["roof_set"] for rec in recs} == {"derived"}
    assert recs[0]["peak_tflops"] == pytest.approx(132 * 1980e6 * 256 / 1e12)


def test_clock_roofs_title_says_one_roof_per_row(runner):
    r = runner.invoke(cli, ["show", TC, "--roofs", "clock", "--no-chart"], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.stderr
    assert (
        "GEMM 8192x8192x8192 bf16 on NVIDIA H200 (spec h200-sxm): roofs derived at the SM clock "
        "each row ran at (attain TF/s, % roof)" in r.stdout
    )
    notes = [line.strip() for line in r.stdout.splitlines() if "held down" in line]
    assert notes == [
        "SM clock held down while timing (power cap) in 6 of 8 rows: the SM MHz column is its "
        "mean; each row's roofs are taken at that clock"
    ]


def test_measured_roofs_put_mma_sync_stages_under_mma_sync(runner):
    """A stage whose math is mma.sync cannot pass mma.sync's measured rate: under --roofs
    measured its Tensor Core roof is that, the WGMMA stages' and cuBLAS's the best of both."""
    cal = paths.read_json(Path(CAL), "results file")["measurements"]
    r = runner.invoke(
        cli, ["show", TC, "--format", "json", "--roofs", "measured", "--calibration", CAL]
    )
    assert r.exit_code == 0, r.stderr
    recs = {rec["stage"]: rec for rec in json.loads(r.output)["records"]}
    for name in ("mma_sync", "mma_ldmatrix", "mma_multistage", "mma_tma_ws"):
        assert recs[name]["roof_set"] == "measured, mma.sync"
        assert recs[name]["peak_tflops"] == cal["fp16_mma_sync_tflops"]
        assert recs[name]["ridge_point"] == pytest.approx(
            cal["fp16_mma_sync_tflops"] * 1e3 / max(cal["hbm_read_gbs"], cal["hbm_copy_gbs"])
        )
    for name in ("wgmma_tma", "wgmma_ws", "wgmma_persistent", "cublas_hgemm"):
        assert recs[name]["roof_set"] == "measured"
        assert recs[name]["peak_tflops"] == max(
            cal["fp16_wgmma_tflops"], cal["fp16_mma_sync_tflops"]
        )
    tma_ws = recs["mma_tma_ws"]
    assert tma_ws["pct_of_roof"] == pytest.approx(
        100 * tma_ws["tflops"] / cal["fp16_mma_sync_tflops"]
    )


def test_measured_mma_sync_roof_title(runner):
    args = ["show", TC, "--roofs", "measured", "--calibration", CAL, "--no-chart"]
    r = runner.invoke(cli, args, env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.stderr
    assert (
        "GEMM 8192x8192x8192 bf16 on NVIDIA H200 (spec h200-sxm): measured roofs; mma.sync "
        "stages under mma.sync's own 637.7 TFLOP/s (attain TF/s, % roof)" in r.stdout
    )


def test_fp8_on_mma_sync_is_placed_under_the_fp16_tensor_core_peak():
    """Hopper runs mma.sync on FP8 by widening both operands to fp16 (F2FP, then HMMA.16816):
    stage 58's record names the fp16 Tensor Core peak, the wgmma FP8 stages' the FP8 one."""
    from rooflinecli.core import roof_keys, roofs, specs
    from rooflinecli.stages import gemm

    spec = specs.resolve("h100-sxm5")
    gemv = roofs.model_record(gemm.BY_NAME["gemv_fp8"], 1, 4096, 4096, spec, dtype="fp8")
    qgmma = roofs.model_record(gemm.BY_NAME["wgmma_fp8"], 8192, 8192, 8192, spec, dtype="fp8")
    assert gemv["math_instruction"] == "HMMA" and qgmma["math_instruction"] == "QGMMA"
    assert gemv["peak_key"] == "fp16_tensor_dense"
    assert gemv["peak_tflops"] == spec.peak("fp16_tensor_dense")
    assert qgmma["peak_key"] == "fp8_tensor_dense"
    assert qgmma["peak_tflops"] == spec.peak("fp8_tensor_dense") > gemv["peak_tflops"]
    assert roof_keys.of_instruction("fp8", "HMMA") == "fp16_tensor_dense"
    assert roof_keys.of_instruction("bf16", "HMMA") == "bf16_tensor_dense"
