"""`--stages best` on the CPU: shape classes, the shipped H200 table, the user's table, how a
pick is resolved, and what `run gemm` / `run llm --stages best` print and record (the GPU
replaced by tests/fakes.py's runner)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
from click.testing import CliRunner
from fakes import fake_run_gemm

from rooflinecli.cli import cli
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import device, runner
from rooflinecli.paths import data_dir
from rooflinecli.stages import dispatch
from rooflinecli.stages import gemm as stages

H200 = "NVIDIA H200"
H100 = "NVIDIA H100 80GB HBM3"
SHIPPED = str(data_dir("dispatch") / "h200-sxm.toml")
SHIPPED_H100 = str(data_dir("dispatch") / "h100-sxm5.toml")


@pytest.mark.parametrize(
    ("shape", "cls"),
    [
        ((1, 4096, 4096), "M=1 N=1k-8k K=1k-8k"),
        ((2, 1023, 8192), "M=2-4 N=<1k K=>=8k"),
        ((4, 1024, 8191), "M=2-4 N=1k-8k K=1k-8k"),
        ((5, 1024, 8191), "M=5-16 N=1k-8k K=1k-8k"),
        ((16, 1024, 8191), "M=5-16 N=1k-8k K=1k-8k"),
        ((17, 32000, 4096), "M=17-32 N=>=8k K=1k-8k"),
        ((33, 4096, 4096), "M=33-64 N=1k-8k K=1k-8k"),
        ((64, 1, 1), "M=33-64 N=<1k K=<1k"),
        ((65, 4096, 11008), "M=65-128 N=1k-8k K=>=8k"),
        ((129, 4096, 4096), "M=129-256 N=1k-8k K=1k-8k"),
        ((512, 8192, 8192), "M=257-512 N=>=8k K=>=8k"),
        ((513, 4096, 4096), "M=513-1024 N=1k-8k K=1k-8k"),
        ((1025, 4096, 4096), "M=>1024 N=1k-8k K=1k-8k"),
    ],
)
def test_classes_at_their_edges(shape, cls):
    assert dispatch.class_of(*shape) == cls


def shipped() -> list[dispatch.Table]:
    return [t for names, t in dispatch.shipped_tables() if H200 in names]


def test_the_shipped_h200_table_loads_and_says_where_each_entry_came_from():
    (table,) = shipped()
    assert table.where == SHIPPED
    assert len(table.entries) == 71
    for e in table.entries:
        assert re.match(r"(fastest at |[0-9.]+% of the reference \(geomean\))", e.source), e
        assert ".json.gz " in e.source, e
    first = table.entries[0]
    assert (first.dtype, first.shape_class, first.stage, first.params) == (
        "bf16", "M=1 N=1k-8k K=1k-8k", "gemv_splitk", {}
    )  # fmt: skip
    # a class the grid measures (benchmarks/shapes/grid.txt) stands on the grid alone
    assert first.source == (
        "97.5% of the reference (geomean) over the 2 shape(s) of the class: "
        "tune-dispatch-grid-bf16-m1.json.gz 1x2560x2560 9.0 us, 104.6% of the reference; "
        "tune-dispatch-grid-bf16-m1.json.gz 1x7680x5632 29.3 us, 90.8% of the reference"
    )
    # every M bucket up to 512 has an entry of its own in both 16-bit types
    for dt in ("bf16", "fp16"):
        have = {e.shape_class.split()[0] for e in table.entries if e.dtype == dt}
        assert {f"M={b[2]}" for b in dispatch.M_BUCKETS[:8]} <= have, dt


@pytest.mark.parametrize(
    ("device", "spec", "flags"), [(H200, "h200-sxm", []), (H100, "h100-sxm5", ["--grid-only"])]
)
def test_the_shipped_table_is_what_the_seed_script_makes_of_the_committed_documents(
    device, spec, flags
):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    docs = sorted(str(p) for p in (root / "benchmarks" / "results").glob("*.json.gz"))
    made = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "seed_dispatch.py"), *flags, device, spec,
         *docs],
        capture_output=True, text=True, check=True, cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    ).stdout  # fmt: skip
    assert made == (root / "dispatch" / f"{spec}.toml").read_text()


@pytest.mark.parametrize(
    ("shape", "dtype", "name", "entry_class"),
    [
        ((1, 4096, 4096), "bf16", "gemv_splitk", "M=1 N=1k-8k K=1k-8k"),
        ((1, 4096, 11008), "bf16", "gemv_streamk", "M=1 N=1k-8k K=>=8k"),
        ((16, 11008, 4096), "bf16", "wgmma_swapab@BM=16,BN=256", "M=5-16 N=>=8k K=1k-8k"),
        ((64, 14336, 4096), "bf16", "wgmma_swapab", "M=33-64 N=>=8k K=1k-8k"),
        ((4096, 4096, 4096), "bf16", "wgmma_cluster", "M=>1024 N=1k-8k K=1k-8k"),
        # no bf16 entry for M=129-256 N=>=8k K=>=8k: the nearest class, in N and K
        ((256, 16384, 16384), "bf16", "wgmma_streamk@BN=128", "M=129-256 N=1k-8k K=>=8k"),
        ((1, 4096, 4096), "fp32", "gemv_streamk", "M=1 N=1k-8k K=1k-8k"),
    ],
)
def test_resolve_takes_the_class_entry_or_the_nearest(shape, dtype, name, entry_class):
    pick = dispatch.resolve(*shape, dtype, shipped(), H200)
    assert (pick.stage.name, pick.entry_class, pick.table) == (name, entry_class, SHIPPED)
    assert pick.shape_class == dispatch.class_of(*shape)
    assert pick.stage.refuses(*shape) is None
    assert not pick.stage.arch_params  # the table's params are final


def test_a_shape_no_entry_runs_takes_the_registry_s_last_stage_that_does():
    # a table of TMA stages only (N and K multiples of 8): 127x333x65 is run by none of them
    table = dispatch.Table(
        H200, "made-up.toml",
        (dispatch.Entry("bf16", "M=>1024 N=1k-8k K=1k-8k", "wgmma_persistent", {}, "made up"),),
    )  # fmt: skip
    pick = dispatch.resolve(127, 333, 65, "bf16", [table], H200)
    # the last Tensor Core stage that reads any pitch (stage 33: its producers load the tiles)
    assert (pick.stage.name, pick.entry_class) == ("wgmma_swapab_ld", "none")
    assert pick.table == "the registry (no table entry runs the shape)"


def test_no_table_is_one_line():
    with pytest.raises(RooflineError) as exc:
        dispatch.resolve(1, 4096, 4096, "bf16", [], "RTX 9999")
    assert exc.value.message == (
        "--stages best: no bf16 entries in a tune table for RTX 9999 (tables: none); run "
        "`roofline tune dispatch` to make one"
    )


def test_the_user_s_table_wins_and_merges(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    e1 = dispatch.Entry("bf16", "M=1 N=1k-8k K=1k-8k", "gemv_vector", {}, "mine")
    e2 = dispatch.Entry("bf16", "M=2-4 N=1k-8k K=1k-8k", "gemv_splitk", {}, "mine too")
    path = dispatch.save_user(H200, [e1])
    dispatch.save_user(H200, [e2])
    assert path == tmp_path / "dispatch" / "nvidia-h200.json"
    assert [e.stage for e in dispatch.load_user(H200).entries] == ["gemv_vector", "gemv_splitk"]  # type: ignore[union-attr]
    tables = dispatch.tables_for(H200)
    assert [t.where for t in tables] == [str(path), SHIPPED, SHIPPED_H100]
    pick = dispatch.resolve(1, 4096, 4096, "bf16", tables, H200)
    assert (pick.stage.name, pick.table, pick.source) == ("gemv_vector", str(path), "mine")


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ('{"pick": [{"dtype": "bf16"}]}', "each pick needs dtype, class, stage"),
        (
            '{"pick": [{"dtype": "bf16", "class": "M=3", "stage": "gemv_naive"}]}',
            "unknown shape class 'M=3'",
        ),
        (
            '{"pick": [{"dtype": "bf16", "class": "M=1 N=<1k K=<1k", "stage": "nope"}]}',
            "unknown stage 'nope'",
        ),
        ("{not json", "is damaged"),
    ],
)
def test_a_bad_user_table_is_one_line(tmp_path, monkeypatch, body, why):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    (tmp_path / "dispatch").mkdir()
    (tmp_path / "dispatch" / "nvidia-h200.json").write_text(body)
    with pytest.raises(RooflineError, match=why.replace("(", r"\(").replace("[", r"\[")):
        dispatch.load_user(H200)


def rec(stage, m, ms, pct=None, params=None):  # type: ignore[no-untyped-def]
    out = {"kind": "stage", "verified": True, "stage": stage, "dtype": "fp32", "m": m,
           "n": 4096, "k": 4096, "time_ms": ms, "params": params or {}}  # fmt: skip
    return out if pct is None else {**out, "pct_of_reference": pct}


def test_winners_keep_the_best_geomean_against_the_reference_over_a_class():
    """gemv_multirow is fastest at two of the class's three shapes, but gemv_splitk, measured at
    all three, loses little where it loses: its geomean of % of the reference is the higher
    (94.9 from 100, 95, 90 against 84.6 from 60, 100, 101), so it is the pick; gemv_vector,
    not measured at 3, cannot be, and an unverified record never counts."""
    found = [
        (rec("gemv_splitk", 2, 0.020, 100.0), "a.json"),
        (rec("gemv_splitk", 4, 0.021, 95.0), "a.json"),
        (rec("gemv_splitk", 3, 0.022, 90.0), "b.json"),
        (rec("gemv_multirow", 2, 0.033, 60.0), "a.json"),
        (rec("gemv_multirow", 4, 0.020, 100.0), "a.json"),
        (rec("gemv_multirow", 3, 0.019, 101.0), "b.json"),
        (rec("gemv_vector", 2, 0.019, 120.0), "a.json"),
        (rec("gemv_vector", 4, 0.019, 120.0), "a.json"),
        ({**rec("gemv_naive", 3, 0.001, 900.0), "verified": False}, "b.json"),  # wrong
    ]
    (e,) = dispatch.winners(found)
    assert (e.dtype, e.shape_class, e.stage, e.params) == (
        "fp32", "M=2-4 N=1k-8k K=1k-8k", "gemv_splitk", {}
    )  # fmt: skip
    assert e.source == (
        "94.9% of the reference (geomean) over the 3 shape(s) of the class: "
        "a.json 2x4096x4096 20.0 us, 100.0% of the reference; "
        "b.json 3x4096x4096 22.0 us, 90.0% of the reference; "
        "a.json 4x4096x4096 21.0 us, 95.0% of the reference"
    )


def test_winners_without_a_reference_keep_the_stage_that_won_most_shapes_of_a_class():
    found = [
        (rec("gemv_splitk", 2, 0.02), "a.json"),
        (rec("gemv_multirow", 2, 0.03), "a.json"),
        (rec("gemv_multirow", 4, 0.02), "a.json"),
        (rec("gemv_multirow", 3, 0.02), "b.json"),
        ({**rec("gemv_naive", 3, 0.001), "verified": False}, "b.json"),  # wrong: never picked
    ]
    (e,) = dispatch.winners(found)
    assert (e.dtype, e.shape_class, e.stage, e.params) == (
        "fp32", "M=2-4 N=1k-8k K=1k-8k", "gemv_multirow", {}
    )  # fmt: skip
    assert e.source == (
        "fastest at 2 of 3 shape(s): b.json 3x4096x4096 20.0 us; a.json 4x4096x4096 20.0 us"
    )


def test_a_tile_variant_that_wins_is_saved_with_its_params_and_resolves_to_its_tiles():
    """A `tune dispatch --stages wgmma_persistent@BN=128,...` record (the variant's name, all
    its params) becomes an entry of the stage and the params that differ; the pick runs 128 x 128
    tiles in the shared memory they take, under the same name the record had."""
    from rooflinecli.stages import gemm as stages

    variant = stages.select("wgmma_persistent@BN=128", "bf16")[0]
    rec = {"kind": "stage", "verified": True, "stage": variant.name, "dtype": "bf16",
           "m": 1000, "n": 1016, "k": 1032, "time_ms": 0.012, "params": dict(variant.params),
           "pct_of_reference": 91.0}  # fmt: skip
    slower = {**rec, "stage": "wgmma_persistent", "time_ms": 0.019, "params": {},
              "pct_of_reference": 57.5}  # fmt: skip
    (e,) = dispatch.winners([(rec, "tune.json"), (slower, "tune.json")])
    assert (e.shape_class, e.stage, e.params) == ("M=513-1024 N=<1k K=1k-8k", "wgmma_persistent",
                                                  {"BN": 128})  # fmt: skip
    table = dispatch.Table(H200, "user.json", (e,))
    pick = dispatch.resolve(1000, 1016, 1032, "bf16", [table], H200)
    assert pick.stage.name == "wgmma_persistent@BN=128" and pick.stage.tile == (128, 128)
    assert pick.stage.smem_bytes == variant.smem_bytes == 4 * 256 * 64 * 2 + 32768 + 1024


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))  # no user table
    monkeypatch.setattr(runner, "run_gemm", fake_run_gemm(2, placed=True))
    monkeypatch.setattr(device, "info", lambda: {"name": H200})


def test_run_gemm_best_runs_each_pick_beside_the_reference_and_says_why(fake_gpu):
    args = ["run", "gemm", "--sizes", "1x4096x4096,4096", "--dtype", "bf16", "--stages", "best",
            "--format", "json"]  # fmt: skip
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    got = [(x["m"], x["stage"], x.get("dispatch_class"), x.get("dispatch_table"))
           for x in doc["records"]]  # fmt: skip
    assert got == [
        (1, "gemv_splitk", "M=1 N=1k-8k K=1k-8k", SHIPPED),
        (1, "cublas_hgemm", None, None),
        (4096, "wgmma_cluster", "M=>1024 N=1k-8k K=1k-8k", SHIPPED),
        (4096, "cublas_hgemm", None, None),
    ]
    assert doc["settings"]["stages"] == "best: one stage per shape from the tune table"
    assert doc["records"][0]["dispatch_source"].startswith(
        "97.5% of the reference (geomean) over the 2 shape(s) of the class: "
    )


def test_run_gemm_best_prints_the_pick_under_each_table(fake_gpu):
    args = ["run", "gemm", "--m", "1", "--n", "4096", "--k", "4096", "--dtype", "bf16",
            "--stages", "best", "--no-chart", "-q"]  # fmt: skip
    r = CliRunner(env={"COLUMNS": "200"}).invoke(cli, args)
    assert r.exit_code == 0, r.output
    assert (
        f"best: gemv_splitk (class M=1 N=1k-8k K=1k-8k; table {SHIPPED})" in r.output.splitlines()
    )


def test_run_llm_best_sums_the_picks_per_token_beside_cublas_and_the_roofs(fake_gpu):
    args = ["run", "llm", "--preset", "llama-7b", "--batch", "1,16", "--dtype", "bf16",
            "--stages", "best", "--format", "json"]  # fmt: skip
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert [row["stage"] for row in doc["per_token"]] == ["best", "cublas_hgemm", "roofs allow"]
    best, ref, roofs = doc["per_token"]
    for b in (1, 16):
        picked = [x for x in doc["records"] if x["batch"] == b and x.get("dispatch_class")]
        assert len(picked) == 6  # every weight GEMM of a token, each its own pick
        assert best[f"us_b{b}"] == pytest.approx(sum(x["time_us_per_token"] for x in picked))
        # the fake runs every stage at half its roof: twice what the roofs allow
        assert best[f"us_b{b}"] == pytest.approx(2 * roofs[f"us_b{b}"])
        assert ref[f"us_b{b}"] == pytest.approx(2 * roofs[f"us_b{b}"])
    stages_b1 = {
        x["gemm"]: x["stage"] for x in doc["records"] if x["batch"] == 1 and x.get("dispatch_class")
    }
    assert stages_b1 == {
        "qkv": "gemv_streamk", "o_proj": "gemv_splitk", "ffn_gate": "gemv_streamk",
        "ffn_up": "gemv_streamk", "ffn_down": "gemv_streamk", "lm_head": "gemv_streamk",
    }  # fmt: skip


def test_best_with_extra_stages_is_one_line(fake_gpu):
    r = CliRunner().invoke(cli, ["run", "gemm", "--m", "8", "--stages", "best", "--tuned"])
    assert r.exit_code == 2
    assert "--stages best takes its stages from the tune table" in r.output


def test_tune_dispatch_saves_each_class_s_winner_to_the_user_s_table(fake_gpu, tmp_path):
    args = ["tune", "dispatch", "--sizes", "1x4096x4096,2x4096x4096", "--dtype", "fp32",
            "--stages", "gemv_vector,gemv_splitk", "-q"]  # fmt: skip
    r = CliRunner(env={"COLUMNS": "200"}).invoke(cli, args)
    assert r.exit_code == 0, r.output
    saved = tmp_path / "dispatch" / "fake-h200.json"  # the device the run reports
    # the fake runs every stage at half its roof: equal times, so the first listed wins each
    assert r.output.splitlines()[-3:] == [
        "  fp32 M=1 N=1k-8k K=1k-8k: gemv_vector",
        "  fp32 M=2-4 N=1k-8k K=1k-8k: gemv_vector",
        f"saved to {saved} (used by `--stages best`)",
    ]
    table = dispatch.load_user("FAKE H200")
    assert table is not None
    assert [(e.shape_class, e.stage) for e in table.entries] == [
        ("M=1 N=1k-8k K=1k-8k", "gemv_vector"),
        ("M=2-4 N=1k-8k K=1k-8k", "gemv_vector"),
    ]
    assert table.entries[0].source.startswith(
        "100.0% of the reference (geomean) over the 1 shape(s) of the class: tune dispatch "
    )
    tables = dispatch.tables_for("FAKE H200")
    pick = dispatch.resolve(1, 4096, 4096, "fp32", tables, "FAKE H200")
    assert (pick.stage.name, pick.table) == ("gemv_vector", str(saved))


def test_a_stage_is_judged_over_the_class_s_shapes_it_runs():
    """wgmma_swapab refuses 40x4100x4104 (N no multiple of 8), so its geomean is taken over the
    two shapes it runs, where it beats gemv_wmma; gemv_wmma, measured at all three, is not
    preferred for having run one shape more."""

    def r(stage, m, n, k, pct):  # type: ignore[no-untyped-def]
        return {"kind": "stage", "verified": True, "stage": stage, "dtype": "bf16", "m": m,
                "n": n, "k": k, "time_ms": 0.02, "params": {}, "pct_of_reference": pct}  # fmt: skip

    found = [
        (r("wgmma_swapab", 40, 4096, 4096, 90.0), "g.json"),
        (r("wgmma_swapab", 48, 4096, 4096, 92.0), "g.json"),
        (r("gemv_wmma", 40, 4096, 4096, 60.0), "g.json"),
        (r("gemv_wmma", 48, 4096, 4096, 61.0), "g.json"),
        (r("gemv_wmma", 40, 4100, 4104, 70.0), "g.json"),
    ]
    (e,) = dispatch.winners(found)
    assert (e.shape_class, e.stage) == ("M=33-64 N=1k-8k K=1k-8k", "wgmma_swapab")
    assert e.source.startswith(
        "91.0% of the reference (geomean) over the 2 shape(s) of the class it runs (of 3): "
    )


def test_the_seed_takes_the_grid_s_classes_from_the_grid_and_never_a_best_run(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent

    def doc(name, records):  # type: ignore[no-untyped-def]
        p = tmp_path / name
        p.write_text(json.dumps({"device": {"name": H200}, "command": "run gemm",
                                 "records": records}))  # fmt: skip
        return str(p)

    def r(stage, pct, **extra):  # type: ignore[no-untyped-def]
        return {"kind": "stage", "verified": True, "stage": stage, "dtype": "bf16", "m": 40,
                "n": 4096, "k": 4096, "time_ms": 0.02, "params": {}, "pct_of_reference": pct,
                **extra}  # fmt: skip

    docs = [
        doc("tune-dispatch-grid-bf16-m40.json", [r("wgmma_swapab", 80.0)]),
        doc("other.json", [r("gemv_wmma", 99.0)]),  # the grid measures the class: not this
        doc("best.json", [r("wgmma_tma", 150.0, dispatch_class="M=33-64 N=1k-8k K=1k-8k")]),
    ]
    made = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "seed_dispatch.py"), H200, "h200-sxm", *docs],
        capture_output=True, text=True, check=True, cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    ).stdout  # fmt: skip
    assert made.count("[[pick]]") == 1
    assert 'stage = "wgmma_swapab"' in made


@pytest.mark.parametrize(
    "shape, name, entry_class",
    [
        # N % 8 = 4: the own class's entry (wgmma_tma) refuses; the nearest stage 31 entry's twin
        ((100, 4100, 4104), "wgmma_swapab_ld@BM=128", "M=65-128 N=>=8k K=1k-8k"),
        # K odd: the own class's entry is stage 31 (BM 32, BN 256): the twin keeps BM, not BN
        ((17, 11000, 4097), "wgmma_swapab_ld@BM=32", "M=17-32 N=>=8k K=1k-8k"),
    ],
)
def test_a_pick_refused_for_its_pitch_runs_as_its_any_pitch_twin(shape, name, entry_class):
    pick = dispatch.resolve(*shape, "bf16", shipped(), H200)
    assert (pick.stage.name, pick.entry_class) == (name, entry_class)
    assert pick.stage.refuses(*shape) is None
    assert "wgmma_swapab_ld" in pick.source


def test_the_twin_takes_the_nearest_rows_it_is_tuned_over():
    entry = dispatch.Entry("bf16", "M=257-512 N=>=8k K=1k-8k", "wgmma_swapab", {"BM": 256}, "")
    table = dispatch.Table(H200, "made-up.toml", (entry,))
    pick = dispatch.resolve(300, 12289, 4096, "bf16", [table], H200)
    assert pick.stage.name == "wgmma_swapab_ld@BM=128"
    # aligned, the entry itself; and a stage with no twin gives way as before
    assert (
        dispatch.resolve(300, 12288, 4096, "bf16", [table], H200).stage.name
        == "wgmma_swapab@BM=256"
    )
    assert not stages.BY_NAME["wgmma_tma"].any_pitch


@pytest.mark.parametrize("entry_stage", ["gemv_wmma", "gemv_splitk", "gemv_streamk"])
def test_a_decode_pick_that_would_load_scalars_runs_as_the_any_pitch_stage(entry_stage):
    entry = dispatch.Entry("bf16", "M=2-4 N=1k-8k K=1k-8k", entry_stage, {}, "grid")
    table = dispatch.Table(H200, "made-up.toml", (entry,))
    # N = 6150 and K = 4090: rows of B and A off 16 bytes; the 16-byte paths would load scalars
    # (stage 53 loads B 16 bytes at a time where N allows, whatever K: A's loads fall back alone)
    for shape in [(3, 6150, 4090), (3, 6144, 4090), (3, 6150, 4096)]:
        pick = dispatch.resolve(*shape, "bf16", [table], H200)
        if entry_stage == "gemv_wmma" and shape[1] % 8 == 0:
            assert pick.stage.name == entry_stage, shape
            continue
        assert pick.stage.name == "gemv_shift", shape
        assert "at this pitch: gemv_shift" in pick.source
    # rows on 16 bytes: the entry itself
    assert dispatch.resolve(3, 6144, 4096, "bf16", [table], H200).stage.name == entry_stage
    # fp32 rows start on 16 bytes at N, K multiples of 4: the entry itself there too
    fp32 = dispatch.Table(H200, "made-up.toml", (replace(entry, dtype="fp32"),))
    if "fp32" in stages.BY_NAME[entry_stage].all_dtypes:
        assert dispatch.resolve(3, 6148, 4092, "fp32", [fp32], H200).stage.name == entry_stage
    assert stages.BY_NAME[entry_stage].scalar_at(6150, 4096, "bf16")
    assert not stages.BY_NAME["gemv_shift"].vector_rows


def test_a_gpu_no_table_names_takes_the_tables_of_its_architecture(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))  # no user table
    monkeypatch.setenv(dispatch.SET_ASIDE, "h100-sxm5")  # the H100's own table set aside
    (table,) = dispatch.tables_for(H100)
    assert (table.where, table.device, table.borrowed) == (SHIPPED, H200, True)
    pick = dispatch.resolve(256, 4096, 4096, "bf16", [table], H100)
    own = dispatch.resolve(256, 4096, 4096, "bf16", shipped(), H200)
    assert pick.entry_class == own.entry_class == "M=129-256 N=1k-8k K=1k-8k"
    # the wave model weighs the entry's candidates on each GPU's own spec: at the H100's lower
    # HBM bandwidth (3.35 TB/s against 4.8) more of a launch's time is its bytes', a part-empty
    # wave costs less, and its pick can differ
    assert (own.stage.name, pick.stage.name) == ("wgmma_streamk@BN=128", "wgmma_tma")
    assert "the wave model at 256x4096x4096 on 132 SMs" in pick.source
    assert pick.table == f"{SHIPPED} (made on {H200}, the same architecture)"
    assert pick.fields()["dispatch_table"] == pick.table
    # another architecture (sm_80) borrows nothing: the one line of test_no_table_is_one_line
    assert dispatch.tables_for("NVIDIA A100-SXM4-80GB") == []
    assert dispatch.tables_for("RTX 9999") == []


def test_a_table_made_on_the_gpu_wins_and_another_s_fills_the_classes_it_lacks(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    tables = dispatch.tables_for(H100)
    assert [(t.where, t.borrowed) for t in tables] == [(SHIPPED_H100, False), (SHIPPED, True)]
    mine = {(e.dtype, e.shape_class) for e in tables[0].entries}
    lacks = next(e for e in tables[1].entries if (e.dtype, e.shape_class) not in mine)
    rows = {"1": 1, "2-4": 3, "5-16": 12, "17-32": 24, "33-64": 56, "65-128": 112}
    rows |= {"129-256": 200, "257-512": 320, "513-1024": 768, ">1024": 2048}
    m = rows[lacks.shape_class.split()[0][2:]]
    size = {"<1k": 512, "1k-8k": 4096, ">=8k": 16384}
    n, k = (size[x.split("=")[1]] for x in lacks.shape_class.split()[1:])
    pick = dispatch.resolve(m, n, k, lacks.dtype, tables, H100)
    assert pick.entry_class == lacks.shape_class and pick.table.startswith(SHIPPED + " (made on")
    had = next(e for e in tables[0].entries)  # a class it has: its own entry
    m0 = {"1": 1}.get(had.shape_class.split()[0][2:], None)
    if m0 is not None:
        assert dispatch.resolve(m0, 4096, 4096, had.dtype, tables, H100).table == SHIPPED_H100
    e1 = dispatch.Entry("bf16", "M=1 N=1k-8k K=1k-8k", "gemv_vector", {}, "measured here")
    path = dispatch.save_user(H100, [e1])
    tables = dispatch.tables_for(H100)
    assert [t.where for t in tables] == [str(path), SHIPPED_H100, SHIPPED]
    assert dispatch.resolve(1, 4096, 4096, "bf16", tables, H100).stage.name == "gemv_vector"


def test_tune_dispatch_fp8_runs_the_fp8_problem_and_saves_fp8_picks(
    fake_gpu, monkeypatch, tmp_path
):
    """`tune dispatch --dtype fp8` runs the FP8 problem kind (gpu/fp8's runner, not the 16-bit
    one), with the FP8 stages named and cuBLASLt's reference, and saves its picks as fp8."""
    from rooflinecli.gpu import fp8 as gfp8

    seen = []

    def params(_i, r):  # type: ignore[no-untyped-def]  # as the runner records them
        r["params"] = dict(stages.select(r["stage"], "fp8")[0].params)

    fake = fake_run_gemm(2, placed=True, each=params)

    def fp8_run_gemm(shapes, stages, spec_arg, alpha, seed, timing, progress, work, fmt,
                     scaling="tensor"):  # fmt: skip
        seen.append(([s.name for s in stages], fmt, scaling))
        return fake(shapes, stages, spec_arg, alpha, 0.0, seed, timing, progress, "fp8", work)

    monkeypatch.setattr(gfp8, "run_gemm", fp8_run_gemm)
    monkeypatch.setattr(runner, "run_gemm", None)  # the 16-bit runner is not reached
    args = ["tune", "dispatch", "--sizes", "16x7168x2048", "--dtype", "fp8",
            "--stages", "wgmma_fp8_swapab@BM=16,wgmma_fp8_persistent", "-q"]  # fmt: skip
    r = CliRunner(env={"COLUMNS": "200"}).invoke(cli, args)
    assert r.exit_code == 0, r.output
    ref = stages.reference_for("fp8").name
    assert seen == [(["wgmma_fp8_swapab@BM=16", "wgmma_fp8_persistent", ref], "e4m3", "tensor")]
    table = dispatch.load_user("FAKE H200")
    assert table is not None
    assert [(e.dtype, e.stage) for e in table.entries] == [("fp8", "wgmma_fp8_swapab")]
    assert table.entries[0].params == {"BM": 16}


