"""`roofline profile app -- CMD`: a program's kernels under a stand-in ncu (tests/fixtures/ncu),
grouped, counted, placed under the roofs, written as a results document that `show` renders."""

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooflinecli import results
from rooflinecli.cli import cli
from rooflinecli.gpu import ncu
from rooflinecli.gpu import profile as prof
from rooflinecli.gpu import profile_app as app

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "ncu"
CSV = (FIXTURES / "app-raw.csv").read_text()
QUERY = (FIXTURES / "query.txt").read_text()
CALIBRATION = (
    Path(__file__).resolve().parent.parent / "benchmarks" / "calibration" / "h200-full.json"
)
N = 4096
E = 1 << 28  # elements of the 1 GiB float32 arrays
GEMM = "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"  # noqa: E501
PROGRAM = ["python", "examples/cupy_app.py", "--n", "4096"]


def _run(csv_text=CSV, query=QUERY):
    rows = prof.parse_raw_csv(csv_text)
    return app.Run(rows, ncu.plan(app.COUNTS, prof.parse_query_metrics(query)), {})


def _doc(run=None, calibration=None, **kw):
    return app.build_document(run or _run(), PROGRAM, None, calibration, **kw)


def _cal():
    return json.loads(CALIBRATION.read_text())


def _by_kernel(doc):
    return {r["kernel"]: r for r in doc["records"]}


def test_launches_of_one_kernel_and_grid_are_one_record():
    groups = app.group(prof.parse_raw_csv(CSV))
    assert [(k, len(rows)) for k, _, rows in groups] == [
        (GEMM, 2),
        ("cupy_multiply__float32_float_float32", 1),
        ("cupy_add__float32_float_float32", 1),
        ("axpb", 2),
        ("cupy_copy__float32_float32", 1),
    ]
    axpb = _by_kernel(_doc())["axpb"]
    assert (
        axpb["launches"] == 2 and axpb["grid"] == [2097152, 1, 1] and axpb["block"] == [128, 1, 1]
    )
    assert axpb["time_ms"] == pytest.approx((0.499104 + 0.498720) / 2)  # the median of two
    assert axpb["time_ms_total"] == pytest.approx(0.499104 + 0.498720)
    assert axpb["stage"] == axpb["name"] == "axpb [2097152x1x1]"  # what gate and compare key on


def test_flops_by_instruction_and_tensor_core():
    recs = _by_kernel(_doc())
    gemm = recs[GEMM]
    # per launch: 2MNK FP16 Tensor Core operations plus the epilogue's FFMA per element of C
    assert gemm["flops_by"] == {"fp16 tensor": 2 * N**3, "fp32 simt": 2 * N * N}
    assert gemm["flops"] == pytest.approx(2 * N**3, rel=0.005)
    assert (gemm["dtype"], gemm["pipe"], gemm["work"]) == ("fp16", "tensor", "fp16 tensor")
    assert recs["cupy_multiply__float32_float_float32"]["flops"] == E  # one FMUL each
    assert recs["axpb"]["flops"] == 2 * E  # one FFMA each: 2 FLOPs
    assert recs["axpb"]["tflops"] == pytest.approx(2 * 2 * E / ((0.499104 + 0.498720) * 1e9))
    copy = recs["cupy_copy__float32_float32"]
    assert copy["flops"] == 0 and copy["tflops"] is None and copy["dtype"] == "-"


def test_hmma_counters_of_a_made_up_matmul_give_2mnk():
    # an Ampere-style listing: FP16 Tensor Core ops only split by accumulator
    m, n, k = 1024, 2048, 512
    listing = QUERY.replace(
        "sm__ops_path_tensor_src_fp16 ", "sm__ops_path_tensor_src_fp16_dst_fp32 "
    )
    listing += "sm__ops_path_tensor_src_fp16_dst_fp16   x\n"
    p = ncu.plan(app.COUNTS, prof.parse_query_metrics(listing))
    assert p.chosen["tensor_fp16"] == (
        ("sm__ops_path_tensor_src_fp16_dst_fp16.sum", 1.0),
        ("sm__ops_path_tensor_src_fp16_dst_fp32.sum", 1.0),
    )
    counters = {m_: 0.0 for m_ in p.metrics}
    counters["sm__ops_path_tensor_src_fp16_dst_fp32.sum"] = 2.0 * m * n * k  # HMMA.16816.F32
    counters["gpu__time_duration.sum"] = 1e-4
    rec = app.kernel_record("ampere_h16816gemm", [16, 8, 1], [{"metrics": counters}], p)
    assert rec["flops"] == 2 * m * n * k and rec["flops_by"] == {"fp16 tensor": 2 * m * n * k}
    assert rec["tflops"] == pytest.approx(2 * m * n * k / 1e-4 / 1e12)


