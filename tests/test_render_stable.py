"""Every committed results document renders the same (`roofline show --format json`) as it did
before the restructuring (commit c080e27), except for the corrections made on purpose, listed
here. tests/fixtures/render-before.json holds, per document, a digest of each record and of the
rest of the document as rendered then, with the corrected fields left out; it is remade by
`python benchmarks/render_digests.py` (which renders the documents at c080e27)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rooflinecli.cli import cli

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
FIXTURE = Path(__file__).parent / "fixtures" / "render-before.json"

# Corrections made on purpose, and why. Fields a record may gain or change:
ADDED = {
    # records describe themselves (results.upgrade fills these in for older documents)
    "math_instruction": "which compute roof places the record (FFMA, HMMA, HGMMA, library)",
    "slower_because": "why a stage can be slower than the one before it, carried by the record",
}
# In profile documents the speed came from the event time under ncu's replay (11-353x too slow);
# it now comes from ncu's own kernel time, and the replay time is kept under its own name.
PROFILE_CORRECTED = (
    "time_ms",
    "time_ms_min",
    "time_ms_max",
    "time_ms_stdev",
    "tflops",
    "pct_of_roof",
    "pct_of_peak",
    "pct_of_reference",
    "time_ms_under_ncu",
    "ai_l1",
    "ai_l1_note",
    "ai_shared",
    "bytes_shared",
    "ai_shared_measured",
    "migrations",
)


def normalize(name: str, doc: dict[str, Any]) -> dict[str, Any]:
    """The parts of a rendered document that must not change: digests per record and of the
    rest."""
    drop = set(ADDED)
    if name.startswith("profile-"):
        drop |= set(PROFILE_CORRECTED)

    def digest(obj: Any) -> str:
        return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]

    records = [{k: v for k, v in r.items() if k not in drop} for r in doc.get("records", [])]
    rest = {k: v for k, v in doc.items() if k not in ("records", "migrations")}
    return {"rest": digest(rest), "records": [digest(r) for r in records]}


def _documents() -> list[Path]:
    return sorted(RESULTS.glob("*.json"))


@pytest.mark.parametrize("path", _documents(), ids=lambda p: p.name)
def test_committed_document_renders_as_before(path: Path) -> None:
    before = json.loads(FIXTURE.read_text())
    if path.name not in before:
        pytest.skip(
            f"{path.name} was committed after the renderings on record: its rendering is held by "
            "no digest yet (run `python benchmarks/render_digests.py` to record one)"
        )
    res = CliRunner().invoke(cli, ["show", str(path), "--format", "json"])
    assert res.exit_code == 0, res.output
    now = normalize(path.name, json.loads(res.output))
    want = before[path.name]
    assert now["rest"] == want["rest"], "the document's top level renders differently"
    assert len(now["records"]) == len(want["records"])
    pairs = zip(now["records"], want["records"], strict=True)
    changed = [i for i, (a, b) in enumerate(pairs) if a != b]
    assert not changed, f"records {changed} render differently"


def test_every_document_of_the_restructuring_is_covered() -> None:
    before = json.loads(FIXTURE.read_text())
    assert len(before) == 23
    assert set(before) <= {p.name for p in _documents()}
