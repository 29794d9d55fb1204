"""`roofline profile`: ncu's raw CSV parsed on the CPU, counters turned into the measured roofline,
and the whole command driven through a stand-in `ncu` (a script) so the orchestration runs here."""

import json
import os
import stat
import sys
import textwrap

import pytest

from rooflinecli import paths
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import ncu
from rooflinecli.gpu import profile as prof

N = 4096
FFMA = N**3  # the naive kernel: one FFMA per multiply-add (68,719,476,736, as ncu saw on H200)
FMUL = N * N  # the epilogue's alpha * acc, once per element of C

# `ncu --import R --csv --page raw --print-units base`: a header of column names (the metrics
# among them), a row of units (empty for the launch columns), one row per profiled kernel;
# numbers with thousands separators. ncu's own lines start with ==PROF==.
RAW_CSV = textwrap.dedent(
    """\
    ==PROF== Connected to process 4242 (/usr/bin/python3.12)
    "ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum","dram__bytes_write.sum","dram__sectors_read.sum","gpu__time_duration.sum","l1tex__t_bytes.sum","lts__t_bytes.sum","sm__ops_path_tensor_src_fp16_dst_fp32.sum","sm__sass_thread_inst_executed_op_fadd_pred_on.sum","sm__sass_thread_inst_executed_op_ffma_pred_on.sum","sm__sass_thread_inst_executed_op_fmul_pred_on.sum"
    "","","","","","","","","","","","byte","byte","sector","nsecond","byte","byte","","inst","inst","inst"
    "0","4242","python3.12","127.0.0.1","gemm_naive_xcol","1","7","(16, 16, 1)","(256, 256, 1)","0","9.0","1,073,741,824","67,108,864","33,554,432","25,812,345","1,099,511,627,776","274,877,906,944","0","0","68,719,476,736","16,777,216"
    ==PROF== Disconnected from process 4242
    """  # noqa: E501
)


def test_parse_raw_csv():
    rows = prof.parse_raw_csv(RAW_CSV)
    assert len(rows) == 1
    row = rows[0]
    assert row["kernel"] == "gemm_naive_xcol" and row["id"] == "0"
    assert row["block"] == "(16, 16, 1)" and row["grid"] == "(256, 256, 1)"
    m = row["metrics"]
    assert m["sm__sass_thread_inst_executed_op_ffma_pred_on.sum"] == FFMA
    assert m["dram__bytes_read.sum"] == 2**30
    assert m["gpu__time_duration.sum"] == pytest.approx(25.812345e-3)  # nanoseconds -> seconds
    assert "Kernel Name" not in m and "CC" not in m


def test_parse_raw_csv_with_program_output_and_no_kernels():
    noisy = "run gemm says hello\n==WARNING== something\n" + RAW_CSV + "bye\n"
    assert prof.parse_raw_csv(noisy)[0]["kernel"] == "gemm_naive_xcol"
    assert prof.parse_raw_csv("==WARNING== No kernels were profiled.\n") == []


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        ("68,719,476,736", "inst", 68719476736.0),
        ("25.80", "msecond", 0.0258),
        ("1.5", "Gbyte", 1.5e9),
        ("4096", "byte", 4096.0),
        ("n/a", "byte", None),
        ("", "", None),
    ],
)
def test_parse_number(value, unit, expected):
    got = prof.parse_number(value, unit)
    assert got == (pytest.approx(expected) if expected is not None else None)


def test_derive_naive_4096():
    counters = prof.sum_metrics(prof.parse_raw_csv(RAW_CSV))
    flops = 2 * N**3
    d = prof.derive(counters, flops)
    # 2 x FFMA + FMUL + FADD (+ Tensor Core ops, 0 here)
    assert d["flops_hw"] == 2 * FFMA + FMUL
    assert d["flops_hw_ratio"] == pytest.approx(1 + 1 / (2 * N))  # the epilogue's FMULs
    assert d["flops_check"] is True
    assert d["bytes_dram"] == 2**30 + 2**26
    assert d["bytes_dram_read_sectors"] == 33_554_432 * 32 == d["bytes_dram_read"]
    assert d["bytes_l2"] == 2**38 and d["bytes_l1"] == 2**40
    assert d["ai_dram"] == pytest.approx(d["flops_hw"] / (2**30 + 2**26))
    assert d["ai_l1"] == pytest.approx(d["flops_hw"] / 2**40)  # ~0.125: below the seed's 0.25
    assert d["ncu_time_ms"] == pytest.approx(25.812345)
    assert d["tflops_ncu"] == pytest.approx(flops / 25.812345e-3 / 1e12)


