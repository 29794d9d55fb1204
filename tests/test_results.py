"""The results document: shape, validation and atomic writes."""

import json
import os

import pytest

from rooflinecli import files, results
from rooflinecli.errors import RooflineError


def _doc():
    return results.new_document(
        {"name": "x"},
        None,
        [{"stage": "s", "dtype": "fp32", "m": 1, "n": 2, "k": 3, "tflops": float("nan")}],
    )


def test_every_record_field_present_and_nan_is_null(tmp_path):
    doc = _doc()
    assert list(doc["records"][0])[: len(results.RECORD_FIELDS)] == list(results.RECORD_FIELDS)
    p = tmp_path / "r.json"
    files.write_atomic(p, results.dumps(doc))
    back = results.load(p)
    assert back["records"][0]["tflops"] is None
    assert back["schema"] == "roofline.results/2"


def test_atomic_write_leaves_old_file_on_failure(tmp_path, monkeypatch):
    p = tmp_path / "r.json"
    p.write_text("old")

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(RooflineError, match="No space left on device"):
        files.write_atomic(p, "new")
    assert p.read_text() == "old"
    assert [x.name for x in tmp_path.iterdir()] == ["r.json"]  # no temp file left behind


@pytest.mark.parametrize(
    "text, message",
    [
        ("{", "is not JSON"),
        ("[]", "not a results document"),
        ('{"schema": "other/1"}', "not a roofline results document"),
        (
            '{"schema": "roofline.results/9", "tool_version": "x", "created": "x", '
            '"spec": {}, "records": []}',
            "schema roofline.results/9 is not supported",
        ),
        (
            '{"schema": "roofline.results/1", "tool_version": "x", "created": "x", '
            '"spec": {}, "records": [{"stage": "a"}]}',
            "record 0 lacks 'dtype'",
        ),
    ],
)
def test_malformed_documents(tmp_path, text, message):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(RooflineError, match=message):
        results.load(p)


def test_missing_file():
    with pytest.raises(RooflineError, match="not found"):
        results.load("/nonexistent/r.json")


def test_dumps_is_json():
    assert json.loads(results.dumps(_doc()))["records"][0]["stage"] == "s"


def _doc_with(tmp_path, **fields):
    rec = {"stage": "tiled", "dtype": "fp32", "m": 64, "n": 64, "k": 64, "tflops": 5.0, **fields}
    doc = results.new_document({"name": "x"}, {"name": "GPU"}, [rec])
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"tflops": "fast"}, "record 0 (tiled): 'tflops' must be a number or null, got 'fast'"),
        ({"time_ms": True}, "record 0 (tiled): 'time_ms' must be a number or null, got True"),
        ({"registers": [1]}, "record 0 (tiled): 'registers' must be a number or null, got [1]"),
        ({"m": 64.5}, "record 0 (tiled): 'm' must be a whole number of at least 1 or null"),
        ({"m": 0}, "record 0 (tiled): 'm' must be a whole number of at least 1 or null"),
        ({"stage": 7}, "record 0: 'stage' must be a string, got 7"),
        ({"roof": 3}, "record 0 (tiled): 'roof' must be a string or null, got 3"),
        ({"verified": "yes"}, "record 0 (tiled): 'verified' must be true, false or null"),
        ({"sm_clock_mhz": "1980"}, "'sm_clock_mhz' must be a number or null, got '1980'"),
    ],
)
def test_wrongly_typed_fields_name_file_record_and_field(tmp_path, fields, message):
    p = _doc_with(tmp_path, **fields)
    with pytest.raises(RooflineError) as exc:
        results.load(p)
    assert exc.value.message.startswith(f"{p}: ")
    assert message in exc.value.message


@pytest.mark.parametrize("command", [["show"], ["compare"], ["gate"], ["plot", "-o", "x.png"]])
def test_a_string_speed_is_one_line_in_every_reader(runner, tmp_path, command):
    from rooflinecli.cli import cli

    p = str(_doc_with(tmp_path, tflops="fast"))
    args = [command[0], p, *([p] if command[0] == "compare" else []), *command[1:]]
    r = runner.invoke(cli, args)
    assert r.exit_code == 2, r.output
    assert r.stderr == (
        f"error: {p}: record 0 (tiled): 'tflops' must be a number or null, got 'fast'\n"
    )


def test_renderer_shows_an_unexpected_value_as_text():
    from rooflinecli.present import table as report

    assert report.fixed(2)("fast") == "fast"
    assert report.integer("many") == "many"
    assert report.fixed(2)(None) == "-"


def test_a_16bit_ffma_record_says_the_roof_it_stands_under():
    """Placed under the FP32 peak since its math is FFMA (key, roof and figure agree); records of
    the window that labelled the tensor roof 'fp32' are relabelled on load, figures kept."""
    from rooflinecli.core import roofs, specs
    from rooflinecli.stages.gemm import BY_NAME

    spec = specs.resolve("h200-sxm")
    rec = roofs.model_record(BY_NAME["gemv_splitk"], 1, 4096, 4096, spec, dtype="bf16")
    assert (rec["math_instruction"], rec["peak_key"], rec["roof_key"]) == ("FFMA", "fp32", "fp32")
    assert rec["peak_tflops"] == spec.peak("fp32")
    tc = roofs.model_record(BY_NAME["gemv_wmma"], 16, 4096, 4096, spec, dtype="bf16")
    assert (tc["peak_key"], tc["roof_key"]) == ("bf16_tensor_dense", "bf16_tensor_dense")

    old = {"records": [{"kind": "stage", "stage": "gemv_splitk", "dtype": "bf16",
                        "peak_key": "fp32", "roof_key": "bf16_tensor_dense",
                        "peak_tflops": 989.4}]}  # fmt: skip
    (fixed,) = results.upgrade(old)["records"]
    assert (fixed["peak_key"], fixed["peak_tflops"]) == ("bf16_tensor_dense", 989.4)
