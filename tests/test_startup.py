"""Start-up: `roofline --help`, `roofline model gemm --m 4096` and `roofline specs` import
neither pandas, NumPy, CuPy, matplotlib nor plotly (read from `python -X importtime` of a fresh
process); `model gemm` into a pipe draws its table without rich (rooflinecli.present.boxed) and
loads no module that only other commands or formats need; the program leaves its objects frozen
for the exit. Their wall time is measured as whole processes in the note, not here: a timed unit
test would be flaky."""

import subprocess
import sys

import pytest

HEAVY = ("pandas", "numpy", "cupy", "matplotlib", "plotly", "playwright")
# what `model gemm` into a pipe (no GPU, no nvidia-smi) does without: rich draws nothing there,
# and these serve measure(), writing files, running programs, the JSON of --format json and
# --output, the terminal chart, and attention's model
MODEL_SKIPS = ("rich", "subprocess", "statistics", "tempfile", "shutil", "json")
MODEL_SKIPS_OURS = (
    "rooflinecli.files",
    "rooflinecli.present.terminal_chart",
    "rooflinecli.core.attention",
)


def imported_by(args: list[str], env: dict[str, str] | None = None) -> set[str]:
    """Top-level names of the modules a fresh `roofline ARGS` imports, its output a pipe."""
    return {name.split(".")[0] for name in modules_imported_by(args, env)}


def modules_imported_by(args: list[str], env: dict[str, str] | None = None) -> set[str]:
    """Full names of the modules a fresh `roofline ARGS` imports, its output a pipe."""
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
        line.split("|")[-1].strip()
        for line in out.stderr.splitlines()
        if line.startswith("import time:")
    }


@pytest.mark.parametrize("args", [["--help"], ["model", "gemm", "--m", "4096"], ["specs"]])
def test_no_heavy_import(args):
    imported = imported_by(args)
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_model_gemm_into_a_pipe_loads_no_rich_nor_what_other_commands_need(tmp_path):
    import os

    # a PATH without nvidia-smi: the default spec is chosen without running it
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    env["PATH"] = str(tmp_path)
    modules = modules_imported_by(["model", "gemm", "--m", "4096"], env)
    assert "rooflinecli.stages.gemm" in modules  # the list below is read from real output
    imported = {name.split(".")[0] for name in modules}
    assert not imported & set(MODEL_SKIPS), sorted(imported & set(MODEL_SKIPS))
    assert not modules & set(MODEL_SKIPS_OURS), sorted(modules & set(MODEL_SKIPS_OURS))


def test_the_program_leaves_its_objects_frozen_for_the_exit():
    """main() freezes what start-up made, so the interpreter's last collector pass skips it
    (atexit handlers run after main returns, before that pass)."""
    code = (
        "import atexit, gc, sys; from rooflinecli.cli import main; "
        "atexit.register(lambda: print('frozen', gc.get_freeze_count())); "
        "sys.argv = ['roofline', '--version']; main()"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    frozen = out.stdout.splitlines()[-1].split()
    assert frozen[0] == "frozen" and int(frozen[1]) > 1000, out.stdout


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

    assert walk(cli) == 17  # 15 commands, and llm under model and under run


def test_model_gemm_creates_one_dataclass():
    """On Python 3.11 each frozen dataclass costs about 1 ms of start-up to create; the values
    every command loads are NamedTuples instead, and only Stage (its registry is built with
    dataclasses.replace) stays one. A new dataclass on this path should be a choice."""
    code = """
import dataclasses, io, sys
from rooflinecli.cli import cli

sys.argv, out, sys.stdout = ["roofline", "model", "gemm", "--m", "4096"], sys.stdout, io.StringIO()
try:
    cli(prog_name="roofline")
except SystemExit:
    pass
sys.stdout = out
for name, module in sorted(sys.modules.items()):
    if name.startswith("rooflinecli"):
        for attr, obj in vars(module).items():
            if dataclasses.is_dataclass(obj) and isinstance(obj, type) and obj.__module__ == name:
                print(f"{name}.{attr}")
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.split() == ["rooflinecli.stages.gemm.Stage"], out.stdout