def test_flops_mismatch_and_multi_kernel_sum():
    rows = prof.parse_raw_csv(RAW_CSV)
    twice = rows + rows  # a library GEMM of two kernels: counters add up
    total = prof.sum_metrics(twice)
    assert total["dram__bytes_read.sum"] == 2 * 2**30
    d = prof.derive(total, 2 * N**3)
    assert d["flops_check"] is False and d["flops_hw_ratio"] == pytest.approx(2, rel=1e-3)


def test_a_launch_without_a_value_makes_the_sum_unknown():
    rows = prof.parse_raw_csv(RAW_CSV)
    blank = {**rows[0], "metrics": {**rows[0]["metrics"], "lts__t_bytes.sum": None}}
    for pair in ([blank, rows[0]], [rows[0], blank]):  # whichever comes first
        total = prof.sum_metrics(pair)
        assert total["lts__t_bytes.sum"] is None and total["dram__bytes_read.sum"] == 2**31


def test_attach_without_counters():
    rec = {"stage": "naive_xcol", "flops": 2 * N**3, "time_ms": 30.0}
    prof.attach(rec, None, "ERR_NVGPUCTRPERM: no permission")
    assert rec["counters"] is None and rec["counters_reason"].startswith("ERR_NVGPUCTRPERM")
    assert all(rec[f] is None for f in prof.COUNTER_FIELDS)


def test_attach_with_counters():
    rec = {"stage": "naive_xcol", "flops": 2 * N**3, "time_ms": 51.6}
    prof.attach(rec, prof.parse_raw_csv(RAW_CSV), None)
    assert rec["counters_reason"] is None and rec["ncu_kernels"] == ["gemm_naive_xcol"]
    assert rec["time_ratio_ncu"] == pytest.approx(51.6 / 25.812345)
    assert rec["counters"]["lts__t_bytes.sum"] == 2**38


QUERY = """\
Device NVIDIA H200 (GH100)
------------------------------------------------ -------------------------------------------
Metric Name                                      Metric Description
------------------------------------------------ -------------------------------------------
dram__bytes_read                                 # of bytes read from DRAM
gpu__time_duration                               total duration in nanoseconds
sm__ops_path_tensor_src_fp16_dst_fp32            # of math ops executed in Tensor path
"""


def test_query_metrics_and_the_plan():
    names = prof.parse_query_metrics(QUERY)
    assert names == {
        "dram__bytes_read",
        "gpu__time_duration",
        "sm__ops_path_tensor_src_fp16_dst_fp32",
    }
    p = ncu.plan(prof.COUNTS, names)
    # only what the GPU lists is asked for: ncu refuses a whole run over one unknown metric
    assert p.metrics == ["gpu__time_duration.sum", "dram__bytes_read.sum"]
    # FP16 Tensor Core ops need both halves (dst fp16 + dst fp32) or Hopper's src_fp16
    assert "tensor_fp16" in p.missing and "lts__t_bytes.sum" in p.dropped(prof.COUNTS)
    assert "tma_load" not in p.missing  # optional: a GPU without TMA moves nothing by TMA
    everything = ncu.plan(prof.COUNTS, None)  # no listing: the first alternative of each
    assert "sm__ops_path_tensor_src_fp16.sum" in everything.metrics
    assert "sm__ops_path_tensor_src_fp16_dst_fp32.sum" not in everything.metrics
    assert not any("tma" in m for m in everything.metrics)  # optional ones are not risked


