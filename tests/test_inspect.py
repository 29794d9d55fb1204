"""`roofline inspect`: occupancy by hand, the SASS loop finder, and the seed's SASS claims.

The seed (chapter 10) says the naive kernel's main loop has 2 LDG per FFMA and the 4x4 thread
tile 8 LDG : 16 FFMA per k (LDG:FFMA from 2:1 to 1:2), compiled for sm_90a. These tests compile
the real kernels with NVRTC and disassemble them with nvdisasm (both from PyPI, no GPU).
"""

import json

import pytest

from rooflinecli.core import occupancy
from rooflinecli.core.specs import resolve
from rooflinecli.errors import RooflineError
from rooflinecli.stages import gemm as stages
from rooflinecli.stages import sass
from rooflinecli.stages.inspect import inspect_stage, ratio

H100 = occupancy.SmLimits.from_spec(resolve("h100-sxm5"))


# --------------------------------------------------------------------------- occupancy by hand


def test_limits_from_the_h100_spec():
    assert (H100.cc, H100.registers_per_sm, H100.max_warps) == (90, 65536, 64)
    assert (H100.smem_per_sm_bytes, H100.smem_per_block_bytes) == (233472, 232448)


def test_32_registers_256_threads_fills_the_sm():
    # 32 regs x 32 lanes = 1024 per warp (a multiple of 256); a sub-partition has 65536/4 =
    # 16384 registers: 16 warps, 64 on the SM: 64 / 8 warps per block = 8 blocks.
    # Warp slots: 2048/32 = 64 warps / 8 = 8 blocks. Shared memory: 0 + 1 KiB reserved -> 228.
    occ = occupancy.theoretical(H100, threads=256, registers=32, smem_bytes=0)
    assert occ.regs_per_warp == 1024
    assert (occ.limit_registers, occ.limit_warps, occ.limit_smem, occ.limit_blocks) == (
        8, 8, 228, 32,
    )  # fmt: skip
    assert occ.blocks_per_sm == 8 and occ.warps_per_sm == 64
    assert occ.occupancy == 1.0
    assert occ.limiters == ["registers", "warps"]


def test_138_registers_256_threads_one_block():
    # 138 regs -> 138 x 32 = 4416, rounded up to 256: 4608 per warp (= 144 regs a thread).
    # 16384 / 4608 = 3.56 -> 3 warps per sub-partition, 12 on the SM: 12 / 8 = 1 block of 256
    # threads (the same as 65536 / (144 x 256) = 1.78 -> 1). 8 warps of 64: 12.5%.
    occ = occupancy.theoretical(H100, threads=256, registers=138, smem_bytes=0)
    assert occ.regs_per_warp == 4608
    assert occ.blocks_per_sm == 1 and occ.warps_per_sm == 8
    assert occ.occupancy == pytest.approx(0.125)
    assert occ.limiters == ["registers"]


def test_56_registers_half_occupancy():
    # 56 x 32 = 1792 (= 7 x 256) per warp; 16384 / 1792 = 9.1 -> 9 warps per sub-partition,
    # 36 on the SM, 36 / 8 = 4 blocks = 32 warps: 50%.
    occ = occupancy.theoretical(H100, threads=256, registers=56, smem_bytes=0)
    assert (occ.blocks_per_sm, occ.warps_per_sm) == (4, 32)
    assert occ.occupancy == pytest.approx(0.5)


def test_shared_memory_limit():
    # 48 KiB + 1 KiB reserved = 50176 bytes (a multiple of 128); 233472 / 50176 = 4.65 -> 4
    # blocks of 4 warps: 16 of 64 warps = 25%. Registers (32) would allow 16 blocks.
    occ = occupancy.theoretical(H100, threads=128, registers=32, smem_bytes=48 * 1024)
    assert occ.smem_per_block == 50176
    assert occ.limit_smem == 4 and occ.limit_registers == 16
    assert occ.blocks_per_sm == 4 and occ.occupancy == pytest.approx(0.25)
    assert occ.limiters == ["smem"]


def test_shared_memory_granularity_and_reserve():
    # 1 byte + 1024 reserved -> rounded up to 1152 (9 x 128)
    occ = occupancy.theoretical(H100, threads=32, registers=16, smem_bytes=1)
    assert occ.smem_per_block == 1152


