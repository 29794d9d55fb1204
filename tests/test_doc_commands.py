"""Every command README.md and the pages under docs/ show, run as written on the CPU.

tests/doc_commands.py says how the commands are found and run. Each must succeed here, or,
where it needs a GPU (`run`, `profile`, `calibrate`, `tune`, but a dry run) stop for that reason
alone: exit 2 with one line on stderr saying there is no CUDA device or no ncu, nothing on
stdout. tests/gpu/test_doc_commands_gpu.py runs the same list on a GPU, where each must exit 0.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import doc_commands as dc
import pytest

COMMANDS = dc.tool_commands()
TIMEOUT_S = 300.0


def _gpu_here() -> bool:
    """A GPU this machine's driver sees (then a GPU command may simply succeed here)."""
    smi = shutil.which("nvidia-smi")
    return bool(smi) and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


def _case(cmd: dc.Command) -> object:
    marks = [pytest.mark.prebuild(s, **kw) for s, kw in dc.builds(cmd)]
    return pytest.param(cmd, id=cmd.id, marks=marks)


@pytest.mark.parametrize("cmd", [_case(c) for c in COMMANDS])
def test_the_command_runs_as_written(cmd: dc.Command, tmp_path: Path) -> None:
    # hide a GPU the machine may have: these are the CPU's runs (the GPU's are in tests/gpu)
    res = dc.run(cmd, tmp_path / "work", TIMEOUT_S, CUDA_VISIBLE_DEVICES="")
    said = f"{cmd.page}:{cmd.line}: {cmd.text}\nexit {res.returncode}\n{res.stdout}{res.stderr}"
    assert "Traceback" not in res.stderr, said
    if not cmd.needs_gpu or (res.returncode == 0 and _gpu_here()):
        assert res.returncode == 0, said
        return
    assert res.returncode == 2, said
    assert res.stdout == "", said
    assert dc.NO_GPU.fullmatch(res.stderr), said
    if not cmd.needs_ncu:
        assert "no CUDA device" in res.stderr, said


def test_the_pages_show_the_commands_a_user_needs_first() -> None:
    """A guard on the extraction itself: the set-up, the main job, the column's exercises, the
    user's own kernel, each as the README writes it, and the GPU commands among them."""
    texts = [c.text for c in dc.page_commands() if c.page == "README.md"]
    assert texts[:3] == [
        "roofline run gemm --m 4096",
        "make run    # installs into .venv, then runs the main job: roofline run gemm --m 4096",
        "make test   # installs what the tests need, then runs them (no GPU needed)",
    ]
    for wanted in (
        "roofline run gemm --m 4096 --stages naive_xcol,naive_xrow,thread_tile_4x4,thread_tile_8x8",
        "roofline profile gemm --m 4096",
        "roofline inspect gemm --stage thread_tile_4x4 --stage thread_tile_8x8",
        "roofline run gemm --m 4096 --extra-stage examples/my_gemm.toml",
    ):
        assert wanted in texts, wanted
    gpu = {c.text for c in COMMANDS if c.needs_gpu}
    assert "roofline profile gemm --m 4096" in gpu and "roofline model gemm --m 4096" not in gpu
    assert not any("--dry-run" in t for t in gpu)
    # `make run` stands for its recipe's two commands, the model shown where no GPU runs
    (line,) = [c.line for c in dc.page_commands() if c.argv == ("make", "run")]
    make_run = [c.text for c in COMMANDS if c.page == "README.md" and c.line == line]
    assert make_run == [
        "roofline run gemm --m 4096",
        "roofline model gemm --m 4096 --spec h100-sxm5",
    ]


def test_every_shell_line_is_the_tool_the_set_up_or_a_program_named_as_another() -> None:
    for cmd in dc.page_commands():
        where = f"{cmd.page}:{cmd.line}: {cmd.text}"
        if cmd.program == "make":
            assert cmd.argv[1:] in [(t,) for t in dc.MAKE_TARGETS], where
        else:
            assert cmd.program in ("roofline", *dc.OTHER_PROGRAMS), where


def test_make_test_is_this_suite() -> None:
    """`make test` is not run by a test: it is the suite itself (its recipe says so)."""
    recipe = dc.make_recipe("test")
    assert recipe.strip() == '$(BIN)/python -m pytest -q -m "not matrix"'


def test_how_commands_are_found() -> None:
    page = "\n".join(
        [
            "Some prose with `roofline show inline.json` (inline code is not a block).",
            "```console",
            "$ roofline show a.json   # a comment",
            "output of it",
            "$ CUDA_VISIBLE_DEVICES=1 roofline run gemm \\",
            "    --m 64",
            "```",
            "```text",
            "roofline gate RESULTS.json --baseline BASELINE.json [--tolerance 5]",
            "```",
            "```sh",
            "# a comment line",
            "",
            "roofline plot a.json -o a.png",
            "git add a.json",
            "```",
            "```python",
            "import roofline",
            "```",
        ]
    )
    found = dc.shell_lines(page)
    assert found == [
        (3, "roofline show a.json   # a comment"),
        (5, "CUDA_VISIBLE_DEVICES=1 roofline run gemm --m 64"),
        (14, "roofline plot a.json -o a.png"),
        (15, "git add a.json"),
    ]
    cmds = [dc.parse("p.md", n, t) for n, t in found]
    assert [c.program for c in cmds] == ["roofline", "roofline", "roofline", "git"]
    assert cmds[0].argv == ("roofline", "show", "a.json")  # the comment is no argument
    assert cmds[1].env == (("CUDA_VISIBLE_DEVICES", "1"),) and cmds[1].needs_gpu
    assert not cmds[2].needs_gpu and not cmds[2].needs_ncu


@pytest.mark.parametrize(
    ("stderr", "ok"),
    [
        ("error: no CUDA device found: CuPy is not installed (pip install ...)\n", True),
        ("error: Nsight Compute (ncu) not found on PATH: install it or set ROOFLINE_NCU\n", True),
        ("error: unknown stage 'nope'\n", False),
        ("error: no CUDA device found\nerror: something else\n", False),
        ("warning: slow\nerror: no CUDA device found\n", False),
    ],
)
def test_what_counts_as_stopping_for_the_gpu_alone(stderr: str, ok: bool) -> None:
    assert bool(dc.NO_GPU.fullmatch(stderr)) is ok