def test_an_entry_of_a_stage_that_takes_its_width_from_the_shape_keeps_no_width():
    """A record of wgmma_fp8_fill names the width it launched (BN = 192 at this shape); the
    table's entry names the stage alone, so that every shape of the class takes its own width."""
    r = {**rec("wgmma_fp8_fill", 1024, 0.05, 95.0), "dtype": "fp8", "n": 6144}
    r["params"] = {**stages.BY_NAME["wgmma_fp8_fill"].params, "BN": 192, "GROUP_M": 4}
    (e,) = dispatch.winners([(r, "a.json")])
    assert (e.stage, e.params) == ("wgmma_fp8_fill", {"GROUP_M": 4})


def tile_rec(stage, m, n, k, pct, sms=132):  # type: ignore[no-untyped-def]
    """A bf16 record of a tile GEMM class (M > 64) that says what it launched on: the H200's
    SMs, peak and bandwidth."""
    params = dict(stages.select(stage, "bf16")[0].params)
    out = {"kind": "stage", "verified": True, "stage": stage, "dtype": "bf16", "m": m, "n": n,
           "k": k, "time_ms": 0.05, "params": params, "pct_of_reference": pct,
           "blocks_per_sm": 1, "peak_tflops": 989.4, "bandwidth_gbs": 4800.0}  # fmt: skip
    return {**out, "sm_count": sms} if sms else out