def test_intensities_and_the_level_that_carried_nothing():
    recs = _by_kernel(_doc())
    mul = recs["cupy_multiply__float32_float_float32"]
    assert mul["bytes_dram"] == 1_073_807_360 + 1_040_187_392
    assert mul["ai_dram"] == pytest.approx(E / mul["bytes_dram"])
    assert mul["ai_l2"] == pytest.approx(E / 2_147_549_184)
    assert mul["ai_l1"] == pytest.approx(E / 2**31)
    assert mul["ai_smem"] is None and mul["ai_smem_note"] == "shared memory moved no bytes"
    gemm = recs[GEMM]
    assert gemm["bytes_l1"] == 4_194_304 and gemm["ai_l1"] is None  # TMA bypasses L1
    assert "under 1%" in gemm["ai_l1_note"] and "bypassed" in gemm["ai_l1_note"]
    assert gemm["ai_smem"] is None and "WGMMA" in gemm["ai_smem_note"]
    assert gemm["bytes_smem"] == 33_554_432 + 1_342_177_280  # SASS + TMA loads: a lower bound
    assert gemm["ai_l2"] == pytest.approx(gemm["flops"] / 1_409_286_144)


def test_placed_under_the_calibrated_roofs():
    doc = _doc(calibration=_cal(), calibration_from=str(CALIBRATION))
    assert doc["roofs"]["name"] == "measured" and doc["roofs"]["calibration"] == str(CALIBRATION)
    m = _cal()["measurements"]
    recs = _by_kernel(doc)
    mul = recs["cupy_multiply__float32_float_float32"]
    assert mul["peak_key"] == "fp32" and mul["peak_tflops"] == pytest.approx(m["fp32_fma_tflops"])
    assert mul["binding_level"] == "DRAM" and mul["roof"] == "memory"
    hbm = max(m["hbm_read_gbs"], m["hbm_copy_gbs"])
    assert mul["attainable_tflops"] == pytest.approx(mul["ai_dram"] * hbm / 1000)
    assert mul["pct_of_roof"] == pytest.approx(100 * mul["tflops"] / mul["attainable_tflops"])
    gemm = recs[GEMM]
    assert gemm["peak_key"] == "fp16_tensor_dense"
    assert gemm["peak_tflops"] == pytest.approx(m["fp16_wgmma_tflops"])
    assert gemm["binding_level"] == "L2" and "measured" in gemm["binding_roof"]
    assert gemm["attainable_tflops"] == pytest.approx(gemm["ai_l2"] * m["l2_read_gbs"] / 1000)
    assert recs["cupy_copy__float32_float32"]["attainable_tflops"] is None
    assert "no FLOPs" in recs["cupy_copy__float32_float32"]["roof_note"]


def test_without_a_calibration_the_datasheet_and_no_l2_roof():
    doc = _doc()
    assert doc["roofs"]["name"] == "datasheet"
    assert any("no calibration" in n for n in doc["roofs"]["notes"])
    gemm = _by_kernel(doc)[GEMM]
    assert gemm["peak_tflops"] == 989.4 and gemm["binding_level"] == "compute"
    assert [lv["gbs"] for lv in gemm["roof_levels"]] == [4800.0, None, None, None]


def test_what_ncu_cannot_count_is_null_with_a_note():
    listing = QUERY.replace("sm__ops_path_tensor_src_fp8 ", "something_else ")
    listing = listing.replace("sm__sass_data_bytes_mem_shared ", "not_this ")
    csv_text = CSV.replace('"sm__ops_path_tensor_src_fp8.sum"', '"ignored__a.sum"')
    doc = _doc(_run(csv_text, listing))
    gemm = _by_kernel(doc)[GEMM]
    assert gemm["flops_by"]["fp8 tensor"] is None
    assert "not counted: fp8 tensor (ncu lists no sm__ops_path_tensor_src_fp8" in gemm["flops_note"]
    assert gemm["flops"] == pytest.approx(2 * N**3 + 2 * N * N)  # what was counted, said so
    assert gemm["bytes_smem"] is None and "sm__sass_data_bytes_mem_shared" in gemm["ai_smem_note"]
    assert "sm__sass_data_bytes_mem_shared.sum" in doc["profiler"]["dropped_metrics"]
    # a value ncu printed as n/a
    run = _run()
    run.rows[0]["metrics"]["sm__ops_path_tensor_src_fp16.sum"] = None  # the first GEMM launch
    rec = _by_kernel(_doc(run))[GEMM]
    assert rec["flops_by"]["fp16 tensor"] is None  # one launch unknown: the sum is unknown
    assert "fp16 tensor (ncu gave no value)" in rec["flops_note"]
    assert rec["flops_complete"] is False and rec["tflops"] is None  # no speed from a part
    assert rec["attainable_tflops"] is None and "FLOPs not known" in rec["roof_note"]


