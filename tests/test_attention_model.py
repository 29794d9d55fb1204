"""`roofline model attention` and rooflinecli.core.attention against values computed by hand."""

import json

import pytest

from rooflinecli import results
from rooflinecli.cli import cli
from rooflinecli.core import attention
from rooflinecli.core.attention import Shape

# B4 H16 N4096 D128: FLOPs 4*4*16*4096^2*128 = 549,755,813,888 (2^39)
# fused fp16: 2 bytes x 2 x (64 + 64 head-rows) x 4096 x 128 = 268,435,456 (2^28): AI 2048
# unfused: + 4 passes x 4 bytes x 64 x 4096^2 = 17,179,869,184 (2^34): 17,448,304,640 bytes,
# AI 2^39 / 17,448,304,640 = 31.5077, x 3350 GB/s = 105.55 TFLOP/s on the H100's memory roof
BIG = Shape(4, 16, 16, 4096, 128)


def test_flops_and_bytes_by_hand():
    assert attention.flops(BIG) == 549_755_813_888 == 2**39
    assert attention.bytes_fused(BIG, 2) == 268_435_456
    assert attention.bytes_scores(BIG) == 17_179_869_184
    assert attention.bytes_unfused(BIG, 2) == 17_448_304_640
    causal = Shape(4, 16, 16, 4096, 128, causal=True)
    assert attention.flops(causal) == 2**38  # half the square
    assert attention.bytes_unfused(causal, 2) == 17_448_304_640  # the naive stores it all


def test_gqa_reads_fewer_kv_bytes():
    # B1 H8 KV2 N10 D64 fp32: Q, O 8 heads; K, V 2 heads: 4 x 10 x 64 x (2*8 + 2*2) = 51,200
    s = Shape(1, 8, 2, 10, 64)
    assert attention.bytes_fused(s, 4) == 51_200
    assert attention.flops(s) == 4 * 8 * 100 * 64 == 204_800
    assert attention.label(s.fields()) == "B1 H8 KV2 N10 D64"
    assert Shape(4, 16, 16, 4096, 128, True).label == "B4 H16 N4096 D128 causal"


def test_bad_shapes_are_one_line():
    with pytest.raises(results.RooflineError, match="not a multiple of --kv-heads 2"):
        Shape(1, 3, 2, 64, 64)
    with pytest.raises(results.RooflineError, match="--seq must be at least 1"):
        Shape(1, 1, 1, 0, 64)


def test_model_attention_markdown_exact(runner):
    args = ["model", "attention", "--batch", "4", "--heads", "16", "--seq", "4096"]
    args += ["--head-dim", "128", "--dtype", "fp16", "--spec", "h100-sxm5", "--format"]
    r = runner.invoke(cli, [*args, "markdown"])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines() == [
        "### Attention B4 H16 N4096 D128 fp16, model on NVIDIA H100 SXM5 80GB (h100-sxm5, "
        "given): fp16_tensor_dense peak 989.4 TFLOP/s at 1,830 MHz, 3350 GB/s, ridge 295.3 "
        "FLOP/byte; datasheet roofs",
        "",
        "| version | FLOPs | bytes | AI | roof | attain TF/s |",
        "|---|---:|---:|---:|---|---:|",
        "| fused | 5.498e+11 | 2.684e+08 | 2,048.0 | compute | 989.4 |",
        "| unfused | 5.498e+11 | 1.745e+10 | 31.51 | memory | 105.6 |",
    ]


def test_model_attention_json_fields(runner, tmp_path):
    out = tmp_path / "m.json"
    args = ["model", "attention", "--batch", "1", "--heads", "8", "--kv-heads", "2"]
    args += ["--seq", "10", "--head-dim", "64", "--causal", "--spec", "h100-sxm5"]
    r = runner.invoke(cli, [*args, "--format", "json", "-o", str(out)])
    assert r.exit_code == 0, r.output
    doc = results.load(out)
    fused, unfused = doc["records"]
    # fp32: 102,400 FLOPs (causal: half of 204,800); fused 51,200 bytes (test above)
    # unfused + 4 x 4 x 8 x 100 = 12,800: 64,000 bytes
    assert fused["flops"] == unfused["flops"] == 102_400
    assert (fused["bytes_ideal"], unfused["bytes_ideal"]) == (51_200, 64_000)
    assert fused["ai_ideal"] == pytest.approx(2.0)
    assert unfused["ai_ideal"] == pytest.approx(1.6)
    assert fused["ai_unfused"] == unfused["ai_unfused"] == pytest.approx(1.6)
    # 2.0 FLOP/B x 3350 GB/s = 6.7 TFLOP/s, under the FP32 ridge of 20
    assert fused["roof"] == "memory"
    assert fused["attainable_tflops"] == pytest.approx(6.7)
    assert unfused["attainable_tflops"] == pytest.approx(5.36)
    assert (fused["op"], fused["kv_heads"], fused["causal"]) == ("attention", 2, True)
    assert json.loads(r.output)["command"] == "model attention"
    # the two versions have distinct identities, named by the attention label
    assert results.identity(fused).shape_text == "B1 H8 KV2 N10 D64 causal"


def test_model_attention_bad_heads_exit_2(runner):
    args = ["model", "attention", "--batch", "1", "--heads", "3", "--kv-heads", "2"]
    r = runner.invoke(cli, [*args, "--seq", "8", "--head-dim", "64"])
    assert r.exit_code == 2
    assert r.output.strip().splitlines()[-1] == (
        "error: --heads 3 is not a multiple of --kv-heads 2"
    )
