"""On a GPU: every stage verifies at odd shapes, a failure is reported as one, OOM is one line."""

import json

import pytest

from rooflinecli.cli import cli
from rooflinecli.stages import gemm as stages

pytestmark = pytest.mark.gpu


def _run(runner, *args):
    return runner.invoke(
        cli, ["run", "gemm", "--format", "json", "--quiet", "--budget-ms", "5", *args]
    )


@pytest.mark.parametrize("sizes", ["127x333x65", "1000", "1x257x129,67x1x300"])
def test_every_fp32_stage_verifies(runner, sizes):
    r = _run(runner, "--sizes", sizes)
    assert r.exit_code == 0, r.output + r.stderr
    doc = json.loads(r.output)
    names = {rec["stage"] for rec in doc["records"]}
    # the default ladder: every stage but those whose M range misses every row (decode stages)
    shapes = [_shape(token) for token in sizes.split(",")]
    ladder = stages.built_for(stages.select(None, "fp32"), [m for m, _n, _k in shapes])
    assert names == {s.name for s in ladder}
    for rec in doc["records"]:
        assert rec["verified"] is True, rec
        assert rec["tflops"] > 0
        assert rec["rel_error"] < 1e-4
    _assert_left_out(doc, ladder, shapes)


def _shape(token):
    dims = [int(d) for d in token.split("x")]
    return tuple(dims * 3 if len(dims) == 1 else dims)


def _assert_left_out(doc, ladder, shapes):
    """A stage nobody named that refuses a shape (stages.Stage.refuses: a decode stage past
    M = 64) is never run there: left out of the records, listed in the document's `skipped`."""
    want = {
        ("x".join(map(str, shape)), s.name, s.refuses(*shape))
        for s in ladder
        for shape in shapes
        if s.refuses(*shape)
    }
    got = {(x["shape"], x["stage"], x["reason"]) for x in doc.get("skipped", [])}
    assert got == want
    ran = {("x".join(map(str, (r["m"], r["n"], r["k"]))), r["stage"]) for r in doc["records"]}
    assert not ran & {(shape, stage) for shape, stage, _why in want}


def test_stage_12_block_shapes_verify_at_odd_shapes(runner):
    """serpentine_ffma' other block shapes (2-warp blocks, 4 per SM; one 8-warp 256 x 128 block per
    SM), its K tile of 32 and its 8 x 16 thread tile (lanes 8 x 4, paired) take their edge paths
    where M, N, K are not multiples of the tiles (1000: interior blocks too; K = 1031: a partial
    last K tile), named NAME@K=V in the run."""
    asked = [
        "serpentine_ffma@BN=64,COPY_STEP=4,MIN_BLOCKS=4",
        "serpentine_ffma@BM=256,MIN_BLOCKS=1",
        "serpentine_ffma@BK=32,STAGES=3",
        "serpentine_ffma@WNITER=4",
    ]
    names = [s.name for s in stages.select(",".join(asked), "fp32")][:-1]  # as records name them
    assert names[1] == "serpentine_ffma@BM=256,NUM_THREADS=256,MIN_BLOCKS=1"
    sizes = "127x333x65,1000,300x260x1031"
    r = _run(runner, "--sizes", sizes, "--stages", ",".join(asked), "--beta", "0.5")
    assert r.exit_code == 0, r.output + r.stderr
    records = json.loads(r.output)["records"]
    assert {rec["stage"] for rec in records} == {*names, "cublas"}
    assert len(records) == 3 * (len(names) + 1)
    for rec in records:
        assert rec["verified"] is True and rec["rel_error"] < 1e-4, rec
    blocks = {rec["stage"]: rec["blocks_per_sm"] for rec in records if rec["stage"] != "cublas"}
    assert blocks == dict(zip(names, (4, 1, 2, 2), strict=True))


STAGE_13 = [
    "simt_streamk",
    "simt_streamk@STREAMK=0",
    "simt_streamk@SK_WAVES=2",
    "simt_streamk@SK_MIN=1",
]


def test_stage_13_stream_k_verifies_at_odd_shapes(runner):
    """Stage 13 on its 264 persistent blocks, with alpha 0.5 and beta 2 (the owner of a cut tile
    applies both once, after adding the partials): fewer tiles than blocks (127x333x65: 3 tiles
    of 5 K tiles; SK_MIN=1 cuts them into 15 ranges of one K tile, so an owner waits for 4
    others), tiles cut 4-5 ways and none whole (1000^3: 64 tiles of 63 K tiles), K shorter than
    SK_MIN (4000x1000x40: 256 tiles of 3 K tiles, whole; SK_MIN=1 cuts ranges of 2 or 3), a
    partial last K tile (300x260x1031), a row or a column of C (1x257x129, 67x1x300), and one
    wave of whole tiles plus 25 cut ones (2176x2176x300; SK_WAVES=2 spreads all 289 tiles over
    the blocks). The schedule's arithmetic is the kernel header's."""
    import cupy as cp

    sizes = "127x333x65,1000,4000x1000x40,300x260x1031,1x257x129,67x1x300,2176x2176x300"
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    r = _run(
        runner, "--sizes", sizes, "--stages", ",".join(STAGE_13), "--alpha", "0.5", "--beta", "2"
    )
    assert r.exit_code == 0, r.output + r.stderr
    records = json.loads(r.output)["records"]
    assert {rec["stage"] for rec in records} == {*STAGE_13, "cublas"}
    assert len(records) == 7 * (len(STAGE_13) + 1)
    for rec in records:
        assert rec["verified"] is True and rec["rel_error"] < 1e-4, rec
        if rec["stage"] != "cublas":  # every resident block, whatever the tile count
            assert rec["grid"] == [2 * sms, 1, 1], rec