def wave_class() -> list:
    """Two grid shapes of M=257-512 N=>=8k K=1k-8k, two stages: 128 x 256 tiles at 91% and 84%
    of the reference, 128 x 192 tiles at 80% and 83%."""
    return [
        (tile_rec("wgmma_persistent", 320, 20480, 2560, 91.0), "g.json"),
        (tile_rec("wgmma_persistent", 448, 20480, 2560, 84.0), "g.json"),
        (tile_rec("wgmma_persistent@BN=192", 320, 20480, 2560, 80.0), "g.json"),
        (tile_rec("wgmma_persistent@BN=192", 448, 20480, 2560, 83.0), "g.json"),
    ]


def test_a_tile_class_keeps_the_wave_model_s_candidates_with_their_speed_per_busy_time():
    """128 x 256 tiles: 3 x 80 = 240 tiles on 132 SMs, 2 waves, busy 240 / 264; 4 x 80 = 320,
    3 waves, 320 / 396. Both shapes are compute-bound (320 x 20480 x 2560: 33.9 us at 989.4
    TFLOP/s against 24.9 us for its bytes at 4.8 TB/s), so the roof share is the busy share:
    91 / 0.909 and 84 / 0.808 have a geomean of 102.0. 128 x 192: 321 and 428 tiles, busy
    321 / 396 and 428 / 528 (both 0.811): 98.7 and 102.4, geomean 100.5."""
    (e,) = dispatch.winners(wave_class())
    assert (e.stage, e.params) == ("wgmma_persistent", {})  # the geomean pick, as before
    assert e.candidates == (
        dispatch.Candidate("wgmma_persistent", {}, 102.0, 1),
        dispatch.Candidate("wgmma_persistent", {"BN": 192}, 100.5, 1),
    )
    persistent = stages.BY_NAME["wgmma_persistent"]
    assert dispatch.busy_at(persistent, 320, 20480, 132, 1) == pytest.approx(240 / 264)
    assert dispatch.busy_at(persistent, 448, 20480, 132, 1) == pytest.approx(320 / 396)