def test_half_precision_simt_is_said_and_not_added_beside_fp32():
    from rooflinecli.core.specs import resolve

    p = ncu.plan(app.COUNTS, prof.parse_query_metrics(QUERY))

    def record(**metrics: float) -> dict:
        counters = {m: 0.0 for m in p.metrics}
        counters.update({"gpu__time_duration.sum": 1e-5, "dram__bytes_read.sum": 1e6, **metrics})
        return app.kernel_record(
            "void softmax<c10::Half>(c10::Half*)", [80, 1, 1], [{"metrics": counters}], p
        )

    # FP16 SIMT alone: counted, with the half2 caveat, under no roof (the spec gives none)
    rec = record(
        **{
            "sm__sass_thread_inst_executed_op_hfma_pred_on.sum": 1e6,
            "sm__sass_thread_inst_executed_op_hmul_pred_on.sum": 1e5,
        }
    )  # 2.1e6 FLOPs
    assert (rec["dtype"], rec["pipe"]) == ("fp16", "simt") and rec["flops"] == 2.1e6
    assert "packed half2" in rec["flops_note"]
    app.place(rec, app.roofs_for(resolve("h200-sxm"), None))
    assert rec["attainable_tflops"] is None and "no fp16 simt roof" in rec["roof_note"]
    assert rec["label"] == "softmax<c10::Half> [80x1x1]"
    # beside FP32 work the HFMA counter also counts FP32 instructions (seen on the H200): the
    # FP16 count is said, not added
    rec = record(
        **{
            "sm__sass_thread_inst_executed_op_hfma_pred_on.sum": 1e6,
            "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 1e6,
        }
    )
    assert (rec["dtype"], rec["pipe"]) == ("fp32", "simt") and rec["flops"] == 2e6
    assert "fp16 SIMT not added (2,000,000" in rec["flops_note"]


def test_hfma_alone_is_no_fp16_work():
    """CuPy's float32 `x mod 1` kernel after cupy.random.rand, as ncu counted it on the H200:
    an FSETP and an FSEL per element (no FADD, FMUL or FFMA), and one HFMA per element, the
    HFMA2.MMA the compiler sets a register with. It was "fp16 simt" work with no roof; it is
    data movement, and the record says why the HFMA count was not taken."""
    from rooflinecli.core.specs import resolve

    p = ncu.plan(app.COUNTS, prof.parse_query_metrics(QUERY))
    n = 1 << 24
    counters = {m: 0.0 for m in p.metrics}
    counters.update(
        {
            "gpu__time_duration.sum": 2.9e-5,
            "dram__bytes_read.sum": 4.0 * n,
            "dram__bytes_write.sum": 4.0 * n,
            "sm__sass_thread_inst_executed_op_hfma_pred_on.sum": float(n),
        }
    )
    rec = app.kernel_record("cupy_random_x_mod_1", [16384, 1, 1], [{"metrics": counters}], p)
    assert rec["pipe"] is None and rec["work"] == "none" and not rec["flops"]
    assert rec["flops_by"]["fp16 simt"] is None
    assert f"fp16 SIMT not counted ({n:,} HFMA" in rec["flops_note"]
    assert "HFMA2.MMA" in rec["flops_note"]
    app.place(rec, app.roofs_for(resolve("h200-sxm"), None))
    assert rec["roof_note"].startswith("no FLOPs counted: data movement only")
    # an FP16 add or multiply beside it is FP16 arithmetic: the HFMA count is then taken
    counters["sm__sass_thread_inst_executed_op_hadd_pred_on.sum"] = float(n)
    rec = app.kernel_record("half_axpy", [16384, 1, 1], [{"metrics": counters}], p)
    assert (rec["dtype"], rec["pipe"], rec["flops"]) == ("fp16", "simt", 3.0 * n)


