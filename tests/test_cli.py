"""The CLI: exact output of the model and specs, one-line errors with exit 2, cheap --help."""

import json
import subprocess
import sys

import children
import pytest

from rooflinecli import paths
from rooflinecli.cli import cli


def test_model_gemm_markdown_rows_exact(runner):
    # --wide: every column (the default is the compact set, tests/test_compact.py)
    r = runner.invoke(
        cli,
        ["model", "gemm", "--m", "4096", "--spec", "h100-sxm5", "--format", "markdown", "--wide"],
    )
    assert r.exit_code == 0, r.output
    lines = r.output.split("\n\n- ")[0].splitlines()  # the table, without the verdict
    assert lines[0] == (
        "### GEMM 4096x4096x4096 fp32, model on NVIDIA H100 SXM5 80GB (h100-sxm5, given): "
        "fp32 peak 67 TFLOP/s at 1,980 MHz, 3350 GB/s, ridge 20.0 FLOP/byte; datasheet roofs"
    )
    assert lines[1] == ""
    assert lines[2] == (
        "| stage | FLOPs | bytes ideal | AI ideal | AI instr | ridge | roof | attain TF/s "
        "| attain@instr |"
    )
    assert (
        "| naive_xcol | 1.374e+11 | 2.013e+08 | 682.7 | 0.25 | 20.00 | compute | 67.0 | 0.84 |"
        in lines
    )
    assert (
        "| thread_tile_4x4 | 1.374e+11 | 2.013e+08 | 682.7 | 1.00 | 20.00 | compute | 67.0 | 3.35 |"
        in lines
    )
    assert (
        "| thread_tile_8x8 | 1.374e+11 | 2.013e+08 | 682.7 | 2.00 | 20.00 | compute | 67.0 | 6.70 |"
        in lines
    )
    assert (
        lines[-1] == "| cublas | 1.374e+11 | 2.013e+08 | 682.7 | - | 20.00 | compute | 67.0 | - |"
    )


def test_model_gemm_small_shape_is_memory_bound(runner):
    # 127x333x65 on the H200: AI = 5,497,830 / 288,764 = 19.0392 FLOP/B, ridge 67/4.8 = 13.96
    r = runner.invoke(
        cli,
        [
            "model",
            "gemm",
            "--m",
            "127",
            "--n",
            "333",
            "--k",
            "65",
            "--spec",
            "h200-sxm",
            "--format",
            "json",
        ],
    )
    assert r.exit_code == 0
    doc = json.loads(r.output)
    rec = doc["records"][0]
    assert (rec["m"], rec["n"], rec["k"], rec["flops"], rec["bytes_ideal"]) == (
        127,
        333,
        65,
        5_497_830,
        288_764,
    )
    assert rec["ai_ideal"] == pytest.approx(19.03918, abs=1e-5)
    assert rec["roof"] == "compute" and rec["attainable_tflops"] == 67.0
    r = runner.invoke(
        cli,
        [
            "model",
            "gemm",
            "--m",
            "127",
            "--n",
            "333",
            "--k",
            "65",
            "--spec",
            "h100-sxm5",
            "--format",
            "json",
        ],
    )
    rec = json.loads(r.output)["records"][0]
    # on the H100 SXM5 the ridge is 20.0: 19.04 is left of it, memory-bound at 19.04 x 3.35
    assert rec["roof"] == "memory"
    assert rec["attainable_tflops"] == pytest.approx(19.03918 * 3.35, abs=1e-4)


def test_model_document_shape(runner, tmp_path):
    out = tmp_path / "m.json"
    r = runner.invoke(
        cli,
        [
            "model",
            "gemm",
            "--m",
            "64",
            "--spec",
            "h100-sxm5",
            "--output",
            str(out),
            "--format",
            "csv",
        ],
    )
    assert r.exit_code == 0
    doc = paths.read_json(out, "results file")
    assert doc["schema"] == "roofline.results/2"
    assert doc["device"] is None
    assert doc["spec"]["name"] == "h100-sxm5"
    for key in ("tool_version", "created", "records"):
        assert key in doc
    for field in (
        "stage",
        "dtype",
        "m",
        "n",
        "k",
        "flops",
        "bytes_ideal",
        "ai_ideal",
        "ai_instruction",
        "time_ms",
        "tflops",
        "roof",
        "attainable_tflops",
        "pct_of_roof",
        "pct_of_peak",
        "pct_of_reference",
        "verified",
        "rel_error",
        "registers",
        "spill_bytes",
    ):
        assert field in doc["records"][0]
    assert r.output.splitlines()[0].startswith("stage,kind,dtype,m,n,k,")


