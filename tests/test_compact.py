"""The compact default table: at 80 and 100 terminal columns every stage name is whole and
nothing is cut with an ellipsis; --wide shows every column, --columns the ones named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes import fake_run_gemm

from rooflinecli import paths
from rooflinecli.cli import cli
from rooflinecli.present import View
from rooflinecli.present import table as report
from rooflinecli.stages import gemm as registry

ROOT = Path(__file__).resolve().parent.parent
FP32 = str(ROOT / "benchmarks" / "results" / "gemm-fp32-4096.json.gz")
BF16 = str(ROOT / "benchmarks" / "results" / "gemm-bf16-8192.json.gz")
TUNE = str(ROOT / "benchmarks" / "results" / "tune-double_buffer-4096.json.gz")
MODEL = ["model", "gemm", "--m", "4096", "--spec", "h100-sxm5"]


def invoke(args: list[str], width: int) -> tuple[int, str, str]:
    env = {"COLUMNS": str(width), "NO_COLOR": "1", "TERM": "dumb"}
    r = CliRunner(env=env).invoke(cli, args)
    return r.exit_code, r.stdout, r.stderr


def names_of(path: str) -> list[str]:
    return [r["stage"] for r in paths.read_json(Path(path), "results file")["records"]]


def table_rows(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("│")]


# every fp32 stage built for M = 4096 in registry order, the reference last (stages.built_for),
# as `model gemm` lists them
MODEL_STAGES = [s.name for s in registry.built_for(registry.select(None, "fp32"), [4096])]


@pytest.mark.parametrize("width", [80, 100])
@pytest.mark.parametrize(
    "args,stages",
    [
        (["show", FP32, "--no-chart"], names_of(FP32)),
        (["show", BF16, "--no-chart"], names_of(BF16)),
        (MODEL, MODEL_STAGES),
    ],
    ids=["show-fp32-4096", "show-bf16-8192", "model-gemm-4096"],
)
def test_compact_table_fits_with_whole_names(args, stages, width):
    code, out, err = invoke(args, width)
    assert code == 0, err
    assert "…" not in out
    assert all(len(line) <= width for line in out.splitlines())
    rows = table_rows(out)
    assert [row.split("│")[1].strip() for row in rows] == stages  # one line each, whole


def test_compact_run_table_exact_at_80():
    code, out, _ = invoke(["show", FP32, "--no-chart"], 80)
    assert code == 0
    lines = out.splitlines()
    assert lines[:2] == [
        "GEMM 4096x4096x4096 fp32 on NVIDIA H200 (spec h200-sxm): fp32 peak 67 TFLOP/s,",
        "4800 GB/s, ridge 14.0 FLOP/byte; datasheet roofs",
    ]
    assert lines[3] == (
        "┃ stage           ┃ time ms ┃ TFLOP/s ┃ % ref ┃ % roof ┃ SM MHz ┃ verified ┃"
    )
    assert "│ multistage      │   2.952 │   46.56 │  90.7 │   69.5 │  1,980 │      yes │" in lines
    assert len(lines[3]) == 76  # with a 16-character name (wgmma_persistent): 77


def test_compact_model_table_exact_at_100():
    code, out, _ = invoke(MODEL, 100)
    assert code == 0
    lines = out.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    assert lines[top + 1] == (
        "┃ stage           ┃ AI ideal ┃ AI instr ┃ roof    ┃ attain TF/s ┃ attain@instr ┃"
    )
    row = "│ naive_xcol      │    682.7 │     0.25 │ compute │        67.0 │         0.84 │"
    assert row in lines


def test_wide_shows_every_column_and_still_cuts_nothing():
    code, out, _ = invoke(["show", FP32, "--no-chart", "--wide"], 80)
    assert code == 0
    assert "…" not in out
    head = next(line for line in out.splitlines() if line.startswith("┃"))
    assert head.count("┃") == len(report.RUN_COLUMNS)  # every column but noise (no --max-noise)
    assert [row.split("│")[1].strip() for row in table_rows(out)] == names_of(FP32)
    # wider than 80 now: printed at its narrowest (headers wrapped), never squeezed into folds
    code, out200, _ = invoke(["show", FP32, "--no-chart", "--wide"], 200)
    assert "attain TF/s" in out200 and "spill B" in out200


def test_columns_by_field_name_stage_first():
    code, out, _ = invoke(["show", FP32, "--no-chart", "--columns", "registers,occupancy_pct"], 80)
    assert code == 0
    head = next(line for line in out.splitlines() if line.startswith("┃"))
    assert head == "┃ stage           ┃ regs ┃ occ % ┃"
    assert "│ thread_tile_8x8 │  138 │    12 │" in out


def test_columns_markdown_too():
    code, out, _ = invoke(["show", FP32, "--format", "markdown", "--columns", "tflops"], 80)
    assert code == 0
    assert "| stage | TFLOP/s |" in out.splitlines()


def test_unknown_column_is_one_line_listing_the_valid_ones():
    code, out, err = invoke(["show", FP32, "--columns", "tflops,regs,bogus"], 80)
    assert code == 2 and out == ""
    assert err == (
        "error: unknown columns regs, bogus; columns: "
        + ", ".join(c[0] for c in report.RUN_COLUMNS)
        + "\n"
    )
    code, _, err = invoke([*MODEL, "--columns", "time_ms"], 80)
    assert code == 2 and err.startswith("error: unknown column time_ms; columns: stage, flops,")


def test_wide_and_columns_together_and_empty_items():
    code, _, err = invoke(["show", FP32, "--wide", "--columns", "tflops"], 80)
    assert (code, err) == (2, "error: give --wide or --columns, not both\n")
    code, _, err = invoke(["show", FP32, "--columns", "tflops,,regs"], 80)
    assert code == 2 and "--columns: empty item" in err


def test_json_and_csv_carry_every_field_whatever_the_columns():
    code, out, _ = invoke(["show", FP32, "--format", "json", "--columns", "tflops"], 80)
    assert code == 0 and "spill_bytes" in json.loads(out)["records"][0]


@pytest.mark.parametrize(
    "command", [["run", "gemm"], ["run", "llm"], ["model", "gemm"], ["tune", "gemm"],
                ["profile", "gemm"], ["show"]],
    ids=" ".join,
)  # fmt: skip
def test_every_record_command_takes_the_options(command):
    r = CliRunner().invoke(cli, [*command, "--help"])
    assert "--wide" in r.output and "--columns LIST" in r.output


def test_run_checks_columns_before_any_gpu_work():
    code, _, err = invoke(["run", "gemm", "--m", "64", "--columns", "nope"], 80)
    assert code == 2 and err.startswith("error: unknown column nope; columns: stage, time_ms")
    code, _, err = invoke(["run", "llm", "--columns", "nope"], 80)
    assert code == 2 and err.startswith("error: unknown column nope; columns: workload, gemm,")


def test_long_names_fold_whole_and_numbers_stay_whole():
    """A tune variant's name (54 characters) cannot sit on one line at 80: it folds."""
    code, out, _ = invoke(["show", TUNE, "--no-chart"], 80)
    assert code == 0
    assert "…" not in out and all(len(line) <= 80 for line in out.splitlines())
    cells = [row.split("│")[1].strip() for row in table_rows(out)]
    joined = "".join(cells)
    for name in names_of(TUNE):
        assert name in joined
    assert "│ double_buffer                    │ 3.055 │   44.99 │  87.6 │ 67.1 │      yes │" in out
    assert "┃                                  ┃  time ┃" in out  # a header wrapped first