def test_the_wave_model_takes_the_tiles_that_fill_the_sms_at_each_shape():
    """At 512 x 11008, 128 x 256 tiles are 4 x 43 = 172: 1.30 waves, busy 172 / 264 = 0.65
    (102.0 x 0.65 = 66.5), where 128 x 192 ones are 4 x 58 = 232, busy 0.88 (88.3). At
    512 x 14336 the 256-wide tiles fill 0.85 against 0.76: the class's pick runs."""
    (e,) = dispatch.winners(wave_class())
    table = dispatch.Table(H200, "user.json", (e,))
    pick = dispatch.resolve(512, 11008, 4096, "bf16", [table], H200)
    assert pick.stage.name == "wgmma_persistent@BN=192" and pick.stage.tile == (128, 192)
    assert pick.source.startswith(
        "the wave model at 512x11008x4096 on 132 SMs: wgmma_persistent@BN=192, 100.5% of the "
        "reference per unit of roof share x 0.88 of its roofline here = 88.3, the best of 2 "
        "candidates (the class's geomean pick, wgmma_persistent: "
    )
    assert dispatch.resolve(512, 14336, 4096, "bf16", [table], H200).stage.name == (
        "wgmma_persistent"
    )
    from rooflinecli.present.document import pick_line

    assert pick.wave_model and pick_line(pick) == (
        "best: wgmma_persistent@BN=192 (class M=257-512 N=>=8k K=1k-8k, the wave model's "
        "candidate for this shape; table user.json)"
    )


