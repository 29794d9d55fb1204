"""rooflinecli.gpu.ncu: which metrics are asked for on which GPU, FLOPs by instruction and by Tensor
Core operation, bytes per level, and the rule that gives a bypassed level no intensity."""

from pathlib import Path

import pytest

from rooflinecli import paths
from rooflinecli.gpu import ncu
from rooflinecli.gpu import profile as prof

N = 4096
RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


def _listing(*names: str) -> set[str]:
    return {ncu.base(n) for n in names}


def test_each_count_takes_the_first_alternative_the_gpu_lists():
    hopper = _listing(
        "sm__ops_path_tensor_src_fp16.sum",
        "sm__ops_path_tensor_src_fp8_sparsity_off",
        "sm__ops_path_tensor_src_fp8_sparsity_on",
    )
    p = ncu.plan((ncu.TENSOR["fp16"], ncu.TENSOR["fp8"], ncu.TENSOR["bf16"]), hopper)
    assert p.chosen["tensor_fp16"] == (("sm__ops_path_tensor_src_fp16.sum", 1.0),)
    assert [m for m, _ in p.chosen["tensor_fp8"]] == [
        "sm__ops_path_tensor_src_fp8_sparsity_off.sum",
        "sm__ops_path_tensor_src_fp8_sparsity_on.sum",
    ]
    assert p.chosen["tensor_bf16"] is None and "bf16_dst_fp32" in p.missing["tensor_bf16"]
    assert p.metrics == [
        "sm__ops_path_tensor_src_fp16.sum",
        "sm__ops_path_tensor_src_fp8_sparsity_off.sum",
        "sm__ops_path_tensor_src_fp8_sparsity_on.sum",
    ]


def test_values_sums_and_what_cannot_be_counted():
    p = ncu.plan(ncu.COUNTS, _listing("gpu__time_duration", *ncu.SIMT["fp32"].metrics))
    counters = {
        "gpu__time_duration.sum": 2e-3,
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 100.0,
        "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": 3.0,
        "sm__sass_thread_inst_executed_op_fmul_pred_on.sum": 5.0,
    }
    assert ncu.value(counters, p, "time") == 2e-3
    w = ncu.work(counters, p)
    assert w.by["fp32 simt"] == 2 * 100 + 3 + 5 and w.total == 208
    assert w.by["fp16 tensor"] is None and w.complete  # not listed: noted, not unknown
    assert "fp16 tensor (ncu lists no sm__ops_path_tensor_src_fp16" in w.notes[0]
    assert w.dominant() == ("fp32", "simt")
    # optional units (TMA, WGMMA) not listed: zero, no note; other levels: None
    assert ncu.value(counters, p, "tma_load") == 0.0 and ncu.value(counters, p, "l2") is None
    nb = ncu.level_bytes(counters, p)
    assert nb["dram"] is None and nb["smem"] is None


def test_intensities_the_one_percent_rule():
    flops = 2.0 * N**3
    nb = {"dram": 1e8, "l2": 3.4e9, "l1": 8e6, "smem": 3.3e9}
    ai, notes = ncu.intensities(flops, nb, bytes_ideal=1e8)
    assert ai["dram"] == flops / 1e8 and ai["l2"] == flops / 3.4e9 and ai["smem"] == flops / 3.3e9
    assert ai["l1"] is None  # 8 MB against the 3.4 GB the L2 delivered: 0.24%
    assert "0.24% of the 3.40 GB of L2 (under 1%)" in notes["l1"]
    # a level just above the threshold keeps its intensity
    ai, _ = ncu.intensities(flops, {**nb, "l1": 0.011 * 3.4e9})
    assert ai["l1"] == pytest.approx(flops / (0.011 * 3.4e9))
    # DRAM is judged against the ideal bytes: data that never came from DRAM says nothing there
    ai, notes = ncu.intensities(flops, {**nb, "dram": 1e5}, bytes_ideal=2e8)
    assert ai["dram"] is None and "the ideal (every operand once)" in notes["dram"]
    # WGMMA reads shared memory without a counter: no shared-memory intensity
    ai, notes = ncu.intensities(flops, nb, wgmma=1e6)
    assert ai["smem"] is None and "lower bound" in notes["smem"]
    ai, notes = ncu.intensities(None, nb)
    assert set(ai.values()) == {None} and notes["dram"] == "no FLOPs counted"


def test_profile_gemm_counts_fp16_tensor_cores_by_hoppers_name():
    """The H200's ncu lists no _dst_fp32 half of the FP16 Tensor Core metric (the committed
    documents have it under dropped_metrics), so FP16 is asked for by Hopper's aggregate name
    (public Hopper metric lists have sm__ops_path_tensor_src_fp16), and counted."""
    committed = paths.read_json((RESULTS / "profile-fp32-4096.json.gz"), "results file")
    assert "sm__ops_path_tensor_src_fp16_dst_fp32.sum" in committed["profiler"]["dropped_metrics"]
    listing = {ncu.base(m) for m in committed["profiler"]["metrics"]} | {
        "sm__ops_path_tensor_src_fp16",
        "sm__sass_data_bytes_mem_shared",
        "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld",
        "l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st",
        "sm__inst_executed_pipe_tensor_op_gmma",
    }
    p = ncu.plan(prof.COUNTS, listing)
    assert "sm__ops_path_tensor_src_fp16.sum" in p.metrics
    counters = {m: 0.0 for m in p.metrics}
    counters.update(
        {
            "gpu__time_duration.sum": 186e-6,
            "sm__ops_path_tensor_src_fp16.sum": 2.0 * N**3,
            "sm__inst_executed_pipe_tensor_op_gmma.sum": 2.0 * N**3 / (2 * 64 * 256 * 16) * 4,
            "dram__bytes_read.sum": 1.0e8,
            "dram__bytes_write.sum": 3.4e7,
            "lts__t_bytes.sum": 1.4e9,
            "l1tex__t_bytes.sum": 12160.0,  # what gave "AI L1 11,302,545.5" before
            "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum": 1.3e9,
        }
    )
    d = prof.derive(counters, 2.0 * N**3, p, bytes_ideal=2 * 3 * N * N)
    assert d["flops_hw"] == 2.0 * N**3 and d["flops_check"] is True
    assert d["flops_hw_by"] == {"fp16 tensor": 2.0 * N**3}
    assert d["ai_l1"] is None and "bypassed" in d["ai_l1_note"]
    assert d["ai_smem"] is None and "WGMMA" in d["ai_smem_note"]
    assert d["ai_l2"] == pytest.approx(2.0 * N**3 / 1.4e9)
    assert d["bytes_smem"] == 1.3e9 and d["bytes_smem_tma"] == 1.3e9
