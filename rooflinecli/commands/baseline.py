"""`roofline baseline`: keep a verified run as the reference the CI gate compares against."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rooflinecli import results
from rooflinecli.errors import RooflineError
from rooflinecli.present import gate


def _clean(rec: dict[str, Any]) -> bool:
    """Verified and timed; a measure() record timed; or a stage skipped (not run, with why)."""
    timed = rec.get("tflops") is not None
    if rec.get("verified") is True:
        return timed
    if rec.get("verified") is None:
        return timed if rec.get("kind") == "user" else not timed and bool(rec.get("error"))
    return False


@click.group()
def baseline() -> None:
    """Verified runs kept as baselines for `roofline gate`."""


@baseline.command("save")
@click.argument("src", metavar="RESULTS.json", type=click.Path(dir_okay=False))
@click.argument("dst", metavar="BASELINE.json", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Replace an existing baseline.")
def save(src: str, dst: str, force: bool) -> None:
    """Save a run as the new baseline: it must be a GPU run with every stage verified.

    A stage skipped at a shape it refuses (not run, with its reason) may stay: the gate skips it
    on both sides. measure() records carry no verification: timed is enough for them.
    """
    doc = results.load(src)
    gate.require_run(doc, src)
    if not doc["records"]:
        raise RooflineError(f"{src} holds no records")
    records = gate.index(doc, src)  # one record per identity
    bad = [k.label for k, r in records.items() if not _clean(r)]
    if bad:
        raise RooflineError(
            f"{src} is not a clean run: not verified or not timed: {', '.join(bad)}"
        )
    target = Path(dst)
    if target.exists() and not force:
        raise RooflineError(f"{dst} exists: pass --force to replace it")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RooflineError(f"cannot create {target.parent}: {exc.strerror}") from None
    results.write_atomic(target, results.dumps(doc))
    n = len(doc["records"])
    click.echo(f"saved {dst}: {n} record{'s' if n != 1 else ''} from {src} ({gate.describe(doc)})")