def test_kernels_that_read_the_same_are_told_apart():
    """`profile app` on torch.randn in float32 and bfloat16 printed two kernels as
    `at::<...> [1056x1x1]`: each keeps its function's name, and where that and the grid match,
    the template argument that differs; where nothing tells them apart, a number."""
    from rooflinecli.core import kernel_names

    def randn(t: str) -> str:
        return (
            "void at::<unnamed>::distribution_elementwise_grid_stride_kernel<float, 4, "
            f"void templates::normal_and_transform<{t}, float, at::CUDAGeneratorImpl *, "
            "void at::native::<unnamed>::normal_kernel<at::CUDAGeneratorImpl *>(const "
            "at::TensorBase &, double, double, T1)::[lambda() (instance 1)]::operator ()() "
            "const::[lambda() (instance 2)]::operator ()() const::[lambda(float) (instance 1)]>"
            "(at::TensorIteratorBase &, T2, T3)::[lambda(curandStatePhilox4_32_10 *) (instance "
            "2)], void at::native::<unnamed>::normal_kernel<at::CUDAGeneratorImpl *>(const "
            "at::TensorBase &, double, double, T1)::[lambda() (instance 1)]::operator ()() "
            "const::[lambda() (instance 2)]::operator ()() const::[lambda(float) (instance 1)]>"
            "(long, at::PhiloxCudaState, T3, T4)"
        )

    softmax = "void at::<unnamed>::cunn_SoftMaxForwardReg<c10::Half, float, c10::Half>(T3 *)"
    norm = "void at::<unnamed>::vectorized_layer_norm_kernel<c10::Half, float, 0>(int, T2)"
    recs = [
        {"kernel": randn("float"), "grid": [1056, 1, 1]},
        {"kernel": randn("c10::BFloat16"), "grid": [1056, 1, 1]},
        {"kernel": softmax, "grid": [4096, 1, 1]},
        {"kernel": norm, "grid": [4096, 1, 1]},
        {"kernel": "void k(int)", "grid": [8, 1, 1]},
        {"kernel": "void k(float)", "grid": [8, 1, 1]},
        {"stage": "cublas"},
    ]
    got = kernel_names.labels(recs)
    assert len(set(got)) == len(got), got
    assert all("<...> [" not in g or not g.startswith("at::<...>") for g in got)
    assert "c10::BFloat16" in got[1] and "float, float" in got[0]
    assert got[2] == "at::<unnamed>::cunn_SoftMaxForwardReg<...> [4096x1x1]"
    assert got[3] == "at::<unnamed>::vectorized_layer_norm_kernel<...> [4096x1x1]"
    assert got[4:] == ["k [8x1x1] #1", "k [8x1x1] #2", "cublas"]
    # the plot's names (the function alone) are told apart the same way
    compact = kernel_names.labels(recs, scoped=False)
    assert len(set(compact)) == len(compact)
    assert compact[2] == "cunn_SoftMaxForwardReg [4096x1x1]"
    # and a profiled program's records carry them
    rows = prof.parse_raw_csv(CSV)
    for row in rows:
        if row["kernel"] == "cupy_add__float32_float_float32":
            row["kernel"], row["grid"] = randn("c10::BFloat16"), "(1056, 1, 1)"
        elif row["kernel"] == "cupy_multiply__float32_float_float32":
            row["kernel"], row["grid"] = randn("float"), "(1056, 1, 1)"
    doc = _doc(app.Run(rows, ncu.plan(app.COUNTS, prof.parse_query_metrics(QUERY)), {}))
    labels = [r["label"] for r in doc["records"]]
    assert len(set(labels)) == len(labels), labels


def test_short_names():
    assert app.short_name("void at::native::f<4, float>(int, float*)") == "at::native::f<4, float>"
    long = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, T2, T3)"  # noqa: E501
    assert app.short_name(long) == "at::native::vectorized_elementwise_kernel<...>"
    assert app.short_name(GEMM).endswith("...") and len(app.short_name(GEMM)) == 48


# --------------------------------------------------------------------------- the command


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch, ncu_stand_in):
    log = tmp_path / "ncu-calls.log"
    monkeypatch.setenv("ROOFLINE_NCU", str(ncu_stand_in))
    monkeypatch.setenv("FAKE_NCU_LOG", str(log))
    return log