def test_block_slots_limit():
    # one warp of 16 registers: registers allow 128 blocks, warp slots 64, block slots 32.
    occ = occupancy.theoretical(H100, threads=32, registers=16, smem_bytes=0)
    assert occ.blocks_per_sm == 32 and occ.warps_per_sm == 32
    assert occ.limiters == ["blocks"]


def test_blocks_that_cannot_launch():
    # 228 KiB + 1 KiB reserved > 227 KiB + 1 KiB a block may have
    assert occupancy.theoretical(H100, 128, 32, 228 * 1024).blocks_per_sm == 0
    # 255 registers (8192 a warp) x 32 warps = 262144 > 65536 registers a block may have
    assert occupancy.theoretical(H100, 1024, 255, 0).blocks_per_sm == 0
    assert occupancy.theoretical(H100, 1025, 16, 0).blocks_per_sm == 0


def test_a100_shared_memory():
    # A100: 164 KiB per SM. 100 KiB + 1 KiB = 103424 bytes: one block fits (167936 / 103424).
    a100 = occupancy.SmLimits.from_spec(resolve("a100-sxm4-80gb"))
    assert occupancy.theoretical(a100, 256, 64, 100 * 1024).limit_smem == 1


# --------------------------------------------------------------------------- SASS parsing

LISTING = """
//--------------------- .text.k --------------------------
        .section        .text.k,"ax",@progbits
k:
.text.k:
        /*0000*/                   S2R R0, SR_TID.X ;
.L_x_0:
        /*0010*/                   LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ;
        /*0020*/                   LDS.128 R8, [R0] ;
.L_x_1:
        /*0030*/                   SYNCS.PHASECHK.TRANS64 P0, [UR4], R1 ;
        /*0040*/              @!P0 BRA `(.L_x_1) ;
        /*0050*/                   FFMA R9, R4, R8, R9 ;
        /*0060*/                   HGMMA.64x128x16.F32 R24, gdesc[UR8], R24 ;
        /*0070*/                   FFMA R10, R5, R8, R10 ;
        /*0080*/               @P1 BRA `(.L_x_0) ;
.L_x_2:
        /*0090*/                   FFMA R1, R1, R1, R1 ;
        /*00a0*/                   FFMA R1, R1, R1, R1 ;
        /*00b0*/                   FFMA R1, R1, R1, R1 ;
        /*00c0*/               @P2 BRA `(.L_x_2) ;
        /*00d0*/                   STG.E desc[UR4][R2.64], R9 ;
        /*00e0*/                   EXIT ;
.L_x_3:
        /*00f0*/                   BRA `(.L_x_3);
//--------------------- .text.other --------------------------
        .section        .text.other,"ax",@progbits
        /*0000*/                   EXIT ;
"""


def test_parse_functions_labels_and_branches():
    funcs = sass.parse(LISTING)
    assert set(funcs) == {"k", "other"}
    fn = funcs["k"]
    assert len(fn.instrs) == 16
    assert fn.labels[".L_x_0"] == 0x10 and fn.labels[".L_x_3"] == 0xF0
    bra = [i for i in fn.instrs if i.base == "BRA"]
    assert [b.target for b in bra] == [".L_x_1", ".L_x_0", ".L_x_2", ".L_x_3"]
    assert bra[0].predicate == "@!P0"
    loops = sass.loops(fn)
    assert [(lp.start, lp.end) for lp in loops] == [(0x10, 0x80), (0x30, 0x40), (0x90, 0xC0),
                                                    (0xF0, 0xF0)]  # fmt: skip


def test_main_loop_skips_spin_waits_and_prefers_tensor_cores():
    # the barrier spin-wait (.L_x_1) does no math, so the loop around it counts as innermost;
    # it has an HGMMA, which beats the 3-FFMA loop after it
    rep = sass.analyze(LISTING, "k")
    assert rep.main_loop is not None and rep.main_loop.label == ".L_x_0"
    assert rep.loop["HGMMA"] == 1 and rep.loop["FFMA"] == 2 and rep.loop["LDG"] == 1
    assert rep.loop_widths == {"LDG.128": 1, "LDS.128": 1}
    # 2 FFMA (1 each) + 64x128x16 / 128 threads of a warpgroup
    assert rep.loop_macs_per_thread == 2 + 64 * 128 * 16 / 128
    assert rep.kernel["FFMA"] == 5 and rep.kernel["STG"] == 1
    assert rep.loops == 4


