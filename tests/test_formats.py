"""--format everywhere README promises it: what plot and baseline save say about the file they
wrote; a title over every Markdown table; tidy CSV."""

import json
from pathlib import Path

import pytest
from fakes import fake_run_gemm

from rooflinecli.cli import cli
from rooflinecli.stages import gemm as stages

ROOT = Path(__file__).resolve().parent.parent
RUN = str(ROOT / "benchmarks/results/gemm-fp32-4096.json.gz")
DEVICE = "NVIDIA H200, driver 580.159.04, CUDA 13.0"


def test_baseline_save_formats(runner, tmp_path):
    dst = tmp_path / "b.json"
    r = runner.invoke(cli, ["baseline", "save", RUN, str(dst), "--format", "json"])
    assert r.exit_code == 0, r.output
    said = json.loads(r.stdout)
    assert said == {"path": str(dst), "source": RUN, "records": 12, "device": said["device"]}
    assert said["device"].startswith("NVIDIA H200")
    r = runner.invoke(cli, ["baseline", "save", RUN, str(dst), "--force", "--format", "csv"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [
        "path,source,records,device",
        f'{dst},{RUN},12,"{said["device"]}"',
    ]
    r = runner.invoke(cli, ["baseline", "save", RUN, str(dst), "--force"])
    assert r.stdout == f"saved {dst}: 12 records from {RUN} ({said['device']})\n"


def test_plot_formats(runner, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "r.svg"
    r = runner.invoke(cli, ["plot", RUN, "-o", str(out), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == {
        "path": str(out),
        "format": "svg",
        "records": 12,
        "title": "Roofline: GEMM 4096x4096x4096 fp32 on NVIDIA H200 (spec h200-sxm)",
    }
    r = runner.invoke(cli, ["plot", RUN, "-o", str(out), "--force", "--format", "csv"])
    assert r.stdout.splitlines()[0] == "path,format,records,title"


def test_every_command_takes_format():
    import click

    def leaves(cmd, path):
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                yield from leaves(sub, [*path, name])
        else:
            yield " ".join(path), cmd

    lacking = [
        path
        for path, cmd in leaves(cli, ["roofline"])
        if not any(p.name == "fmt" and "--format" in p.opts for p in cmd.params)
    ]
    assert lacking == []


def untitled(text):
    """Markdown tables without a `### title` line (and a blank line) right above them, and
    headings run into what comes before them."""
    lines = text.splitlines()
    bad = []
    for i, line in enumerate(lines):
        starts_table = line.startswith("|") and (i == 0 or not lines[i - 1].startswith("|"))
        if starts_table and not (i >= 2 and lines[i - 1] == "" and lines[i - 2].startswith("### ")):
            bad.append(line)
        if line.startswith("### ") and i and lines[i - 1] != "":
            bad.append(line)
    return bad


MARKDOWN_COMMANDS = [
    ["model", "gemm", "--m", "64", "--spec", "h100-sxm5"],
    ["model", "llm", "--preset", "llama-7b", "--context", "512,2048"],
    ["model", "llm", "--batch", "1,8", "--context", "512,2048", "--spec", "h100-sxm5"],
    ["specs"],
    ["specs", "show", "h200"],
    ["show", str(ROOT / "benchmarks/results/gemm-fp32-odd.json.gz"), "--chart"],
    ["show", str(ROOT / "benchmarks/results/llm-llama-7b-fp16.json.gz")],
    ["show", str(ROOT / "benchmarks/results/profile-fp32-4096.json.gz")],
    ["compare", RUN, str(ROOT / "benchmarks/results/gemm-fp32-8192.json.gz")],
    pytest.param(
        ["inspect", "gemm", "--stage", "naive_xcol", "--spec", "h100-sxm5"],
        # its build and listing from the session's helper (conftest), not nvdisasm started here
        marks=pytest.mark.prebuild(stages.BY_NAME["naive_xcol"], sass=True),
    ),
]


@pytest.mark.parametrize("args", MARKDOWN_COMMANDS, ids=lambda a: " ".join(a[:3]))
def test_every_markdown_table_has_a_title(runner, args):
    r = runner.invoke(cli, [*args, "--format", "markdown"])
    assert r.exit_code == 0, r.output
    assert r.stdout.count("\n|---") >= 1
    assert untitled(r.stdout) == []


def test_written_file_markdown_has_a_title(runner, tmp_path):
    r = runner.invoke(
        cli, ["baseline", "save", RUN, str(tmp_path / "b.json"), "--format", "markdown"]
    )
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == f"### baseline saved: {tmp_path / 'b.json'}"
    assert untitled(r.stdout) == []


def _no_reprs(csv_text):
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert rows
    for row in rows:
        for key, cell in row.items():
            assert not (cell or "").startswith(("{", "[", "(")), (key, cell)
            prose = ("notes", "slower_because", "what", "timing", "b_layout")
            assert "'" not in (cell or "") or key in prose, (key, cell)
    return rows


@pytest.mark.parametrize(
    "name", ["gemm-fp32-4096.json.gz", "profile-fp32-4096.json.gz", "llm-llama-7b-fp16.json.gz"]
)
def test_csv_is_tidy_and_json_keeps_the_nesting(runner, name):
    path = str(ROOT / "benchmarks/results" / name)
    r = runner.invoke(cli, ["show", path, "--format", "csv"])
    assert r.exit_code == 0, r.output
    rows = _no_reprs(r.stdout)
    doc = json.loads(runner.invoke(cli, ["show", path, "--format", "json"]).stdout)
    by_stage = {(x["stage"], x["m"], x["n"], x["k"]): x for x in doc["records"]}
    for row in rows:
        rec = by_stage[(row["stage"], int(row["m"]), int(row["n"]), int(row["k"]))]
        params = rec.get("params") or {}
        assert isinstance(params, dict)  # JSON: still an object
        for key, value in params.items():
            assert row[f"param_{key}"] == str(value)
        if rec.get("grid"):
            assert isinstance(rec["grid"], list)
            assert row["grid"] == ", ".join(str(x) for x in rec["grid"])
        if rec.get("counters"):
            assert (
                float(row["counter_dram__bytes_read.sum"])
                == rec["counters"]["dram__bytes_read.sum"]
            )


def test_csv_params_of_a_tuned_stage(runner):
    r = runner.invoke(cli, ["show", RUN, "--format", "csv"])
    rows = {row["stage"]: row for row in _no_reprs(r.stdout)}
    assert rows["double_buffer"]["param_BM"] == "128"
    assert rows["double_buffer"]["param_BN"] == "256"
    assert rows["naive_xcol"]["param_BM"] == ""
    assert rows["naive_xcol"]["registers"] == "32"  # whole numbers stay whole
    assert rows["cublas"]["registers"] == ""


@pytest.mark.prebuild(stages.BY_NAME["thread_tile_4x4"], sass=True)  # the helper's listing
def test_inspect_and_specs_csv_are_tidy(runner):
    r = runner.invoke(
        cli,
        ["inspect", "gemm", "--stage", "thread_tile_4x4", "--spec", "h100-sxm5", "--format", "csv"],
    )
    assert r.exit_code == 0, r.output
    (row,) = _no_reprs(r.stdout)
    assert (row["param_TM"], row["param_TN"]) == ("4", "4")
    r = runner.invoke(cli, ["specs", "show", "h200", "--format", "csv"])
    rows = {row["key"]: row["value"] for row in _no_reprs(r.stdout)}
    assert rows["device_names"] == "NVIDIA H200, NVIDIA H200 SXM, NVIDIA H200 141GB HBM3e"
    r = runner.invoke(cli, ["specs", "show", "h200"])
    assert "['NVIDIA H200'" not in r.stdout and "NVIDIA H200, NVIDIA H200 SXM" in r.stdout


@pytest.fixture
def fake_gpu(monkeypatch):
    """runner.run_gemm without a GPU: every stage at half its roof, verified."""
    from rooflinecli.gpu import runner

    run_gemm = fake_run_gemm(2)
    monkeypatch.setattr(runner, "run_gemm", run_gemm)
    from rooflinecli.gpu import device

    monkeypatch.setattr(device, "info", lambda: {"name": "FAKE H200", "arch": "sm_90a"})


RUN_LLM = ["run", "llm", "--batch", "1,16", "--gemms", "qkv,o_proj", "--stages", "mma_sync"]


def test_run_llm_chart(runner, fake_gpu):
    r = runner.invoke(cli, [*RUN_LLM, "--chart"])
    assert r.exit_code == 0, r.output
    assert r.stdout.count("Roofline: ") == 2  # one chart per batch, under its table
    r = runner.invoke(cli, RUN_LLM)  # not a terminal: no chart unless asked
    assert r.exit_code == 0, r.output
    assert "Roofline: " not in r.stdout
    r = runner.invoke(cli, [*RUN_LLM, "--chart", "--format", "markdown"])
    assert r.exit_code == 0, r.output
    assert r.stdout.count("```text\nRoofline: ") == 2
    assert untitled(r.stdout) == []


@pytest.mark.parametrize("cmd", [RUN_LLM, ["run", "gemm", "--m", "64"]])
def test_chart_with_json_is_refused_before_any_run(runner, monkeypatch, cmd):
    import sys

    monkeypatch.setitem(sys.modules, "cupy", None)
    r = runner.invoke(cli, [*cmd, "--chart", "--format", "json"])
    assert r.exit_code == 2
    assert r.stderr == "error: --chart goes with --format table or markdown, not json\n"


def test_run_gemm_chart_and_markdown(runner, fake_gpu):
    r = runner.invoke(cli, ["run", "gemm", "--sizes", "64,128", "--format", "markdown", "--chart"])
    assert r.exit_code == 0, r.output
    assert r.stdout.count("```text\nRoofline: ") == 2
    assert "### TFLOP/s per stage and shape" in r.stdout
    assert untitled(r.stdout) == []
