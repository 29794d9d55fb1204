"""Start-up: `roofline --help` and `roofline model gemm --m 4096` import neither pandas, NumPy,
CuPy nor matplotlib (read from `python -X importtime` of a fresh process); `model gemm` into a
pipe draws its table without rich (rooflinecli.present.boxed) and loads no module that only other
commands need. Their wall time is measured as whole processes in the note, not here: a timed unit
test would be flaky."""

import subprocess
import sys

import pytest

HEAVY = ("pandas", "numpy", "cupy", "matplotlib")
# what `model gemm` into a pipe (no GPU, no nvidia-smi) does without: rich draws nothing there,
# and these serve measure(), writing files and running programs
MODEL_SKIPS = ("rich", "subprocess", "statistics", "tempfile", "shutil")


def imported_by(args: list[str], env: dict[str, str] | None = None) -> set[str]:
    """Top-level names of the modules a fresh `roofline ARGS` imports, its output a pipe."""
    code = (
        "import sys; from rooflinecli.cli import cli; "
        f"sys.argv = ['roofline', *{args!r}]; cli(prog_name='roofline')"
    )
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return {
        line.split("|")[-1].strip().split(".")[0]
        for line in out.stderr.splitlines()
        if line.startswith("import time:")
    }


@pytest.mark.parametrize("args", [["--help"], ["model", "gemm", "--m", "4096"]])
def test_no_heavy_import(args):
    imported = imported_by(args)
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_model_gemm_into_a_pipe_loads_no_rich_nor_what_other_commands_need(tmp_path):
    import os

    # a PATH without nvidia-smi: the default spec is chosen without running it
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    env["PATH"] = str(tmp_path)
    imported = imported_by(["model", "gemm", "--m", "4096"], env)
    assert not imported & set(MODEL_SKIPS), sorted(imported & set(MODEL_SKIPS))


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
