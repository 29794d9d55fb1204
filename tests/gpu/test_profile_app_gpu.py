"""On a GPU with Nsight Compute: `roofline profile app` counts a CuPy matmul's FLOPs and an
elementwise kernel's DRAM bytes as they must be; measure(counters=True) counts the same way;
`profile gemm` checks Tensor Core FLOPs against 2MNK and gives a TMA kernel no L1 intensity.

Skipped without a GPU (tests/gpu/conftest.py), without ncu, or, with the reason said, where ncu
may not read the performance counters (ERR_NVGPUCTRPERM). Run them with
`python -m pytest -q tests/gpu/test_profile_app_gpu.py` (a few minutes: ncu replays every kernel).
"""

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rooflinecli import paths, results
from rooflinecli.cli import cli
from rooflinecli.core import specs

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLE = str(ROOT / "examples" / "cupy_app.py")
GIB = 1 << 30


@pytest.fixture(autouse=True)
def _needs_ncu():
    from rooflinecli.errors import RooflineError
    from rooflinecli.gpu import profile

    try:
        profile.find_ncu()
    except RooflineError as exc:
        pytest.skip(exc.message)


def skip_without_counter_access(text: str) -> None:
    """A machine where ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM) skips
    the test with that reason, the tool's own line: these tests cannot run there, and the skip
    says why (the skip summary and -rs show it) instead of failing or skipping silently."""
    from rooflinecli.gpu import profile

    if profile.counter_access_problem(text):
        line = next((ln for ln in text.splitlines() if "ERR_NVGPUCTRPERM" in ln), text.strip())
        pytest.skip(f"ncu cannot read the GPU's performance counters here: {line.strip()}")


def _profile(runner, tmp_path, *args):
    out = tmp_path / "app.json"
    r = runner.invoke(cli, ["profile", "app", "--format", "json", "--output", str(out), *args])
    if r.exit_code == 2:
        skip_without_counter_access(r.output + r.stderr)
    assert r.exit_code == 0, r.output + r.stderr
    doc = results.load(out)
    assert doc["command"] == "profile app" and doc["records"]
    return doc


# Shapes that are multiples of the tiles cuBLAS picks: on the H200 its FP16 kernel for 8192^3
# (nvjet ..._320x128_...) tiles M by 320 rows, pads 8192 to 8320, and the Tensor Core counters
# count the padding too (1.0156 x 2MNK, profile-app-cupy-matmul-fp16.json.gz): not a tile multiple.
@pytest.mark.parametrize(("n", "dtype"), [(4096, "fp16"), (4096, "fp32"), (8192, "fp32")])
def test_matmul_flops_within_half_a_percent_of_2mnk(runner, tmp_path, n, dtype):
    repeats = 2
    doc = _profile(
        runner, tmp_path, "--nvtx", "app@matmul/", "--",
        sys.executable, EXAMPLE, "--n", str(n), "--repeats", str(repeats), "--gib", "0",
        "--dtype", dtype,
    )  # fmt: skip
    recs = doc["records"]
    launches = sum(r["launches"] for r in recs)
    assert launches >= repeats  # every kernel of the two matmuls (split-K adds a reduction)
    counted = sum(r["flops"] * r["launches"] for r in recs) / repeats
    assert counted == pytest.approx(2 * n**3, rel=0.005), [r["flops_by"] for r in recs]
    main = max(recs, key=lambda r: r["flops"] or 0)
    want = ("fp16", "tensor") if dtype == "fp16" else ("fp32", "simt")
    assert (main["dtype"], main["pipe"]) == want, main["flops_by"]
    assert main["flops_complete"] is True and main["tflops"] > 50
    assert main["time_ms"] > 0 and main["binding_level"] in ("compute", "DRAM", "L2")
    assert main["pct_of_roof"] < 110  # a speed above its roof would be a counting error
    assert main["ai_l2"] and main["ai_dram"] > main["ai_l2"]


def test_elementwise_dram_bytes_within_5_percent_of_what_it_must_move(runner, tmp_path):
    doc = _profile(
        runner, tmp_path, "--kernel", "axpb", "--",
        sys.executable, EXAMPLE, "--n", "0", "--gib", "1",
    )  # fmt: skip
    (rec,) = doc["records"]
    elems = GIB // 4
    assert rec["kernel"] == "axpb" and rec["launches"] == 1
    assert rec["bytes_dram"] == pytest.approx(2 * GIB, rel=0.05)  # 1 GiB read, 1 GiB written
    counted = {k: v for k, v in rec["flops_by"].items() if v}  # None: said, not added
    assert rec["flops"] == 2 * elems and counted == {"fp32 simt": 2 * elems}
    assert rec["ai_dram"] == pytest.approx(0.25, rel=0.05)
    assert rec["binding_level"] == "DRAM" and rec["roof"] == "memory"
    bandwidth = specs.for_device(doc["device"]["name"]).memory_bandwidth_gbs
    assert 0.3 * bandwidth < rec["gbs_dram"] < 1.05 * bandwidth
    r = runner.invoke(cli, ["show", str(tmp_path / "app.json")])
    assert r.exit_code == 0 and "axpb [" in r.output