OUT_OF_LINE = """
        .section        .text.w,"ax",@progbits
.L_x_0:
        /*0000*/                   HGMMA.64x128x16.F32 R24, gdesc[UR4], R24 ;
.L_x_1:
        /*0010*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R1 ;
        /*0020*/              @!P0 BRA `(.L_x_9) ;
        /*0030*/                   HGMMA.64x128x16.F32 R24, gdesc[UR6], R24 ;
        /*0040*/                   HGMMA.64x128x16.F32 R88, gdesc[UR6], R88 ;
        /*0050*/                   HGMMA.64x128x16.F32 R88, gdesc[UR6], R88 ;
        /*0060*/               @P1 BRA `(.L_x_0) ;
        /*0070*/                   FFMA R1, R24, R2, R3 ;
        /*0080*/                   FFMA R1, R25, R2, R3 ;
        /*0090*/                   EXIT ;
.L_x_9:
        /*00a0*/                   SYNCS.PHASECHK.TRANS64 P0, [UR4], R1 ;
        /*00b0*/               @!P0 BRA `(.L_x_9) ;
        /*00c0*/                   BRA `(.L_x_1) ;
"""


def test_out_of_line_slow_path_is_not_the_main_loop():
    # the barrier's slow path after EXIT jumps back into the loop: the region 0x10..0xc0 is
    # not a loop (it overlaps the real one only partly) although it holds more math
    fn = sass.parse(OUT_OF_LINE)["w"]
    assert [(lp.start, lp.end) for lp in sass.loops(fn)] == [(0, 0x60), (0x10, 0xC0), (0xA0, 0xB0)]
    assert [(lp.start, lp.end) for lp in sass.structured(sass.loops(fn))] == [
        (0, 0x60), (0xA0, 0xB0),
    ]  # fmt: skip
    rep = sass.analyze(OUT_OF_LINE, "w")
    assert rep.main_loop is not None and rep.main_loop.start == 0
    # 4 HGMMAs of k=16 over 2 accumulator tiles (R24, R88): 32 k steps per iteration
    assert rep.loop_gmma_k_steps == 32


def test_analyze_unknown_function():
    with pytest.raises(RooflineError, match="no function nope"):
        sass.analyze(LISTING, "nope")


def test_hmma_macs():
    text = LISTING.replace(
        "HGMMA.64x128x16.F32 R24, gdesc[UR8], R24", "HMMA.16816.F32 R4, R8, R12, R4"
    )
    rep = sass.analyze(text, "k")
    assert rep.loop_macs_per_thread == 2 + 16 * 8 * 16 / 32


def test_ratio_in_lowest_terms():
    assert ratio(32, 16) == "2:1" and ratio(16, 32) == "1:2" and ratio(14, 512) == "7:256"
    assert ratio(0, 16) is None and ratio(3, 0) is None


