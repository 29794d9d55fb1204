"""`roofline plot`: PNG, SVG and HTML from a results document; one line without matplotlib."""

from __future__ import annotations

import json
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
         "tflops": 50.0, "peak_tflops": 10.0, "verified": False},
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


# --------------------------------------------------------------------------- what a figure shows

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
CALIBRATION = ROOT / "benchmarks" / "calibration" / "h200-full.json"


def text_boxes(fig: Any) -> list[tuple[str, Any]]:
    """Every text drawn on the figure with its box in pixels (the renderer's own measure):
    titles, labels, ids, legends, and the tick labels of ticks inside the view.

    The figure is drawn as savefig draws it, every artist placed with Agg's text metrics, but no
    pixel filled in (draw_without_rendering): the boxes are the same as after a full draw (the
    same on every kind of document below, checked when this replaced canvas.draw()), in 40% of
    the time."""
    from matplotlib.text import Text

    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    hidden = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not lo <= tick.get_loc() <= hi:
                    hidden |= {id(tick.label1), id(tick.label2)}
    return [
        (t.get_text(), t.get_window_extent(renderer))
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and id(t) not in hidden
    ]


def assert_readable(fig: Any) -> None:
    """No two texts overlap, and every text lies inside the figure."""
    boxes = text_boxes(fig)
    page = fig.bbox
    for text, b in boxes:
        assert page.x0 <= b.x0 and b.x1 <= page.x1 and page.y0 <= b.y0 and b.y1 <= page.y1, (
            f"{text!r} runs off the figure: {b.bounds} outside {page.bounds}"
        )
    for i, (ta, a) in enumerate(boxes):
        for tb, b in boxes[i + 1 :]:
            assert not (a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1), (
                f"{ta!r} overlaps {tb!r}"
            )