def test_no_wave_model_at_decode_batches_or_without_the_sm_count():
    """M <= 64 (the decode stages' batches: their bytes, not waves of tiles, set the time),
    records that do not say the SMs they ran on, and a seed from documents outside the grid,
    keep the class's pick alone."""
    assert dispatch.DECODE_M_TOP == 64
    decode = [
        (tile_rec("wgmma_swapab@BM=64", 56, 20480, 2560, 90.0), "g.json"),
        (tile_rec("wgmma_swapab@BM=64,BN=256", 56, 20480, 2560, 88.0), "g.json"),
    ]
    (e,) = dispatch.winners(decode)
    assert e.candidates == ()
    unsaid = [({k: v for k, v in r.items() if k != "sm_count"}, d) for r, d in wave_class()]
    (e,) = dispatch.winners(unsaid)
    assert e.candidates == ()
    # the seed's documents outside the grid (one shape a class or so) give none either
    (e,) = dispatch.winners(wave_class(), candidates=False)
    assert e.candidates == ()


def test_a_pick_at_a_pitch_its_twin_takes_runs_as_measured():
    """N = 11001 is no multiple of 8: the entry's TMA stage does not run it as it is, so the
    wave model stands aside and the nearest class that runs it decides, as without candidates."""
    (e,) = dispatch.winners(wave_class())
    with_model = dispatch.resolve(512, 11001, 4096, "bf16", [dispatch.Table(H200, "t", (e,))], H200)
    plain = replace(e, candidates=())
    without = dispatch.resolve(512, 11001, 4096, "bf16", [dispatch.Table(H200, "t", (plain,))],
                               H200)  # fmt: skip
    assert with_model.stage.name == without.stage.name
    assert "wave model" not in with_model.source


