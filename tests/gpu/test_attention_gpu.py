"""On a GPU: every attention stage in the registry verifies at odd sequence lengths (1, 77, 1000),
causal and not, with grouped-query heads, in every dtype it builds for, at head dims 64 and 128;
the PyTorch references (when importable) verify and are paired with each stage."""

import pytest

from rooflinecli import api, paths
from rooflinecli.cli import cli
from rooflinecli.core.attention import Shape
from rooflinecli.gpu.timer import Timing
from rooflinecli.stages import attention as registry

pytestmark = pytest.mark.gpu

CASES = [
    pytest.param(s, d, h, c, id=f"{s.name}-{d}-d{h}-{'causal' if c else 'full'}")
    for s in registry.ATTENTION_STAGES
    for d in s.dtypes
    for h in s.head_dims
    for c in (False, True)
]


def _quick() -> Timing:
    t = Timing(budget_ms=2.0, warmup_ms=1.0)
    t.min_repeats = t.max_repeats = 2
    return t


@pytest.mark.parametrize("stage, dtype, head_dim, causal", CASES)
def test_every_stage_verifies_at_odd_lengths(stage, dtype, head_dim, causal):
    shapes = [
        Shape(1, 2, 1, 1, head_dim, causal),  # one token; two query heads share one KV head
        Shape(2, 4, 2, 77, head_dim, causal),  # GQA 2:1, not a tile multiple
        Shape(1, 2, 2, 1000, head_dim, causal),
    ]
    doc = api.run_attention(shapes, [stage], None, dtype=dtype, timing=_quick(), references=False)
    recs = doc["records"]
    assert len(recs) == len(shapes)
    for rec, shape in zip(recs, shapes, strict=True):
        if stage.min_cc > int(doc["device"]["compute_capability"].replace(".", "")):
            assert rec["verified"] is None and rec["error"].startswith("skipped"), rec
            continue
        assert rec["verified"] is True, (shape.label, rec.get("error"), rec["rel_error"])
        assert rec["rel_error"] <= rec["tolerance_rel"]
        assert rec["tflops"] > 0
        assert (rec["op"], rec["seq"], rec["kv_heads"], rec["causal"]) == (
            "attention",
            shape.seq,
            shape.kv_heads,
            causal,
        )


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_torch_references_are_paired_with_each_stage(dtype):
    pytest.importorskip("torch")
    shapes = [Shape(1, 4, 2, 333, 128, True), Shape(2, 4, 4, 256, 64, False)]
    stages = [registry.ATTENTION_BY_NAME["attn_fused"]]
    doc = api.run_attention(shapes, stages, None, dtype=dtype, timing=_quick())
    by_stage = {}
    for rec in doc["records"]:
        by_stage.setdefault(rec["stage"], []).append(rec)
    assert set(by_stage) == {"attn_fused", "torch_flash", "torch_cudnn"}
    for ref in by_stage["torch_flash"] + by_stage["torch_cudnn"]:
        if ref["verified"] is None:  # a backend that refuses the shape says why
            assert ref["error"].startswith("skipped: "), ref
            continue
        assert ref["verified"] is True, ref
        assert ref["kind"] == "reference" and ref["math_instruction"] == "library"
        assert ref["implementation"]
    assert "FlashAttention-2" in by_stage["torch_flash"][0]["implementation"]
    for rec in by_stage["attn_fused"]:
        assert rec["verified"] is True
        assert rec["compared_with"] == "torch_flash"
        if by_stage["torch_flash"][0]["verified"]:
            assert rec["pct_of_torch_flash"] > 0
    assert doc["settings"]["torch"]["torch"]


def test_run_attention_cli_writes_a_document(runner, tmp_path):
    out = tmp_path / "attn.json"
    r = runner.invoke(
        cli,
        ["run", "attention", "--shapes", "1x2x1x77x64,1x2x2x130x128", "--dtype", "bf16",
         "--causal", "--repeats", "2", "--budget-ms", "2", "--no-references", "--quiet",
         "--format", "json", "-o", str(out)],
    )  # fmt: skip
    assert r.exit_code == 0, r.output + r.stderr
    doc = paths.read_json(out, "results file")
    assert doc["command"] == "run attention"
    stages = {rec["stage"] for rec in doc["records"]}
    assert stages == set(registry.stage_names("bf16"))
    shown = runner.invoke(cli, ["show", str(out), "--format", "markdown", "--no-chart"])
    assert shown.exit_code == 0, shown.output
    assert "### Attention B1 H2 KV1 N77 D64 causal bf16 on " in shown.output