# --------------------------------------------------------------------------- the pieces


def test_fit_natural_then_headers_then_names():
    headers, names = ["stage", "time ms", "verified"], [True, False, False]
    rows = [["thread_tile_4x4", "12.715", "yes"]]
    assert report.fit(headers, rows, names, 200) == [15, 7, 8]  # 15+7+8 + 3*3+1 = 40
    assert report.fit(headers, rows, names, 39) == [15, 6, 8]  # "time ms" -> "time" / "ms"
    assert report.fit(headers, rows, names, 36) == [12, 6, 8]  # the name folds (floor 12)
    # folding cannot make it fit: the name stays whole on one line, the table is wider
    assert report.fit(headers, rows, names, 20) == [15, 6, 8]


def test_select_views():
    assert [c[0] for c in report.select(report.RUN)] == list(report.RUN.compact)
    assert report.select(report.RUN, View(wide=True)) == report.RUN_COLUMNS
    llm_wide = [c[0] for c in report.select(report.LLM, View(wide=True))]
    assert llm_wide[0] == "workload" and "gemm" not in llm_wide
    picked = report.select(report.LLM, View(names=("tflops",)))
    assert [c[0] for c in picked] == ["gemm", "stage", "tflops"]


def test_compact_sets_fit_100_columns_with_the_longest_names():
    """The compact run table with a 20-character decode stage name and full-width numbers:
    at 100 nothing wraps, even with the noise column of --max-noise; at 80 a header wraps, and
    with the noise column too the name folds onto two lines."""
    cols = report.select(report.RUN)
    row = ["gemv_splitk_multirow", "141.412", "51.36", "100.0", "100.0", "1,980", "12.34", "FAILED"]
    headers = [h for _, h, _ in cols]
    names = [True] + [False] * 7
    assert report.fit(headers, [row], names, 100) == [20, 7, 7, 5, 6, 6, 7, 8]  # 91 columns
    no_noise = [i for i, c in enumerate(cols) if c[0] != "noise_pct"]
    pick = (
        [[row[i] for i in no_noise]],
        [headers[i] for i in no_noise],
        [names[i] for i in no_noise],
    )
    at80 = report.fit(pick[1], pick[0], pick[2], 80)
    assert at80[0] == 20 and report._span(at80) == 80  # "SM MHz" over two lines
    at80 = report.fit(headers, [row], names, 80)
    assert at80[0] < 20 and report._span(at80) == 80


def test_run_llm_compact_table_at_80(monkeypatch):
    """run llm (a stand-in for the GPU): per batch, the weight GEMM and the stage lead; whole
    names, nothing cut, one verdict line per weight GEMM."""
    from rooflinecli.gpu import runner

    run_gemm = fake_run_gemm(3, placed=True)
    monkeypatch.setattr(runner, "run_gemm", run_gemm)
    args = ["run", "llm", "--batch", "1", "--stages", "wgmma_persistent", "--no-chart"]
    code, out, err = invoke(args, 80)
    assert code == 0, err
    assert "…" not in out and all(len(line) <= 80 for line in out.splitlines())
    head = next(line for line in out.splitlines() if line.startswith("┃"))
    assert head.split("┃")[1:3] == [" gemm     ", " stage            "]
    assert "│ lm_head  │ wgmma_persistent │" in out
    verdict = [line for line in out.splitlines() if line.startswith("  qkv (1x12288x4096)")]
    assert verdict and "memory-bound (AI 1 << ridge 206)" in verdict[0]


def test_every_column_set_names_only_its_own_columns():
    from rooflinecli.commands.profile import PROFILE

    for cset in (report.RUN, report.MODEL, report.LLM, PROFILE):
        names = set(cset.names)
        assert set(cset.compact) <= names and set(cset.key) <= names
        assert cset.wide is None or set(cset.wide) <= names
        assert len(report.select(cset)) == len(cset.compact)
