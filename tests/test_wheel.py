"""The built wheel ships every kernel and spec file."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    (whl,) = out.glob("roofline-*.whl")
    return zipfile.ZipFile(whl)


def test_wheel_holds_every_cu_and_toml(wheel):
    # the kernels, GPU specs and LLM presets the tool reads at run time
    names = set(wheel.namelist())
    for folder, pattern in (("kernels", "*.cu"), ("specs", "*.toml"), ("presets", "*.toml")):
        files = sorted(p.name for p in (ROOT / folder).glob(pattern))
        assert files
        for name in files:
            assert f"rooflinecli/{folder}/{name}" in names, name


def test_wheel_has_the_console_script(wheel):
    ep = next(n for n in wheel.namelist() if n.endswith("entry_points.txt"))
    assert "roofline = rooflinecli.cli:main" in wheel.read(ep).decode()


def test_wheel_registers_the_pytest_plugin(wheel):
    ep = next(n for n in wheel.namelist() if n.endswith("entry_points.txt"))
    text = wheel.read(ep).decode()
    assert "[pytest11]" in text and "roofline = rooflinecli.pytest_plugin" in text
