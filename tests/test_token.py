"""The token stage (kernels/57_decode_token.cu) on the CPU: its layout (workspaces, counters),
and its schedule run in NumPy over three launches of a LLaMA-like chain, the blocks in random
orders that the counters allow; the records the host packs; its refusals; and its SASS, built
with NVRTC for sm_90a: CUDA-core FMAs fed by TMA boxes and mbarriers, vector reductions into
the workspaces, no local memory."""

from __future__ import annotations

import dataclasses
import sys
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
MMA = registry.TOKEN_BY_NAME["decode_token_mma"]


def llama_chain(batch=1, layers=3):
    return chain.build(llm.resolve("llama-7b"), batch, layers)


def test_the_layout_gives_each_gemm_a_workspace_and_a_counter_per_column_block():
    c = llama_chain()
    ns, src = [x.n for x in c.links], [x.source for x in c.links]
    p = registry.plan(3, ns, src, nc=256)
    assert all(off % registry.WS_ALIGN == 0 for off in p.ws_offset)
    ends = [off + 3 * n for off, n in zip(p.ws_offset, ns, strict=True)]
    assert all(e <= nxt for e, nxt in zip(ends, p.ws_offset[1:], strict=False))  # no overlap
    assert p.ws_floats >= ends[-1]
    assert p.ctr_offset[0] == registry.SYNC_HEAD
    assert [b - a for a, b in zip(p.ctr_offset, p.ctr_offset[1:], strict=False)] == [
        -(-n // 256) for n in ns[:-1]
    ]
    assert p.sync_words == p.ctr_offset[-1] + -(-ns[-1] // 256)


def test_a_plan_refuses_what_the_kernel_cannot_do():
    with pytest.raises(RooflineError, match="not an earlier one"):
        registry.plan(1, [8, 8], [-1, 1])
    with pytest.raises(RooflineError, match="one source per GEMM"):
        registry.plan(1, [8], [])


def needed_chunks(u0, u1, nk):
    """The K chunks a run of units [u0, u1) reads, as the kernel works them out."""
    if u1 - u0 >= nk:
        return [(0, nk)]
    r0 = u0 % nk
    r1 = r0 + (u1 - u0)
    return [(r0, r1)] if r1 <= nk else [(r0, nk), (0, r1 - nk)]


def columns_of_flat(a, b, n):
    """The column blocks' columns [c0, c1) holding flat elements [a, b) of an n-column output."""
    if b - a >= n:
        return [(0, n)]
    c0 = a % n
    c1 = c0 + (b - a)
    return [(c0, c1)] if c1 <= n else [(c0, n), (0, c1 - n)]


def block_program(b, blocks, links, x, weights, lay, ws, ws_set, sync, outs, kc, nc, krun=None):
    """One block's consumers over one launch, as a generator: it yields before each unit and
    yields a predicate where the kernel waits (the counters of the source's column blocks);
    the scheduler resumes it only once that holds. The input buffer starts as NaN, so a run
    that reads rows it did not load (or a wait that lets it read a column block still partial,
    whose sum is wrong) fails the comparison. `krun`: the MMA build's input, only krun chunks
    long, each chunk at the place the kernel gives it (past the end: an IndexError)."""
    rows = links[0].m
    before = int(sync[0])
    mine, other = (before & 1) * ws_set, ((before + 1) & 1) * ws_set
    for g, link in enumerate(links):
        nk = -(-link.k // kc)
        units = -(-link.n // nc) * nk
        u0, u1 = units * b // blocks, units * (b + 1) // blocks
        if u1 > u0:
            chunks = needed_chunks(u0, u1, nk)
            if link.source >= 0:
                s = links[link.source]
                target = (before + 1) * -(-s.k // kc)
                need = set()
                for m in range(rows):
                    for r0, r1 in chunks:
                        lo, hi = m * link.k + r0 * kc, m * link.k + min(r1 * kc, link.k)
                        for c0, c1 in columns_of_flat(lo, hi, s.n):
                            need.update(range(c0 // nc, (c1 - 1) // nc + 1))
                ctr = lay.ctr_offset[link.source]
                yield lambda ctr=ctr, need=need, target=target: all(
                    sync[ctr + cb] >= target for cb in need
                )
                off = mine + lay.ws_offset[link.source]
                flat = ws[off : off + rows * s.n]
            else:
                flat = x.ravel()
            r0, r1 = chunks[0]

            def place(kc_: int, r0: int = r0, r1: int = r1) -> int:  # the kernel's, per build
                if krun is None:
                    return kc_
                return kc_ - r0 if kc_ >= r0 else r1 - r0 + kc_

            act = np.full((rows, (krun or nk) * kc), np.nan)
            for c0, c1 in chunks:
                for m in range(rows):
                    for kk in range(c0 * kc, c1 * kc):
                        at = place(kk // kc) * kc + kk % kc
                        if krun is not None and at >= krun * kc:
                            raise IndexError(f"chunk {kk // kc} at place {at // kc} of {krun}")
                        act[m, at] = flat[m * link.k + kk] if kk < link.k else 0.0
            out = ws[mine + lay.ws_offset[g] : mine + lay.ws_offset[g] + rows * link.n]
            out = out.reshape(rows, link.n)
            per_cb: dict[int, int] = {}
            for u in range(u0, u1):
                yield None
                cb, k0 = u // nk, (u % nk) * kc
                cols = slice(cb * nc, min((cb + 1) * nc, link.n))
                ks = slice(k0, min(k0 + kc, link.k))
                at = place(u % nk) * kc
                out[:, cols] += act[:, at : at + ks.stop - ks.start] @ weights[g][ks, cols]
                per_cb[cb] = per_cb.get(cb, 0) + 1
                last_of_run = u == u1 - 1 or (u + 1) // nk != cb
                if last_of_run:  # the column block's sums are in: count them
                    sync[lay.ctr_offset[g] + cb] += per_cb[cb]
                    if sync[lay.ctr_offset[g] + cb] == (before + 1) * nk:  # completed: C
                        outs[g][:, cols] = out[:, cols]
        lo, hi = rows * link.n * b // blocks, rows * link.n * (b + 1) // blocks
        ws[other + lay.ws_offset[g] + lo : other + lay.ws_offset[g] + hi] = 0.0
    sync[1] += 1
    if sync[1] == (before + 1) * blocks:
        sync[0] += 1


def emulate(links, weights, x, lay, ws, ws_set, sync, blocks, kc, nc, rng, krun=None):
    """One launch: every block's program, resumed in a random order among those not waiting."""
    rows = links[0].m
    outs = [np.full((rows, x.n), np.nan) for x in links]
    progs = [block_program(b, blocks, links, x, weights, lay, ws, ws_set, sync, outs, kc, nc, krun)
             for b in range(blocks)]  # fmt: skip
    waiting: list = [None] * blocks
    live = list(range(blocks))
    while live:
        ready = [b for b in live if waiting[b] is None or waiting[b]()]
        assert ready, "every block waits: a deadlock"
        b = ready[rng.integers(len(ready))]
        try:
            waiting[b] = next(progs[b])
        except StopIteration:
            live.remove(b)
    return outs


@pytest.mark.parametrize(
    ("batch", "seed", "mma"), [(1, 1, False), (1, 2, False), (3, 3, False), (4, 4, False),
                               (1, 5, True), (3, 6, True), (16, 7, True)],
)  # fmt: skip
def test_the_schedule_computes_the_chain_in_any_order_the_counters_allow(batch, seed, mma):
    """mma: the Tensor Core build's input, as short as registry.run_chunks counts, each chunk
    of a run at the place the kernel gives it."""
    # small widths, the chain's wiring: K x N weights, o_proj on qkv's first M x K elements
    p = llm.resolve("llama-7b")
    c = chain.build(p, batch, 2)
    scale = {4096: 40, 12288: 120, 11008: 100, 32000: 300}
    links = [chain.Link(x.index, x.name, x.layer, batch, scale[x.n], scale[x.k], x.source)
             for x in c.links]  # fmt: skip
    rng = np.random.default_rng(seed)
    weights = [rng.uniform(-1, 1, (x.k, x.n)) / np.sqrt(x.k) for x in links]
    x = rng.uniform(-1, 1, (batch, 40))
    kc, nc = 8, 32
    lay = registry.plan(batch, [x.n for x in links], [x.source for x in links], nc)
    ws = np.zeros(2 * lay.ws_floats)
    sync = np.zeros(lay.sync_words, dtype=np.int64)
    ref: list[np.ndarray] = []
    for link in links:
        src = x if link.source < 0 else ref[link.source]
        ref.append(src.ravel()[: batch * link.k].reshape(batch, link.k) @ weights[link.index])
    krun = registry.run_chunks([(x.n, x.k) for x in links], 7, kc, nc) if mma else None
    if mma:
        assert krun < max(-(-x.k // kc) for x in links)  # shorter than the whole input
    for launch in range(3):  # each launch starts from what the one before left
        outs = emulate(links, weights, x, lay, ws, lay.ws_floats, sync, 7, kc, nc, rng, krun)
        for got, want in zip(outs, ref, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        assert sync[0] == launch + 1
        nxt = ((launch + 1) & 1) * lay.ws_floats
        assert (ws[nxt : nxt + lay.ws_floats] == 0).all()  # the next launch's set is zero


def test_a_wait_on_too_few_column_blocks_is_caught(monkeypatch):
    """The emulation is a real check: with the source's last column block left out of every
    wait, some order reads a partial sum and the result differs."""
    p = llm.resolve("llama-7b")
    links = [chain.Link(x.index, x.name, x.layer, 1, 64, 64, x.source)
             for x in chain.build(p, 1, 1).links]  # fmt: skip
    rng = np.random.default_rng(5)
    weights = [rng.uniform(-1, 1, (x.k, x.n)) / 8 for x in links]
    x = rng.uniform(-1, 1, (1, 64))
    ref: list[np.ndarray] = []
    for link in links:
        src = x if link.source < 0 else ref[link.source]
        ref.append(src.ravel()[: link.k].reshape(1, link.k) @ weights[link.index])
    lay = registry.plan(1, [x.n for x in links], [x.source for x in links], 32)
    ws = np.zeros(2 * lay.ws_floats)
    sync = np.zeros(lay.sync_words, dtype=np.int64)
    real = columns_of_flat

    def too_few(a, b, n):
        return [(c0, min(c1, n - 32)) for c0, c1 in real(a, b, n) if c0 < n - 32]

    monkeypatch.setattr(sys.modules[__name__], "columns_of_flat", too_few)
    wrong = 0
    for _ in range(5):
        outs = emulate(links, weights, x, lay, ws, lay.ws_floats, sync, 5, 8, 32, rng)
        wrong += not all(
            np.allclose(g, w, rtol=1e-12, atol=1e-12) for g, w in zip(outs, ref, strict=True)
        )
    assert wrong > 0


def test_the_records_are_packed_as_the_kernel_reads_them():
    lay = registry.Plan(ws_offset=(0, 4096), ws_floats=8192, ctr_offset=(2, 18), sync_words=61)
    raw = token_gpu.records(lay, [4096, 11008], [4096, 4096], [-1, 0], [0x1000, 0x2000])
    assert len(raw) == 2 * registry.RECORD_BYTES
    first = np.frombuffer(raw[:16], dtype="<i4")
    assert list(first) == [4096, 4096, -1, 2]
    second = raw[32:]
    assert list(np.frombuffer(second[:16], dtype="<i4")) == [11008, 4096, 0, 18]
    assert np.frombuffer(second[16:24], dtype="<i8")[0] == 4096
    assert np.frombuffer(second[24:32], dtype="<u8")[0] == 0x2000


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
    # the Tensor Core build takes 1 to 16 rows, the M side of one MMA tile
    assert MMA.refuses("bf16", 16, [(16, 4096, 4096)]) is None
    assert "batch 1 to 16" in MMA.refuses("bf16", 17, [(17, 4096, 4096)])
    assert "multiple of 8" in MMA.refuses("fp16", 9, [(9, 4100, 4096)])


@pytest.mark.parametrize("preset", ["llama-7b", "llama-3-8b"])
def test_the_tensor_core_build_holds_batch_16_of_a_whole_model(preset):
    """With MMA=1 the input holds only the K chunks a run reads: at batch 16 on 132 SMs (an
    H100 SXM or H200) every GEMM of the model, its 1 GB lm_head too, leaves room for a ring of
    at least MIN_STAGES boxes; with the whole K held it would not fit."""
    c = chain.build(llm.resolve(preset), 16, 1)
    shapes = [(x.n, x.k) for x in c.links]
    kmax = max(k for _n, k in shapes)
    krun = MMA.krun(shapes, 132)
    assert krun < kmax // MMA.params["KC"]
    assert MMA.refuses("bf16", 16, c.shapes) is None
    assert MMA.smem_bytes(16, kmax, krun) <= registry.SMEM_LIMIT
    assert MMA.stages(16, kmax, krun) >= registry.MIN_STAGES
    assert MMA.stages(16, kmax) < registry.MIN_STAGES  # the whole input: no room
    assert MMA.defines("bf16", 16, kmax, krun)["KRUN"] == krun
    assert MMA.box == (64, MMA.params["KC"]) and STAGE.box == (256, STAGE.params["KC"])


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
    assert free.stages(1, 4096) >= free.stages(1, 11008) > free.stages(4, 11008)
    assert free.stages(4, 11008) >= registry.MIN_STAGES  # batch 4 of LLaMA-7B runs


def build(dtype, rows, kmax, **more):  # type: ignore[no-untyped-def]
    src = (data_dir("kernels") / STAGE.file).read_text()
    defines = {**STAGE.defines(dtype, rows, kmax), **more}
    label = f"decode_token-{dtype}-m{rows}-k{defines['KMAX']}" + "".join(f"-{k}" for k in more)
    return compiler.compile_source(src, label, STAGE.entry, registry.ARCH, defines)


@pytest.mark.parametrize("rows", [1, 4])
def test_the_stamping_build_adds_three_clock_reads_and_nothing_else(rows):
    """STAMPS=1 (the token's timeline): consumer thread 0 reads %globaltimer at each GEMM's
    begin, input and end, three reads in all, at no register or spill cost; the timed build has
    none."""
    plain, stamped = build("bf16", rows, 11008), build("bf16", rows, 11008, STAMPS=1)
    reads = []
    for b in (plain, stamped):
        fn = sass.parse(sass.disassemble(b.cubin_path))[STAGE.entry]
        reads.append(sum("SR_GLOBALTIMER" in i.operands for i in fn.instrs))
    assert reads == [0, 3]
    assert stamped.resources.registers == plain.resources.registers
    assert stamped.resources.spill_bytes == plain.resources.spill_bytes == 0


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


@pytest.mark.parametrize(("dtype", "rows"), [("bf16", 1), ("fp16", 8), ("bf16", 9), ("fp16", 16)])
def test_the_tensor_core_build_streams_through_tma_into_mma_sync(dtype, rows):
    """MMA=1: per box each consumer warp reads its 32 columns with eight ldmatrix.x4.trans and
    issues sixteen HMMA.16816 (four k16 steps by four n8 tiles); four swizzled TMA boxes fill a
    ring slot; two-float reductions into the workspaces; no multiply-add on CUDA cores."""
    defines = MMA.defines(dtype, rows, 11008, krun=64)
    src = (data_dir("kernels") / MMA.file).read_text()
    built = compiler.compile_source(src, f"decode_token_mma-{dtype}-m{rows}-r64", MMA.entry,
                                    registry.ARCH, defines)  # fmt: skip
    fn = sass.parse(sass.disassemble(built.cubin_path))[MMA.entry]
    ops = Counter(i.opcode.split(".")[0] for i in fn.instrs)
    full = Counter(i.opcode for i in fn.instrs)
    kind = "HMMA.16816.F32.BF16" if dtype == "bf16" else "HMMA.16816.F32"
    assert full[kind] == 16 == ops["HMMA"]
    assert full["LDSM.16.MT88.4"] == 8
    assert ops["UTMALDG"] == 4  # NC / 64 boxes per slot
    assert any(o.startswith("REDG") and "F32x2" in o for o in full)  # red.global.add.v2.f32
    assert ops["FFMA"] == 0 and ops["HGMMA"] == 0
    assert built.resources.spill_store_bytes == 0 and built.resources.stack_frame_bytes == 0
    assert ops["LDL"] == 0 and ops["STL"] == 0
