"""LLM presets and the decode-step model: the seed's LLaMA-7B figures, computed by hand here."""

import json
import re

import pytest

from rooflinecli import paths, results
from rooflinecli.cli import cli
from rooflinecli.core import llm, model, specs
from rooflinecli.errors import RooflineError

H100 = specs.resolve("h100-sxm5")

# LLaMA-7B, one token: per layer QKV + O are 4 x 4096 x 4096 weights, gate/up/down are
# 3 x 4096 x 11008; 2 FLOPs per weight, 32 layers, plus the LM head 2 x 4096 x 32000 once:
# 32 x 2 x (67,108,864 + 135,266,304) + 262,144,000 = 12,952,010,752 + 262,144,000.
LLAMA7B_WEIGHT_FLOPS = 13_214_154_752
# Attention per token: 32 layers x 32 heads x (QK^T + PV) x 2 x context x 128 = 524,288 x context.
ATTN_PER_CONTEXT = 524_288


def _llama7b() -> llm.Preset:
    return llm.resolve("llama-7b")


def test_shipped_presets_load_and_match_their_sources():
    found = llm.registry()
    assert sorted(found) == ["llama-3-8b", "llama-7b"]
    p = found["llama-7b"]
    assert (p.d_model, p.layers, p.heads, p.kv_heads, p.head_dim, p.ffn, p.vocab) == (
        4096, 32, 32, 32, 128, 11008, 32000,
    )  # fmt: skip
    q = found["llama-3-8b"]
    assert (q.d_model, q.layers, q.heads, q.kv_heads, q.head_dim, q.ffn, q.vocab) == (
        4096, 32, 32, 8, 128, 14336, 128256,
    )  # fmt: skip
    for preset in found.values():
        assert preset.source.startswith("https://")
        assert (preset.ffn_kind, preset.norm) == ("swiglu", "rmsnorm")


def test_llama7b_weight_gemms_are_13_2_gflop_per_token():
    totals = llm.group_totals(llm.flop_split(_llama7b(), 2048))
    assert totals[llm.GEMM] == LLAMA7B_WEIGHT_FLOPS
    assert totals[llm.GEMM] == pytest.approx(13.2e9, rel=0.01)
    assert totals[llm.ATTENTION] == ATTN_PER_CONTEXT * 2048 == 1_073_741_824


@pytest.mark.parametrize(
    ("context", "gemm_pct", "attn_pct"),
    [
        # other: 65 norms x 4 x 4096 + 32 x 5 x 11008 + 32 x 3 x 8192 + 64 x 4096 = 3,874,816
        # plus softmax 32 x 32 x 5 x context = 5,120 x context.
        # 512: attention 268,435,456 / 13,489,086,464 = 1.99%
        (512, 97.96, 2.0),
        # 2048: 13,214,154,752 / 14,302,257,152 = 92.39%; 1,073,741,824 / ... = 7.51%
        (2048, 92.0, 7.5),
        # 4096: attention 2,147,483,648 / 15,386,484,736 = 13.96%
        (4096, 85.88, 14.0),
    ],
)
def test_llama7b_shares_match_the_seed(context, gemm_pct, attn_pct):
    totals = llm.group_totals(llm.flop_split(_llama7b(), context))
    share = {g: 100.0 * totals[g] / totals["total"] for g in llm.GROUPS}
    assert share[llm.GEMM] == pytest.approx(gemm_pct, abs=1.0)
    assert share[llm.ATTENTION] == pytest.approx(attn_pct, abs=1.0)
    assert share[llm.OTHER] < 0.2
    assert (
        totals["total"]
        == LLAMA7B_WEIGHT_FLOPS + ATTN_PER_CONTEXT * context + 3_874_816 + 5_120 * context
    )
    # with QK^T and PV counted as matmuls, more than 99% of the FLOPs are matrix products
    assert share[llm.GEMM] + share[llm.ATTENTION] > 99.0


def test_gqa_keeps_attention_flops_per_query_head_and_shrinks_kv():
    p = llm.resolve("llama-3-8b")
    parts = {x.name: x for x in llm.flop_split(p, 2048)}
    # Q 4096 outputs, K and V 8 heads x 128 = 1024 each
    assert parts["qkv"].shape == (1, 6144, 4096)
    assert parts["attn_qk"].flops == ATTN_PER_CONTEXT * 2048 // 2
    assert parts["attn_qk"].elems == 32 * 2048 * 8 * 128  # the K cache: 8 heads, not 32
    assert llm.group_totals(list(parts.values()))[llm.GEMM] == (
        32 * 2 * (4096 * 6144 + 4096 * 4096 + 3 * 4096 * 14336) + 2 * 4096 * 128256
    )