@pytest.fixture(scope="module")
def app_doc(tmp_path_factory, ncu_stand_in) -> Path:
    """One `profile app` document under the fake ncu (each run starts Python twice: the
    profiled program's stand-in and the import), read by the show, plot, gate and compare tests
    below; test_profile_app_command checks what that run asks of ncu."""
    folder = tmp_path_factory.mktemp("app")
    out = folder / "app.json"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ROOFLINE_NCU", str(ncu_stand_in))
        mp.setenv("FAKE_NCU_LOG", str(folder / "ncu-calls.log"))
        args = ["profile", "app", "--calibration", str(CALIBRATION), "-o", str(out), "--format",
                "json", "--", *PROGRAM]  # fmt: skip
        res = CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}).invoke(cli, args)
    assert res.exit_code == 0, res.output
    return out


def _calls(log):
    return [json.loads(ln) for ln in log.read_text().splitlines()]


def test_profile_app_command(runner, fake_ncu, tmp_path):
    out = tmp_path / "app.json"
    res = runner.invoke(
        cli,
        ["profile", "app", "--kernel", "gemm|axpb", "--nvtx", "app@matmul/", "--launch-skip", "2",
         "--launch-count", "8", "--calibration", str(CALIBRATION), "--output", str(out),
         "--reports", str(tmp_path / "reports"), "--", *PROGRAM],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "axpb [2097152x1x1]" in res.output and "fp16 tensor" in res.output
    assert "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesiz... [132x1x1]" in res.output
    assert "WGMMA ran" in res.output  # the notes under the table
    doc = results.load(out)
    assert doc["command"] == "profile app" and doc["kind"] == "profile-app"
    assert doc["program"] == {"argv": PROGRAM, "exit_code": 0}
    assert doc["device"]["name"] == "NVIDIA H200" and doc["device"]["clock_sm_max_mhz"] == 1980
    assert doc["device"]["compute_capability"] == "9.0" and doc["device"]["sm_count"] == 132
    assert doc["spec"]["name"] == "h200-sxm" and doc["profiler"]["version"] == "2025.3.1.0"
    assert len(doc["records"]) == 5 and all(r["name"] == r["stage"] for r in doc["records"])
    assert (tmp_path / "reports" / "app.ncu-rep").is_file()
    (profiled,) = [c for c in _calls(fake_ncu) if "--export" in c]
    assert profiled[:5] == ["--clock-control", "none", "--target-processes", "all", "--kernel-name"]
    assert profiled[5] == "regex:gemm|axpb"
    assert profiled[profiled.index("--nvtx-include") - 1] == "--nvtx"
    assert profiled[profiled.index("--nvtx-include") + 1] == "app@matmul/"
    assert profiled[profiled.index("--launch-skip") + 1] == "2"
    assert profiled[profiled.index("--launch-count") + 1] == "8"
    assert profiled[-len(PROGRAM) :] == PROGRAM  # the program and its own flags, untouched
    metrics = profiled[profiled.index("--metrics") + 1].split(",")
    assert "sm__ops_path_tensor_src_fp16.sum" in metrics and "gpu__time_duration.sum" in metrics
    (imported,) = [c for c in _calls(fake_ncu) if c[0] == "--import"]
    assert imported[2:] == ["--csv", "--page", "raw", "--print-units", "base",
                            "--print-kernel-base", "demangled"]  # fmt: skip


def test_show_renders_a_profile_app_document(runner, app_doc):
    out = app_doc
    res = runner.invoke(cli, ["show", str(out)])
    assert res.exit_code == 0, res.output
    text = res.output
    assert "Kernels of `python examples/cupy_app.py --n 4096` under Nsight Compute" in text
    assert "axpb [2097152x1x1]" in text and "bound by" in text
    assert "Roofline: kernels of `python examples/cupy_app.py --n 4096` on NVIDIA H200" in text
    assert "? cupy_copy__float32_float32 [2097152x1x1]" in text  # no FLOPs: listed, not drawn
    md = runner.invoke(cli, ["show", str(out), "--format", "markdown", "--no-chart"])
    assert md.exit_code == 0 and "| kernel [grid] | launches |" in md.output
    csv_out = runner.invoke(cli, ["show", str(out), "--format", "csv"])
    assert csv_out.exit_code == 0 and "axpb [2097152x1x1]" in csv_out.output
    bad = runner.invoke(cli, ["show", str(out), "--roofs", "measured"])
    assert bad.exit_code == 2 and "--roofs and --calibration do not apply" in bad.output


def test_plot_draws_a_profile_app_document(runner, app_doc, tmp_path):
    pytest.importorskip("matplotlib")
    res = runner.invoke(cli, ["plot", str(app_doc), "-o", str(tmp_path / "app.svg")])
    assert res.exit_code == 0, res.output
    assert "kernels of" in res.output and (tmp_path / "app.svg").stat().st_size > 1000


needs_identity = pytest.mark.skipif(
    not hasattr(results, "identity"),
    reason="gate/compare key records by results.identity (stage, dtype, shape or none): "
    "another branch; records here carry stage = name = 'KERNEL [GRID]' and null m, n, k",
)


@needs_identity
def test_gate_and_compare_take_a_profile_app_document(runner, app_doc, tmp_path):
    a, b = app_doc, tmp_path / "b.json"
    b.write_bytes(a.read_bytes())  # a second run of the fake ncu would give the same numbers
    res = runner.invoke(cli, ["compare", str(a), str(b)])
    assert res.exit_code == 0, res.output
    assert "axpb [2097152x1x1]" in res.output
    res = runner.invoke(cli, ["gate", str(b), "--baseline", str(a)])
    assert "axpb [2097152x1x1]" in res.output


def test_a_program_that_fails_exits_1_with_its_kernels_shown(runner, fake_ncu, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_EXIT", "3")
    res = runner.invoke(cli, ["profile", "app", "--", *PROGRAM])
    assert res.exit_code == 1
    assert "axpb [2097152x1x1]" in res.output and "the program exited with 3" in res.output


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("perm", "error: ERR_NVGPUCTRPERM: no permission"),
        ("perm-sentence", "error: ERR_NVGPUCTRPERM: no permission"),
        ("none", "error: ncu profiled no kernel"),
    ],
)
def test_nothing_profiled_exits_2(runner, fake_ncu, monkeypatch, mode, message):
    monkeypatch.setenv("FAKE_NCU_MODE", mode)
    res = runner.invoke(cli, ["profile", "app", "--", *PROGRAM])
    assert res.exit_code == 2
    assert res.output.strip().splitlines()[-1].startswith(message)


