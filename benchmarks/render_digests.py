"""Remake tests/fixtures/render-before.json: render every committed results document with the
tool as it was at BEFORE (a git worktree of that commit, removed afterwards) and keep the digests
that tests/test_render_stable.py compares against. Usage: python benchmarks/render_digests.py"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

BEFORE = "c080e27"
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from test_render_stable import normalize  # noqa: E402


def main() -> None:
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        wt = Path(tmp) / "before"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "-q", str(wt), BEFORE], check=True
        )
        try:
            for path in sorted((ROOT / "benchmarks" / "results").glob("*.json")):
                if not (wt / "benchmarks" / "results" / path.name).exists():
                    continue
                code = (
                    f"import sys; sys.path.insert(0, {str(wt)!r}); from rooflinecli.cli import main;"
                    f" sys.argv = ['roofline', 'show', {str(wt / 'benchmarks' / 'results' / path.name)!r},"
                    " '--format', 'json']; main()"
                )
                res = subprocess.run(
                    [sys.executable, "-c", code], capture_output=True, text=True, check=True
                )
                out[path.name] = normalize(path.name, json.loads(res.stdout))
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(wt)], check=True
            )
    target = ROOT / "tests" / "fixtures" / "render-before.json"
    target.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{len(out)} documents -> {target}")


if __name__ == "__main__":
    main()
