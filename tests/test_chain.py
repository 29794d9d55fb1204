"""A token's weight GEMMs as a dependent chain (`run llm --chain`): the chain built from a
preset, its weights' scale, the layers that fit, the verification bound on real numbers (NumPy
standing in for CuPy), the timeline's mapping onto GEMMs, and the chain document through
show, gate, compare and plot."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from fakes import FakeCupy

from rooflinecli import results
from rooflinecli.cli import cli
from rooflinecli.core import chain, llm, model, reference
from rooflinecli.core.specs import resolve as resolve_spec
from rooflinecli.gpu import arrays, chain_runner

SMALL = {"d_model": 64, "layers": 3, "heads": 4, "kv_heads": 2, "head_dim": 16, "ffn": 96,
         "vocab": 80}  # fmt: skip


def small() -> llm.Preset:
    return llm.resolve("llama-7b").override(**SMALL)


def test_chain_of_a_preset_follows_its_weight_gemms():
    p = llm.resolve("llama-7b")
    c = chain.build(p, 16)
    gemms = llm.weight_gemms(p)
    assert len(c.links) == sum(g.count for g in gemms) == 161
    assert c.layers == c.layers_run == 32
    # the shapes are the preset's, each as often as it counts per token
    for g in gemms:
        assert sum(1 for x in c.links if x.name == g.name) == g.count
        assert all(x.shape == g.shape(16) for x in c.links if x.name == g.name)
    assert c.flops() == sum(g.count * 2 * math.prod(g.shape(16)) for g in gemms)
    assert abs(c.weight_bytes("bf16") - 13.21e9) < 0.01e9
    label = {x.index: x.label for x in c.links}
    reads = {x.label: (label[x.source] if x.source >= 0 else "input") for x in c.links}
    assert reads["L0.qkv"] == "input"
    assert reads["L0.o_proj"] == "L0.qkv"
    assert reads["L0.ffn_gate"] == reads["L0.ffn_up"] == "L0.o_proj"
    assert reads["L0.ffn_down"] == "L0.ffn_gate"
    assert reads["L1.qkv"] == "L0.ffn_down"
    assert reads["lm_head"] == "L31.ffn_down"
    assert c.links[c.early].label == "L0.ffn_down" and c.links[c.last].label == "lm_head"


def test_fewer_layers_and_the_token_scale():
    p = llm.resolve("llama-7b")
    full, two = chain.build(p, 1), chain.build(p, 1, 2)
    assert len(two.links) == 2 * 5 + 1 and two.layers_run == 2
    scale = chain.token_scale(two, full, "bf16")
    assert scale == pytest.approx(full.bytes_ideal("bf16") / two.bytes_ideal("bf16"))
    assert 10 < scale < 16  # 32 layers + the LM head over 2 layers + the LM head
    assert chain.token_scale(full, full, "bf16") == 1.0


def test_layers_that_fit_the_free_memory():
    p = llm.resolve("llama-7b")
    w1 = chain.build(p, 1, 1).weight_bytes("bf16")  # one layer and the LM head
    assert chain.layers_that_fit(p, 1, "bf16", 1 << 40, 2) == 32
    assert chain.layers_that_fit(p, 1, "bf16", chain.HEADROOM_BYTES, 1) == 0
    five = chain.layers_that_fit(p, 1, "bf16", chain.HEADROOM_BYTES + 6 * w1, 1)
    assert 5 <= five < 32
    # two copies of the weights (PyTorch's N x K beside ours): about half the layers
    assert chain.layers_that_fit(p, 1, "bf16", chain.HEADROOM_BYTES + 6 * w1, 2) < five


def test_bad_chain_sizes_are_one_line():
    from rooflinecli.errors import RooflineError

    for call in (
        lambda: chain.build(small(), 65),
        lambda: chain.build(small(), 0),
        lambda: chain.build(small(), 1, 4),
        lambda: chain.single(1, 0, 8),
        lambda: chain.parse_shape("1x2"),
        lambda: chain.parse_shape("axbxc"),
    ):
        with pytest.raises(RooflineError):
            call()
    assert chain.parse_shape("1X4096x4096") == (1, 4096, 4096)


@dataclass
class _Emulated:
    """A way that computes the chain in NumPy, rounding each output to the dtype as the GPU's
    do (float32 accumulation), into the chain's buffers; `wrong` breaks it on purpose."""

    bufs: chain_runner.Buffers
    wrong: str = ""

    def run(self) -> None:
        cp, b, dt = self.bufs.cp, self.bufs, self.bufs.dtype
        for x in b.chain.links:
            a = arrays.as_f32(cp, b.input_of(x), dt)
            w = (
                b.w[(x.index + 5) % len(b.w)]
                if self.wrong == "weights" and x.index == 2
                else b.w[x.index]
            )
            y = a @ arrays.as_f32(cp, w, dt)
            if self.wrong == "skip" and x.index == 1:
                y = a[:, : x.n] if a.shape[1] >= x.n else np.resize(a, y.shape)
            if self.wrong == "zero" and x.index == b.chain.last:
                y = y * 0
            if self.wrong == "unwritten" and x.index == b.chain.last:
                continue
            b.out[x.index][...] = arrays.store(cp, y.astype(np.float32), dt)

    def way(self) -> chain_runner.Way:
        b = self.bufs

        def poison_all() -> None:
            for o in b.out:
                arrays.poison(o, b.dtype)

        def outputs() -> list:
            return [b.out[b.chain.early], b.out[b.chain.last]]

        return chain_runner.Way(
            "best", replay=self.run, eager=self.run, poison=poison_all, outputs=outputs
        )


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_the_bound_passes_a_right_chain_and_fails_wrong_ones(dtype):
    cp = FakeCupy()
    bufs = chain_runner.Buffers(cp, chain.build(small(), 3), dtype, seed=1)
    ref = bufs.reference()
    right = chain_runner.verify(cp, _Emulated(bufs).way(), ref, bufs, replayed=True)
    assert right["ok"], right
    bound = chain.tolerance(dtype, len(bufs.chain.links), max(x.k for x in bufs.chain.links))
    assert right["last"]["tolerance"] == pytest.approx(bound)
    assert right["last"]["rel_error"] < bound / 3  # the expected figure sits well inside
    # the weights' scale keeps the activations near the input's RMS (0.58) after 16 GEMMs
    assert 0.2 < right["last"]["reference_rms"] < 2.0
    for wrong in ("weights", "skip", "zero", "unwritten"):
        got = chain_runner.verify(cp, _Emulated(bufs, wrong).way(), ref, bufs, replayed=False)
        assert got["ok"] is False, wrong
        assert got["last"]["reason"], wrong