# The batch at which a BxNxK FP16 weight GEMM reaches the H100 SXM5 ridge point.
# AI(B) = 2BNK / (2 (BK + KN + BN)) >= r  <=>  1/B <= 2/(r e) - 1/N - 1/K, with
# r = 989.4e12 / 3350e9 = 295.3433 FLOP/byte and e = 2 bytes: 2/(r e) = 0.00338587.
#   o        N=K=4096:         0.00338587 - 2/4096               = 0.00289759 -> B* = 345.11 -> 346
#   qkv      N=12288, K=4096:  0.00338587 - 0.00008138 - 0.00024414 = 0.00306035 -> 326.76 -> 327
#   ffn_*    N=11008, K=4096:  0.00338587 - 0.00009084 - 0.00024414 = 0.00305089 -> 327.77 -> 328
#   lm_head  N=32000, K=4096:  0.00338587 - 0.00003125 - 0.00024414 = 0.00311048 -> 321.49 -> 322
CROSSING = {
    "qkv": 327,
    "o_proj": 346,
    "ffn_gate": 328,
    "ffn_up": 328,
    "ffn_down": 328,
    "lm_head": 322,
}


@pytest.mark.parametrize(("name", "batch"), sorted(CROSSING.items()))
def test_crossing_batch_on_h100_fp16(name, batch):
    g = next(x for x in llm.weight_gemms(_llama7b()) if x.name == name)
    assert llm.crossing_batch(g.n, g.k, 2, 989.4, 3350) == batch
    below = llm.gemm_record(_llama7b(), g, batch - 1, H100, "fp16")
    at = llm.gemm_record(_llama7b(), g, batch, H100, "fp16")
    assert below["roof"] == "memory" and at["roof"] == "compute"
    assert below["ai_ideal"] < 295.3433 <= at["ai_ideal"]
    assert at["crossing_batch"] == batch


def test_a_gemm_that_never_reaches_the_ridge():
    # N = K = 256: even an infinite batch gives 2NK / (2 (N + K)) = 128 FLOP/byte < 295
    assert llm.crossing_batch(256, 256, 2, 989.4, 3350) is None
    # FP32 on the CUDA-core roof (ridge 20): 1/B <= 2/80 - 2/4096 -> B* = 40.8 -> 41
    assert llm.crossing_batch(4096, 4096, 4, 67, 3350) == 41


def test_gemm_record_fields_at_batch_1():
    g = next(x for x in llm.weight_gemms(_llama7b()) if x.name == "o_proj")
    r = llm.gemm_record(_llama7b(), g, 1, H100, "fp16")
    # 1x4096x4096: 33,554,432 FLOPs over 2 x (4096 + 16,777,216 + 4096) = 33,570,816 bytes
    assert (r["m"], r["n"], r["k"], r["flops"], r["bytes_ideal"]) == (
        1,
        4096,
        4096,
        33_554_432,
        33_570_816,
    )
    assert r["ai_ideal"] == pytest.approx(0.99951, abs=1e-5)
    assert r["attainable_tflops"] == pytest.approx(r["ai_ideal"] * 3.35)
    # memory time 33,570,816 B / 3350 GB/s = 10.0212 us per call, 32 calls per token
    assert r["time_us_per_token"] == pytest.approx(32 * 33_570_816 / 3350e9 * 1e6)
    assert r["workload"] == "llama-7b:o_proj:b1"
    assert (r["kind"], r["stage"], r["count"]) == ("llm", "o_proj", 32)


def test_time_shares_at_batch_1_follow_bytes():
    rows = llm.time_split(_llama7b(), 2048, 1, H100, "fp16")
    assert sum(r["flop_share"] for r in rows) == pytest.approx(100.0)
    assert sum(r["time_share"] for r in rows) == pytest.approx(100.0)
    big = llm.time_split(_llama7b(), 2048, 512, H100, "fp16")
    attn = sum(r["time_share"] for r in big if r["group"] == llm.ATTENTION)
    # at batch 512 the weights are amortized but each sequence still reads its K/V cache
    assert attn > 90.0


# --- preset validation ----------------------------------------------------------------------

