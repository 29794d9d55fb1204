"""Remake tests/fixtures/render.json: every committed document rendered by the code as it is now,
in every way tests/test_render_stable.py checks (show in every --format and roof set, compare
D D, report), kept as the exit code and sha256 of each rendering.

Run it before a change that must not move any rendering, commit the fixture, then make the
change: the test holds it. Usage: python benchmarks/render_fixture.py [DOC.json.gz ...] (the named
documents only, the others kept as they are)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from test_render_stable import FIXTURE, documents, plotly_version, render  # noqa: E402


def main(only: list[str]) -> None:
    old = json.loads(FIXTURE.read_text()) if only and FIXTURE.exists() else {"documents": {}}
    wanted = [d for d in documents() if not only or d in only or Path(d).name in only]
    out = {d: v for d, v in old["documents"].items() if d in documents()}
    for n, doc in enumerate(wanted, 1):
        out[doc] = render(doc)
        print(f"[{n}/{len(wanted)}] {doc}", file=sys.stderr)
    fixture = {"plotly": plotly_version(), "documents": dict(sorted(out.items()))}
    FIXTURE.write_text(json.dumps(fixture, indent=1) + "\n")
    print(f"{len(out)} documents -> {FIXTURE.relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