def emulated(name: str):  # type: ignore[no-untyped-def]
    """A way built on the emulated chain (NumPy standing in), named `name`."""

    def build(_cp, _stream, bufs, *_args):  # type: ignore[no-untyped-def]
        w = _Emulated(bufs, "").way()
        w.name, w.stages = name, ["emulated"] * len(bufs.chain.links)
        return w

    return build


def test_the_bound_grows_with_the_chain_and_the_rounding():
    assert chain.tolerance("bf16", 161, 11008) == pytest.approx(
        math.sqrt(161) * (2 * 2.0**-8 + 8 * math.sqrt(11008) * 2.0**-24)
    )
    assert 0.09 < chain.tolerance("bf16", 161, 11008) < 0.11
    assert chain.tolerance("fp16", 161, 11008) < chain.tolerance("bf16", 161, 11008) / 6
    assert chain.tolerance("bf16", 5, 11008) < chain.tolerance("bf16", 161, 11008) / 5
    assert not chain.judge(0.001, 1e-6, 0.5, True, 0.01).ok  # trivially small
    assert not chain.judge(0.001, 0.5, 0.5, False, 0.01).ok  # not finite
    assert chain.judge(0.001, 0.5, 0.5, True, 0.01).ok


@dataclass(frozen=True)
class _Span:
    name: str
    start_ns: int
    end_ns: int


def test_timeline_maps_kernels_onto_gemms():
    spans = [
        _Span("gemv_streamk", 1_000, 11_000),
        _Span("gemv_splitk", 13_000, 20_000),
        _Span("sm90_xmma_gemm", 24_000, 30_000),
        _Span("cublasLt::splitKreduce_kernel", 30_500, 31_000),
    ]
    t = chain.timeline(list(reversed(spans)), 3)  # in start order, whatever order given
    assert t["kernel_us"] == pytest.approx([10.0, 7.0, 6.5])
    assert t["gap_before_us"] == pytest.approx([0.0, 2.0, 4.0])
    assert t["kernels"] == [1, 1, 2]
    assert t["traced_token_us"] == pytest.approx(30.0)
    assert t["gap_share"] == pytest.approx(6.0 / 30.0)
    # kernel times and gaps add up to the traced token (less the reduce's own gap)
    assert sum(t["kernel_us"]) + sum(t["gap_before_us"]) == pytest.approx(30.0 - 0.5)
    assert "not the chain's 4" in chain.timeline(spans, 4)["timeline_reason"]
    # a kernel that starts before the previous GEMM's end: an overlap, never a negative gap
    t = chain.timeline([_Span("a", 0, 10_000), _Span("b", 9_000, 20_000)], 2)
    assert t["gap_before_us"] == [0.0, 0.0] and t["overlap_us"] == [0.0, 1.0]


def test_stamp_timeline_reads_each_block_s_runs():
    """Two blocks, three GEMMs (ns): per GEMM the blocks' mean run, wait for the input and gap
    since their previous run; the token from the earliest begin to the latest end; the tail
    past the blocks' mean end; a block with no run in a GEMM (zeros) left out of its means."""
    stamps = [
        [(1_000, 1_000, 5_000), (2_000, 2_000, 6_000)],
        [(5_500, 7_000, 9_000), (6_500, 7_500, 10_000)],
        [(9_000, 9_000, 12_000), (0, 0, 0)],
    ]
    t = chain.stamp_timeline(stamps, untraced_ms=0.0125)
    assert t["kernel_us"] == pytest.approx([4.0, 3.5, 3.0])
    assert t["wait_us"] == pytest.approx([0.0, 1.25, 0.0])
    # GEMM 0 from the earliest begin (0 and 1 us), then from each block's previous end
    assert t["gap_before_us"] == pytest.approx([0.5, 0.5, 0.0])
    assert t["traced_token_us"] == pytest.approx(11.0)  # 1 us to 12 us
    # the blocks end at 12 and 10 us: the last 1 us after their mean end
    assert t["tail_us"] == pytest.approx(1.0)
    assert t["kernel_gap_sum_us"] == pytest.approx(4.0 + 3.5 + 3.0 + 0.5 + 0.5 + 1.0)
    assert t["timeline_error"] == pytest.approx(12.5 / 12.5 - 1)
    assert t["wait_share"] == pytest.approx(1.25 / 11.0)
    assert t["gap_share"] == pytest.approx(1.0 / 11.0)
    assert t["stamp_resolution_ns"] == 500 and t["stamped_blocks"] == 2
    # the sums are the token where every block runs every GEMM
    even = chain.stamp_timeline([[(0, 0, 4_000), (0, 1_000, 5_000)]], untraced_ms=0.005)
    assert even["kernel_gap_sum_us"] == pytest.approx(even["traced_token_us"]) == 5.0
    assert (
        "no stamps for 1 of 2 GEMMs"
        in chain.stamp_timeline([[(0, 0, 4_000)], [(0, 0, 0)]], 0.005)["timeline_reason"]
    )


