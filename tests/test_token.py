"""The token stage (kernels/57_decode_token.cu) on the CPU: its bookkeeping plan (which GEMM's
entry zeroes which workspace), checked by running the kernel's schedule in NumPy over two
launches of a LLaMA-like chain; the records the host packs; its refusals; and its SASS, built
with NVRTC for sm_90a: CUDA-core FMAs fed by TMA boxes and mbarriers, vector reductions into
the workspaces, no local memory."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest

from rooflinecli.core import chain, llm
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import chain_runner
from rooflinecli.gpu import token as token_gpu
from rooflinecli.paths import data_dir
from rooflinecli.stages import compiler, sass
from rooflinecli.stages import token as registry

STAGE = registry.TOKEN_BY_NAME["decode_token"]


def llama_chain(batch=1, layers=3):
    return chain.build(llm.resolve("llama-7b"), batch, layers)


def test_each_workspace_is_zeroed_once_after_its_last_read():
    c = llama_chain()
    ns, src = [x.n for x in c.links], [x.source for x in c.links]
    p = registry.plan(1, ns, src)
    zeroed = [j for z in p.zero for j in z]
    assert sorted(zeroed) == list(range(len(ns)))  # every workspace, once
    for g, z in enumerate(p.zero):
        for j in z:
            readers = [h for h, s in enumerate(src) if s == j] + [j + 1]
            if g == len(ns) - 1:  # the last GEMM's record: zeroed after the end
                assert max(readers) + 1 >= g
            else:
                assert g == max(readers) + 1
    # the layer pattern: qkv's once gate is counted (the grid is past o_proj, its reader), and
    # o_proj's once down is (past up)
    assert p.zero[2] == (0,) and p.zero[4] == (1,) and p.zero[5] == (2, 3)
    # the last record: the last layer's gate and up (read during down and the LM head), down
    # and the LM head's own, zeroed after the end
    assert p.zero[-1] == tuple(range(len(ns) - 4, len(ns)))
    assert registry.plan(1, [64], [-1]).zero == ((0,),)  # a chain of one GEMM
    assert all(off % registry.WS_ALIGN == 0 for off in p.ws_offset)
    assert p.ws_floats >= sum(ns)


def test_a_plan_refuses_what_the_kernel_cannot_do():
    with pytest.raises(RooflineError, match="not an earlier one"):
        registry.plan(1, [8, 8], [-1, 1])
    with pytest.raises(RooflineError, match="one source per GEMM"):
        registry.plan(1, [8], [])


def emulate(c, weights, x, plan, ws, sync, blocks, kc=16, nc=256):
    """One launch of the kernel's schedule in NumPy (float64): per GEMM the entry's zeroing and
    write-out, the input rounded as stored (here: kept), each block's contiguous run of units
    summed per column block and added into the workspace, then the listed workspaces zeroed
    (the last GEMM's after the end); the counters as the kernel keeps them. Returns each GEMM's
    output."""
    rows = c.batch
    outs = [None] * len(c.links)
    launches = sync[0]

    def zero(g):
        for j in plan.zero[g]:
            ws[plan.ws_offset[j] : plan.ws_offset[j] + rows * c.links[j].n] = 0.0

    for g, link in enumerate(c.links):
        if g > 0:
            assert sync[g] == (launches + 1) * blocks  # the wait: every block counted
            p = c.links[g - 1]
            outs[g - 1] = ws[plan.ws_offset[g - 1] : plan.ws_offset[g - 1] + rows * p.n].copy()
        if link.source < 0:
            a = x.ravel()[: rows * link.k].reshape(rows, link.k)
        else:
            s = plan.ws_offset[link.source]
            a = ws[s : s + rows * c.links[link.source].n][: rows * link.k].reshape(rows, link.k)
        nk = -(-link.k // kc)
        units = -(-link.n // nc) * nk
        out = ws[plan.ws_offset[g] : plan.ws_offset[g] + rows * link.n].reshape(rows, link.n)
        w = weights[g]
        for b in range(blocks):
            u0, u1 = units * b // blocks, units * (b + 1) // blocks
            for u in range(u0, u1):
                cb, k0 = u // nk, (u % nk) * kc
                cols = slice(cb * nc, min((cb + 1) * nc, link.n))
                ks = slice(k0, min(k0 + kc, link.k))
                out[:, cols] += a[:, ks] @ w[ks, cols]
            sync[1 + g] += 1
        if g < len(c.links) - 1:
            zero(g)  # once counted (the grid is past g - 1), before the next GEMM's wait
    last = c.links[-1]
    outs[-1] = ws[plan.ws_offset[-1] : plan.ws_offset[-1] + rows * last.n].copy()
    zero(len(c.links) - 1)
    sync[0] += 1
    return outs


@pytest.mark.parametrize("batch", [1, 3])
def test_the_schedule_computes_the_chain_and_leaves_the_workspaces_zero(batch):
    # small widths, the chain's wiring: K x N weights, o_proj on qkv's first K columns
    p = llm.resolve("llama-7b")
    c = chain.build(p, batch, 2)
    scale = {4096: 40, 12288: 120, 11008: 100, 32000: 300}
    links = [chain.Link(x.index, x.name, x.layer, batch, scale[x.n], scale[x.k], x.source)
             for x in c.links]  # fmt: skip
    small = chain.Chain(c.what, batch, 40, tuple(links), c.layers, c.layers_run, c.per_layer)
    rng = np.random.default_rng(1)
    weights = [rng.uniform(-1, 1, (x.k, x.n)) / np.sqrt(x.k) for x in links]
    x = rng.uniform(-1, 1, (batch, 40))
    plan = registry.plan(batch, [x.n for x in links], [x.source for x in links])
    ws = np.zeros(plan.ws_floats)
    sync = np.zeros(1 + len(links), dtype=np.int64)
    ref: list[np.ndarray] = []
    for link in links:
        src = x if link.source < 0 else ref[link.source]
        ref.append(src.ravel()[: batch * link.k].reshape(batch, link.k) @ weights[link.index])
    for _launch in range(2):  # the second launch starts from what the first left
        outs = emulate(small, weights, x, plan, ws, sync, blocks=7, kc=16, nc=32)
        for got, want in zip(outs, ref, strict=True):
            np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-12, atol=1e-12)
        assert (ws == 0).all()  # every launch leaves the workspaces as it found them


def test_the_records_are_packed_as_the_kernel_reads_them():
    plan = registry.Plan(zero=((3,), ()), ws_offset=(0, 4096), ws_floats=8192)
    raw = token_gpu.records(plan, [4096, 11008], [4096, 4096], [-1, 0], [0x1000, 0x2000])
    assert len(raw) == 2 * registry.RECORD_BYTES
    first = np.frombuffer(raw[:48], dtype="<i4")
    assert list(first[:8]) == [4096, 4096, -1, 3, -1, -1, -1, 0]
    second = raw[48:]
    assert np.frombuffer(second[32:40], dtype="<i8")[0] == 4096
    assert np.frombuffer(second[40:48], dtype="<u8")[0] == 0x2000


def test_what_the_stage_refuses_is_one_line():
    shapes = [(1, 4096, 4096)]
    assert STAGE.refuses("bf16", 1, shapes) is None
    assert "batch 1 to 4" in STAGE.refuses("bf16", 16, [(16, 4096, 4096)])
    assert "fp16 or bf16" in STAGE.refuses("fp32", 1, shapes)
    assert "multiple of 8" in STAGE.refuses("fp16", 1, [(1, 4100, 4096)])
    # at batch 16 the chain records the way absent, with the reason, and launches nothing
    bufs = type("B", (), {"chain": llama_chain(16, 1), "dtype": "bf16"})()
    way = chain_runner.token_way(None, None, bufs, "sm_90a", 132)
    assert way.absent and "batch 1 to 4" in way.absent


def test_the_ring_fills_the_shared_memory_beside_the_input():
    """Without a cap, the ring takes what the input leaves; with STAGES, at most that many."""
    uncapped = {k: v for k, v in STAGE.params.items() if k != "STAGES"}
    free = dataclasses.replace(STAGE, params=uncapped)
    for rows in (1, 2, 3, 4):
        smem = free.smem_bytes(rows, 11008)
        assert smem <= registry.SMEM_LIMIT
        assert registry.SMEM_LIMIT - smem < free.tile_bytes() + 16  # no room for one more
        cap = STAGE.params.get("STAGES", 99)
        assert STAGE.stages(rows, 11008) == min(cap, free.stages(rows, 11008))
    assert free.stages(1, 4096) > free.stages(1, 11008) > free.stages(4, 11008) >= 4


def build(dtype, rows, kmax):
    src = (data_dir("kernels") / STAGE.file).read_text()
    defines = STAGE.defines(dtype, rows, kmax)
    return compiler.compile_source(src, f"decode_token-{dtype}-m{rows}-k{defines['KMAX']}",
                                   STAGE.entry, registry.ARCH, defines)  # fmt: skip


@pytest.mark.parametrize(("dtype", "rows"), [("bf16", 1), ("fp16", 1), ("bf16", 3), ("fp16", 4)])
def test_the_sass_streams_through_tma_into_cuda_core_fmas(dtype, rows):
    built = build(dtype, rows, 11008)
    fn = sass.parse(sass.disassemble(built.cubin_path))[STAGE.entry]
    ops = Counter(i.opcode.split(".")[0] for i in fn.instrs)
    full = Counter(i.opcode for i in fn.instrs)
    assert ops["UTMALDG"] >= 1  # the producer's TMA box loads
    assert ops["SYNCS"] >= 1  # mbarrier waits and arrivals
    # KC / CONSUMER_WARPS rows of a box per warp, 8 columns per lane, per row of A
    assert ops["FFMA"] == STAGE.params["KC"] // STAGE.params["CONSUMER_WARPS"] * 8 * rows
    assert any(o.startswith("REDG") and "F32x4" in o for o in full)  # red.global.add.v4.f32
    assert not any(o.startswith("ATOMS") for o in full)  # no shared atomics (a CAS loop)
    assert ops["HMMA"] == 0 and ops["HGMMA"] == 0  # CUDA cores only at M <= 4
    assert built.resources.spill_store_bytes == 0 and built.resources.stack_frame_bytes == 0
    assert ops["LDL"] == 0 and ops["STL"] == 0
