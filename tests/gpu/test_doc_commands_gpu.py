"""Every command README.md and the pages under docs/ show, run as written on a GPU: each must
exit 0 (tests/doc_commands.py says how they are found and run; tests/test_doc_commands.py runs
the same list on the CPU, where the GPU's commands stop for the GPU alone).

A command that needs ncu is skipped, saying so, where this machine has none; one that names a
GPU with CUDA_VISIBLE_DEVICES that this machine lacks is skipped too. Nothing else is.
"""

from __future__ import annotations

from pathlib import Path

import doc_commands as dc
import pytest

from rooflinecli.errors import RooflineError

COMMANDS = dc.tool_commands()
TIMEOUT_S = 1200.0  # `profile gemm` replays every stage of the ladder under ncu


def _gpus() -> int:
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


@pytest.mark.gpu
@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c.id)
def test_the_command_runs_as_written_on_a_gpu(cmd: dc.Command, tmp_path: Path) -> None:
    if cmd.needs_ncu:
        from rooflinecli.gpu.profile import find_ncu

        try:
            find_ncu()
        except RooflineError as exc:
            pytest.skip(f"needs ncu: {exc}")
    visible = dict(cmd.env).get("CUDA_VISIBLE_DEVICES")
    if visible and visible.isdigit() and int(visible) >= _gpus():
        pytest.skip(f"names GPU {visible}; this machine has {_gpus()}")
    res = dc.run(cmd, tmp_path / "work", TIMEOUT_S)
    said = f"{cmd.page}:{cmd.line}: {cmd.text}\nexit {res.returncode}\n{res.stdout}{res.stderr}"
    assert res.returncode == 0, said
    assert "Traceback" not in res.stderr, said