def test_a_one_launch_way_takes_its_timeline_from_its_stamps(monkeypatch):
    """A way with a stamping build (the token stage): both builds replayed in the same rounds of
    the one timer, the cost of the stamps the ratio of their medians, every sample kept, the
    stamps of the last replay read as the timeline; no tracer is asked."""
    import sys

    from rooflinecli.gpu import timer

    monkeypatch.setitem(sys.modules, "rooflinecli.gpu.timeline", None)  # never imported
    cp = FakeCupy()
    stream = cp.cuda.Stream()
    monkeypatch.setattr(chain_runner.device, "cupy", lambda: cp)
    stamps = np.array([[[0, 500, 4_000]], [[4_000, 5_000, 9_000]]], dtype=np.uint64)

    class Device:  # the stamps' CuPy array: .get() copies to the host
        def get(self):  # type: ignore[no-untyped-def]
            return stamps

    twin = chain_runner.Way("token-stamped", replay=lambda: None)
    way = chain_runner.Way("token", replay=lambda: None, stamped=lambda: (twin, Device()))
    seen = []

    def time(self, launches):  # type: ignore[no-untyped-def]
        seen.append([x.name for x in launches])
        return timer.Timed([[8.8, 9.0, 9.2], [9.1, 9.18, 9.3]], {})

    monkeypatch.setattr(timer.Timer, "time", time)
    one = timer.Timer(timer.Timing(flush_l2=False, hold=False))
    t = chain_runner.stamp_way(one, stream, way)
    assert seen == [["token", "token-stamped"]]
    assert t["timeline_backend"] == "globaltimer"
    assert t["tracing_overhead"] == pytest.approx(9.18 / 9.0 - 1)
    assert t["stamped_samples_ms"] == [9.1, 9.18, 9.3]
    assert t["unstamped_samples_ms"] == [8.8, 9.0, 9.2]
    assert t["kernel_us"] == pytest.approx([4.0, 5.0]) and t["wait_us"] == pytest.approx([0.5, 1.0])
    assert t["traced_token_us"] == pytest.approx(9.0)
    assert t["timeline_error"] == pytest.approx(9.0 / 9000.0 - 1)


def test_fairness_verdict():
    assert chain.fairness(1.02, 1.0)["fair_baseline"] is True
    f = chain.fairness(1.05, 1.0)
    assert f["fair_baseline"] is False and "NOT a fair baseline" in f["fairness"]
    assert chain.fairness(1.0, None)["fair_baseline"] is None


def _way(name: str, samples: list[float], stages: list[str], ok: bool = True) -> chain_runner.Way:
    check = {"ok": ok, "last": {"ok": ok, "rel_error": 0.01}, "early": {"ok": ok}}
    w = chain_runner.Way(name, stages=stages, samples_ms=samples)
    w.checks = {"eager": check, "replayed": check, "timed": check}
    return w


def chain_doc(speed: float = 1.0, traced: bool = True) -> dict:
    """A crafted chain document of llama-7b at batch 1 and 16 (two layers run, scaled)."""
    spec = resolve_spec("h200-sxm")
    p = llm.resolve("llama-7b")
    records = []
    for b in (1, 16):
        full, run = chain.build(p, b), chain.build(p, b, 2)
        scale = chain.token_scale(run, full, "bf16")
        n = len(run.links)
        base = [0.30 + 0.001 * i for i in range(12)]  # ms for the 11 GEMMs run
        ours = _way("best", [x * speed for x in base], ["gemv_streamk"] * n)
        cub = _way("cublas", [x * 1.1 for x in base], ["cublas"] * n)
        tor = _way("torch", [x * 1.09 for x in base], ["F.linear"] * n)
        if traced:
            ours.trace = {"kernel_us": [20.0] * n, "gap_before_us": [0.0] + [2.0] * (n - 1),
                          "traced_token_us": 240.0, "tracing_overhead": 0.01,
                          "gap_share": 20 / 240}  # fmt: skip
        recs = [
            chain_runner.record(run, full, w, "bf16", spec, scale, cub) for w in (ours, cub, tor)
        ]
        recs[1].update(chain.fairness(recs[1]["time_ms"], recs[2]["time_ms"]))

        reference.add_ratios(recs)
        records += recs
    return results.new_document(spec.to_dict(), {"name": "NVIDIA H200"}, records,
                                command=chain.COMMAND, preset=p.to_dict(), batches=[1, 16],
                                chain_version=results.CHAIN_VERSION)  # fmt: skip


