"""Attention documents through show, plot, compare and gate, as GEMM documents go (no GPU: a run
document is made here from the model's records, with times)."""

import json

import pytest

from rooflinecli import results
from rooflinecli.cli import cli
from rooflinecli.core import attention, reference, roofs, specs
from rooflinecli.core.attention import Shape
from rooflinecli.present import terminal_chart

SPEC = specs.resolve("h100-sxm5")


def _record(stage, kind, shape, ms, unfused=False):
    rec = attention.record(
        stage, kind, shape, SPEC, "bf16", materializes_scores=unfused, what=stage,
        math_instruction="library" if kind == "reference" else "FFMA",
    )  # fmt: skip
    rec.update(verified=True, samples_ms=[ms * f for f in (0.99, 1.0, 1.01, 1.0, 1.0)])
    rec.update(time_ms_min=ms * 0.99, time_ms_max=ms * 1.01, repeats=5)
    roofs.place(rec, ms)
    return rec


def _doc(scale=1.0):
    recs = []
    for causal in (False, True):
        s = Shape(4, 16, 16, 4096, 128, causal)
        group = [
            _record("attn_naive", "stage", s, 80.0 * scale, unfused=True),
            _record("attn_fused", "stage", s, 20.0 * scale),
            _record("torch_flash", "reference", s, 2.0),
            _record("torch_cudnn", "reference", s, 1.0),
        ]
        for r in group[:2]:
            r["reference_time_ms"] = 2.0
        reference.add_ratios(group)
        recs += group
    device = {"name": "NVIDIA H100 80GB HBM3", "driver": "1", "cuda": "13.0"}
    return results.new_document(SPEC.to_dict(), device, recs, command="run attention")


def _write(tmp_path, name, doc):
    p = tmp_path / name
    p.write_text(results.dumps(doc))
    return str(p)


def test_records_pair_by_attention_shape(tmp_path):
    doc = _doc()
    ids = {results.identity(r) for r in doc["records"]}
    assert len(ids) == 8  # causal and not are different shapes
    fused = doc["records"][1]
    # 2^39 FLOPs in 20 ms = 27.49 TFLOP/s; the flash reference took 2 ms beside it: 10%
    assert fused["tflops"] == pytest.approx(27.487790694)
    assert fused["pct_of_reference"] == pytest.approx(10.0)
    assert fused["compared_with"] == "torch_flash"
    assert results.identity(fused).label == "attn_fused B4 H16 N4096 D128 bf16"


def test_show_titles_each_shape_and_places_naive_left(runner, tmp_path):
    path = _write(tmp_path, "a.json", _doc())
    r = runner.invoke(cli, ["show", path, "--format", "markdown", "--chart"])
    assert r.exit_code == 0, r.output
    assert "### Attention B4 H16 N4096 D128 bf16 on NVIDIA H100 80GB HBM3" in r.output
    assert "### Attention B4 H16 N4096 D128 causal bf16 on NVIDIA H100 80GB HBM3" in r.output
    pts, _ = terminal_chart.points(results.load(path))
    ai = {p.label: p.ai for p in pts}
    # the naive stage at its unfused intensity (31.5), the fused one at the ideal (2,048);
    # causal: half the FLOPs over the same bytes (the naive stores the whole square)
    assert ai["attn_naive B4 H16 N4096 D128 causal"] == pytest.approx(15.7538, abs=1e-3)
    ai = {p.label.split()[0]: p.ai for p in pts if "causal" not in p.label}
    assert ai["attn_naive"] == pytest.approx(31.5077, abs=1e-3)
    assert ai["attn_fused"] == pytest.approx(2048.0)


def test_model_attention_chart_has_both_versions(runner, tmp_path):
    out = tmp_path / "m.json"
    args = ["model", "attention", "--batch", "4", "--heads", "16", "--seq", "4096"]
    args += ["--head-dim", "128", "--dtype", "bf16", "--spec", "h100-sxm5", "-o", str(out)]
    assert runner.invoke(cli, args).exit_code == 0
    r = runner.invoke(cli, ["show", str(out), "--chart", "--format", "markdown"])
    assert r.exit_code == 0, r.output
    pts, _ = terminal_chart.points(results.load(out))
    assert sorted(p.label for p in pts) == ["fused", "unfused"]


def test_plot_compare_and_gate(runner, tmp_path):
    a = _write(tmp_path, "a.json", _doc())
    b = _write(tmp_path, "b.json", _doc(scale=0.5))  # our stages twice as fast
    png = tmp_path / "a.png"
    r = runner.invoke(cli, ["plot", a, "-o", str(png)])
    assert r.exit_code == 0, r.output
    assert png.stat().st_size > 0
    r = runner.invoke(cli, ["compare", a, b, "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = {(row["stage"], row["shape"]): row for row in json.loads(r.output)["rows"]}
    row = rows[("attn_fused", "B4 H16 N4096 D128 causal")]
    assert row["tflops_ratio"] == pytest.approx(2.0)
    r = runner.invoke(cli, ["gate", b, "--baseline", a])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["gate", a, "--baseline", b])
    assert r.exit_code == 1, r.output
    assert "attn_fused B4 H16 N4096 D128 causal bf16" in r.output


def test_ffma_stages_answer_to_the_fp32_roof_and_tensor_ones_to_theirs():
    """The H200 attention document: 16-bit FFMA stages (40, 41) sit under the fp32 peak, the
    Tensor Core stages and references under bf16's, and none is drawn above its own roof."""
    from pathlib import Path

    from rooflinecli import results
    from rooflinecli.present import image
    from rooflinecli.present import terminal_chart as chart

    root = Path(__file__).resolve().parent.parent
    doc = results.load(root / "benchmarks/results/attn-b2-h16-n8192-d128-bf16.json.gz")
    roof_of = chart.roofs(doc)
    assert {k: (r.peak_key, r.peak_tflops) for k, r in roof_of.items()} == {
        "bf16:fp32": ("fp32", 67.0),
        "bf16": ("bf16_tensor_dense", 989.4),
    }
    by_stage = {r["stage"]: chart.roof_id(r) for r in doc["records"]}
    assert by_stage["attn_naive"] == by_stage["attn_fused"] == "bf16:fp32"
    assert by_stage["attn_wgmma"] == by_stage["torch_cudnn"] == "bf16"
    drawn, unplaced = image.series(doc)
    assert not unplaced
    assert [s.label for s in drawn if s.flagged] == []