def test_specs_list_and_show(runner):
    r = runner.invoke(cli, ["specs", "--format", "markdown"])
    assert r.exit_code == 0
    row = next(line for line in r.output.splitlines() if line.startswith("| h100-sxm5 |"))
    assert row == (
        "| h100-sxm5 | NVIDIA H100 SXM5 80GB | 132 | 3,350 | 50 | 34 (10.1) | 67 (20.0) "
        "| 67 (20.0) "
        "| 494.7 (147.7) | 989.4 (295.3) | 989.4 (295.3) | 1978.9 (590.7) | 1978.9 (590.7) |"
    )
    r = runner.invoke(cli, ["specs", "show", "h200-sxm", "--format", "markdown"])
    assert r.exit_code == 0
    assert (
        "| tflops.fp16_tensor_dense | 989.4 TFLOP/s (ridge 206.1 FLOP/byte) |"
        in r.output.splitlines()
    )
    assert "| memory_bandwidth_gbs | 4800.0 |" in r.output.splitlines()


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "gemm", "--m", "0"], "error: Invalid value for '--m': 0 must be at least 1"),
        (["run", "gemm", "--m", "-5"], "error: Invalid value for '--m': -5 must be at least 1"),
        (
            ["run", "gemm", "--m", "abc"],
            "error: Invalid value for '--m': 'abc' is not a whole number",
        ),
        (
            ["model", "gemm", "--m", "64", "--k", "0"],
            "error: Invalid value for '--k': 0 must be at least 1",
        ),
        (
            ["run", "gemm", "--m", "64", "--stages", "nope"],
            "error: unknown stage 'nope'; known: naive_xcol,",
        ),
        (["model", "gemm", "--m", "64", "--spec", "b300"], "error: unknown spec 'b300'; known: "),
        (["specs", "show", "b300"], "error: unknown spec 'b300'"),
        (["run", "gemm"], "error: give a size: --m M"),
        (["run", "gemm", "--sizes", "64,2x3"], "error: bad size '2x3': write N or MxNxK"),
        (["run", "gemm", "--m", "64"], "error: no CUDA device found"),
        # every run command reaches the GPU probe: its options all bind (a renamed parameter
        # fails here as a TypeError, not on the GPU machine)
        (["run", "attention", "--shapes", "1x2x77x64"], "error: no CUDA device found"),
        (["run", "llm", "--preset", "llama-7b", "--batch", "1"], "error: no CUDA device found"),
    ],
)
def test_bad_input_is_one_line_exit_2(runner, args, message, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # as on a machine without CuPy / GPU
    r = runner.invoke(cli, args)
    assert r.exit_code == 2, r.output
    err = r.stderr.strip().splitlines()
    assert len(err) == 1, r.stderr
    assert err[0].startswith(message), err[0]
    assert "Traceback" not in r.output


def test_malformed_spec_file_is_one_line(runner, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [\n")
    r = runner.invoke(cli, ["model", "gemm", "--m", "64", "--spec", str(bad)])
    assert r.exit_code == 2
    assert r.stderr.startswith(f"error: spec file {bad} is not valid TOML")
    assert len(r.stderr.strip().splitlines()) == 1


def test_output_into_missing_folder_is_refused_cleanly(runner, tmp_path):
    r = runner.invoke(
        cli,
        [
            "model",
            "gemm",
            "--m",
            "64",
            "--spec",
            "h100-sxm5",
            "--output",
            str(tmp_path / "no" / "x.json"),
        ],
    )
    assert r.exit_code == 2
    assert "does not exist" in r.stderr


def test_help_does_not_import_cupy():
    code = (
        "import sys; from rooflinecli.cli import cli; cli.main(['--help'], standalone_mode=False); "
        "assert 'cupy' not in sys.modules, 'cupy imported'; print('clean')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("clean")


def test_python_dash_m_entry_point():
    out = subprocess.run(
        [sys.executable, "-m", "rooflinecli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0
    assert out.stdout.strip() == "roofline, version 0.1.0"


def test_cli_docs_are_current():
    from pathlib import Path

    from rooflinecli import docgen

    path = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
    assert path.read_text() == docgen.render(), "docs/cli.md is stale: run `make docs`"


def test_stage_tables_are_current():
    """The registry's stage tables, on whichever page holds them (README.md, docs/*.md)."""
    from pathlib import Path

    from rooflinecli import docgen

    root = Path(__file__).resolve().parent.parent
    held = {}
    for page in docgen.pages(root):
        text = page.read_text()
        assert docgen.with_stage_tables(text) == text, f"{page.name}: run `make docs`"
        held.update({m["kind"]: page.name for m in docgen.TABLE.finditer(text)})
    assert held == dict.fromkeys(
        ("kernels", "stages", "fp8-stages", "attention-stages", "token-stages"), "stages.md"
    )


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_a_reader_that_leaves_early_is_no_failure(fmt):
    # `roofline show BIG.json | head -1`: more output than a pipe holds, reader gone after a line
    from pathlib import Path

    doc = Path(__file__).resolve().parent.parent / "benchmarks/results/llm-llama-7b-fp16.json.gz"
    with children.started(
        [sys.executable, "-m", "rooflinecli", "show", str(doc), "--format", fmt],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**__import__("os").environ, "COLUMNS": "200"},
    ) as proc:
        assert proc.stdout is not None
        proc.stdout.readline()
        proc.stdout.close()
        assert proc.wait(timeout=60) == 0
        assert proc.stderr is not None and proc.stderr.read() == b""


# every format once, each reader twice: `head -1` leaves after the first line, `true` before the
# first write (a whole process each: four, not eight)
@pytest.mark.parametrize(
    "fmt, reader",
    [("markdown", "head -1"), ("csv", "true"), ("json", "head -1"), ("table", "true")],
)
def test_a_broken_pipe_exits_0(fmt, reader, tmp_path):
    # `roofline show X --format markdown | head -1`: the reader leaves and the writer gets
    # EPIPE, which is no failure; nothing is said on stderr
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    err = tmp_path / "err.txt"
    cmd = (
        f"set -o pipefail; {sys.executable} -m rooflinecli show "
        f"benchmarks/results/gemm-fp32-4096.json.gz --format {fmt} 2>{err} | {reader} >/dev/null"
    )
    out = children.run(["bash", "-c", cmd], cwd=root, capture_output=True, timeout=60)
    assert out.returncode == 0, err.read_text()
    assert err.read_text() == ""


@pytest.mark.parametrize(
    "args",
    [
        ["specs", "show", "h200", "--format", "json"],
        ["specs", "--format", "json", "show", "h200-sxm"],
        ["specs", "--format", "csv", "show", "h200", "--format", "json"],  # the nearer wins
    ],
)
def test_specs_format_on_the_group_or_the_subcommand(runner, args):
    r = runner.invoke(cli, args)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["name"] == "h200-sxm" and doc["ridge_points"]["fp32"] == pytest.approx(67 / 4.8)


def test_specs_list_format_on_the_group(runner):
    for args in (["specs", "--format", "csv"], ["specs", "--format", "csv", "list"]):
        r = runner.invoke(cli, args)
        assert r.exit_code == 0, r.output
        assert r.output.startswith("name,gpu,sms,bandwidth_gbs,")


def test_spec_by_a_unique_start_of_its_name(runner):
    r = runner.invoke(cli, ["specs", "show", "h100"])
    assert r.exit_code == 2
    assert r.stderr == "error: spec 'h100' is ambiguous: h100-nvl, h100-pcie, h100-sxm5\n"


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "gemm", "--sizes", "1024,,4096"], "--sizes: empty item in '1024,,4096'"),
        (["run", "gemm", "--sizes", "1024,"], "--sizes: empty item in '1024,'"),
        (["run", "gemm", "--sizes", " "], "--sizes is empty"),
        (["run", "gemm", "--m", "64", "--stages", "naive_xcol,"], "--stages: empty item in"),
        (["run", "llm", "--batch", "1,,8"], "--batch: empty item in '1,,8'"),
        (["run", "llm", "--gemms", "qkv,,o_proj"], "--gemms: empty item in 'qkv,,o_proj'"),
        (["model", "llm", "--context", ",2048"], "--context: empty item in ',2048'"),
        (["model", "llm", "--batch", "1,8,", "--spec", "h200"], "--batch: empty item in '1,8,'"),
        (["inspect", "gemm", "--stage", "naive_xcol,,smem_tile"], "--stage: empty item in"),
        (["profile", "gemm", "--m", "64", "--stages", ",naive_xcol"], "--stages: empty item in"),
    ],
)
def test_an_empty_list_item_is_an_error(runner, args, message, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # caught before any GPU work
    r = runner.invoke(cli, args)
    assert r.exit_code == 2, r.output
    (line,) = r.stderr.splitlines()
    assert line.startswith(f"error: {message}"), line


@pytest.mark.parametrize(
    "args, what",
    [
        (["model", "gemm", "--m", "64", "--spec", "{path}"], "spec file"),
        (["specs", "show", "{path}"], "spec file"),
        (["model", "llm", "--preset", "{path}"], "preset file"),
        (["run", "gemm", "--m", "64", "--extra-stage", "{path}"], "stage file"),
    ],
)
@pytest.mark.parametrize("name", ["some.bin", "some.toml"])
def test_a_binary_toml_file_is_one_line_naming_it(runner, tmp_path, args, what, name):
    path = tmp_path / name
    path.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00binary")
    r = runner.invoke(cli, [a.replace("{path}", str(path)) for a in args])
    assert r.exit_code == 2, r.output
    assert r.stderr == f"error: {what} {path} is not valid TOML: not UTF-8 text\n"