GOOD = """\
name = "tiny"
display_name = "Tiny"
source = "https://example.org/tiny"
d_model = 256
layers = 2
heads = 4
kv_heads = 2
ffn = 512
vocab = 1000
ffn_kind = "swiglu"
norm = "rmsnorm"
"""


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s + "dropout = 0.1\n", "unknown key(s) dropout"),
        (lambda s: s.replace("vocab = 1000\n", ""), "missing key vocab"),
        (lambda s: s.replace("layers = 2", "layers = 0"), "layers = 0 is outside 1..1024"),
        (lambda s: s.replace("layers = 2", "layers = true"), "layers must be int"),
        (lambda s: s.replace("kv_heads = 2", "kv_heads = 3"), "kv_heads = 3 must divide heads = 4"),
        (
            lambda s: s.replace("heads = 4", "heads = 6"),
            "d_model = 256 is not a multiple of heads = 6",
        ),
        (lambda s: s.replace('"swiglu"', '"gelu"'), "ffn_kind = 'gelu' is not modelled"),
        (lambda s: s.replace("https://", "http://"), "source must be an https:// URL"),
        (lambda s: s + "layers = 3\n", "not valid TOML"),
    ],
)
def test_bad_presets_are_one_line_errors(tmp_path, runner, edit, message):
    path = tmp_path / "tiny.toml"
    path.write_text(edit(GOOD))
    with pytest.raises(RooflineError, match=re.escape(message)):
        llm.load_preset_file(path)
    r = runner.invoke(cli, ["model", "llm", "--preset", str(path)])
    assert r.exit_code == 2
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("error: preset")