def test_a_triton_kernel_lands_left_of_the_ridge(runner, tmp_path):
    pytest.importorskip("triton")
    doc = _profile(
        runner, tmp_path, "--kernel", "scale_shift", "--",
        sys.executable, str(ROOT / "examples" / "triton_app.py"), "--gib", "1",
    )  # fmt: skip
    (rec,) = doc["records"]
    assert rec["bytes_dram"] == pytest.approx(2 * GIB, rel=0.05)  # 1 GiB read, 1 GiB written
    counted = {k: v for k, v in rec["flops_by"].items() if v}  # None: said, not added
    assert counted == {"fp32 simt": 2 * (GIB // 4)}  # one FMA per element
    assert rec["roof"] == "memory" and rec["binding_level"] == "DRAM"


def test_every_kernel_of_the_example_is_placed_or_says_why(runner, tmp_path):
    doc = _profile(runner, tmp_path, "--", sys.executable, EXAMPLE, "--n", "2048")
    for rec in doc["records"]:
        assert rec["time_ms"] > 0 and rec["name"] == rec["stage"]
        assert rec["attainable_tflops"] is not None or rec["roof_note"], rec["stage"]


def test_measure_counters_count_one_call(tmp_path):
    script = tmp_path / "bench.py"
    script.write_text(
        textwrap.dedent(
            """
            import json, sys
            import cupy as cp
            from rooflinecli import measure
            n = 4096
            a = cp.ones((n, n), dtype=cp.float16)
            b = cp.ones((n, n), dtype=cp.float16)
            c = cp.empty((n, n), dtype=cp.float16)
            rec = measure(lambda: cp.matmul(a, b, out=c), flops=2 * n**3,
                          bytes=2 * 3 * n * n, name="cupy.matmul fp16", dtype="fp16",
                          budget_ms=50, counters=True)
            print("RECORD " + json.dumps(rec, default=str))
            """
        )
    )
    # this checkout's rooflinecli first, and whatever the environment already puts on the path
    path = os.pathsep.join(x for x in (str(ROOT), os.environ.get("PYTHONPATH")) if x)
    env = {**os.environ, "PYTHONPATH": path}
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=1800, env=env
    )
    if out.returncode != 0:
        skip_without_counter_access(out.stdout + out.stderr)
    assert out.returncode == 0, out.stderr[-3000:]
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("RECORD "))
    rec = json.loads(line.removeprefix("RECORD "))
    assert rec["flops_hw_ratio"] == pytest.approx(1.0, rel=0.005), rec["flops_hw_by"]
    assert rec["ncu_kernels"] and rec["ncu_time_ms"] > 0
    assert rec["tflops"] > 50 and rec["ai_dram"] > rec["ai_l2"]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_profile_gemm_tensor_core_flops_and_no_l1_intensity_for_tma(runner, tmp_path, dtype):
    out = tmp_path / f"profile-{dtype}.json"
    r = runner.invoke(
        cli,
        ["profile", "gemm", "--m", "4096", "--dtype", dtype, "--stages", "wgmma_persistent",
         "--output", str(out), "--format", "json", "--quiet"],
    )  # fmt: skip
    if r.exit_code == 2:
        skip_without_counter_access(r.output + r.stderr)
    assert r.exit_code == 0, r.output + r.stderr
    doc = paths.read_json(out, "results file")
    assert not doc["profiler"]["dropped_metrics"] or all(
        "fp16" not in m and "bf16" not in m for m in doc["profiler"]["dropped_metrics"]
    )
    for rec in doc["records"]:  # wgmma_persistent and cuBLAS
        assert rec["flops_check"] is True, (rec["stage"], rec["flops_hw_ratio"], rec["flops_hw_by"])
        # the events' time of the profiled launches is kept beside ncu's, never used for speed:
        # under ncu's replay it can be close to the kernel's time or thousands of times longer
        # (the replay's saving and restoring of memory falls between the events), so only its
        # presence is asserted; the record's time is ncu's
        assert rec["time_ms"] == rec["ncu_time_ms"]
        assert math.isfinite(rec["time_ms_under_ncu"]) and rec["time_ms_under_ncu"] > 0
        assert rec["tflops"] == pytest.approx(rec["flops"] / (rec["time_ms"] * 1e9))
        if rec["bytes_l1"] < 0.01 * rec["bytes_l2"]:  # TMA: L1 carried nothing
            assert rec["ai_l1"] is None
            assert "bypassed" in rec["ai_l1_note"] or "no bytes" in rec["ai_l1_note"]
        if rec["wgmma_instructions"]:
            assert rec["ai_smem"] is None and "WGMMA" in rec["ai_smem_note"]