def test_stage_13_leaves_its_workspace_zeroed():
    """Two launches on one workspace (as the timer does): each writes C right, and after each
    every flag is zero again (the owner clears each flag it consumed), so the next launch's
    owners wait for fresh partials. The partials stay as written (stage 29 does the same): a
    flag, not the values, says whether one is ready."""
    import cupy as cp
    import numpy as np

    from rooflinecli.gpu import device
    from rooflinecli.gpu import runner as gpu_runner
    from rooflinecli.stages import compiler

    stage = stages.select("simt_streamk@SK_MIN=1", "fp32")[0]
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    g = gpu_runner.Problem(cp, 1000, 1000, 1000, 0.5, 2.0, seed=7)
    built = compiler.compile_stage(stage, device.info()["arch"], "fp32")
    fn = cp.RawModule(path=built.cubin_path).get_function(stage.entry)
    grid, block, smem = stage.launch(g.m, g.n, sms)
    fn.max_dynamic_shared_size_bytes = smem
    assert stage.workspace_bytes is not None
    ws = cp.zeros(stage.workspace_bytes(g.m, g.n, g.k, grid[0]) // 4, dtype=cp.float32)
    args = (np.int32(g.m), np.int32(g.n), np.int32(g.k), np.float32(g.alpha), g.A, g.B)
    args += (np.float32(g.beta), g.C, ws)
    for _ in range(2):
        g.reset_output()
        fn(grid, block, args, shared_mem=smem)
        cp.cuda.runtime.deviceSynchronize()
        ok, rel, mx = g.check()
        assert ok, (rel, mx)
        flags = ws[grid[0] * 128 * 128 :].view(cp.uint32)
        assert flags.size == grid[0] and int(flags.sum()) == 0
        assert float(cp.abs(ws[: grid[0] * 128 * 128]).max()) > 0  # partials were used


def test_beta_reads_c(runner):
    r = _run(runner, "--m", "200", "--n", "190", "--k", "70", "--alpha", "0.5", "--beta", "2")
    assert r.exit_code == 0, r.stderr
    recs = json.loads(r.output)["records"]
    assert all(rec["verified"] for rec in recs)


def test_a_wrong_kernel_is_reported_failed_never_fast(tmp_path, monkeypatch):
    from rooflinecli.gpu import runner

    src = tmp_path / "99_skip_last_row.cu"
    src.write_text(
        'extern "C" __global__ void gemm_bad(int M, int N, int K, float alpha, const float* A,\n'
        "    const float* B, float beta, float* C) {\n"
        "  int col = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  int row = blockIdx.y * blockDim.y + threadIdx.y;\n"
        "  if (row >= M - 1 || col >= N) return;  // misses the last row: it stays NaN\n"
        "  float acc = 0.f; for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];\n"
        "  C[row * N + col] = alpha * acc; }\n"
    )
    bad = stages.Stage(
        name="bad",
        what="test",
        dtype="fp32",
        chapter=0,
        math="FFMA",
        file=str(src),
        entry="gemm_bad",
    )
    _, _, recs = runner.run_gemm(
        [(64, 64, 64)], [bad, stages.reference_for("fp32")], None, timing=runner.Timing(budget_ms=2)
    )
    assert recs[0]["verified"] is False
    assert recs[0]["tflops"] is None
    assert recs[1]["verified"] is True


def test_out_of_memory_is_one_line(runner):
    r = runner.invoke(cli, ["run", "gemm", "--m", "1048576", "--quiet"])
    assert r.exit_code == 2
    assert r.stderr.startswith("error: out of device memory")
    assert len(r.stderr.strip().splitlines()) == 1


def test_records_carry_the_clock_they_ran_at(runner):
    import cupy as cp

    from rooflinecli.gpu import nvml

    if nvml.open_device(str(cp.cuda.Device().pci_bus_id)) is None:
        pytest.skip("no NVML on this machine")
    r = runner.invoke(
        cli, ["run", "gemm", "--format", "json", "--quiet", "--m", "2048", "--stages", "multistage"]
    )
    assert r.exit_code == 0, r.stderr
    for rec in json.loads(r.output)["records"]:  # multistage and cuBLAS, 400 ms each
        assert rec["clock_samples"] >= 3, rec
        assert rec["sm_clock_mhz_min"] <= rec["sm_clock_mhz"] <= rec["sm_clock_mhz_max"]
        assert 100 <= rec["sm_clock_mhz_min"] and rec["sm_clock_mhz_max"] <= 5000


def test_progress_gets_each_step_and_the_total():
    from rooflinecli.gpu import runner

    calls = []
    chosen = [
        stages.BY_NAME["naive_xcol"],
        stages.BY_NAME["smem_tile"],
        stages.reference_for("fp32"),
    ]
    runner.run_gemm(
        [(64, 64, 64), (65, 33, 17)], chosen, None, timing=runner.Timing(budget_ms=2),
        progress=lambda label, total=None: calls.append((label, total)),
    )  # fmt: skip
    assert calls == [
        ("naive_xcol 64x64x64", 4),
        ("smem_tile 64x64x64", 4),
        ("naive_xcol 65x33x17", 4),
        ("smem_tile 65x33x17", 4),
    ]
