"""The attention registry against its kernel files, NVRTC builds on the CPU, the SASS claims, and
the runner's reference and check (run with NumPy standing in for CuPy: no GPU needed)."""

import json
import math
import re

import numpy as np
import pytest
from fakes import FakeCuda
from tiers import primary_dtype, tier

from rooflinecli import results
from rooflinecli.core.attention import Shape
from rooflinecli.errors import RooflineError
from rooflinecli.paths import data_dir
from rooflinecli.stages import attention as registry

KERNELS = data_dir("kernels")
STAGES = registry.ATTENTION_STAGES


def test_every_attention_file_has_an_entry_and_back():
    files = sorted(p.name for p in KERNELS.glob("4[0-9]_attn_*.cu"))
    assert files == sorted(s.file for s in STAGES)
    assert len({s.name for s in STAGES}) == len(STAGES)


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.name)
def test_entries_are_in_their_files_with_the_contract(stage):
    src = (KERNELS / stage.file).read_text()
    for entry in stage.entries:
        sig = re.search(rf'extern "C" __global__ void\s.{{0,80}}?\b{entry}\(([^)]*)\)', src, re.S)
        assert sig, entry
        params = " ".join(sig.group(1).split())
        assert params.startswith(
            "int batch, int heads, int kv_heads, int seq, float scale, int causal, "
            "const elem_t* __restrict__ Q, const elem_t* __restrict__ K, "
            "const elem_t* __restrict__ V, elem_t* __restrict__ O"
        ), (entry, params)
        if stage.workspace:  # the naive stage's S: the eleventh argument of every kernel
            assert params.endswith("float* __restrict__ S")
    assert stage.head_dims == (64, 128)
    assert set(stage.dtypes) >= {"fp16", "bf16"}
    assert stage.math in ("FFMA", "HMMA", "HGMMA")


def test_launch_geometry_by_hand():
    naive, fused = (
        registry.ATTENTION_BY_NAME["attn_naive"],
        registry.ATTENTION_BY_NAME["attn_fused"],
    )
    s = Shape(2, 3, 1, 77, 64, causal=True)
    # naive: 16x16 tiles of S (ceil(77/16) = 5), 8 rows per softmax block (10), 4 per PV (20)
    assert [(ln.entry, ln.grid, ln.block, ln.smem_bytes) for ln in naive.launches(s)] == [
        ("attn_naive_scores", (5, 5, 6), (16, 16, 1), 0),
        ("attn_naive_softmax", (10, 6, 1), (32, 8, 1), 0),
        ("attn_naive_pv", (20, 6, 1), (64, 4, 1), 0),
    ]
    # fused: the contract's grid (ceil(77/64) = 2, B*H = 6); smem 4 x (64*65 + 32*65 + 32*64
    # + 64*33) = 4 x 10,400 = 41,600 bytes at head dim 64; 4 x 18,592 = 74,368 at 128
    (one,) = fused.launches(s)
    assert (one.entry, one.grid, one.block, one.smem_bytes) == (
        "attn_fused",
        (2, 6, 1),
        (256, 1, 1),
        41_600,
    )
    assert fused.configs[128].smem_bytes == 74_368
    assert registry.workspace_bytes(naive, s) == 4 * 6 * 77 * 77
    assert registry.workspace_bytes(fused, s) == 0


def test_refusals_and_selection():
    naive = registry.ATTENTION_BY_NAME["attn_naive"]
    assert naive.refuses(Shape(1, 1, 1, 8, 96), "fp16") == (
        "attn_naive is built for head dim 64, 128, not 96"
    )
    # B2 H16 N32768: S is 2*16*32768^2*4 bytes = 128 GiB
    assert "128.0 GiB score matrix" in naive.refuses(Shape(2, 16, 16, 32768, 128), "fp16")
    assert naive.refuses(Shape(2, 16, 16, 8192, 128), "bf16") is None  # 8 GiB
    assert [s.name for s in registry.select(None, "fp32")] == registry.stage_names("fp32")
    with pytest.raises(RooflineError, match="unknown attention stage 'nope'"):
        registry.select("nope", "fp16")
    with pytest.raises(RooflineError, match="empty item"):
        registry.select("attn_fused,,attn_naive", "fp16")