def test_no_ncu_and_no_program_exit_2(runner, monkeypatch, tmp_path):
    monkeypatch.delenv("ROOFLINE_NCU", raising=False)
    monkeypatch.setattr(prof, "_candidates", lambda: [])
    monkeypatch.setenv("PATH", str(tmp_path))
    res = runner.invoke(cli, ["profile", "app", "--", sys.executable, "-c", "pass"])
    assert res.exit_code == 2 and "Nsight Compute (ncu) not found" in res.output
    res = runner.invoke(cli, ["profile", "app"])
    assert res.exit_code == 2


@pytest.mark.parametrize("split", [False, True])
def test_fp8_counters_of_a_made_up_scaled_mm_give_2mnk(split):
    """An FP8 GEMM (cuBLASLt's, as torch._scaled_mm launches it, or stage 32's QGMMA): its FLOPs
    are the FP8 tensor path's operations, 2MNK, under the FP8 dense peak; a listing with the
    counter only split by accumulator sums the halves."""
    m, n, k = 4096, 14336, 4096
    listing = QUERY
    name = "sm__ops_path_tensor_src_fp8.sum"
    if split:
        listing = QUERY.replace(
            "sm__ops_path_tensor_src_fp8 ", "sm__ops_path_tensor_src_fp8_dst_fp32 "
        )
        listing += "sm__ops_path_tensor_src_fp8_dst_fp16   x\n"
        name = "sm__ops_path_tensor_src_fp8_dst_fp32.sum"
    p = ncu.plan(app.COUNTS, prof.parse_query_metrics(listing))
    counters = {m_: 0.0 for m_ in p.metrics}
    counters[name] = 2.0 * m * n * k  # QGMMA.64x256x32.F32.E4M3.E4M3, FP32 accumulator
    counters["gpu__time_duration.sum"] = 4e-4
    kernel = "sm90_xmma_gemm_e4m3e4m3_bf16f32_f32_tn_n_tilesize128x256x128_cublasLt"
    rec = app.kernel_record(kernel, [132, 1, 1], [{"metrics": counters}], p)
    assert rec["flops"] == 2 * m * n * k and rec["flops_by"] == {"fp8 tensor": 2 * m * n * k}
    assert (rec["dtype"], rec["pipe"]) == ("fp8", "tensor")
    assert rec["tflops"] == pytest.approx(2 * m * n * k / 4e-4 / 1e12)