def test_candidates_survive_the_shipped_toml_and_the_user_s_json(tmp_path, monkeypatch):
    (e,) = dispatch.winners(wave_class())
    text = dispatch.to_toml(H200, "h200-sxm", [e], "header")
    assert 'candidates = [\n  { stage = "wgmma_persistent", params = {}, efficiency = 102.0, ' \
           "blocks_per_sm = 1 },\n" in text  # fmt: skip
    path = tmp_path / "t.toml"
    path.write_text(text)
    _names, table = dispatch.load_toml(path)
    assert table.entries == (e,)
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    dispatch.save_user(H200, [e])
    user = dispatch.load_user(H200)
    assert user is not None and user.entries == (e,)


def test_a_candidate_with_parameters_its_stage_lacks_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    (tmp_path / "dispatch").mkdir()
    body = ('{"pick": [{"dtype": "bf16", "class": "M=257-512 N=>=8k K=1k-8k", "stage": '
            '"wgmma_persistent", "candidates": [{"stage": "wgmma_persistent", "efficiency": 90, '
            '"params": {"NOPE": 1}}]}]}')  # fmt: skip
    (tmp_path / "dispatch" / "nvidia-h200.json").write_text(body)
    with pytest.raises(RooflineError, match=r"candidate wgmma_persistent: stage "
                       r"wgmma_persistent has no parameter\(s\) NOPE"):  # fmt: skip
        dispatch.load_user(H200)