def _write(tmp_path: Path, name: str, doc: dict) -> str:
    path = tmp_path / name
    path.write_text(results.dumps(doc))
    return str(path)


def test_chain_document_round_trip(tmp_path):
    doc = results.load(_write(tmp_path, "c.json", chain_doc()))
    recs = [r for r in doc["records"] if r["batch"] == 1]
    ours, cub, tor = recs
    assert ours["op"] == "chain" and ours["chain_version"] == results.CHAIN_VERSION
    assert ours["layers"] == 32 and ours["layers_run"] == 2 and ours["scale"] > 10
    assert ours["time_ms"] == pytest.approx(np.median(ours["samples_ms"]))
    assert ours["samples_ms"][0] == pytest.approx(
        ours["samples_run_ms"][0] * ours["scale"], rel=1e-5
    )
    assert ours["flops"] == chain.build(llm.resolve("llama-7b"), 1).flops()
    assert ours["ai_ideal"] == pytest.approx(model.intensity(ours["flops"], ours["bytes_ideal"]))
    assert ours["tflops"] == pytest.approx(model.tflops(ours["flops"], ours["time_ms"]))
    assert ours["pct_of_reference"] == pytest.approx(110.0, rel=0.01)
    assert len(ours["gemms"]) == 11 and ours["gemms"][1]["reads"] == "L0.qkv"
    assert ours["gemms"][1]["kernel_us"] == 20.0 and ours["gap_share"] == pytest.approx(1 / 12)
    assert "kernel_us" not in cub["gemms"][0]  # untraced: the fields are absent
    assert cub["fair_baseline"] is True and tor["kind"] == "reference"
    ids = {results.identity(r) for r in doc["records"]}
    assert len(ids) == 6  # three ways at two batches, told apart by the workload
    # an unknown chain version, or a GEMM without its shape, is refused in one line
    bad = chain_doc()
    bad["records"][0]["chain_version"] = "roofline.chain/9"
    with pytest.raises(results.RooflineError, match="chain_version"):
        results.validate(bad)
    bad = chain_doc()
    del bad["records"][0]["gemms"][3]["k"]
    with pytest.raises(results.RooflineError, match=r"gemms\[3\]"):
        results.validate(bad)


def test_show_gate_compare_and_plot_read_chain_documents(runner, tmp_path):
    a = _write(tmp_path, "a.json", chain_doc())
    b = _write(tmp_path, "b.json", chain_doc(speed=0.5, traced=False))  # ours twice as fast
    r = runner.invoke(cli, ["show", a, "--format", "markdown"])
    assert r.exit_code == 0, r.output
    assert "Chain llama-7b:chain:b1 bf16" in r.output
    assert "fair: the cuBLAS chain" in r.output
    assert "2 of 32 layers ran" in r.output and "gaps 8.3%" in r.output
    assert "best timeline: traced token 240.0 us (+1.0% against untraced)" in r.output
    r = runner.invoke(cli, ["show", a, "--format", "json"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["compare", a, b, "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)["rows"]
    best = [row for row in rows if row["stage"] == "best"]
    assert len(best) == 2 and all(row["tflops_ratio"] == pytest.approx(2.0) for row in best)
    r = runner.invoke(cli, ["gate", b, "--baseline", a])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["gate", a, "--baseline", b])
    assert r.exit_code == 1, r.output
    assert "llama-7b:chain:b16" in r.output
    pytest.importorskip("matplotlib")
    png = tmp_path / "a.png"
    r = runner.invoke(cli, ["plot", a, "-o", str(png)])
    assert r.exit_code == 0, r.output
    assert png.stat().st_size > 0


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--batch", "65"], "--batch: 65 is outside 1..64"),
        (["--dtype", "fp32"], "--chain runs --dtype fp16 or bf16"),
        (["--stages", "naive"], "--chain runs --stages best"),
        (["--gemms", "qkv"], "leave out --gemms"),
        (["--ways", "best,foo"], "--ways: unknown foo"),
        (["--chain-shape", "1x2"], "--chain-shape: '1x2' is not MxNxK"),
        (["--chain-shape", "65x8x8"], "chain batch 65 is outside 1..64"),
        (["--chain-shape", "1x8x8", "--batch", "1"], "leave out --batch"),
    ],
)
def test_bad_chain_options_exit_2(runner, args, words):
    r = runner.invoke(cli, ["run", "llm", "--chain", "--dtype", "bf16", *args])
    assert r.exit_code == 2, r.output
    assert words in r.output
    assert "Traceback" not in r.output


def test_chain_shape_needs_chain(runner):
    r = runner.invoke(cli, ["run", "llm", "--chain-shape", "1x8x8"])
    assert r.exit_code == 2 and "--chain-shape needs --chain" in r.output


class _Hold:
    """The timer's holding kernel (kernels/util/hold.cu) and its flag on the CPU: each hold and
    release written into `log`, so the rounds it holds are seen in order."""

    def __init__(self, log: list[str]) -> None:
        self.log, self.ticket = log, 0

    def hold(self) -> None:
        self.ticket += 1
        self.log.append(f"hold {self.ticket}")

    def release(self) -> None:
        self.log.append("release")

    def timeouts(self) -> int:
        return 0