def test_command_lines(tmp_path):
    target = prof.run_command((4096, 4096, 4096), "naive_xcol", "fp32", None, tmp_path / "r.json")
    # a library entry point that calls the runner, not the CLI
    assert target[:3] == [sys.executable, "-m", "rooflinecli.gpu.profile_target"]
    joined = " ".join(target)
    assert "--stage naive_xcol --m 4096 --n 4096 --k 4096 --dtype fp32 --output" in joined
    cmd = prof.ncu_command(
        tmp_path / "ncu", ["a.sum", "b.sum"], tmp_path / "x.ncu-rep", target, "naive_xcol",
        "gemm_naive_xcol", use_nvtx=True,
    )  # fmt: skip
    assert cmd[1:3] == ["--clock-control", "none"]
    i = cmd.index("--nvtx-include")
    assert cmd[i - 1] == "--nvtx" and cmd[i + 1] == "roofline@naive_xcol/"
    assert cmd[cmd.index("--metrics") + 1] == "a.sum,b.sum"
    assert cmd[-len(target) :] == target
    fallback = prof.ncu_command(
        tmp_path / "ncu", ["a.sum"], tmp_path / "x.ncu-rep", target, "naive_xcol",
        "gemm_naive_xcol", use_nvtx=False,
    )  # fmt: skip
    assert "--nvtx" not in fallback
    assert fallback[fallback.index("--kernel-name") + 1] == "gemm_naive_xcol"