def model_doc() -> dict[str, Any]:
    res = CliRunner().invoke(cli, ["model", "gemm", "--m", "4096", "--spec", "h200-sxm",
                                   "--format", "json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    return dict(json.loads(res.output))


def calibration() -> dict[str, Any]:
    return dict(json.loads(CALIBRATION.read_text()))


# one committed document of each kind, and a model
KINDS = {
    "gemm run": "gemm-fp32-4096.json.gz",
    "tensor core run": "gemm-bf16-8192.json.gz",
    "many shapes": "gemm-fp32-odd.json.gz",
    "profile": "profile-fp32-4096.json.gz",
    "llm": "llm-llama-7b-fp16.json.gz",
    "tune": "tune-double_buffer-4096.json.gz",
    "profile app": "profile-app-torch.json.gz",
}


@pytest.fixture(scope="module")
def figures() -> Any:
    """figures(name): the document of that kind and its figure with the calibration, made once
    for every test of this file that reads it."""
    pytest.importorskip("matplotlib")
    from rooflinecli.present import image

    made: dict[str, tuple[dict[str, Any], Any]] = {}

    def of(name: str) -> tuple[dict[str, Any], Any]:
        if name not in made:
            doc = model_doc() if name == "model" else results.load(RESULTS / KINDS[name])
            made[name] = (doc, image.figure(doc, calibration()))
        return made[name]

    return of


@pytest.mark.parametrize("name", [*KINDS, "model"])
def test_every_kind_renders_readable(name: str, figures: Any) -> None:
    from rooflinecli.present import image

    doc, fig = figures(name)
    assert_readable(fig)
    ids = [t.get_text() for t in fig.axes[0].texts]
    series, _ = image.series(doc)
    assert sorted(ids, key=int) == [s.ident for s in series]  # one id per record drawn
    # assert_readable laid it out with Agg; writing the PNG is test_png's (it draws it all)
    if name == "llm":  # the longest title, kept inside the figure (assert_readable above)
        heading = fig.axes[0].get_title()
        assert heading.replace("\n", " ") == image.title(doc)
        # batch 1 is decode, 256 a prefill-sized step: the title names neither
        assert heading.startswith("Roofline: LLaMA-7B weight GEMMs at batch 1, 256 (fp16)")


def test_ids_and_legend(figures: Any) -> None:
    _, fig = figures("gemm run")  # gemm-fp32-4096.json.gz; its ids and legend need no calibration
    legend_texts = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    assert "1  naive_xcol  5.4 TFLOP/s" in legend_texts
    assert "12  cublas  51.4 TFLOP/s" in legend_texts
    assert sorted(int(t.get_text()) for t in fig.axes[0].texts) == list(range(1, 13))


def test_run_records_are_drawn_by_instruction_too() -> None:
    from rooflinecli.present import image

    doc = results.load(RESULTS / "gemm-fp32-4096.json.gz")
    series, unplaced = image.series(doc)
    assert unplaced == []
    naive = series[0]
    assert [(p.level, p.ai) for p in naive.points] == [(None, pytest.approx(682.67, abs=0.01)),
                                                       ("instr", 0.25)]  # fmt: skip
    assert naive.points[0].tflops == naive.points[1].tflops
    assert naive.anchor.level is None  # the id sits at the ideal point
    assert len(series[-1].points) == 1  # cuBLAS has no by-instruction intensity
    only_ideal, _ = image.series(doc, by_instruction=False)
    assert all(len(s.points) == 1 for s in only_ideal)


def test_by_instruction_above_the_ideal_is_not_drawn() -> None:
    """At M=1 a stage's per-tile count (16 FLOP/byte for mma_sync) exceeds the ideal intensity
    (about 1): no kernel moves fewer bytes than every byte once, so the point is left out."""
    from rooflinecli.present import image

    doc = results.load(RESULTS / "llm-llama-7b-fp16.json.gz")
    series, unplaced = image.series(doc)
    b1 = [s for s in series if s.name == "mma_sync qkv batch 1"][0]
    assert [p.level for p in b1.points] == [None]
    b256 = [s for s in series if s.name == "mma_sync qkv batch 256"][0]
    assert [p.level for p in b256.points] == [None, "instr"]
    # the WGMMA stages skip M=1: listed as not drawn, with why
    assert len(unplaced) == 12
    assert all(u.label.endswith("batch 1") for u in unplaced)
    assert all(u.why.startswith("skipped: wgmma_") for u in unplaced)


def test_profile_points_sit_at_each_level() -> None:
    from rooflinecli.present import image

    doc = results.load(RESULTS / "profile-fp32-4096.json.gz")
    series, _ = image.series(doc)
    naive = series[0]
    assert [(p.level, round(p.ai, 2)) for p in naive.points] == [
        ("DRAM", 18.75), ("L2", 3.93), ("L1", 0.5), ("instr", 0.25),
    ]  # fmt: skip
    assert [p.tflops for p in naive.points] == [pytest.approx(5.4255, abs=1e-4)] * 4  # ncu's time
    assert naive.anchor.level == "DRAM"


def test_ceilings_per_level_say_where_they_come_from() -> None:
    from rooflinecli.present import image
    from rooflinecli.present import terminal_chart as chart

    doc = results.load(RESULTS / "profile-fp32-4096.json.gz")
    roof_of = chart.roofs(doc)
    plain = [c.label for c in image.ceilings(doc, roof_of)]
    assert plain == ["DRAM 4,800 GB/s (datasheet)", "FP32 peak 67.0 TFLOP/s (datasheet)"]
    measured = [c.label for c in image.ceilings(doc, roof_of, calibration())]
    assert measured == [
        "DRAM 4,800 GB/s (datasheet)",
        "FP32 peak 67.0 TFLOP/s (datasheet)",
        "DRAM 4,619 GB/s (measured 2026-11-29)",
        "L2 7,823 GB/s (measured 2026-11-29)",
        "FP32 FMA 65.3 TFLOP/s (measured 2026-11-29)",
    ]
    # a record placed under per-level roofs (profile app) carries them itself
    rec = dict(doc["records"][0])
    rec["roof_levels"] = [
        {"level": "DRAM", "gbs": 4619.3, "from": "measured"},
        {"level": "L2", "gbs": 7823.2, "from": "measured"},
        {"level": "L1", "gbs": None, "from": None},
    ]
    own = image.ceilings({**doc, "records": [rec]}, roof_of)
    assert [(c.name, c.value, c.measured) for c in own if c.kind == "memory"] == [
        ("DRAM", 4800.0, False), ("DRAM", 4619.3, True), ("L2", 7823.2, True),
    ]  # fmt: skip


def test_tensor_core_ceilings_from_a_calibration() -> None:
    from rooflinecli.present import image
    from rooflinecli.present import terminal_chart as chart

    doc = results.load(RESULTS / "gemm-bf16-8192.json.gz")
    got = [c.label for c in image.ceilings(doc, chart.roofs(doc), calibration())]
    assert "BF16 Tensor Core peak 989.4 TFLOP/s (datasheet)" in got
    assert "WGMMA 826.9 TFLOP/s (measured 2026-11-29)" in got
    assert "mma.sync 637.7 TFLOP/s (measured 2026-11-29)" in got
    assert not any("FP32" in c for c in got)


def test_plot_takes_a_calibration(tmp_path: Path, mpl: None) -> None:
    out = tmp_path / "p.png"
    src = str(RESULTS / "profile-fp32-4096.json.gz")
    r = plot(src, "--calibration", str(CALIBRATION), "-o", str(out))
    assert r.exit_code == 0, r.stderr
    assert out.read_bytes()[:8] == PNG_SIGNATURE


def test_plot_refuses_a_calibration_of_another_gpu(tmp_path: Path) -> None:
    cal = calibration()
    cal["device"]["name"] = "NVIDIA A100-SXM4-80GB"
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(cal))
    src = str(RESULTS / "profile-fp32-4096.json.gz")
    r = plot(src, "--calibration", str(path), "-o", str(tmp_path / "p.png"))
    assert r.exit_code == 2
    assert r.stderr == (
        f"error: {path} calibrates NVIDIA A100-SXM4-80GB, the document ran on NVIDIA H200\n"
    )
    path.write_text("{}")
    r = plot(src, "--calibration", str(path), "-o", str(tmp_path / "p.png"))
    assert r.exit_code == 2
    assert r.stderr == f"error: {path} is not a calibration document (roofline.calibration/1)\n"
    assert not (tmp_path / "p.png").exists()


def test_kernels_of_a_program_are_named_by_their_function() -> None:
    """`profile app` labels two kernels `at::<...> [4096x1x1]`: the legend names each by its own
    function and grid, and gives each its colour."""
    from rooflinecli.present import image

    doc = results.load(RESULTS / "profile-app-torch.json.gz")
    series, unplaced = image.series(doc)
    assert [s.name for s in series] == [
        "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT [2x66x1] fp16",
        "cunn_SoftMaxForwardReg [4096x1x1] fp32",
        "vectorized_layer_norm_kernel [4096x1x1] fp32",
        "distribution_elementwise_grid_stride_kernel [1056x1x1] fp32",
    ]
    assert len({s.key for s in series}) == 4
    assert [u.label for u in unplaced] == ["vectorized_elementwise_kernel [4x1x1]"]
    got = [c.label for c in image.ceilings(doc, chart_roofs(doc)) if c.kind == "memory"]
    assert got == ["DRAM 4,517 GB/s (measured)", "L2 8,082 GB/s (measured)"]


def chart_roofs(doc: dict[str, Any]) -> Any:
    from rooflinecli.present import terminal_chart

    return terminal_chart.roofs(doc)