@pytest.fixture
def fake_chain_gpu(monkeypatch):
    """NumPy for CuPy (one FakeCupy, also the timer's), no timeline, no NVML, and the timer's
    holding kernel logging into the list returned."""
    import sys

    from rooflinecli.gpu import timer

    cp = FakeCupy()
    log: list[str] = []
    monkeypatch.setitem(sys.modules, "rooflinecli.gpu.timeline", None)  # no timeline here
    monkeypatch.setattr(chain_runner.device, "cupy", lambda: cp)
    monkeypatch.setattr(chain_runner.device, "clock_sampler", lambda: None)
    monkeypatch.setattr(timer, "make_hold", lambda _cp: _Hold(log))
    return log


def test_run_chain_verifies_times_and_records_each_way(fake_chain_gpu, monkeypatch):
    """The GPU orchestration with NumPy standing in: each way verified eagerly, replayed and
    after the timed replays, timed by the one timer in interleaved rounds held behind its
    holding kernel, absent ways recorded with the reason, no timeline here (the reason
    recorded), the records placed and valid."""
    order = fake_chain_gpu  # the replays and the timer's holds, in the order queued

    def emulated(name: str, wrong: str = ""):  # type: ignore[no-untyped-def]
        def build(_cp, _stream, bufs, *_args):  # type: ignore[no-untyped-def]
            w = _Emulated(bufs, wrong).way()
            w.name, run = name, w.replay
            assert run is not None

            def replay() -> None:
                order.append(name)
                run()

            w.replay, w.stages = replay, ["emulated"] * len(bufs.chain.links)
            return w

        return build

    monkeypatch.setattr(chain_runner, "ours", emulated("best"))
    monkeypatch.setattr(chain_runner, "cublas", emulated("cublas", "weights"))

    def no_torch(*_args):  # type: ignore[no-untyped-def]
        raise RuntimeError("no PyTorch")

    monkeypatch.setattr(chain_runner, "torch_way", no_torch)
    p = small()
    full, run = chain.build(p, 3), chain.build(p, 3, 2)
    spec = resolve_spec("h200-sxm")
    recs, _clock = chain_runner.run_chain(run, full, "bf16", {}, None, spec, "sm_90a", 132,
                                          warmup=2, repeats=4)  # fmt: skip
    by = {r["stage"]: r for r in recs}
    assert by["best"]["verified"] is True and by["best"]["repeats"] == 4
    assert by["best"]["time_ms"] == pytest.approx(chain.token_scale(run, full, "bf16"))
    assert by["cublas"]["verified"] is False and by["cublas"]["time_ms"] is None
    assert "no PyTorch" in by["torch"]["error"]
    assert "no timeline" in by["best"]["timeline_reason"]
    assert by["best"]["samples_run_ms"] == [1.0] * 4  # every timed replay kept (1 ms each here)
    assert by["best"]["timing_method"].startswith("held: each batch of up to 16 rounds")
    # after the check's replayed graph (one per way): the timer's one replay per way to size
    # the run, the 2 warm-up replays per way, then the 4 rounds behind one hold, alternating
    # which way goes first
    assert order == [
        "best", "cublas",  # verify, replayed
        "best", "cublas",  # Timer.once
        "best", "best", "cublas", "cublas",  # warm-up
        "hold 1", "best", "cublas", "cublas", "best", "best", "cublas", "cublas", "best",
        "release",
    ]  # fmt: skip
    results.validate(results.new_document(spec.to_dict(), None, recs))


def test_the_chain_times_each_way_through_the_timer_on_its_stream(fake_chain_gpu, monkeypatch):
    """The chain's replays go to the one timer (Timer.time): one Launch per way, in the ways'
    order, each the way's graph replay, with no L2 flush, exactly `warmup` untimed and
    `repeats` timed replays, the clock sampled and the rounds held, while the chain's stream is
    the current one (the timer queues its events and holding kernel there); every sample it
    returns is the way's, the median its time."""
    from rooflinecli.gpu import timer

    cp = chain_runner.device.cupy()
    current: list[object] = [None]

    class Stream(cp.cuda.Stream):  # type: ignore[name-defined,misc]
        made: list[object] = []

        def __init__(self, non_blocking: bool = False) -> None:
            assert non_blocking
            Stream.made.append(self)

        def __enter__(self):  # type: ignore[no-untyped-def]
            current[0] = self
            return self

        def __exit__(self, *exc: object) -> None:
            current[0] = None

    monkeypatch.setattr(cp.cuda, "Stream", Stream)
    seen: list[tuple] = []

    def time(self, launches):  # type: ignore[no-untyped-def]
        seen.append((self.timing, list(launches), current[0]))
        return timer.Timed([[3.0, 1.0, 2.0], [5.0, 4.0, 6.0]], {"sm_clock_mhz": 1980},
                           method="held: stand-in")  # fmt: skip

    monkeypatch.setattr(timer.Timer, "time", time)

    monkeypatch.setattr(chain_runner, "ours", emulated("best"))
    monkeypatch.setattr(chain_runner, "cublas", emulated("cublas"))
    full = chain.build(small(), 1)
    spec = resolve_spec("h200-sxm")
    recs, clock = chain_runner.run_chain(full, full, "bf16", {}, None, spec, "sm_90a", 132,
                                         warmup=2, repeats=3, ways=("best", "cublas"))  # fmt: skip
    ((timing, launches, stream),) = seen
    assert [x.name for x in launches] == ["best", "cublas"]
    assert all(isinstance(x, timer.Launch) and x.before_last is None for x in launches)
    assert timing.flush_l2 is False and timing.sample_clock is True and timing.hold is True
    assert (timing.warmup_min, timing.warmup_ms) == (2, 0.0)
    assert (timing.min_repeats, timing.max_repeats) == (3, 3)
    assert stream is Stream.made[0]  # the chain's stream, where its graphs replay
    by = {r["stage"]: r for r in recs}
    assert by["best"]["samples_run_ms"] == [3.0, 1.0, 2.0]
    assert by["cublas"]["samples_run_ms"] == [5.0, 4.0, 6.0]
    assert by["best"]["time_ms"] == pytest.approx(2.0) and by["cublas"]["time_ms"] == 5.0
    assert clock == {"sm_clock_mhz": 1980} and by["best"]["sm_clock_mhz"] == 1980
    assert by["best"]["timing_method"] == "held: stand-in"