def test_a_preset_file_and_overrides(tmp_path, runner):
    path = tmp_path / "tiny.toml"
    path.write_text(GOOD)
    p = llm.resolve(str(path))
    assert p.head_dim == 64  # 256 / 4
    q = p.override(heads=8, kv_heads=None)
    assert (q.heads, q.head_dim, q.kv_heads) == (8, 32, 2)
    assert q.overrides == (("heads", 8),)
    r = runner.invoke(cli, ["model", "llm", "--preset", "llama-7b", "--kv-heads", "5"])
    assert r.exit_code == 2
    assert r.stderr.strip() == (
        "error: preset llama-7b (with overrides): kv_heads = 5 must divide heads = 32 "
        "(grouped-query attention)"
    )
    r = runner.invoke(cli, ["model", "llm", "--preset", "nope"])
    assert r.exit_code == 2
    assert "unknown preset 'nope'; known: llama-3-8b, llama-7b" in r.stderr
    # --layers 40 changes only the layer count: weight GEMMs 40/32 of the per-layer part
    r = runner.invoke(cli, ["model", "llm", "--layers", "40", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.output)
    assert doc["preset"]["overrides"] == {"layers": 40}
    qkv = next(x for x in doc["records"] if x["stage"] == "qkv")
    assert qkv["count"] == 40 and qkv["flops_per_token"] == 40 * 2 * 12288 * 4096


# --- the command ----------------------------------------------------------------------------


# `roofline model llm --preset llama-7b --context 512,2048,4096`, rows as printed (200 columns).
SPLIT_LINES = [
    "┃ part         ┃ count ┃        M x N x K ┃ GFLOP ctx=512 ┃ % ctx=512 "
    "┃ GFLOP ctx=2048 ┃ % ctx=2048 ┃ GFLOP ctx=4096 ┃ % ctx=4096 ┃",
    "│ qkv          │    32 │ 1 x 12288 x 4096 │        3.2212 │     23.88 "
    "│         3.2212 │      22.52 │         3.2212 │      20.94 │",
    "│ weight GEMMs │     - │                - │       13.2142 │     97.96 "
    "│        13.2142 │      92.39 │        13.2142 │      85.88 │",
    "│ attn_qk      │ 1,024 │    1 x ctx x 128 │        0.1342 │      1.00 "
    "│         0.5369 │       3.75 │         1.0737 │       6.98 │",
    "│ attention    │     - │                - │        0.2684 │      1.99 "
    "│         1.0737 │       7.51 │         2.1475 │      13.96 │",
    "│ other        │     - │                - │        0.0065 │      0.05 "
    "│         0.0144 │       0.10 │         0.0248 │       0.16 │",
    "│ total        │     - │                - │       13.4891 │    100.00 "
    "│        14.3023 │     100.00 │        15.3865 │     100.00 │",
]


def test_model_llm_split_table_exact_lines(runner):
    r = runner.invoke(cli, ["model", "llm", "--preset", "llama-7b", "--context", "512,2048,4096"])
    assert r.exit_code == 0, r.stderr
    lines = r.output.splitlines()
    for line in SPLIT_LINES:
        assert line in lines


def test_model_llm_split_markdown_exact(runner):
    r = runner.invoke(cli, ["model", "llm", "--format", "markdown"])
    assert r.exit_code == 0, r.stderr
    lines = r.output.splitlines()
    assert lines[0] == (
        "### FLOPs of one decoded token: LLaMA-7B (llama-7b): d_model 4096, 32 layers, 32 heads "
        "(32 K/V), head dim 128, FFN 11008 SwiGLU, vocab 32000"
    )
    assert lines[1] == ""
    lines = lines[2:]
    assert lines[0] == "| part | count | M x N x K | GFLOP ctx=2048 | % ctx=2048 |"
    assert lines[2] == "| qkv | 32 | 1 x 12288 x 4096 | 3.2212 | 22.52 |"
    assert "| attn_pv | 1,024 | 1 x 128 x 2048 | 0.5369 | 3.75 |" in lines
    assert "| softmax | 1,024 | - | 0.0105 | 0.07 |" in lines
    assert lines[-1] == "| total | - | - | 14.3023 | 100.00 |"


def test_model_llm_batch_tables_exact_lines(runner):
    r = runner.invoke(
        cli,
        ["model", "llm", "--batch", "1,8,64,512", "--spec", "h100-sxm5", "--format", "markdown"],
    )
    assert r.exit_code == 0, r.stderr
    lines = r.output.splitlines()
    assert lines[0].startswith("### Weight GEMMs of LLaMA-7B, fp16 on NVIDIA H100 SXM5 80GB")
    assert lines[2] == (
        "| gemm | batch | count | M x N x K | GFLOP | MB | AI | roof | attain TF/s "
        "| ridge at b | us/token |"
    )
    for line in (
        "| o_proj | 1 | 32 | 1 x 4096 x 4096 | 0.034 | 33.6 | 1.00 | memory | 3.3 | 346 | 320.7 |",
        "| ffn_up | 64 | 32 | 64 x 11008 x 4096 | 5.771 | 92.1 | 62.66 | memory | 209.9 | 328 "
        "| 13.7 |",
        "| qkv | 512 | 32 | 512 x 12288 x 4096 | 51.540 | 117.4 | 438.9 | compute | 989.4 | 327 "
        "| 3.3 |",
    ):
        assert line in lines
    assert "| part | FLOP % | time % b=1 | time % b=8 | time % b=64 | time % b=512 |" in lines
    assert "| weight GEMMs | 92.39 | 92.45 | 60.53 | 16.34 | 3.98 |" in lines
    assert "| attention | 7.51 | 7.51 | 39.24 | 83.17 | 95.46 |" in lines
    assert lines[-1] == "| total | 100.00 | 100.00 | 100.00 | 100.00 | 100.00 |"


def test_model_llm_json_is_a_results_document(runner, tmp_path):
    out = tmp_path / "llm.json"
    r = runner.invoke(
        cli,
        [
            "model",
            "llm",
            "--batch",
            "1,16",
            "--spec",
            "h100-sxm5",
            "--format",
            "json",
            "-o",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.output)
    results.validate(doc)
    assert paths.read_json(out, "results file")["records"] == doc["records"]
    assert doc["command"] == "model llm" and doc["batches"] == [1, 16]
    rec = next(x for x in doc["records"] if x["workload"] == "llama-7b:ffn_up:b16")
    assert (rec["stage"], rec["kind"], rec["dtype"], rec["m"], rec["n"], rec["k"]) == (
        "ffn_up", "llm", "fp16", 16, 11008, 4096,
    )  # fmt: skip
    assert rec["flops"] == model.gemm_flops(16, 11008, 4096)
    assert rec["bytes_ideal"] == 2 * (16 * 4096 + 4096 * 11008 + 16 * 11008)
    assert rec["crossing_batch"] == 328 and rec["roof"] == "memory"
    for key in ("ai_ideal", "attainable_tflops", "peak_tflops", "ridge_point", "time_us_per_token"):
        assert rec[key] > 0
    shares = [s for s in doc["shares"] if s["batch"] == 16]
    assert sum(s["time_share"] for s in shares) == pytest.approx(100.0)


def test_model_llm_split_json_and_csv(runner):
    r = runner.invoke(cli, ["model", "llm", "--context", "512,4096", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.output)
    results.validate(doc)
    assert len(doc["records"]) == 2 * 13
    qk = next(x for x in doc["records"] if x["workload"] == "llama-7b:attn_qk:ctx4096")
    assert (qk["m"], qk["n"], qk["k"], qk["flops"], qk["count"]) == (
        1,
        4096,
        128,
        2 * 4096 * 128,
        1024,
    )
    assert qk["flops_per_token"] == ATTN_PER_CONTEXT * 4096 // 2
    r = runner.invoke(cli, ["model", "llm", "--format", "csv"])
    assert r.exit_code == 0
    assert r.output.splitlines()[0].startswith("stage,kind,dtype,m,n,k,")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--context", "0"], "error: --context: 0 is outside 1..16777216"),
        (["--context", "2k"], "error: --context: '2k' is not a whole number"),
        (["--batch", ","], "error: --batch: empty item in ','"),
        (["--batch", "8", "--spec", "nope"], "error: unknown spec 'nope'"),
    ],
)
def test_model_llm_bad_arguments(runner, args, message):
    r = runner.invoke(cli, ["model", "llm", *args])
    assert r.exit_code == 2
    assert r.stderr.startswith(message)
    assert len(r.stderr.strip().splitlines()) == 1


def test_run_llm_without_stages_of_the_dtype_or_gpu_is_one_line(runner, monkeypatch):
    from rooflinecli.stages import gemm as stages

    real = stages.stage_names
    monkeypatch.setattr(
        stages,
        "stage_names",
        lambda dtype=None, include_reference=True: (
            [] if dtype == "bf16" else real(dtype, include_reference)
        ),
    )
    r = runner.invoke(cli, ["run", "llm", "--dtype", "bf16", "--batch", "1"])
    assert r.exit_code == 2
    assert r.stderr.startswith("error: no bf16 stages in the registry yet: use --dtype")
    assert len(r.stderr.strip().splitlines()) == 1
    r = runner.invoke(cli, ["run", "llm", "--gemms", "ffn_up,mlp", "--dtype", "fp32"])
    assert r.exit_code == 2
    assert r.stderr.strip() == (
        "error: unknown GEMM mlp; known: qkv, o_proj, ffn_gate, ffn_up, ffn_down, lm_head"
    )


def test_fp8_weight_gemms_read_one_byte_and_write_two():
    g = next(x for x in llm.weight_gemms(_llama7b()) if x.name == "o_proj")
    r = llm.gemm_record(_llama7b(), g, 1, H100, "fp8")
    # 1x4096x4096: A and B one byte an element, C (bf16) two
    assert r["bytes_ideal"] == 4096 + 16_777_216 + 2 * 4096
    assert r["peak_key"] == "fp8_tensor_dense"


def test_run_llm_in_fp8_is_the_fp8_problem_kind(monkeypatch):
    """`run llm --dtype fp8`: the weight GEMMs go to the GEMM job as the FP8 problem kind (FP8
    weights and activations beside cuBLASLt), their shapes held to the FP8 contract; --chain
    stays 16-bit."""
    from click.testing import CliRunner

    from rooflinecli.api import gemm as gemm_job
    from rooflinecli.api import llm as llm_job
    from rooflinecli.api.requests import LlmProblem, LlmRequest
    from rooflinecli.stages import gemm as stages

    asked = []

    def fake_run(request):  # type: ignore[no-untyped-def]
        asked.append(request.problem)
        return {"spec": H100.to_dict(), "records": [], "settings": {}}

    monkeypatch.setattr(gemm_job, "run", fake_run)
    preset = _llama7b()
    gemms = [g for g in llm.weight_gemms(preset) if g.name == "o_proj"]
    chosen = stages.select("wgmma_fp8", "fp8")
    problem = LlmProblem(preset, gemms, [16], chosen, None, "fp8", None, None, {})
    llm_job.run(LlmRequest(problem))
    assert asked[0].kind == "fp8" and asked[0].dtype == "fp8"
    assert asked[0].shapes == [(16, 4096, 4096)]
    r = CliRunner().invoke(cli, ["run", "llm", "--chain", "--dtype", "fp8", "--batch", "1"])
    assert r.exit_code == 2 and "--chain runs --dtype" in r.output and "not fp8" in r.output
