"""On a GPU: stage 56 launched with programmatic dependent launch, as a dependent chain captured
in a CUDA graph (each GEMV's input the previous one's output), matches a float32 chain for each
placement of its wait and signal; the timeline of one replay holds the chain's kernels in order,
on the GPU's clock, where a tracer is installed."""

import math
from types import SimpleNamespace

import pytest

from rooflinecli.gpu import arrays, runner, timeline
from rooflinecli.stages import compiler
from rooflinecli.stages import gemm as stages

pytestmark = pytest.mark.gpu

LAYERS, N, K = 6, 520, 520  # N = K: each output is the next input; 520: no tile divides it


def _chain(cp, stage, m=3):
    dev = cp.cuda.Device()
    cc = dev.compute_capability
    if int(cc) < stage.min_cc:
        pytest.skip(f"{stage.name} needs sm_{stage.min_cc}")
    arch = compiler.arch_for_cc(f"{cc[:-1]}.{cc[-1]}")
    rng = cp.random.default_rng(0)
    scale = 1 / math.sqrt(K)  # activations keep their size through the chain
    bits = [
        arrays.to_bf16_bits(cp, rng.standard_normal((K, N), dtype=cp.float32) * scale)
        for _ in range(LAYERS)
    ]
    xs = [arrays.to_bf16_bits(cp, rng.standard_normal((m, K), dtype=cp.float32))]
    xs += [cp.full((m, N), 0x7FC0, dtype=cp.uint16) for _ in range(LAYERS)]  # NaN: poisoned
    launches = []
    for i in range(LAYERS):
        g = SimpleNamespace(m=m, n=N, k=K, alpha=1.0, beta=0.0, A=xs[i], B=bits[i], C=xs[i + 1],
                            dtype="bf16")  # fmt: skip
        launches.append(runner.launcher(cp, stage, g, arch)[0])
    cp.cuda.runtime.deviceSynchronize()  # inputs and poison written on the default stream
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        for f in launches:
            f()
        graph = stream.end_capture()
    ref = arrays.from_bf16_bits(cp, xs[0])
    refs = []
    for w in bits:
        ref = arrays.from_bf16_bits(cp, arrays.to_bf16_bits(cp, ref @ arrays.from_bf16_bits(cp, w)))
        refs.append(ref)
    return graph, stream, xs, refs


@pytest.mark.parametrize(
    "wait, signal",
    [
        (0, 0),
        pytest.param(
            1,
            1,
            marks=pytest.mark.xfail(
                reason="on the H200 this placement (wait after the first weight step, signal after "
                "it) leaves rows of an output unwritten in the graph",
                strict=False,
            ),
        ),  # fmt: skip
        (1, 2),
        (0, 3),
    ],
)
def test_a_pdl_chain_in_a_graph_matches_float32(wait, signal):
    import cupy as cp

    stage = stages.BY_NAME["gemv_pdl"].with_params({"PDL_WAIT": wait, "PDL_SIGNAL": signal})
    graph, stream, xs, refs = _chain(cp, stage)
    for _ in range(3):  # replays rewrite every output from the same input
        graph.launch(stream)
    stream.synchronize()
    for got, ref in zip(xs[1:], refs, strict=True):
        got = arrays.from_bf16_bits(cp, got)
        assert bool(cp.isfinite(got).all())
        assert float(cp.linalg.norm(got - ref) / cp.linalg.norm(ref)) < 2e-2
        assert float(cp.abs(ref).max()) > 0.1  # scaled by 1/sqrt(K): far from zero


def test_the_timeline_of_a_replay_lists_the_chain():
    import cupy as cp

    backend, why = timeline.available()
    if backend is None:
        pytest.skip(why)
    graph, stream, _, _ = _chain(cp, stages.BY_NAME["gemv_pdl"])
    graph.launch(stream)
    spans = timeline.trace(lambda: graph.launch(stream), stream.synchronize)
    assert [s.name for s in spans] == ["gemv_pdl"] * LAYERS, spans.backend
    assert all(s.end_ns > s.start_ns for s in spans)
    assert [s.start_ns for s in spans] == sorted(s.start_ns for s in spans)
