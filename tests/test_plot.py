"""`roofline plot`: PNG, SVG and HTML from a results document; one line without matplotlib."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rooflinecli import results
from rooflinecli.cli import cli

ENV = {"COLUMNS": "200", "NO_COLOR": "1"}
SPEC = {
    "name": "testgpu",
    "display_name": "Test GPU",
    "memory_bandwidth_gbs": 1000.0,
    "tflops": {"fp32": 10.0},
}
DEVICE = {"name": "Test GPU", "driver": "570.1", "cuda_driver": "12.8", "cuda_runtime": "12.8"}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def doc_path(tmp_path: Path) -> str:
    records = [
        {"stage": "tiled", "dtype": "fp32", "m": 64, "n": 64, "k": 64, "ai_ideal": 100.0,
         "tflops": 5.0, "peak_tflops": 10.0, "verified": True},
        {"stage": "naive", "dtype": "fp32", "m": 64, "n": 64, "k": 64, "ai_ideal": 100.0,
         "tflops": 0.5, "peak_tflops": 10.0, "verified": True, "ai_dram": 2.0, "ai_l1": 0.5},
        {"stage": "broken", "dtype": "fp32", "m": 64, "n": 64, "k": 64, "ai_ideal": 100.0,
         "tflops": 50.0, "peak_tflops": 10.0, "verified": True},
    ]  # fmt: skip
    path = tmp_path / "run.json"
    path.write_text(results.dumps(results.new_document(SPEC, DEVICE, records)))
    return str(path)


def plot(*args: str) -> Any:
    return CliRunner().invoke(cli, ["plot", *args], env=ENV)


@pytest.fixture
def mpl() -> None:
    pytest.importorskip("matplotlib")


def test_png(tmp_path: Path, mpl: None) -> None:
    out = tmp_path / "roofline.png"
    r = plot(doc_path(tmp_path), "-o", str(out))
    assert r.exit_code == 0, r.stderr
    assert out.read_bytes()[:8] == PNG_SIGNATURE
    assert r.stdout == (
        f"wrote {out} (png): Roofline: GEMM 64x64x64 fp32 on Test GPU (spec testgpu)\n"
    )
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp left


def test_svg_and_html(tmp_path: Path, mpl: None) -> None:
    src = doc_path(tmp_path)
    assert plot(src, "-o", str(tmp_path / "r.svg")).exit_code == 0
    svg = (tmp_path / "r.svg").read_text()
    assert svg.startswith("<?xml") and "<svg" in svg
    assert "TFLOP/s" in svg
    assert plot(src, "-o", str(tmp_path / "r.html")).exit_code == 0
    page = (tmp_path / "r.html").read_text()
    assert page.startswith("<!DOCTYPE html>\n")
    assert "<title>Roofline: GEMM 64x64x64 fp32 on Test GPU (spec testgpu)</title>" in page
    assert "<svg" in page and "<?xml" not in page
    assert page.endswith("</body>\n</html>\n")


def test_unknown_suffix_exits_2(tmp_path: Path) -> None:
    r = plot(doc_path(tmp_path), "-o", str(tmp_path / "r.gif"))
    assert r.exit_code == 2
    assert r.stderr == (
        f"error: cannot tell the format of {tmp_path / 'r.gif'}: end it in .png, .svg or .html\n"
    )


def test_missing_matplotlib_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails
    r = plot(doc_path(tmp_path), "-o", str(tmp_path / "r.png"))
    assert r.exit_code == 2
    assert r.stderr == (
        "error: plotting needs matplotlib: pip install 'roofline[plot]' "
        "(or pip install matplotlib)\n"
    )
    assert not (tmp_path / "r.png").exists()


def test_cli_import_does_not_load_matplotlib() -> None:
    import subprocess

    code = "import sys, rooflinecli.cli; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "False\n"
