"""The results document: shape, validation and atomic writes."""

import json
import os

import pytest

from rooflinecli import results
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
    results.write_atomic(p, results.dumps(doc))
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
        results.write_atomic(p, "new")
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
