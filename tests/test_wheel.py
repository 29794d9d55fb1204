"""The built wheel ships every kernel and spec file."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


# the build hook pip calls (PEP 517), named by pyproject.toml, called without pip around it: pip's
# own start-up was two thirds of the 2.2 s that `pip wheel --no-build-isolation` took
BUILD = """
import importlib, sys, tomllib
backend = tomllib.load(open("pyproject.toml", "rb"))["build-system"]["build-backend"]
module, _, obj = backend.partition(":")
hooks = importlib.import_module(module)
hooks = getattr(hooks, obj) if obj else hooks
print(hooks.build_wheel(sys.argv[1]))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-c", BUILD, str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    (whl,) = out.glob("roofline-*.whl")
    assert build.stdout.splitlines()[-1] == whl.name
    archive = zipfile.ZipFile(whl)
    archive.build_log = build.stdout + build.stderr  # type: ignore[attr-defined]
    return archive


def test_license_is_an_spdx_expression_and_the_build_warns_of_nothing_deprecated(wheel):
    """`license = "MIT"` (setuptools >= 77): the metadata carries it as License-Expression and
    the build says nothing of a deprecated `project.license` table."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "MIT"
    assert "setuptools>=77" in project["build-system"]["requires"]
    (meta,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    assert "License-Expression: MIT" in wheel.read(meta).decode().splitlines()
    assert "deprecat" not in wheel.build_log.lower(), wheel.build_log[-3000:]


def test_wheel_holds_every_cu_cuh_and_toml(wheel):
    # the kernels (stages, PTX headers in include/, calibration kernels in calibrate/), GPU specs
    # LLM presets and the default tune tables (--stages best) the tool reads at run time
    names = set(wheel.namelist())
    for folder, patterns in (
        (
            "kernels",
            (
                "*.cu",
                "include/*.cuh",
                "include/sm70/*.cuh",
                "include/sm89/*.cuh",
                "include/sm90/*.cuh",
                "include/gemm/*.cuh",
                "calibrate/*.cu",
                "util/*.cu",
            ),
        ),  # fmt: skip
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
