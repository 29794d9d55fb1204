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


def test_wheel_holds_every_cu_cuh_and_toml(wheel):
    # the kernels (stages, PTX headers in include/, calibration kernels in calibrate/), GPU specs
    # LLM presets and the default tune tables (--stages best) the tool reads at run time
    names = set(wheel.namelist())
    for folder, patterns in (
        ("kernels", ("*.cu", "include/*.cuh", "calibrate/*.cu", "util/*.cu")),
        ("specs", ("*.toml",)),
        ("presets", ("*.toml",)),
        ("dispatch", ("*.toml",)),
    ):
        for pattern in patterns:
            assert sorted((ROOT / folder).glob(pattern)), pattern
        files = sorted(
            p.relative_to(ROOT / folder).as_posix()
            for suffix in (".cu", ".cuh", ".toml")
            for p in (ROOT / folder).rglob(f"*{suffix}")
        )
        for name in files:
            assert f"rooflinecli/{folder}/{name}" in names, name


def test_wheel_holds_every_module(wheel):
    names = set(wheel.namelist())
    for path in sorted((ROOT / "rooflinecli").rglob("*.py")):
        assert path.relative_to(ROOT).as_posix() in names, path


def test_wheel_has_the_console_script(wheel):
    ep = next(n for n in wheel.namelist() if n.endswith("entry_points.txt"))
    assert "roofline = rooflinecli.cli:main" in wheel.read(ep).decode()


def test_wheel_registers_the_pytest_plugin(wheel):
    ep = next(n for n in wheel.namelist() if n.endswith("entry_points.txt"))
    text = wheel.read(ep).decode()
    assert "[pytest11]" in text and "roofline = rooflinecli.pytest_plugin" in text
