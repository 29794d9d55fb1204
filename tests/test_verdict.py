"""The verdict under a table, in words, tested on the committed documents: which roof binds,
how far below it each stage sits, what the next rung changes; from the records alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from rooflinecli import results
from rooflinecli.cli import cli
from rooflinecli.present import verdict

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
ENV = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}


def records(name: str) -> list[dict[str, Any]]:
    return results.load(RESULTS / name)["records"]


def by_stage(lines: list[str]) -> dict[str, str]:
    return {line.split(":")[0]: line for line in lines[1:]}


def test_fp32_ladder_at_4096():
    lines = verdict.lines(records("gemm-fp32-4096.json.gz"))
    assert lines[0] == (
        "Compute-bound: AI 683 >> ridge 14 FLOP/byte, so the FP32 roof (67 TFLOP/s) binds "
        "every stage."
    )
    said = by_stage(lines)
    assert said["multistage"] == "multistage: at 69% of the roof and 91% of cublas."
    assert said["naive_xcol"] == (
        "naive_xcol: at 8.1% of the roof and 11% of cublas. Next, naive_xrow (0.18x)."
    )
    # slower than the rung before: the record's own why-note (upgrade() fills it for /1)
    assert said["thread_tile_8x8"].startswith(
        "thread_tile_8x8: at 11% of the roof and 15% of cublas. Slower than thread_tile_4x4: "
        "64 accumulators + 16 operands need ~140 registers"
    )
    assert said["thread_tile_8x8"].endswith("Next, smem_tile (1.17x).")
    assert said["cublas"] == "cublas: at 77% of the roof (the reference)."
    assert len(lines) == 1 + 12


def test_tensor_core_ladder_names_its_roof():
    lines = verdict.lines(records("gemm-bf16-8192.json.gz"))
    assert lines[0] == (
        "Compute-bound: AI 2,731 >> ridge 206 FLOP/byte, so the BF16 Tensor Core roof "
        "(989.4 TFLOP/s) binds every stage."
    )
    assert by_stage(lines)["wgmma_persistent"] == (
        "wgmma_persistent: at 69% of the roof and 100% of cublas_hgemm."
    )


def test_memory_bound_shape_gives_the_bandwidth():
    recs = [
        r for r in records("gemm-fp32-odd.json.gz") if (r["m"], r["n"], r["k"]) == (1, 4096, 4096)
    ]
    lines = verdict.lines(recs)
    assert lines[0] == (
        "Memory-bound: AI 0.5 << ridge 14 FLOP/byte, so the memory roof (4,800 GB/s) binds "
        "every stage."
    )
    assert lines[1] == (
        "naive_xcol: at 4.1% of the roof (198 of 4,800 GB/s) and 7.0% of cublas. "
        "Next, naive_xrow (0.99x)."
    )


def test_decode_gets_one_line_per_weight_gemm():
    recs = [r for r in records("llm-llama-7b-fp16.json.gz") if r["batch"] == 1]
    lines = verdict.lines(recs)
    assert len(lines) == 6
    assert lines[0] == (
        "qkv (1x12288x4096): memory-bound (AI 1 << ridge 206); best stage mma_multistage at "
        "23% of the memory roof (1,118 of 4,800 GB/s) and 42% of cublas_hgemm; cublas_hgemm "
        "at 56%."
    )


def test_profile_documents_use_ncus_own_time():
    said = by_stage(verdict.lines(records("profile-fp32-4096.json.gz")))
    assert said["naive_xcol"].startswith("naive_xcol: at 8.1% of the roof and 11% of cublas.")


def test_variants_of_one_stage_have_no_next_rung():
    lines = verdict.lines(records("tune-double_buffer-4096.json.gz"))
    assert "Next," not in " ".join(lines) and "Slower than" not in " ".join(lines)


def test_the_next_rung_is_described_by_its_own_record():
    recs = [dict(r) for r in records("gemm-fp32-4096.json.gz")]
    recs[-2]["what"] = "a cp.async pipeline (as the record says)"  # multistage
    recs[-3]["slower_because"] = None
    said = by_stage(verdict.lines(recs))
    assert said["double_buffer"].endswith(
        "Next, multistage (1.04x): a cp.async pipeline (as the record says)."
    )


def test_failures_and_skips_are_said_once():
    recs = [dict(r) for r in records("gemm-fp32-4096.json.gz")]
    recs[1].update(verified=False, rel_error=0.25, tflops=None, pct_of_roof=None)
    recs[2].update(error="skipped: thread_tile_4x4 needs M, N, K multiples of 4", tflops=None)
    said = by_stage(verdict.lines(recs))
    assert said["naive_xrow"] == (
        "naive_xrow: FAILED verification (relative error 0.25): its speed is not reported."
    )
    assert said["thread_tile_4x4"] == (
        "thread_tile_4x4: skipped: thread_tile_4x4 needs M, N, K multiples of 4."
    )


def test_rows_under_different_roofs_say_theirs_each():
    r = CliRunner(env=ENV).invoke(
        cli,
        [
            "show",
            str(RESULTS / "gemm-bf16-8192.json.gz"),
            "--roofs",
            "clock",
            "--format",
            "markdown",
        ],
    )
    assert r.exit_code == 0, r.stderr
    items = [line for line in r.stdout.splitlines() if line.startswith("- ")]
    assert items[0].startswith("- mma_sync: compute-bound (AI 2,731 >> ridge ")
    assert not items[0].startswith("- Compute-bound")


def test_model_says_what_the_load_instructions_allow():
    doc_lines = CliRunner(env=ENV).invoke(
        cli, ["model", "gemm", "--m", "4096", "--spec", "h100-sxm5", "--format", "markdown"]
    )
    items = [line[2:] for line in doc_lines.stdout.splitlines() if line.startswith("- ")]
    assert items[0] == (
        "Compute-bound: AI 683 >> ridge 20 FLOP/byte: every stage can reach the FP32 roof "
        "(67 TFLOP/s)."
    )
    assert items[1] == (
        "naive_xcol: AI instr 0.25: 1.2% of the roof if no load hit a cache. Next, naive_xrow: "
        "one thread per C element, threadIdx.x -> row: a warp's A loads are K\\*4 bytes apart."
    )  # Markdown: the * escaped (two on a line would be emphasis)
    assert items[-1] == "cublas: the reference (a library call)."


def test_markdown_has_the_verdict_as_a_list_json_and_csv_none():
    path = str(RESULTS / "gemm-fp32-4096.json.gz")
    md = CliRunner(env=ENV).invoke(cli, ["show", path, "--format", "markdown", "--no-chart"])
    table, rest = md.stdout.split("\n\n- ", 1)
    assert table.splitlines()[0].startswith("### GEMM 4096x4096x4096 fp32")
    assert rest.splitlines()[0].startswith("Compute-bound: AI 683")
    assert all(line.startswith("- ") for line in rest.splitlines()[1:])
    for fmt in ("json", "csv"):
        out = CliRunner(env=ENV).invoke(cli, ["show", path, "--format", fmt]).stdout
        assert "Compute-bound" not in out and "Next," not in out
    assert json.loads(CliRunner(env=ENV).invoke(cli, ["show", path, "--format", "json"]).stdout)


def test_the_terminal_table_has_it_too_wrapped_and_indented():
    r = CliRunner(env={**ENV, "COLUMNS": "80"}).invoke(
        cli, ["show", str(RESULTS / "gemm-fp32-4096.json.gz"), "--no-chart"]
    )
    lines = r.stdout.splitlines()
    end = max(i for i, line in enumerate(lines) if line.startswith("└"))
    assert lines[end + 1 : end + 3] == [
        "  Compute-bound: AI 683 >> ridge 14 FLOP/byte, so the FP32 roof (67 TFLOP/s)",
        "  binds every stage.",
    ]
    assert all(line.startswith("  ") and len(line) <= 80 for line in lines[end + 1 :])


def test_records_off_the_roofline_get_none():
    assert verdict.lines([{"stage": "x", "kind": "llm", "roof": None}]) == []
    assert verdict.lines([]) == []


def test_a_document_whose_records_carry_what_describes_the_next_rung():
    said = by_stage(verdict.lines(records("gemm-bf16-8192-interleaved.json.gz")))
    assert said["mma_sync"] == (
        "mma_sync: at 5.8% of the roof and 7.0% of cublas_hgemm. Next, mma_ldmatrix (2.01x): "
        "ldmatrix (.trans for B) from XOR-swizzled shared tiles: 128x128 block, 8 warps."
    )