# every stage in every dtype and head dim, built for the session by the prebuild helper (conftest):
# the first tier builds each stage once, for sm_90a in its primary dtype at head dim 128 (shared
# with the SASS test below); head dim 64, every other dtype, and sm_80 for the stages that run
# there, are the second tier (tests/tiers.py)
BUILDS = [
    pytest.param(
        s,
        arch,
        d,
        h,
        marks=[
            pytest.mark.prebuild(s, arch=arch, dtype=d, head_dim=h),
            *tier(arch == "sm_90a" and d == primary_dtype(s.dtypes, s.dtypes[0]) and h == 128),
        ],
    )
    for s in STAGES
    for arch in ("sm_90a", "sm_80")
    if arch == "sm_90a" or s.min_cc < 90
    for d in s.dtypes
    for h in s.head_dims
]


@pytest.mark.parametrize(
    "stage, arch, dtype, head_dim", BUILDS, ids=lambda v: getattr(v, "name", v)
)
def test_compiles_with_nvrtc_without_spills(stage, arch, dtype, head_dim):
    """No spills, except the few bytes a config declares (with the measurement that paid for
    them beside it in the registry)."""
    built = registry.compile_stage(stage, arch, dtype, head_dim)
    for entry in stage.entries:
        props = re.search(
            rf"Function properties for {entry}\n.*?(\d+) bytes spill stores, (\d+) bytes spill "
            "loads",
            built.log,
        )
        assert props, entry
        allowed = stage.configs[head_dim].spill_allowance_bytes
        assert int(props.group(1)) <= allowed, (entry, props.group(0))
        assert allowed or props.group(2) == "0", (entry, props.group(0))


@pytest.mark.parametrize(
    "stage",
    [
        pytest.param(s, marks=pytest.mark.prebuild(s, dtype="bf16", head_dim=128, sass=True))
        for s in STAGES
    ],
    ids=lambda s: s.name,
)
def test_sass_holds_the_math_the_stage_claims(stage):
    from rooflinecli.stages import sass

    built = registry.compile_stage(stage, "sm_90a", "bf16", 128)
    text = sass.disassemble(built.cubin_path)
    functions = sass.parse(text)
    for entry in stage.entries:
        ops = sass.mix(functions[entry].instrs)
        if stage.math == "FFMA" and entry != "attn_naive_softmax":  # the softmax has no FMA loop
            assert ops["FFMA"] > 0, (entry, dict(ops))
        if stage.math == "FFMA":
            assert ops["HMMA"] == 0 and ops["HGMMA"] == 0
        else:
            assert ops[stage.math] > 0


# --------------------------------------------------------------------------- the check, on NumPy


def _attention_by_loops(q, k, v, scale, causal):
    """Row by row in float64: what the reference must equal."""
    n = q.shape[0]
    out = np.zeros_like(q, dtype=np.float64)
    for i in range(n):
        end = i + 1 if causal else n
        s = [
            scale * float(np.dot(q[i].astype(np.float64), k[j].astype(np.float64)))
            for j in range(end)
        ]
        mx = max(s)
        p = [math.exp(x - mx) for x in s]
        tot = sum(p)
        out[i] = sum(pj / tot * v[j].astype(np.float64) for j, pj in enumerate(p))
    return out


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("causal", [False, True])
def test_reference_and_check_on_numpy(dtype, causal):
    from rooflinecli.gpu import attention as runner

    s = Shape(2, 4, 2, 13, 64, causal)  # GQA: query heads 0,1 read KV head 0; 2,3 read 1
    g = runner.Problem(np, s, dtype, seed=1, scale=1 / 8)
    b, h = 1, 3
    want = _attention_by_loops(
        g.as_f32(g.Q[b, h]), g.as_f32(g.K[b, 1]), g.as_f32(g.V[b, 1]), 1 / 8, causal
    )
    np.testing.assert_allclose(g.ref[b, h], want, rtol=1e-5, atol=1e-6)
    g.poison()  # NaN everywhere fails
    assert g.check()[0] is False
    g.O[...] = g._store(g.ref)  # the reference rounded to the dtype passes
    ok, rel, mx = g.check()
    assert ok and rel <= g.rel_tol and mx <= g.max_tol
    # one row's output left out of the last key (what a tail bug does) fails
    wrong = _attention_by_loops(
        g.as_f32(g.Q[0, 0])[-1:], g.as_f32(g.K[0, 0])[:-1], g.as_f32(g.V[0, 0])[:-1], 1 / 8, False
    )
    g.O[0, 0, -1] = g._store(wrong[0].astype(np.float32))
    if not causal:
        assert g.check()[0] is False


