"""`roofline show` and `roofline compare`: re-rendering documents and side-by-side ratios."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from rooflinecli import paths, results
from rooflinecli.cli import cli

ENV = {"COLUMNS": "200", "NO_COLOR": "1"}
SPEC = {
    "name": "testgpu",
    "display_name": "Test GPU",
    "memory_bandwidth_gbs": 1000.0,
    "tflops": {"fp32": 10.0},
}
DEVICE = {"name": "Test GPU", "driver": "570.1", "cuda_driver": "12.8", "cuda_runtime": "12.8"}


def rec(stage: str, tflops: float | None, time_ms: float | None, **kw: Any) -> dict[str, Any]:
    r = {
        "stage": stage,
        "kind": "stage",
        "dtype": "fp32",
        "m": 64,
        "n": 64,
        "k": 64,
        "ai_ideal": 100.0,
        "ai_instruction": 2.0,
        "roof": "compute",
        "peak_key": "fp32",
        "peak_tflops": 10.0,
        "ridge_point": 10.0,
        "attainable_tflops": 10.0,
        "tflops": tflops,
        "time_ms": time_ms,
        "verified": tflops is not None,
    }
    r.update(kw)
    return r


def write(path: Path, records: list[dict[str, Any]], device: Any = DEVICE) -> str:
    path.write_text(results.dumps(results.new_document(SPEC, device, records)))
    return str(path)


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), env=ENV)


def test_show_run_document_table_and_chart(tmp_path: Path) -> None:
    doc = write(tmp_path / "run.json", [rec("tiled", 5.0, 0.5, pct_of_roof=50.0)])
    r = invoke("show", doc)
    assert r.exit_code == 0, r.stderr
    lines = [line.rstrip() for line in r.stdout.splitlines()]
    top = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    title = " ".join(lines[:top])  # rich wraps a title to the table's width
    assert title == (
        "GEMM 64x64x64 fp32 on Test GPU (spec testgpu): fp32 peak 10 TFLOP/s, 1000 GB/s, "
        "ridge 10.0 FLOP/byte; datasheet roofs"
    )
    header = [c.strip() for c in lines[top + 1].split("┃")[1:-1]]
    assert header[:3] == ["stage", "time ms", "TFLOP/s"]
    row = [c.strip() for c in lines[top + 3].split("│")[1:-1]]
    assert row[:3] == ["tiled", "0.500", "5.00"]
    assert row[header.index("% roof")] == "50.0"
    assert "Roofline: GEMM 64x64x64 fp32 on Test GPU (spec testgpu)" in lines
    assert "a tiled 5.0 TFLOP/s @ 100.0 FLOP/B" in lines
    no_chart = invoke("show", doc, "--no-chart")
    assert no_chart.exit_code == 0
    assert "a tiled 5.0 TFLOP/s @ 100.0 FLOP/B" not in no_chart.stdout
    assert no_chart.stdout.splitlines()[0].rstrip() == lines[0]
    assert "Roofline:" not in no_chart.stdout


def test_show_model_document_uses_model_columns(tmp_path: Path) -> None:
    doc = write(tmp_path / "model.json", [rec("tiled", None, None, flops=524288)], device=None)
    r = invoke("show", doc, "--no-chart", "--wide")  # FLOPs: not in the compact set
    assert r.exit_code == 0, r.stderr
    lines = [line.rstrip() for line in r.stdout.splitlines()]
    top = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    assert " ".join(lines[:top]) == (  # the title, wrapped to the console
        "GEMM 64x64x64 fp32 model on Test GPU (testgpu): fp32 peak 10 TFLOP/s, 1000 GB/s, "
        "ridge 10.0 FLOP/byte"
    )
    assert "FLOPs" in lines[top + 1] and "time ms" not in lines[top + 1]
    assert [c.strip() for c in lines[top + 3].split("│")[1:4]] == ["tiled", "5.243e+05", "-"]


def test_show_json_csv_markdown(tmp_path: Path) -> None:
    path = write(tmp_path / "run.json", [rec("tiled", 5.0, 0.5)])
    r = invoke("show", path, "--format", "json")
    assert r.exit_code == 0
    assert json.loads(r.stdout) == paths.read_json(Path(path), "results file")
    csv = invoke("show", path, "--format", "csv")
    assert csv.stdout.splitlines()[0].startswith("stage,kind,dtype,m,n,k,")
    md = invoke("show", path, "--format", "markdown", "--chart")
    assert md.exit_code == 0
    assert md.stdout.splitlines()[0].startswith("### GEMM 64x64x64 fp32 on Test GPU (spec testgpu)")
    assert md.stdout.splitlines()[1] == ""
    assert md.stdout.splitlines()[2].startswith("| stage | time ms | TFLOP/s |")
    assert "```text\nRoofline: GEMM 64x64x64 fp32 on Test GPU (spec testgpu)\n" in md.stdout
    bad = invoke("show", path, "--format", "csv", "--chart")
    assert bad.exit_code == 2
    assert bad.stderr == "error: --chart goes with --format table or markdown, not csv\n"


def test_show_missing_file(tmp_path: Path) -> None:
    r = invoke("show", str(tmp_path / "nope.json"))
    assert r.exit_code == 2
    assert r.stderr == f"error: results file {tmp_path / 'nope.json'} not found\n"


def pair(tmp_path: Path) -> tuple[str, str]:
    a = write(
        tmp_path / "a.json",
        [rec("naive", 1.0, 0.5), rec("tiled", 5.0, 0.1), rec("gone", 2.0, 0.25)],
    )
    b = write(
        tmp_path / "b.json",
        [rec("naive", 1.25, 0.4), rec("tiled", 4.0, 0.125), rec("new", 3.0, 0.2)],
    )
    return a, b


def test_compare_ratios_exact(tmp_path: Path) -> None:
    a, b = pair(tmp_path)
    r = invoke("compare", a, b, "--format", "json")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["a"], out["b"]) == (a, b)
    rows = {row["stage"]: row for row in out["rows"]}
    assert list(rows) == ["naive", "tiled", "gone", "new"]
    assert rows["naive"]["tflops_ratio"] == 1.25
    assert rows["naive"]["time_ratio"] == 0.4 / 0.5
    assert rows["tiled"]["tflops_ratio"] == 0.8
    assert rows["tiled"]["time_ratio"] == 1.25
    assert rows["gone"] == {
        "stage": "gone",
        "shape": "64x64x64",
        "dtype": "fp32",
        "a_tflops": 2.0,
        "b_tflops": None,
        "tflops_ratio": None,
        "a_time_ms": 0.25,
        "b_time_ms": None,
        "time_ratio": None,
    }
    assert rows["new"]["a_tflops"] is None and rows["new"]["b_tflops"] == 3.0


def test_compare_table_and_markdown(tmp_path: Path) -> None:
    a, b = pair(tmp_path)
    r = invoke("compare", a, b)
    assert r.exit_code == 0
    lines = [line.rstrip() for line in r.stdout.splitlines()]
    assert lines[0] == f"A: {a} (Test GPU, driver 570.1, CUDA 12.8)"
    assert lines[1] == f"B: {b} (Test GPU, driver 570.1, CUDA 12.8)"
    naive = [c.strip() for c in lines[5].split("│")[1:-1]]
    assert naive == "naive 64x64x64 fp32 1.00 1.25 1.250x 0.500 0.400 0.800x".split()
    md = invoke("compare", a, b, "--format", "markdown")
    assert md.stdout.splitlines() == [
        f"### A: {a} (Test GPU, driver 570.1, CUDA 12.8); B: {b} (Test GPU, driver 570.1, "
        "CUDA 12.8)",
        "",
        "| stage | shape | dtype | A TFLOP/s | B TFLOP/s | B/A TFLOP/s | A ms | B ms | B/A time |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
        "| naive | 64x64x64 | fp32 | 1.00 | 1.25 | 1.250x | 0.500 | 0.400 | 0.800x |",
        "| tiled | 64x64x64 | fp32 | 5.00 | 4.00 | 0.800x | 0.100 | 0.125 | 1.250x |",
        "| gone | 64x64x64 | fp32 | 2.00 | - | - | 0.250 | - | - |",
        "| new | 64x64x64 | fp32 | - | 3.00 | - | - | 0.200 | - |",
    ]


def test_compare_duplicate_record_is_an_error(tmp_path: Path) -> None:
    a = write(tmp_path / "a.json", [rec("naive", 1.0, 0.5), rec("naive", 1.0, 0.5)])
    r = invoke("compare", a, a)
    assert r.exit_code == 2
    assert r.stderr == f"error: {a}: naive 64x64x64 fp32 appears twice\n"


def test_sm_clock_column_only_when_a_record_has_one(tmp_path: Path) -> None:
    plain = write(tmp_path / "plain.json", [rec("tiled", 5.0, 0.5)])
    clocked = write(
        tmp_path / "clocked.json",
        [rec("tiled", 5.0, 0.5, sm_clock_mhz=1590, power_w=699.8), rec("naive", 1.0, 2.5)],
    )
    r = invoke("show", plain, "--format", "markdown")
    assert r.exit_code == 0, r.stderr
    assert "SM MHz" not in r.stdout
    r = invoke("show", clocked, "--format", "markdown")
    assert r.exit_code == 0, r.stderr
    table, _verdict = r.stdout.split("\n\n- ")
    title, _blank, header, _rule, tiled, naive = table.strip().splitlines()
    assert title.startswith("### GEMM 64x64x64 fp32 on Test GPU")
    cols = [c.strip() for c in header.strip("|").split("|")]
    at = cols.index("SM MHz")
    assert [c.strip() for c in tiled.strip("|").split("|")][at] == "1,590"
    assert [c.strip() for c in naive.strip("|").split("|")][at] == "-"


def test_a_held_down_clock_gets_one_note(tmp_path: Path) -> None:
    doc = write(
        tmp_path / "held.json",
        [
            rec("tiled", 5.0, 0.5, sm_clock_mhz=1560, clock_limited_by="power cap"),
            rec("naive", 1.0, 2.5, sm_clock_mhz=1980, clock_limited_by=None),
        ],
    )
    r = invoke("show", doc, "--no-chart")
    assert r.exit_code == 0, r.stderr
    held = [line.strip() for line in r.stdout.splitlines() if "held down" in line]
    assert held == [
        "SM clock held down while timing (power cap) in 1 of 2 rows: the SM MHz column is its "
        "mean; % peak is against the datasheet's boost-clock peak (--roofs clock: at each row's)"
    ]
