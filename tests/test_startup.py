"""Start-up: `roofline --help` and `roofline model gemm --m 4096` import neither pandas, NumPy,
CuPy nor matplotlib (read from `python -X importtime` of a fresh process). Their wall time is
measured as whole processes in the note, not here: a timed unit test would be flaky."""

import subprocess
import sys

import pytest

HEAVY = ("pandas", "numpy", "cupy", "matplotlib")


@pytest.mark.parametrize("args", [["--help"], ["model", "gemm", "--m", "4096"]])
def test_no_heavy_import(args):
    code = (
        "import sys; from rooflinecli.cli import cli; "
        f"sys.argv = ['roofline', *{args!r}]; cli(prog_name='roofline')"
    )
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr[-2000:]
    imported = {
        line.split("|")[-1].strip().split(".")[0]
        for line in out.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_the_lazy_command_lists_say_what_each_command_says():
    import click

    from rooflinecli.cli import cli
    from rooflinecli.commands import LazyGroup

    def walk(group: LazyGroup) -> int:
        ctx, seen = click.Context(group), 0
        for name, (_module, _attr, text) in group.lazy.items():
            cmd = group.get_command(ctx, name)
            assert cmd is not None and cmd.get_short_help_str(limit=200) == text, name
            seen += 1 + (walk(cmd) if isinstance(cmd, LazyGroup) else 0)
        return seen

    assert walk(cli) == 14  # 12 commands, and llm under model and under run