def test_find_ncu_env(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_NCU", str(tmp_path / "nope"))
    with pytest.raises(RooflineError, match="ROOFLINE_NCU"):
        prof.find_ncu()


def test_find_ncu_absent(monkeypatch, tmp_path):
    monkeypatch.delenv("ROOFLINE_NCU", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(prof, "_candidates", lambda: [tmp_path / "ncu"])
    with pytest.raises(RooflineError, match="ncu\\) not found"):
        prof.find_ncu()


# --------------------------------------------------------------------------- the whole command

# Stand-ins: `ncu` answers --version and --query-metrics, runs the target like the real one and
# writes a report (here: the kernel's name), and prints RAW_CSV for --import; the target is a
# script standing in for `python -m rooflinecli run gemm` (which needs a GPU) that writes the
# results document. FAKE_NCU_MODE=perm behaves like a GPU without counter permission. Every ncu
# call is logged for the assertions. It needs only the standard library, so it starts without
# `site` (-S): about 20 ms less a call, of some 20 calls.
FAKE_NCU = r"""#!{python} -S
import json, os, subprocess, sys
args = sys.argv[1:]
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "calls.log"), "a") as fh:
    fh.write(json.dumps(args) + "\n")
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2025.3.1.0 (build 1)")
    sys.exit(0)
if args == ["--query-metrics"]:
    print(open(os.path.join(here, "query.txt")).read())
    sys.exit(0)
if args[0] == "--import":
    kernel = open(args[1]).read() or "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8"
    print(open(os.path.join(here, "raw.csv")).read().replace("gemm_naive_xcol", kernel))
    sys.exit(0)
if os.environ.get("FAKE_NCU_MODE") == "perm-early":  # stops before it starts the target
    print("==ERROR== The user does not have permission to access NVIDIA GPU Performance "
          "Counters on the target device 0.", file=sys.stderr)
    sys.exit(1)
target = args[args.index(sys.executable):]
rc = subprocess.run(target).returncode
if os.environ.get("FAKE_NCU_MODE") == "perm":
    print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
          "Performance Counters on the target device 0.")
    sys.exit(rc)
stage = target[target.index("--stage") + 1]
with open(args[args.index("--export") + 1], "w") as fh:
    fh.write("" if stage == "cublas" else "gemm_" + stage)
print("==PROF== Disconnected from process 1")
sys.exit(rc)
"""

FAKE_CHILD = r"""import json, os, sys
args = sys.argv[1:]
def opt(name):
    return args[args.index(name) + 1]
stage, m = opt("--stage"), int(opt("--m"))
if os.environ.get("FAKE_CHILD_FAIL") == stage:
    print("error: stage " + stage + " crashed the CUDA context", file=sys.stderr)
    sys.exit(2)
# the event time of the one timed launch: under ncu it covers the replays (51.6 ms, not 25.8)
rec = {"stage": stage, "kind": "reference" if stage == "cublas" else "stage", "dtype": "fp32",
       "m": m, "n": m, "k": m, "flops": 2 * m**3, "time_ms": 51.6, "time_ms_min": 51.6,
       "time_ms_max": 51.6, "time_ms_stdev": 0.0, "repeats": 1, "tflops": 2 * m**3 / 51.6e9,
       "ai_instruction": 0.25, "ai_ideal": 682.67, "bytes_ideal": 12 * m * m,
       "peak_tflops": 67.0, "attainable_tflops": 67.0, "verified": True}
doc = {"schema": "roofline.results/1", "tool_version": "0", "created": "now",
       "spec": {"name": "h200-sxm"}, "device": {"name": "FAKE H200"}, "records": [rec]}
with open(opt("--output"), "w") as fh:
    json.dump(doc, fh)
"""


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    folder = tmp_path / "ncu"
    folder.mkdir()
    exe = folder / "ncu"
    exe.write_text(FAKE_NCU.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    child = folder / "child.py"
    child.write_text(FAKE_CHILD)
    (folder / "raw.csv").write_text(RAW_CSV)
    (folder / "query.txt").write_text(
        QUERY + "".join(m.rsplit(".", 1)[0] + "   x\n" for m in prof.METRICS)
    )
    monkeypatch.setenv("ROOFLINE_NCU", str(exe))
    monkeypatch.setattr(prof, "nvtx_available", lambda: True)

    def run_command(shape, stage, dtype, spec_arg, json_out):
        m = str(shape[0])
        return [sys.executable, str(child), "--stage", stage, "--m", m, "--output", str(json_out)]

    monkeypatch.setattr(prof, "run_command", run_command)
    return folder


def _calls(folder):
    return [json.loads(ln) for ln in (folder / "calls.log").read_text().splitlines()]


def test_profile_command_with_fake_ncu(runner, fake_ncu, tmp_path):
    from rooflinecli.cli import cli

    out = tmp_path / "profile.json"
    res = runner.invoke(
        cli,
        ["profile", "gemm", "--m", "4096", "--stages", "naive_xcol", "--output", str(out),
         "--reports", str(tmp_path / "reports")],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "check: naive_xcol: flops_hw = 1.00012 x 2MNK (ok" in res.output
    assert "event 51.600 ms vs ncu 25.812 ms" in res.output
    doc = paths.read_json(out, "results file")
    assert doc["command"] == "profile gemm" and doc["device"]["name"] == "FAKE H200"
    recs = {r["stage"]: r for r in doc["records"]}
    assert set(recs) == {"naive_xcol", "cublas"}
    naive = recs["naive_xcol"]
    assert naive["flops_check"] is True and naive["counters_reason"] is None
    assert naive["bytes_dram"] == 2**30 + 2**26 and naive["ai_dram"] > naive["ai_instruction"]
    assert naive["ncu_kernels"] == ["gemm_naive_xcol"]
    # speed from ncu's kernel time; the event time under ncu's replays only under its own name
    assert naive["time_ms"] == pytest.approx(25.812345) and naive["time_ms_under_ncu"] == 51.6
    assert naive["tflops"] == pytest.approx(2 * N**3 / 25.812345e-3 / 1e12)
    assert naive["pct_of_peak"] == pytest.approx(100 * naive["tflops"] / 67.0)
    assert naive["pct_of_reference"] == pytest.approx(100.0)  # cuBLAS at ncu's time too
    assert naive["time_ms_stdev"] is None  # one profiled launch: no spread
    assert recs["cublas"]["ncu_kernels"][0].startswith("sm90_xmma")
    assert doc["profiler"]["version"] == "2025.3.1.0" and doc["profiler"]["dropped_metrics"] == []
    assert (tmp_path / "reports" / "naive_xcol.ncu-rep").is_file()
    # one ncu run per stage, each filtered to its own NVTX range, clocks left alone
    runs = [c for c in _calls(fake_ncu) if "--nvtx-include" in c]
    includes = [c[c.index("--nvtx-include") + 1] for c in runs]
    assert includes == ["roofline@naive_xcol/", "roofline@cublas/"]
    assert all(c[c.index("--clock-control") + 1] == "none" for c in runs)
    imports = [c for c in _calls(fake_ncu) if c[0] == "--import"]
    assert all(c[2:] == ["--csv", "--page", "raw", "--print-units", "base"] for c in imports)


def test_profile_command_json_format(runner, fake_ncu):
    from rooflinecli.cli import cli

    res = runner.invoke(
        cli, ["profile", "gemm", "--m", "4096", "--stages", "naive_xcol", "-q", "--format", "json"]
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["schema"] == "roofline.results/2"
    assert doc["records"][0]["ai_l2"] == pytest.approx((2 * FFMA + FMUL) / 2**38)


def test_profile_without_counter_permission(runner, fake_ncu, monkeypatch):
    from rooflinecli.cli import cli

    monkeypatch.setenv("FAKE_NCU_MODE", "perm")
    res = runner.invoke(cli, ["profile", "gemm", "--m", "4096", "--stages", "naive_xcol"])
    assert res.exit_code == 2
    assert "naive_xcol" in res.output  # the run's results are still shown
    last = res.output.strip().splitlines()[-1]
    assert last.startswith("error: no hardware counters: ERR_NVGPUCTRPERM")
    assert "no counters (ERR_NVGPUCTRPERM" in res.output
    # after the refusal the remaining stage (cublas) runs without ncu
    runs = [c for c in _calls(fake_ncu) if "--nvtx-include" in c]
    assert len(runs) == 1


def test_profile_where_ncu_stops_before_the_run_for_want_of_counter_access(
    runner, fake_ncu, monkeypatch
):
    """An ncu that refuses before it starts the program (no results document) and prints only
    the sentence: still the one line that names the missing counter access, exit 2."""
    from rooflinecli.cli import cli

    monkeypatch.setenv("FAKE_NCU_MODE", "perm-early")
    res = runner.invoke(cli, ["profile", "gemm", "--m", "4096", "--stages", "naive_xcol"])
    assert res.exit_code == 2, res.output
    assert res.stderr == f"error: no hardware counters: {prof.NO_COUNTER_ACCESS}\n"


@pytest.mark.parametrize(
    "text",
    [
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
        "Performance Counters on the target device 0.",
        "==ERROR== The user does not have permission to access NVIDIA GPU Performance Counters",
        "==PROF== Connected\n==ERROR== err_nvgpuctrperm\n",
    ],
)
def test_counter_access_is_recognised_in_ncus_words(text):
    assert prof.counter_access_problem(text) == prof.NO_COUNTER_ACCESS


@pytest.mark.parametrize(
    "text", ["", "==PROF== Disconnected from process 1", "==ERROR== unknown option --foo"]
)
def test_other_ncu_output_is_no_counter_access_problem(text):
    assert prof.counter_access_problem(text) is None


def test_profile_without_ncu_or_gpu(runner, monkeypatch, tmp_path):
    from rooflinecli.cli import cli

    monkeypatch.delenv("ROOFLINE_NCU", raising=False)
    monkeypatch.setattr(prof, "_candidates", lambda: [])
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))
    ran = []
    monkeypatch.setattr(prof, "run_command", lambda *a: ran.append(a) or ["false"])
    res = runner.invoke(cli, ["profile", "gemm", "--m", "64", "--stages", "naive_xcol", "-q"])
    assert res.exit_code == 2
    assert res.output.strip().splitlines() == [
        "error: Nsight Compute (ncu) not found on PATH, in /usr/local/cuda/bin or "
        "/opt/nvidia/nsight-compute: install it or set ROOFLINE_NCU"
    ]
    assert ran == []  # checked before any stage ran


def test_profile_keeps_going_when_a_later_stage_breaks(runner, fake_ncu, monkeypatch):
    from rooflinecli.cli import cli

    monkeypatch.setenv("FAKE_CHILD_FAIL", "cublas")
    res = runner.invoke(
        cli, ["profile", "gemm", "--m", "4096", "--stages", "naive_xcol", "--format", "json"]
    )
    assert res.exit_code == 1  # a stage that did not verify: a gate failure, as in `run`
    doc = json.loads(res.stdout)
    recs = {r["stage"]: r for r in doc["records"]}
    assert recs["naive_xcol"]["flops_check"] is True
    assert recs["cublas"]["verified"] is False and "crashed" in recs["cublas"]["error"]
    assert recs["cublas"]["counters"] is None


def test_profile_stops_when_the_first_stage_breaks(runner, fake_ncu, monkeypatch):
    from rooflinecli.cli import cli

    monkeypatch.setenv("FAKE_CHILD_FAIL", "naive_xcol")
    res = runner.invoke(cli, ["profile", "gemm", "--m", "4096", "--stages", "naive_xcol", "-q"])
    assert res.exit_code == 2
    assert "error: run gemm failed: stage naive_xcol crashed" in res.output


# --------------------------------------------------------------------------- committed documents

RESULTS = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "results")
PROFILE_DOCS = sorted(
    os.path.join(RESULTS, f)
    for f in os.listdir(RESULTS)
    if f.startswith("profile-") and not f.startswith("profile-app-")  # `profile gemm` ones
)


@pytest.mark.parametrize("path", PROFILE_DOCS, ids=os.path.basename)
def test_committed_profile_documents_take_speed_from_ncu(path):
    from rooflinecli import results

    doc = results.load(path)
    assert [m["id"] for m in doc["migrations"]] == [prof.MIGRATION_NCU_TIME]
    for rec in doc["records"]:
        assert rec["time_ms"] == rec["ncu_time_ms"]
        assert rec["tflops"] == pytest.approx(rec["flops"] / (rec["ncu_time_ms"] * 1e9))
        assert rec["pct_of_peak"] == pytest.approx(100 * rec["tflops"] / rec["peak_tflops"])
        assert rec["time_ms_under_ncu"] > 10 * rec["time_ms"]  # replays: never a speed
    assert not prof.migrate_times(doc)  # migrated once: re-running changes nothing


def test_migration_recomputes_from_the_stored_ncu_time():
    import copy

    from rooflinecli import results

    done = results.load(os.path.join(RESULTS, "profile-fp32-4096-multistage.json.gz"))
    old = copy.deepcopy(done)
    del old["migrations"]
    for rec in old["records"]:  # as it was committed: speed from the event time under ncu
        rec["time_ms"] = rec.pop("time_ms_under_ncu")
        rec.update(tflops=rec["flops"] / (rec["time_ms"] * 1e9), pct_of_reference=0.3)
    assert prof.migrate_times(old)
    for a, b in zip(old["records"], done["records"], strict=True):
        for key in ("time_ms", "tflops", "pct_of_roof", "pct_of_peak", "pct_of_reference"):
            assert a[key] == pytest.approx(b[key]), key
        assert a["time_ms_under_ncu"] == b["time_ms_under_ncu"]
    multistage = old["records"][0]
    assert multistage["tflops"] == pytest.approx(46.62, abs=0.01)
    assert multistage["pct_of_reference"] == pytest.approx(91.08, abs=0.01)


def test_show_prints_the_committed_profile_at_ncu_speed(runner):
    from rooflinecli.cli import cli

    res = runner.invoke(
        cli, ["show", os.path.join(RESULTS, "profile-fp32-4096.json.gz"), "--no-chart"]
    )
    assert res.exit_code == 0, res.output
    row = next(ln for ln in res.output.splitlines() if "naive_xcol" in ln)
    assert "25.332" in row and "5.43" in row  # not 1,341.881 ms and 0.10 TFLOP/s


def test_profile_target_is_a_library_entry_point(capsys, tmp_path):
    """The process ncu runs calls the runner itself: no CLI, no click, its own one-line errors."""
    import subprocess

    from rooflinecli.gpu import profile_target

    out = str(tmp_path / "run.json")
    shape = ["--m", "64", "--n", "64", "--k", "64"]
    assert profile_target.main(["--stage", "nope", *shape, "--output", out]) == 2
    assert "error: unknown stage 'nope'" in capsys.readouterr().err
    assert profile_target.main(["--stage", "naive_xcol", *shape, "--output", out]) == 2
    assert capsys.readouterr().err.startswith("error: no CUDA device found")  # no GPU here
    code = (
        "import sys, rooflinecli.gpu.profile_target as t, rooflinecli.gpu.runner;"
        "assert 'click' not in sys.modules and 'rooflinecli.cli' not in sys.modules"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)


def test_profile_targets_timed_launch_is_the_runner_loops(monkeypatch, tmp_path):
    """`profile gemm` times nothing itself: each stage's child process runs it through the
    runner (runner.run_gemm, whose stages go through the one runner loop), with one timed
    repeat, no L2 flush and no stream hold, and writes what the runner recorded."""
    from rooflinecli import results
    from rooflinecli.core import roofs
    from rooflinecli.core.specs import resolve
    from rooflinecli.gpu import profile_target, runner
    from rooflinecli.stages import gemm

    calls: list[tuple] = []
    spec = resolve("h200-sxm")

    def run_gemm(shapes, chosen, spec_arg, timing=None, dtype="fp32"):  # type: ignore[no-untyped-def]
        calls.append((shapes, [s.name for s in chosen], spec_arg, timing, dtype))
        rec = roofs.model_record(chosen[0], *shapes[0], spec, 1.0, 0.0, dtype)
        rec.update(time_ms=1.0, verified=True)
        return {"name": "NVIDIA H200"}, spec, [rec]

    monkeypatch.setattr(runner, "run_gemm", run_gemm)
    out = tmp_path / "run.json"
    assert profile_target.main(["--stage", "naive_xcol", "--m", "64", "--n", "64", "--k", "64",
                                "--output", str(out)]) == 0  # fmt: skip
    ((shapes, names, spec_arg, timing, dtype),) = calls
    assert (shapes, names, spec_arg, dtype) == ([(64, 64, 64)], ["naive_xcol"], None, "fp32")
    assert (timing.min_repeats, timing.max_repeats, timing.flush_l2, timing.hold) == (
        1, 1, False, False,
    )  # fmt: skip
    doc = results.load(str(out))
    assert [r["stage"] for r in doc["records"]] == [gemm.BY_NAME["naive_xcol"].name]
    assert doc["settings"]["under"] == "Nsight Compute"


@pytest.mark.parametrize("m", [1, 64, 65, 4096])
def test_profile_default_stages_are_those_built_for_m(runner, monkeypatch, m):
    """Without --stages, `profile gemm` profiles the ladder `run gemm` would run at this M (one
    filter, gemm.built_for): decode stages only where M is in their range, never refused."""
    from rooflinecli.cli import cli
    from rooflinecli.stages import gemm

    asked: list[list[str]] = []

    def profile_gemm(shape, names, *args, **kwargs):
        asked.append(names)
        raise RooflineError("stand-in: stop before any stage runs")

    monkeypatch.setattr(prof, "find_ncu", lambda: "ncu")
    monkeypatch.setattr(prof, "profile_gemm", profile_gemm)
    res = runner.invoke(cli, ["profile", "gemm", "--m", str(m), "-q"])
    assert res.exit_code == 2
    assert res.output.strip().splitlines() == ["error: stand-in: stop before any stage runs"]
    (names,) = asked
    ladder = gemm.select(None, "fp32")
    assert names == [s.name for s in gemm.built_for(ladder, [m])]
    decode = {s.name for s in ladder if s.m_range is not None}
    assert decode, "the fp32 ladder has decode stages"
    assert (decode <= set(names)) == (m <= 64) and (decode & set(names) == set()) == (m > 64)
    assert "naive_xcol" in names and names[-1] == "cublas"
