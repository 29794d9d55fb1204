"""Seed the shipped tune table of a GPU (dispatch/<gpu>.toml) from committed documents.

    python benchmarks/seed_dispatch.py "NVIDIA H200" h200-sxm benchmarks/results/*.json \
        > dispatch/h200-sxm.toml

The records of the documents measured on that device go through the same choice as
`roofline tune dispatch` (rooflinecli.stages.dispatch.winners): per dtype and shape the fastest
verified stage; per class, the stage with the highest geometric mean of its speed against the
reference over the class's shapes (among those verified at all of them; else the stage that won
the most shapes). Each entry names the documents and measurements it came from.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rooflinecli.stages import dispatch

HEADER = """The default tune table of the {device}, shipped in the wheel: `--stages best` takes the
entry of a shape's class (docs/dispatch.md); the user's own table, written by
`roofline tune dispatch`, wins where it has the class. Made by benchmarks/seed_dispatch.py from
the committed documents (benchmarks/results/): per class, the verified stage with the highest
geomean of % of the reference over the class's shapes; `from` names the documents and
measurements. Classes no document measured
have no entry: their shapes take the nearest class's."""


def main(device: str, spec: str, docs: list[str]) -> None:
    found = []
    for name in docs:
        doc = json.loads(Path(name).read_text())
        if (doc.get("device") or {}).get("name") != device or "profile" in doc.get("command", ""):
            continue
        found += [(r, Path(name).name) for r in doc["records"]]
    entries = dispatch.winners(found)
    sys.stdout.write(dispatch.to_toml(device, spec, entries, HEADER.format(device=device)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
