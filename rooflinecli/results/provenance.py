"""Where a document was made: the tool's commit, Python, the host, the launcher's rank."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def git_commit() -> str | None:
    """The tool's commit: ROOFLINE_COMMIT (set where the checkout has no .git), else git."""
    if os.environ.get("ROOFLINE_COMMIT"):
        return os.environ["ROOFLINE_COMMIT"]
    import shutil
    import subprocess

    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists() or not shutil.which("git"):
        return None
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def environment() -> dict[str, Any]:
    """Where a document was made: the tool's commit, Python, the host, and under a launcher
    (srun, mpirun, torchrun) the rank (rooflinecli.core.ranks)."""
    import platform

    from rooflinecli.core import ranks

    out: dict[str, Any] = {
        "commit": git_commit(), "python": platform.python_version(), "host": platform.node()
    }  # fmt: skip
    place = ranks.discover(os.environ)
    if place is not None:
        out["launch"] = place._asdict()
    return out