def test_the_chain_has_no_timing_loop_of_its_own():
    """The one timer holds every CUDA event of the package: the chain's replays and its traced
    token go through it, and time_ways is gone."""
    import ast

    pkg = Path(chain_runner.__file__).resolve().parent.parent
    with_events = []
    for path in sorted(pkg.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("Event", "get_elapsed_time"):
                if ast.unparse(node.value).endswith("cuda"):
                    with_events.append(path.relative_to(pkg).as_posix())
    assert set(with_events) == {"gpu/timer.py"}
    assert not hasattr(chain_runner, "time_ways")


def test_trace_way_reads_a_timeline(monkeypatch):
    """With a timeline module (its interface: trace(replay, sync) -> spans), one replayed token's
    spans become per-GEMM times and the tracing overhead against the untraced median; a
    timeline that cannot trace is 'no timeline' with its reason."""
    import sys
    import types

    from rooflinecli.errors import RooflineError

    fake = types.ModuleType("rooflinecli.gpu.timeline")

    class TracingUnavailable(RooflineError):
        pass

    def trace(replay, sync):  # type: ignore[no-untyped-def]
        replay()
        sync()
        return [_Span("k", 0, 10_000), _Span("k", 12_000, 20_000)]

    fake.TracingUnavailable = TracingUnavailable  # type: ignore[attr-defined]
    fake.trace = trace  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "rooflinecli.gpu.timeline", fake)
    import rooflinecli.gpu as gpu_package

    monkeypatch.setattr(gpu_package, "timeline", fake, raising=False)
    from rooflinecli.gpu import timer

    ran: list[int] = []
    way = chain_runner.Way("best", replay=lambda: ran.append(1))
    cp = FakeCupy()
    stream = cp.cuda.Stream()
    monkeypatch.setattr(chain_runner.device, "cupy", lambda: cp)
    monkeypatch.setattr(cp.cuda, "get_elapsed_time", lambda s, e: 0.0195, raising=False)
    one = timer.Timer(timer.Timing(flush_l2=False, hold=False))  # the traced replay: Timer.once
    t = chain_runner.trace_way(one, stream, way, 2, untraced_ms=0.019)
    assert ran == [1, 1]  # traced twice: the first pays the tracer's setup, the second is kept
    assert t["kernel_us"] == [10.0, 8.0] and t["gap_before_us"] == [0.0, 2.0]
    # tracing's cost: the traced token (the kernels' span, 20 us) against the untraced median;
    # the traced replay's event time (19.5 us here) apart, with what it holds beyond the span
    assert t["traced_token_us"] == pytest.approx(20.0)
    assert t["tracing_overhead"] == pytest.approx(20.0 / 19.0 - 1)
    assert t["traced_event_us"] == pytest.approx(19.5)
    assert t["tracing_event_overhead"] == pytest.approx(19.5 / 19.0 - 1)
    assert t["tracing_start_delay_us"] == pytest.approx(19.5 - 20.0)
    # kernels 18 us + gaps 2 us against the untraced 19 us token
    assert t["kernel_gap_sum_us"] == pytest.approx(20.0)
    assert t["timeline_error"] == pytest.approx(20.0 / 19.0 - 1)

    def unavailable(replay, sync):  # type: ignore[no-untyped-def]
        raise TracingUnavailable("cupti-python is not installed")

    fake.trace = unavailable  # type: ignore[attr-defined]
    t = chain_runner.trace_way(one, stream, way, 2, untraced_ms=0.019)
    assert t == {"timeline_reason": "no timeline: cupti-python is not installed"}


def _chain_rec(batch: int, stage: str, ms: float | None, **extra):  # type: ignore[no-untyped-def]
    return {"batch": batch, "stage": stage, "time_ms": ms, "token_bytes": 13.21e9, **extra}


