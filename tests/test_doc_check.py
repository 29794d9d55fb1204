"""One validation of a document on load (rooflinecli.doc_check, called by results.load): numbers
the tool cannot hold, a record that contradicts itself, a spec's roofs out of range, a document
with no records, duplicate keys. Each is one line naming the field, exit 2, in every command
that reads a document; every committed document passes it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rooflinecli import doc_check, paths, results
from rooflinecli.cli import cli
from rooflinecli.gpu import calibrate

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
CALIBRATION = ROOT / "benchmarks" / "calibration"
SOURCE = RESULTS / "gemm-fp32-4096-ladder.json.gz"  # H200 run, every record with its repeats
ENV = {"COLUMNS": "200", "NO_COLOR": "1"}


def committed() -> dict[str, Any]:
    return paths.read_json(SOURCE, "results file")


def write(path: Path, doc: dict[str, Any]) -> str:
    path.write_text(json.dumps(doc))
    return str(path)


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), env=ENV)


def readers(path: str, tmp_path: Path) -> list[list[str]]:
    """Every command that reads a results document, with `path` as the document."""
    ok = str(SOURCE)
    return [
        ["show", path],
        ["compare", ok, path],
        ["compare", path, ok],
        ["report", path, "-o", str(tmp_path / "r.html")],
        ["plot", path, "-o", str(tmp_path / "r.svg")],
        ["gate", path, "--baseline", ok],
        ["gate", ok, "--baseline", path],
        ["baseline", "save", path, str(tmp_path / "b.json")],
        ["merge", path, ok, "-o", str(tmp_path / "merged.json")],
        ["fleet", path, ok],
    ]


def refused_everywhere(path: str, tmp_path: Path, said: str) -> None:
    for args in readers(path, tmp_path):
        r = invoke(*args)
        assert r.exit_code == 2, (args, r.stdout, r.stderr)
        assert r.stderr.count("\n") == 1 and said in r.stderr, (args, r.stderr)
        assert "Error" not in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*.json.gz")), ids=lambda p: p.name)
def test_every_committed_document_passes(path: Path) -> None:
    doc = results.load(path)
    assert doc["records"]


@pytest.mark.parametrize("path", sorted(CALIBRATION.glob("*.json")), ids=lambda p: p.name)
def test_every_committed_calibration_passes(path: Path) -> None:
    assert calibrate.read_calibration(path)["measurements"]


# -- defect: a doctored document passed the gate ---------------------------------------------


@pytest.mark.parametrize(
    "tiny, said",
    [
        (1e-300, "'time_ms' is 1e-300: a number here is 0 or of a size between 1e-30 and 1e+30"),
        (5e-324, "'time_ms' is 4.94066e-324: a number here is 0 or of a size between 1e-30"),
        (1e-290, "'time_ms' is 1e-290: a number here is 0 or of a size between 1e-30"),
        (1e-20, "'tflops' 5.3894 is not its flops over its time_ms (1.37439e+22 TFLOP/s)"),
    ],
)
def test_samples_faster_than_any_roof_are_refused_by_the_gate(
    tmp_path: Path, tiny: float, said: str
) -> None:
    """samples_ms and time_ms of 1e-300: the speed they give overflows (the stored speed then
    seemed to agree), and the gate passed with a speed-up of 300 digits."""
    doc = committed()
    rec = doc["records"][0]
    rec["samples_ms"], rec["time_ms"] = [tiny] * 15, tiny
    path = write(tmp_path / "doctored.json", doc)
    r = invoke("gate", path, "--baseline", str(SOURCE))
    assert r.exit_code == 2, r.stdout
    assert r.stderr.startswith(f"error: {path}: record 0 (naive_xcol): {said}"), r.stderr
    refused_everywhere(path, tmp_path, said)
    rec["tflops"] = rec["flops"] / tiny / 1e9  # the speed made to agree: still no measurement
    rec["pct_of_roof"] = rec["pct_of_peak"] = rec["tflops"] / 0.67
    rec["pct_of_reference"] = 100 * rec["reference_time_ms"] / tiny
    if tiny >= doc_check.TINY:
        path = write(tmp_path / "doctored.json", doc)
        r = invoke("gate", path, "--baseline", str(SOURCE))
        assert r.exit_code == 2, r.stdout
        assert r.stderr == (
            f"error: {path}: record 0 (naive_xcol): 'samples_ms' give 1.374e+22 TFLOP/s "
            "(1.37439e+11 FLOPs in 1e-20 ms), more than 3 times its roof of 67 TFLOP/s: no "
            "measurement is that fast\n"
        )


def test_a_speed_beyond_the_factor_is_refused_though_the_record_agrees(tmp_path: Path) -> None:
    """Times, speed and percentages that agree with each other, but 4 times the roof."""
    doc = committed()
    rec = doc["records"][0]
    roof = rec["attainable_tflops"]
    t = rec["flops"] / (4 * roof * 1e9)  # ms at 4x the roof
    rec["samples_ms"], rec["time_ms"] = [t] * 15, t
    rec["tflops"] = 4 * roof
    rec["pct_of_roof"] = rec["pct_of_peak"] = 400.0
    path = write(tmp_path / "fast.json", doc)
    r = invoke("gate", path, "--baseline", str(SOURCE))
    assert r.exit_code == 2
    assert "'samples_ms' give 268 TFLOP/s" in r.stderr
    # and within the factor, measured: a speed may pass a roof a little
    t = rec["flops"] / (1.2 * roof * 1e9)
    rec["samples_ms"], rec["time_ms"], rec["tflops"] = [t] * 15, t, 1.2 * roof
    rec["pct_of_roof"] = rec["pct_of_peak"] = 120.0
    rec["pct_of_reference"] = 100 * rec["reference_time_ms"] / t
    results.validate(doc, "doc")


def test_docs_gate_md_states_the_factor() -> None:
    text = (ROOT / "docs" / "gate.md").read_text()
    said = text.replace("**", "")
    assert f"more than {doc_check.SPEED_FACTOR:g} times its roof" in said


def test_the_floor_is_judged_on_the_samples_not_on_a_stored_percentage(tmp_path: Path) -> None:
    """pct_of_roof raised by hand to 99 while the samples give 8%: the floor of 50% fails."""
    doc = committed()
    doc["records"][0]["pct_of_roof"] = 99.0
    path = write(tmp_path / "raised.json", doc)
    r = invoke("gate", path, "--min-pct-of-roof", "naive_xcol=50")
    assert r.exit_code == 1, r.stderr
    assert "% of roof 8.0% below the floor 50%" in r.stdout + r.stderr


# -- defect: numbers the tool cannot hold ---------------------------------------------------


@pytest.mark.parametrize(
    "field, said",
    [
        ("flops", "record 0 (naive_xcol): 'flops' is a whole number of 401 digits: more than 64"),
        ("m", "record 0 (naive_xcol): 'm' is a whole number of 401 digits: a GEMM's dimension"),
        ("registers", "record 0 (naive_xcol): 'registers' is a whole number of 401 digits"),
    ],
)
def test_a_number_of_401_digits_is_refused_in_words(tmp_path: Path, field: str, said: str) -> None:
    doc = committed()
    doc["records"][0][field] = 10**400
    path = write(tmp_path / "big.json", doc)
    refused_everywhere(path, tmp_path, said)


def test_a_nested_or_spec_number_of_401_digits_is_refused(tmp_path: Path) -> None:
    doc = committed()
    doc["records"][0]["grid"][1] = 10**400
    path = write(tmp_path / "grid.json", doc)
    refused_everywhere(path, tmp_path, "record 0 (naive_xcol): 'grid'[1] is a whole number")
    doc = committed()
    doc["spec"]["sm_count"] = -(2**64)
    path = write(tmp_path / "spec.json", doc)
    refused_everywhere(path, tmp_path, "spec.sm_count is -18446744073709551616: more than 64 bits")


def test_a_shape_that_contradicts_the_flops_is_refused(tmp_path: Path) -> None:
    doc = committed()
    doc["records"][0]["m"] = 10**20
    path = write(tmp_path / "m.json", doc)
    refused_everywhere(path, tmp_path, "'m' is 100000000000000000000: a GEMM's dimension is at")
    doc["records"][0]["m"] = 10**6  # a dimension a kernel indexes, but not these FLOPs'
    path = write(tmp_path / "m.json", doc)
    refused_everywhere(path, tmp_path, "the shape contradicts the FLOPs")


def test_an_intensity_its_bytes_contradict_is_refused(tmp_path: Path) -> None:
    doc = committed()
    doc["records"][0]["bytes_ideal"] = 1
    path = write(tmp_path / "bytes.json", doc)
    refused_everywhere(path, tmp_path, "'ai_ideal' 682.667 is not its flops over its bytes_ideal")


# -- smaller things ------------------------------------------------------------------------


def test_a_document_with_no_records_is_refused_by_every_reader(tmp_path: Path) -> None:
    doc = committed()
    doc["records"] = []
    path = write(tmp_path / "empty.json", doc)
    refused_everywhere(path, tmp_path, f"{path} holds no records")


@pytest.mark.parametrize(
    "where, value, said",
    [
        (("memory_bandwidth_gbs",), 0, "spec.memory_bandwidth_gbs is 0: a GPU's lies between 50"),
        (("tflops", "fp32"), 0, "spec.tflops.fp32 is 0: a peak in TFLOP/s lies between 0.01"),
        (("peak_clock_mhz", "fp32"), 1, "spec.peak_clock_mhz.fp32 is 1: a clock in MHz lies"),
        (("sm_count",), 0, "spec.sm_count is 0: a GPU's lies between 1 and 1,024"),
    ],
)
def test_a_spec_roof_out_of_range_is_refused(
    tmp_path: Path, where: tuple[str, ...], value: float, said: str
) -> None:
    doc = committed()
    holder = doc["spec"]
    for key in where[:-1]:
        holder = holder[key]
    holder[where[-1]] = value
    path = write(tmp_path / "spec.json", doc)
    refused_everywhere(path, tmp_path, said)


def test_a_record_roof_of_zero_is_refused(tmp_path: Path) -> None:
    doc = committed()
    doc["records"][0]["bandwidth_gbs"] = 0
    path = write(tmp_path / "bw.json", doc)
    refused_everywhere(path, tmp_path, "'bandwidth_gbs' is 0: a roof of 0 GB/s is no GPU's")


def test_duplicate_keys_are_refused(tmp_path: Path) -> None:
    text = (
        gzip.decompress(SOURCE.read_bytes())
        .decode()
        .replace('"m": 4096,', '"m": 4096, "m": 64,', 1)
    )
    path = tmp_path / "dup.json"
    path.write_text(text)
    refused_everywhere(
        str(path), tmp_path, f"{path} is not valid: key 'm' appears twice in one object"
    )
    cal = json.loads((CALIBRATION / "h200-full.json").read_text())
    dup = json.dumps(cal).replace('"schema": ', '"schema": "x", "schema": ', 1)
    (tmp_path / "cal.json").write_text(dup)
    cal_path, page = str(tmp_path / "cal.json"), str(tmp_path / "c.html")
    r = invoke("report", str(SOURCE), "--calibration", cal_path, "-o", page)
    assert r.exit_code == 2
    assert "key 'schema' appears twice in one object" in r.stderr


def test_a_calibration_holds_numbers_the_tool_can_hold(tmp_path: Path) -> None:
    cal = json.loads((CALIBRATION / "h200-full.json").read_text())
    key = next(iter(cal["measurements"]))
    cal["measurements"][key] = 10**400
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(cal))
    r = invoke("show", str(SOURCE), "--calibration", str(path), "--roofs", "measured")
    assert r.exit_code == 2
    assert r.stderr == (
        f"error: {path}: measurements.{key} is a whole number of 401 digits: more than 64 bits "
        "hold (no real count, size or time is that large)\n"
    )
