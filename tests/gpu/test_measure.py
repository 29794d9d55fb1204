"""On a GPU: measure() times the user's own work like the runner times a stage, document() makes
what `show` reads, and `run llm` times the decode GEMMs, the user's example stage among them."""

import json
from pathlib import Path

import pytest

from rooflinecli import files, paths, results
from rooflinecli.cli import cli
from rooflinecli.core import specs

pytestmark = pytest.mark.gpu

EXAMPLE = Path(__file__).resolve().parent.parent.parent / "examples" / "my_gemm.toml"


def test_measure_a_cupy_matmul_and_show_it(tmp_path, runner):
    import cupy as cp

    from rooflinecli import document, measure

    n = 2048
    rng = cp.random.default_rng(0)
    a = rng.random((n, n), dtype=cp.float32)
    b = rng.random((n, n), dtype=cp.float32)
    c = cp.empty((n, n), dtype=cp.float32)
    rec = measure(
        lambda: cp.matmul(a, b, out=c),
        flops=2 * n**3,
        bytes=4 * 3 * n * n,
        name="cupy.matmul",
        shape=(n, n, n),
        budget_ms=50,
    )
    assert rec["repeats"] >= 5
    assert 0 < rec["time_ms_min"] <= rec["time_ms"] <= rec["time_ms_max"]
    assert rec["spread"] >= 0 and rec["time_ms_stdev"] >= 0
    assert rec["tflops"] == pytest.approx(2 * n**3 / (rec["time_ms"] * 1e-3) / 1e12)
    assert (rec["m"], rec["n"], rec["k"], rec["kind"]) == (n, n, n, "user")
    from rooflinecli.gpu import nvml

    if nvml.open_device(str(cp.cuda.Device().pci_bus_id)) is not None:  # 50 ms: a few readings
        assert rec["sm_clock_mhz_min"] <= rec["sm_clock_mhz"] <= rec["sm_clock_mhz_max"]
    spec = specs.for_device(rec["device_name"])
    assert rec["tflops"] < 1.05 * spec.peak("fp32")  # plain FP32 (CuPy uses no TF32 by default)

    doc = document([rec])
    results.validate(doc)
    placed = doc["records"][0]
    assert placed["roof"] == "compute" and 0 < placed["pct_of_roof"] < 105
    path = tmp_path / "mine.json"
    files.write_atomic(path, results.dumps(doc))
    r = runner.invoke(cli, ["show", str(path)])
    assert r.exit_code == 0, r.stderr
    assert "cupy.matmul" in r.output


def test_a_memory_bound_op_stays_under_the_memory_roof():
    import cupy as cp

    from rooflinecli import measure

    n = 64 << 20  # 256 MiB per array: far larger than any L2
    x = cp.ones(n, dtype=cp.float32)
    y = cp.ones(n, dtype=cp.float32)
    z = cp.empty(n, dtype=cp.float32)
    rec = measure(lambda: cp.add(x, y, out=z), flops=n, bytes=12 * n, name="add", budget_ms=50)
    bandwidth = specs.for_device(rec["device_name"]).memory_bandwidth_gbs
    assert 0.2 * bandwidth < rec["gbs"] < 1.05 * bandwidth
    assert rec["ai_ideal"] == pytest.approx(1 / 12)


def test_measure_a_torch_matmul():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    from rooflinecli import measure

    n = 1024
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    rec = measure(lambda: a @ b, flops=2 * n**3, bytes=2 * 3 * n * n, name="torch", dtype="fp16")
    assert rec["tflops"] > 0 and rec["repeats"] >= 5


def test_run_llm_times_decode_gemms_and_the_example_stage(runner, tmp_path):
    out = tmp_path / "llm.json"
    args = ["run", "llm", "--dtype", "fp32", "--batch", "1,16", "--gemms", "o_proj,ffn_down"]
    args += ["--stages", "smem_tile", "--extra-stage", str(EXAMPLE), "--budget-ms", "5"]
    r = runner.invoke(cli, [*args, "--quiet", "--format", "json", "--output", str(out)])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.output)
    results.validate(doc)
    assert paths.read_json(out, "results file")["records"] == doc["records"]
    assert {rec["workload"] for rec in doc["records"]} == {
        f"llama-7b:{g}:b{b}" for g in ("o_proj", "ffn_down") for b in (1, 16)
    }
    assert {rec["stage"] for rec in doc["records"]} == {"smem_tile", "my_gemm", "cublas"}
    for rec in doc["records"]:
        assert rec["verified"] is True, rec
        assert rec["time_us_per_token"] > 0 and rec["allowed_us_per_token"] > 0
        assert (rec["m"], rec["n"], rec["k"]) == (
            rec["batch"],
            *{"o_proj": (4096, 4096), "ffn_down": (4096, 11008)}[rec["gemm"]],
        )
    mine = next(row for row in doc["per_token"] if row["stage"] == "my_gemm")
    assert mine["us_b1"] > 0 and mine["us_b16"] > 0


def test_run_llm_fp16_table(runner):
    r = runner.invoke(
        cli, ["run", "llm", "--batch", "16", "--gemms", "o_proj", "--budget-ms", "5", "--quiet"]
    )
    assert r.exit_code == 0, r.stderr
    assert "o_proj" in r.output  # the compact table names the GEMM; --wide adds the workload
    assert "roofs allow" in r.output