def test_roof_shares_put_the_token_against_the_measured_read_roof_and_the_datasheet():
    r = _chain_rec(1, "best", 3.302)  # 13.21 GB in 3.302 ms: 4,000 GB/s
    chain.roof_shares(r, 4619.0, 4800.0)
    assert r["token_gbs"] == pytest.approx(13.21e9 / 3.302e-3 / 1e9)
    assert r["read_roof_share"] == pytest.approx(r["token_gbs"] / 4619.0)
    assert r["datasheet_share"] == pytest.approx(r["token_gbs"] / 4800.0)
    assert r["read_roof_token_us"] == pytest.approx(13.21e9 / 4619e9 * 1e6)  # 2,860 us
    failed = _chain_rec(1, "best", None)
    chain.roof_shares(failed, 4619.0, 4800.0)
    assert "read_roof_share" not in failed  # a failed check has no time, so no share
    no_cal = _chain_rec(1, "best", 3.302)
    chain.roof_shares(no_cal, None, 4800.0)
    assert "read_roof_share" not in no_cal and "datasheet_share" in no_cal


def test_verdicts_check_each_target_whatever_it_turns_out_to_be():
    recs = [
        _chain_rec(1, "best", 3.0, read_roof_share=0.9, timeline_error=0.01),
        _chain_rec(1, "best+pdl", 3.5, read_roof_share=0.78),
        _chain_rec(1, "cublas", 3.4, timeline_error=-0.05),
        _chain_rec(16, "best", 4.0, read_roof_share=0.7),
        _chain_rec(16, "cublas", None),  # failed its check: the ratio is not measured
        _chain_rec(64, "best", 9.0, read_roof_share=0.5),  # no target at batch 64
    ]
    v = {(x["batch"], x["way"], x["what"]): x for x in chain.verdicts(recs, ("best", "best+pdl"))}
    assert v[(1, "best", "cublas_over_ours")]["value"] == pytest.approx(3.4 / 3.0)
    assert v[(1, "best", "cublas_over_ours")]["ok"] is True  # 1.133 >= 1.10
    assert v[(1, "best+pdl", "cublas_over_ours")]["ok"] is False  # 0.971
    assert v[(1, "best", "read_roof_share")]["ok"] is True
    assert v[(1, "best+pdl", "read_roof_share")]["ok"] is False  # 78% < 85%
    assert v[(16, "best", "read_roof_share")]["ok"] is False  # 70% < 80%
    assert v[(16, "best", "cublas_over_ours")]["ok"] is None  # not measured, never met
    assert v[(1, "best", "timeline_sum")]["ok"] is True
    assert v[(1, "cublas", "timeline_sum")]["ok"] is False  # 5% off the token
    assert not any(k[0] == 64 for k in v)


def test_show_prints_the_read_roof_and_the_verdicts():
    from rooflinecli.present import document

    doc = {
        "records": [
            {"op": "chain", "workload": "llama-7b:chain:b1", "stage": "best", "time_ms": 3.0,
             "time_us_per_token": 3000.0, "read_roof_share": 0.9},
        ],
        "settings": {"read_roof": {"hbm_read_gbs": 4619.0, "source": "roofline calibrate"}},
        "verdicts": [{"batch": 1, "way": "best", "what": "read_roof_share", "value": 0.9,
                      "target": 0.85, "ok": True, "line": "best >= 85% of the read roof"}],
    }  # fmt: skip
    lines = document.chain_lines(doc)
    assert "llama-7b:chain:b1: best 3,000.0 us, 90.0% of the read roof" in lines
    assert "HBM read roof 4,619 GB/s (roofline calibrate)" in lines
    assert "target b1: best >= 85% of the read roof: 90.0%, MET" in lines


def test_the_token_table_is_made_from_chain_documents(fake_chain_gpu, monkeypatch, tmp_path):
    """docs/results.md's token block (`<!-- token:...:begin -->`) from a chain document made by
    the chain runner with NumPy standing in, put against a read roof, with its verdicts."""
    from rooflinecli import docgen

    monkeypatch.setattr(chain_runner, "ours", emulated("best"))
    monkeypatch.setattr(chain_runner, "cublas", emulated("cublas"))
    p = small()
    full = chain.build(p, 1)
    spec = resolve_spec("h200-sxm")
    recs, _ = chain_runner.run_chain(full, full, "bf16", {}, None, spec, "sm_90a", 132,
                                     warmup=1, repeats=3, ways=("best", "cublas"))  # fmt: skip
    for r in recs:
        chain.roof_shares(r, 4619.0, spec.memory_bandwidth_gbs)
    doc = results.new_document(
        spec.to_dict(), None, recs, settings={"read_roof": {"hbm_read_gbs": 4619.0}},
        verdicts=chain.verdicts(recs, ("best",)),
    )  # fmt: skip
    (tmp_path / "token-x.json").write_text(results.dumps(doc))
    monkeypatch.setattr(docgen, "_path", lambda name: tmp_path / name)
    page = "<!-- token:token-x.json:begin (make docs) -->\nold\n<!-- token:token-x.json:end -->"
    text = docgen.generated(page)
    rows = [line for line in text.splitlines() if line.startswith("| `token-x.json`")]
    assert [row.split(" | ")[3] for row in rows] == ["best", "cublas"]
    best = rows[0].split(" | ")
    share = recs[0]["read_roof_share"]
    assert best[4] == f"{recs[0]['time_us_per_token']:,.1f}" and best[5] == f"{100 * share:.1f}%"
    assert best[7] == "1.000"  # both ways emulated alike: cuBLAS / ours is 1
    assert "- bf16 batch 1: cuBLAS chain / best >= 1.10: 1.000, **not met**" in text
    assert "- bf16: read roof 4,619 GB/s" in text
    assert "old" not in text