@pytest.mark.parametrize(
    "candidates",
    [
        '[{"stage": "wgmma_persistent"}]',
        '[{"stage": "wgmma_persistent", "efficiency": -1}]',
        '[{"stage": "wgmma_persistent", "efficiency": 90, "blocks_per_sm": 0}]',
        '{"stage": "wgmma_persistent", "efficiency": 90}',
    ],
)
def test_a_bad_candidate_is_one_line(tmp_path, monkeypatch, candidates):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    (tmp_path / "dispatch").mkdir()
    body = ('{"pick": [{"dtype": "bf16", "class": "M=257-512 N=>=8k K=1k-8k", "stage": '
            f'"wgmma_persistent", "candidates": {candidates}}}]}}')  # fmt: skip
    (tmp_path / "dispatch" / "nvidia-h200.json").write_text(body)
    with pytest.raises(RooflineError, match="a candidate: stage, efficiency > 0"):
        dispatch.load_user(H200)


def test_the_wave_model_s_check_in_the_docs_is_what_the_script_makes_of_the_documents():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    docs = sorted(str(p) for p in (root / "benchmarks" / "results").glob("*.json.gz"))
    made = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "dispatch_check.py"), *docs],
        capture_output=True, text=True, check=True, cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    ).stdout  # fmt: skip
    page = (root / "docs" / "dispatch.md").read_text()
    block = page.split("<!-- dispatch_check:begin")[1].split("-->", 1)[1]
    assert block.split("<!-- dispatch_check:end -->")[0].strip() == made.strip()
    # the wave model carries better than the class's pick off the grid, on both GPUs
    for line in made.split("Shapes off the grid")[1].splitlines():
        if "| M > 64 |" in line:
            plain, model = (float(x) for x in line.split("|")[4:6])
            assert model > plain, line


def test_a_candidate_of_another_precision_is_never_run():
    """A hand-edited table whose candidate is an FP32-only stage in a bf16 entry: the wave model
    passes it over."""
    (e,) = dispatch.winners(wave_class())
    odd = dispatch.Candidate("serpentine_ffma", {}, 500.0, 1)
    table = dispatch.Table(H200, "t", (replace(e, candidates=(odd, *e.candidates)),))
    pick = dispatch.resolve(512, 11008, 4096, "bf16", [table], H200)
    assert pick.stage.name == "wgmma_persistent@BN=192"
