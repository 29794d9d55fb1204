"""In --format table, every line fits the terminal: COLUMNS=80, the narrowest the tool writes
for, holds each line of the README's commands that run without a GPU, and of a dry run of the
main job (`run gemm --m 4096 --dry-run`), piped. Only one word longer than the width (a path)
may overflow it. Where a table of rows cannot fit, it is split, each part led by the columns
that name a row, and one line says so."""

from __future__ import annotations

from pathlib import Path

import doc_commands as dc
import pytest

from rooflinecli import paths

WIDTH = 80


def _cases() -> list[object]:
    found = [c for c in dc.tool_commands() if c.page == "README.md" and not c.needs_gpu]
    dry = dc.parse("main job", 0, "roofline run gemm --m 4096 --dry-run")
    out = []
    for cmd in [*found, dry]:
        marks = [pytest.mark.prebuild(s, **kw) for s, kw in dc.builds(cmd)]
        out.append(pytest.param(cmd, id=cmd.id, marks=marks))
    return out


def too_wide(text: str, width: int = WIDTH) -> list[str]:
    """The lines wider than `width`, but a line that is one word (a path) and its frame."""
    return [
        line
        for line in text.splitlines()
        if len(line) > width and max(map(len, line.split()), default=0) <= width
    ]


@pytest.mark.parametrize("cmd", _cases())
def test_each_line_fits_80_columns(cmd: dc.Command, tmp_path: Path) -> None:
    res = dc.run(cmd, tmp_path / "work", 300.0, CUDA_VISIBLE_DEVICES="", COLUMNS=str(WIDTH))
    assert res.returncode == 0, res.stderr
    wide = too_wide(res.stdout + res.stderr)
    assert not wide, f"{cmd.text}: {len(wide)} lines over {WIDTH}:\n" + "\n".join(wide[:5])


RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


def test_show_of_every_committed_document_fits_80_columns() -> None:
    """The table, the verdict, the notes and the chart of each committed document. A `profile
    app` document's table keeps each kernel's name whole and is not held to it yet."""

    from click.testing import CliRunner

    from rooflinecli.cli import cli

    over = {}
    for path in sorted(RESULTS.glob("*.json.gz")):
        if paths.read_json(path, "results file").get("command") == "profile app":
            continue
        r = CliRunner().invoke(cli, ["show", str(path)], env={"COLUMNS": "80", "NO_COLOR": "1"})
        assert r.exit_code == 0, (path.name, r.stderr)
        wide = too_wide(r.stdout + r.stderr)
        if wide:
            over[path.name] = wide[0]
    assert not over, over