def test_plot_draws_the_token_and_each_gemm_at_its_kernel_time(fake_chain_gpu, monkeypatch,
                                                                tmp_path):  # fmt: skip
    """`roofline plot` of a chain document: the whole token at its ideal intensity and, where a
    timeline gave kernel times, each GEMM at the speed of its kernel time."""
    from rooflinecli.present import image

    def build(_cp, _stream, bufs, *_args):  # type: ignore[no-untyped-def]
        w = _Emulated(bufs, "").way()
        w.name, w.stages = "best", ["emulated"] * len(bufs.chain.links)
        w.trace = {}
        return w

    monkeypatch.setattr(chain_runner, "ours", build)
    full = chain.build(small(), 1)
    spec = resolve_spec("h200-sxm")
    recs, _ = chain_runner.run_chain(full, full, "bf16", {}, None, spec, "sm_90a", 132,
                                     warmup=1, repeats=3, ways=("best",))  # fmt: skip
    for i, g in enumerate(recs[0]["gemms"]):
        g["kernel_us"], g["gap_before_us"] = 2.0 + i, 1.0
    doc = results.new_document(spec.to_dict(), {"name": "NVIDIA H200"}, recs)
    got, unplaced = image.series(doc)
    assert not unplaced
    token, per_gemm = got
    assert len(token.points) == 1 and token.points[0].ai == pytest.approx(recs[0]["ai_ideal"])
    assert per_gemm.name.endswith("each GEMM (kernel time)")
    assert len(per_gemm.points) == len(recs[0]["gemms"])
    g0 = recs[0]["gemms"][0]
    flops = 2 * g0["m"] * g0["n"] * g0["k"]
    assert per_gemm.points[0].tflops == pytest.approx(flops / 2.0e-6 / 1e12)
    pytest.importorskip("matplotlib")
    path = tmp_path / "token.json"
    path.write_text(results.dumps(doc))
    r = CliRunner().invoke(cli, ["plot", str(path), "-o", str(tmp_path / "token.png")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "token.png").stat().st_size > 1000


def test_the_timelines_signed_difference_may_be_below_zero_a_time_may_not():
    from rooflinecli import results
    from rooflinecli.errors import RooflineError

    results._check_number(-0.004, "timeline_error", "record 0")  # kernels + gaps under the token
    results._check_number(-0.01, "tracing_overhead", "record 0")
    with pytest.raises(RooflineError, match="at least 0"):
        results._check_number(-0.004, "time_ms", "record 0")


def test_a_model_with_targets_of_its_own_is_held_to_them():
    recs = [
        {"batch": 1, "stage": "cublas", "time_ms": 5.4, "read_roof_share": 0.7},
        {"batch": 1, "stage": "token", "time_ms": 5.0, "read_roof_share": 0.76},
    ]
    mine = chain.verdicts(recs, ("token",), "llama-3-8b")
    assert [(v["what"], v["target"], v["ok"]) for v in mine] == [("cublas_over_ours", 1.05, True)]
    assert mine[0]["value"] == pytest.approx(1.08)
    default = chain.verdicts(recs, ("token",))
    assert [(v["what"], v["target"], v["ok"]) for v in default] == [
        ("cublas_over_ours", 1.10, False), ("read_roof_share", 0.85, False)
    ]  # fmt: skip


def test_show_prints_a_stamped_token_s_timeline(runner, tmp_path):
    """A token way timed from its blocks' stamps: show says stamped (not traced), the waits for
    input inside the kernel times, and the last block's tail."""
    doc = chain_doc()
    spec = resolve_spec("h200-sxm")
    p = llm.resolve("llama-7b")
    full, run = chain.build(p, 1), chain.build(p, 1, 2)
    n = len(run.links)
    way = _way("token", [0.25] * 12, ["decode_token"] * n)
    way.kernels = 1
    way.trace = {"kernel_us": [20.0] * n, "gap_before_us": [0.5] * n, "wait_us": [4.0] * n,
                 "traced_token_us": 227.0, "tracing_overhead": 0.004, "tail_us": 1.5,
                 "gap_share": 5.5 / 227.0, "wait_share": 44.0 / 227.0,
                 "timeline_backend": "globaltimer", "timeline_error": -0.01,
                 "stamped_samples_ms": [0.251, 0.252],
                 "unstamped_samples_ms": [0.25, 0.25]}  # fmt: skip
    rec = chain_runner.record(
        run, full, way, "bf16", spec, chain.token_scale(run, full, "bf16"), None
    )
    assert [g["wait_us"] for g in rec["gemms"]] == [4.0] * n
    assert rec["stamped_samples_ms"] == [0.251, 0.252] and rec["wait_share"] == 44.0 / 227.0
    doc["records"].append(rec)
    results.validate(doc)
    r = runner.invoke(cli, ["show", _write(tmp_path, "t.json", doc), "--format", "markdown"])
    assert r.exit_code == 0, r.output
    assert (
        "token timeline: stamped token 227.0 us (+0.4% against unstamped), kernels 220.0 us "
        "(waiting for input 44.0 us), gaps 5.5 us, last block 1.5 us after the mean, "
        "kernels + gaps -1.0% against the token"
    ) in " ".join(r.output.split())