def test_nvdisasm_env_var_must_point_at_a_program(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_NVDISASM", str(tmp_path / "missing"))
    with pytest.raises(RooflineError, match="ROOFLINE_NVDISASM"):
        sass.find_nvdisasm()


def test_nvdisasm_found_in_the_wheel(monkeypatch):
    monkeypatch.delenv("ROOFLINE_NVDISASM", raising=False)
    assert sass.find_nvdisasm().name == "nvdisasm"


# --------------------------------------------------------------------------- the seed's claims

SPEC = resolve("h100-sxm5")


SEED_STAGES = ("naive_xcol", "thread_tile_4x4", "thread_tile_8x8")
# what the tests reading `inspected` compile and disassemble (prebuilt once a session: conftest)
SEED = pytest.mark.prebuild(*(stages.BY_NAME[name] for name in SEED_STAGES), sass=True)


@pytest.fixture(scope="module")
def inspected(prebuilt):
    prebuilt.wait(SEED)  # in the session's cache (conftest), not the user's
    return {name: inspect_stage(stages.BY_NAME[name], "sm_90a", SPEC) for name in SEED_STAGES}


@SEED
def test_naive_loop_has_two_ldg_per_ffma(inspected):
    r = inspected["naive_xcol"]
    assert r["error"] is None
    assert r["ldg_ffma"] == "2:1"
    assert r["loop_ldg"] == 2 * r["loop_ffma"]
    assert r["ldg_per_k"] == 2 and r["ffma_per_k"] == 1
    assert r["k_per_iter"] == r["loop_ffma"]  # one FFMA per k: the unroll factor


@SEED
def test_thread_tile_4x4_loop_has_8_ldg_per_16_ffma(inspected):
    r = inspected["thread_tile_4x4"]
    assert r["ldg_ffma"] == "1:2"
    assert r["ldg_per_k"] == 8 and r["ffma_per_k"] == 16
    assert r["loop_ffma"] == 16 * r["k_per_iter"]


@SEED
def test_exercise_3_registers_and_occupancy(inspected):
    # why 4x4 and not 8x8: the 8x8 tile needs far more registers, so fewer warps fit
    small, big = inspected["thread_tile_4x4"], inspected["thread_tile_8x8"]
    assert big["registers"] > 2 * small["registers"]
    assert big["occupancy_pct"] < small["occupancy_pct"]
    assert big["ldg_per_k"] == 16 and big["ffma_per_k"] == 64
    assert small["spill_bytes"] == 0 and big["spill_bytes"] == 0
    assert big["limited_by"] == "registers"


@SEED
def test_naive_occupancy_on_h100(inspected):
    r = inspected["naive_xcol"]
    # 32 registers x 256 threads, no shared memory: the hand-computed case above
    assert r["registers"] == 32 and r["smem_bytes"] == 0
    assert r["blocks_per_sm"] == 8 and r["occupancy_pct"] == 100.0


# --------------------------------------------------------------------------- the command


@pytest.mark.prebuild(stages.BY_NAME["naive_xcol"], sass=True)
def test_cli_inspect_naive(runner):
    res = runner.invoke(
        __import__("rooflinecli.cli", fromlist=["cli"]).cli,
        ["inspect", "gemm", "--stage", "naive_xcol", "--spec", "h100-sxm5"],
    )
    assert res.exit_code == 0, res.output
    out = res.output
    assert "naive_xcol" in out and "sm_90a" in out
    assert "2:1" in out and "100.0%" in out
    row = next(ln for ln in out.splitlines() if "naive_xcol" in ln and "2:1" in ln)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[2:4] == ["16", "2"]  # k/iter, LDG/k
    assert "thread_tile_4x4" not in out


def test_cli_inspect_takes_a_variant_as_run_gemm_does(runner):
    from rooflinecli.cli import cli

    args = ["inspect", "gemm", "--stage", "gemv_splitk@NUM_THREADS=256", "--spec", "h100-sxm5"]
    res = runner.invoke(cli, [*args, "--format", "json"])
    assert res.exit_code == 0, res.output
    (rec,) = json.loads(res.stdout)["records"]
    assert rec["stage"] == "gemv_splitk@NUM_THREADS=256" and rec["threads"] == 256


@pytest.mark.prebuild(stages.BY_NAME["naive_xcol"], stages.BY_NAME["thread_tile_4x4"], sass=True)
def test_cli_inspect_json(runner):
    from rooflinecli.cli import cli

    res = runner.invoke(
        cli,
        ["inspect", "gemm", "--stage", "naive_xcol,thread_tile_4x4", "--arch", "sm_90a",
         "--spec", "h100-sxm5", "--format", "json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["schema"] == "roofline.inspect/1" and doc["arch"] == "sm_90a"
    recs = {r["stage"]: r for r in doc["records"]}
    assert recs["naive_xcol"]["ldg_ffma"] == "2:1"
    assert recs["thread_tile_4x4"]["ldg_ffma"] == "1:2"
    assert recs["thread_tile_4x4"]["sass"]["main_loop"]["mix"]["FFMA"] > 0


@pytest.mark.prebuild(stages.BY_NAME["naive_xcol"], sass=True)
def test_cli_inspect_csv_and_markdown(runner):
    from rooflinecli.cli import cli

    res = runner.invoke(
        cli, ["inspect", "gemm", "--stage", "naive_xcol", "--spec", "h100-sxm5", "--format", "csv"]
    )
    assert res.exit_code == 0, res.output
    header, row = res.output.splitlines()[:2]
    assert "ldg_ffma" in header.split(",") and "2:1" in row.split(",")
    res = runner.invoke(
        cli, ["inspect", "gemm", "--stage", "naive_xcol", "--spec", "h100-sxm5",
              "--format", "markdown"],
    )  # fmt: skip
    assert res.exit_code == 0 and "| naive_xcol |" in res.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--stage", "nope"], "stage 'nope' is unknown"),
        (["--stage", "cublas"], "library call"),
        (["--stage", "gemv_shift@BM=x"], "--stage: 'gemv_shift@BM=x': write stage@P=V,Q=W"),
        (["--stage", "gemv_shift,,gemv_splitk"], "--stage: empty item in"),
        (["--stage", "gemv_naive@NUM_THREADS=256"], "gemv_naive runs with fixed parameters"),
        (["--arch", "sm_9x"], "bad --arch"),
        (["--arch", "sm_999"], "bad --arch sm_999: NVRTC 1"),
    ],
)
def test_cli_inspect_errors(runner, args, message):
    from rooflinecli.cli import cli

    res = runner.invoke(cli, ["inspect", "gemm", "--spec", "h100-sxm5", *args])
    assert res.exit_code == 2
    assert message in res.output
    assert len(res.stderr.strip().splitlines()) == 1 and res.stdout == ""


# --------------------------------------------------------------------------- progress, widths


@pytest.mark.prebuild(stages.BY_NAME["naive_xcol"], arch="sm_80", dtype="fp32", sass=True)
def test_each_stage_is_two_steps_its_build_and_its_listing():
    from rooflinecli.stages.inspect import inspect_stages

    steps: list[str] = []
    chosen = [stages.BY_NAME["naive_xcol"], stages.BY_NAME["wgmma_ws"]]
    recs = inspect_stages(chosen, "sm_80", SPEC, step=steps.append)
    assert recs[0]["error"] is None and recs[0]["ldg_ffma"] == "2:1"
    assert recs[1]["error"] == "needs compute capability 9.0"
    assert len(steps) == 4
    assert "compiled naive_xcol" in steps and "disassembled naive_xcol" in steps
    assert sum("wgmma_ws" in s for s in steps) == 2  # nothing built, nothing listed: still 2


def _terminal(monkeypatch):
    """A terminal for standard error (where the bar goes); tables still go to the runner."""
    import io

    from rich.console import Console

    from rooflinecli.present import table

    buf = io.StringIO()
    bar = Console(file=buf, force_terminal=True, width=120, color_system=None)
    real = table.console
    monkeypatch.setattr(table, "console", lambda stderr=False: bar if stderr else real())
    return buf


@SEED
def test_inspect_shows_its_progress_on_a_terminal_only(monkeypatch):
    from click.testing import CliRunner

    from rooflinecli.cli import cli

    runner = CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1", "TERM": "xterm"})  # not dumb
    args = ["inspect", "gemm", "--stage", ",".join(SEED_STAGES), "--spec", "h100-sxm5"]
    res = runner.invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert res.stderr == ""  # no terminal: no bar
    drawn = _terminal(monkeypatch)
    res = runner.invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert "inspect gemm:" in drawn.getvalue() and "/6" in drawn.getvalue()
    assert "naive_xcol" in res.stdout  # the tables, as ever
    drawn.truncate(0)
    assert runner.invoke(cli, [*args, "--quiet"]).exit_code == 0
    assert drawn.getvalue() == ""


def _rows(text: str) -> list[list[str]]:
    """The cells of each body line of every table in `text`."""
    return [
        [c.strip() for c in line.strip()[1:-1].split("│")]
        for line in text.splitlines()
        if line.startswith("│")
    ]


@SEED
@pytest.mark.parametrize("columns", [80, 100, 200])
def test_no_number_is_split_over_lines_nor_a_stage_name_cut(columns):
    from click.testing import CliRunner

    from rooflinecli.cli import cli

    env = {"COLUMNS": str(columns), "NO_COLOR": "1", "TERM": "dumb"}
    args = ["inspect", "gemm", "--stage", ",".join(SEED_STAGES), "--spec", "h100-sxm5"]
    res = CliRunner(env=env).invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert max(map(len, res.stdout.splitlines())) <= columns
    rows = _rows(res.stdout)
    for cells in rows:
        if not cells[0]:  # a line that continues a row: only words wrap onto it, no number
            assert not any(c[:1].isdigit() for c in cells), cells
        else:
            assert cells[0] in SEED_STAGES
    doc = json.loads(CliRunner(env=env).invoke(cli, [*args, "--format", "json"]).stdout)
    for rec in doc["records"]:  # every number of the row, whole, beside its stage
        mine = [c for cells in rows if cells[0] == rec["stage"] for c in cells]
        for field in ("registers", "smem_bytes", "loop_instructions", "kernel_instructions"):
            assert f"{rec[field]:,}" in mine, (rec["stage"], field)
        assert f"{rec['occupancy_pct']:.1f}%" in mine