def test_tolerance_by_hand():
    from rooflinecli.gpu import attention as runner

    acc = 8 * math.sqrt(1000 + 64) * 2.0**-24  # 1.5555e-5
    assert runner.tolerance("fp32", 1000, 64, None) == pytest.approx((1e-4 + acc, 1e-3 + 4 * acc))
    # bf16: 2 x rounding + 2^-8 + acc
    rel, mx = runner.tolerance("bf16", 1000, 64, (1e-3, 2e-3))
    assert rel == pytest.approx(2e-3 + 2.0**-8 + acc)
    assert mx == pytest.approx(4e-3 + 4 * 2.0**-8 + 4 * acc)


# --------------------------------------------------------------------------- the runner's flow


class _FakeCupy:
    """NumPy with the CUDA parts faked (the reference and the check run on NumPy)."""

    cuda = FakeCuda

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def get_default_memory_pool():
        class Pool:
            def free_all_blocks(self):
                pass

        return Pool()


def test_runner_flow_without_a_gpu(monkeypatch):
    """run_attention's bookkeeping with a stand-in stage that writes the exact answer and one
    that writes nothing (its output stays poisoned): the first verifies, the second fails and
    reports no speed; both are placed; no PyTorch (references=False)."""
    from rooflinecli import api
    from rooflinecli.gpu import attention as runner
    from rooflinecli.gpu import device

    fake = _FakeCupy()
    monkeypatch.setattr(device, "cupy", lambda: fake)
    monkeypatch.setattr(device, "l2_bytes", lambda: 50 << 20)
    monkeypatch.setattr(
        device,
        "info",
        lambda: {"name": "NVIDIA H100 80GB HBM3", "arch": "sm_90a", "compute_capability": "9.0",
                 "sm_count": 132},
    )  # fmt: skip

    def launcher(cp, stage, g, arch):
        def right():
            g.O[...] = g._store(g.ref)

        call = right if stage.name == "attn_fused" else (lambda: None)
        meta = {"registers": 64, "smem_bytes": 1024, "spill_bytes": 0, "grid": [1, 1, 1],
                "block": [128, 1, 1], "_keep": None}  # fmt: skip
        return call, meta

    monkeypatch.setattr(runner, "launcher", launcher)
    timing = runner.Timing(flush_l2=False, sample_clock=False, budget_ms=5, hold=False)
    shapes = [Shape(1, 4, 2, 33, 64, True), Shape(2, 2, 2, 20, 128)]
    chosen = registry.select("attn_fused,attn_naive", "bf16")
    doc = api.run_attention(shapes, chosen, None, dtype="bf16", timing=timing, references=False)
    recs = doc["records"]
    assert [(r["stage"], r["seq"]) for r in recs] == [
        ("attn_fused", 33), ("attn_naive", 33), ("attn_fused", 20), ("attn_naive", 20)
    ]  # fmt: skip
    fused, naive = recs[0], recs[1]
    assert fused["verified"] is True and fused["time_ms"] == 1.0 and fused["tflops"] > 0
    assert fused["rel_error"] <= fused["tolerance_rel"]
    assert naive["verified"] is False and naive["tflops"] is None
    assert naive["materializes_scores"] is True and naive["ai_ideal"] == naive["ai_unfused"]
    assert fused["ai_ideal"] == fused["ai_fused"] > naive["ai_ideal"]
    assert doc["settings"]["torch"] is None and doc["command"] == "run attention"
    assert fused["timing_method"].startswith("queued from the host")
    results.validate(json.loads(results.dumps(doc)))  # a readable document
