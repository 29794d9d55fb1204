"""The committed H200 results documents: valid, from the GPU, and every stage verified."""

import re
from pathlib import Path

import pytest

from rooflinecli import paths, results

DOCS = sorted((Path(__file__).resolve().parent.parent / "benchmarks" / "results").glob("*.json.gz"))


def test_there_are_results():
    assert DOCS


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_document_is_a_verified_gpu_run(path):
    doc = results.load(path)
    dev = doc["device"]
    # the H200's documents, and the H100's (named -h100, benchmarks/h100.sh)
    gpu = "NVIDIA H100 80GB HBM3" if path.name.endswith("-h100.json.gz") else "NVIDIA H200"
    assert dev["name"] == gpu and dev["compute_capability"] == "9.0"
    assert dev["driver"]
    if doc.get("kind") != "profile-app":  # ncu describes the device of a program's run
        assert dev["cuda_runtime"] and dev["cupy"]
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", doc["environment"]["commit"])
    for rec in doc["records"]:
        if rec.get("kind") == "kernel":  # `profile app`: a program's kernels, verified by nobody
            assert rec["launches"] >= 1 and rec["time_ms"] > 0 and rec["name"] == rec["stage"]
            continue
        if rec["verified"] is None:  # a shape this stage refuses: skipped with its reason
            if rec.get("op") == "chain":  # a way that takes no part at this batch says why
                assert isinstance(rec["error"], str) and rec["error"], rec
            else:
                assert rec["error"].startswith("skipped:"), rec
            continue
        if rec["verified"] is False and rec.get("op") == "chain":
            # a chain way that failed its check is reported so, with no time and no speed
            assert rec.get("time_ms") is None and not rec.get("tflops"), rec["stage"]
            continue
        assert rec["verified"] is True, (rec["stage"], rec["m"], rec["n"], rec["k"])
        assert rec["tflops"] > 0 and rec["time_ms"] > 0


PROBES = sorted((Path(__file__).resolve().parent.parent / "benchmarks" / "probes").glob("*.json"))


@pytest.mark.parametrize(
    "path", [p for p in PROBES if "findings" not in p.name], ids=lambda p: p.name
)
def test_probe_document_is_a_gpu_run(path):

    doc = paths.read_json(path, "results file")
    assert doc["device"]["name"] in ("NVIDIA H200", "NVIDIA H100 80GB HBM3")
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", doc["environment"]["commit"])
    if doc["schema"] == "roofline.probe-mma/1":
        assert doc["records"]
        for rec in doc["records"]:
            assert rec["tflops"] > 0 and rec["sm_clock_mhz_by_clock64"] > 0
            assert rec["spill_bytes"] == 0
    elif doc["schema"] == "roofline.probe-token-variants/1":  # probes/token_variants.py
        assert doc["ways"]
        for way in doc["ways"]:
            assert way["verified"] is True and all(way["checks"]), way["way"]
            assert way["median_us"] > 0 and all(t > 0 for t in way["samples_ms"])
    else:  # probes/graph_vs_eager.py: one launch timed from a graph and from the stream
        assert doc["schema"] == "roofline.probe-graph-vs-eager/1"
        assert {launch["launch"].split()[-1] for launch in doc["launches"]} == {"graph", "eager"}
        assert all(min(launch["samples_ms"]) > 0 for launch in doc["launches"])


def test_every_finding_says_its_question_its_answer_and_how_to_measure_it_again():
    """benchmarks/probes/h200-findings.json: the figures no results document holds (probes,
    ncu listings, one-off runs), each under an id that code comments cite."""
    import json

    root = Path(__file__).resolve().parent.parent
    doc = json.loads((root / "benchmarks" / "probes" / "h200-findings.json").read_text())
    assert doc["schema"] == "roofline.findings/1"
    assert doc["device"]["name"] == "NVIDIA H200"
    ids = [f["id"] for f in doc["findings"]]
    assert len(ids) == len(set(ids)), "ids are unique"
    for f in doc["findings"]:
        assert f["question"].rstrip().endswith("?"), f["id"]
        assert f["answer"] and f["data"], f["id"]
        scripts = re.findall(r"benchmarks/[\w/]+\.(?:sh|py)", f["regenerate"])
        assert all((root / s).is_file() for s in scripts), (f["id"], scripts)
        steps = re.findall(r"benchmarks/probes\.sh OUTDIR (\w+)", f["regenerate"])
        probes = (root / "benchmarks" / "probes.sh").read_text()
        assert all(f"step_{s}()" in probes for s in steps), (f["id"], steps)
    cite = re.compile(r"h200-findings\.json[,\s#]*(?:id[\s#]+)?([a-z0-9]+(?:-[a-z0-9]+)+)")
    cited = {c for p in (root / "rooflinecli").rglob("*.py") for c in cite.findall(p.read_text())}
    assert cited <= set(ids), cited - set(ids)
