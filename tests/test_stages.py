"""The stage registry against the kernels/ folder, and every kernel through NVRTC on the CPU."""

import re

import pytest
from tiers import MATRIX, primary_dtype, tier

from rooflinecli.core import occupancy
from rooflinecli.core.specs import resolve
from rooflinecli.errors import RooflineError
from rooflinecli.paths import data_dir
from rooflinecli.stages import attention, compiler, fp8, token
from rooflinecli.stages import gemm as stages

KERNELS = data_dir("kernels")
KERNEL_STAGES = [s for s in stages.STAGES if not s.reference]


def test_every_kernel_file_has_an_entry_and_back():
    files = {p.name for p in KERNELS.glob("*.cu")}
    # attention stages have their own registry beside this one (tests/test_attention_stages.py)
    # and so have the FP8 stages (rooflinecli/stages/fp8.py, tests/test_fp8.py) and the token
    # stage (rooflinecli/stages/token.py, tests/test_token.py)
    used = {s.file for s in KERNEL_STAGES} | {s.file for s in attention.ATTENTION_STAGES}
    used |= {fp8.FILE} | {s.file for s in token.TOKEN_STAGES}
    assert files == used, (
        f"files without entries: {files - used}; entries without files: {used - files}"
    )


def test_files_are_numbered_worklog_style():
    for s in KERNEL_STAGES:
        assert re.fullmatch(r"\d\d_[a-z0-9_]+\.cu", s.file), s.file


def test_names_unique_and_entry_points_in_files():
    names = [s.name for s in stages.STAGES] + attention.stage_names()
    assert len(names) == len(set(names))
    for s in KERNEL_STAGES:
        src = (KERNELS / s.file).read_text()
        # attributes may come first: __launch_bounds__(...), or a macro (CLUSTER_DIMS)
        attrs = r"(?:[A-Z_]+\s+)?(?:__launch_bounds__\([^)]*\)\s+)?"
        pattern = rf'extern "C" __global__ void\s+{attrs}{s.entry}\s*\('
        assert re.search(pattern, src), s.entry


def test_every_dtype_has_a_reference():
    for s in KERNEL_STAGES:
        for d in s.all_dtypes:
            assert stages.reference_for(d).reference


@pytest.mark.parametrize("stage", KERNEL_STAGES, ids=lambda s: s.name)
def test_parameters_are_consistent(stage):
    bx, by = stage.threads
    assert bx * by <= 1024
    rows, cols = stage.tile
    assert rows >= 1 and cols >= 1
    for key, val in stage.params.items():
        assert re.fullmatch(r"[A-Z][A-Z0-9_]*", key) and isinstance(val, int)
    grid, block, smem = stage.launch(1000, 333, sm_count=132)
    assert smem == stage.smem_bytes
    tiles = -(-1000 // rows) * -(-333 // cols)
    if stage.persistent_blocks_per_sm:  # one block per SM at most, each walking the tiles
        cap = stage.persistent_blocks_per_sm * 132
        if stage.persistent_max_blocks:
            cap = min(cap, stage.persistent_max_blocks)
        # 8 row tiles: whole pairs when clustered; stream-K (fill) cuts them over every block
        assert grid == (cap if stage.persistent_fill else min(tiles, cap), 1, 1)
        assert grid[0] % stage.cluster_rows == 0
        with pytest.raises(RooflineError, match="needs the SM count"):
            stage.launch(1000, 333)
        return
    # the grid covers the output: blocks x tile >= shape, along the right axes
    along_m, along_n = (grid[0], grid[1]) if stage.x_is_row else (grid[1], grid[0])
    assert along_m * rows >= 1000 and along_n * cols >= 333
    assert (along_m - 1) * rows < 1000 and (along_n - 1) * cols < 333


def test_selection():
    assert [s.name for s in stages.select("naive_xcol", "fp32")] == ["naive_xcol", "cublas"]
    with pytest.raises(RooflineError, match="unknown stage 'nope'"):
        stages.select("nope", "fp32")
    everything = stages.select(None, "fp32")
    assert everything[-1].reference and everything[0].name == "naive_xcol"


def test_seed_by_instruction_intensities():
    assert stages.BY_NAME["naive_xcol"].ai_instruction == 0.25
    assert stages.BY_NAME["naive_xrow"].ai_instruction == 0.25
    assert stages.BY_NAME["thread_tile_4x4"].ai_instruction == 1.0
    assert stages.BY_NAME["thread_tile_8x8"].ai_instruction == 2.0


def only_the_element_type_differs(stage: stages.Stage) -> bool:
    """The stage's dtypes build from the same source with the same options but for the
    element-type macro (ELEM_BF16, ELEM_FP32): each dtype's code goes through NVRTC and ptxas in
    the sm_90a builds, and what an sm_80 build adds, ptxas for the other target, meets the same
    tiles, loops and registers in each dtype but for the loads and conversions of elements."""
    sm80 = stage.for_arch("sm_80")
    other = {
        tuple(o for o in compiler.options_for(sm80, "sm_80", d) if not o.startswith("-DELEM_"))
        for d in stage.all_dtypes
    }
    return len(other) == 1


def dtypes_for(stage: stages.Stage, arch: str) -> tuple[str, ...]:
    """Every dtype for sm_90a, the target the suite's numbers come from; for the second target
    the stage's own dtype alone when the others differ only by the element-type macro."""
    if arch == "sm_90a" or not only_the_element_type_differs(stage):
        return stage.all_dtypes
    return (stage.dtype,)


# every stage for every target it runs on, with the parameters the runner uses there (for_arch):
# on sm_90a in each dtype it builds for, on sm_80 in its own (dtypes_for); built in conftest;
# the first tier (make test) builds the sm_90a primary dtype, the rest is `matrix` (tests/tiers.py)
CASES = [
    pytest.param(
        s.for_arch(arch),
        arch,
        d,
        marks=[
            pytest.mark.prebuild(s.for_arch(arch), arch=arch, dtype=d),
            *tier(arch == "sm_90a" and d == primary_dtype(s.all_dtypes, s.dtype)),
        ],
    )
    for s in KERNEL_STAGES
    for arch in ("sm_90a", "sm_80")
    for d in dtypes_for(s, arch)
    if compiler.cc_of_arch(arch) >= s.min_cc
]


def test_the_dtypes_of_a_stage_differ_only_by_the_element_type():
    """What lets sm_80 build one dtype a stage (dtypes_for): true of every stage today; a stage
    whose dtypes differ otherwise keeps them all on sm_80 (the rule above holds either way)."""
    multi = [s for s in KERNEL_STAGES if len(s.all_dtypes) > 1]
    assert multi and all(only_the_element_type_differs(s) for s in multi)
    assert dtypes_for(stages.BY_NAME["mma_sync"], "sm_80") == ("fp16",)
    assert dtypes_for(stages.BY_NAME["mma_sync"], "sm_90a") == ("fp16", "bf16")


def test_selection_of_variants():
    """--stages takes a variant as `roofline tune` and the records name it: stage@P=V,Q=W (the
    items after '@' that hold '=' are its params); its tile, shared memory and workspace follow
    the params, and a variant equal to the registry's params is the registry's stage."""
    got = stages.select("wgmma_streamk@BN=128,STAGES=6,mma_sync,wgmma_persistent@BN=256", "bf16")
    assert [s.name for s in got] == [
        "wgmma_streamk@BN=128,STAGES=6", "mma_sync", "wgmma_persistent", "cublas_hgemm"
    ]  # fmt: skip
    sk = got[0]
    assert sk.tile == (128, 128) and sk.params["BN"] == 128 and sk.params["STAGES"] == 6
    # 6 x (128 + 128) x 64 x 2 ring + 2 x 2 x 8 KiB staging + 1 KiB alignment
    assert sk.smem_bytes == 196608 + 32768 + 1024 == 230400
    assert sk.workspace_bytes is not None  # one 64 x 128 fp32 partial + a flag per consumer
    assert sk.workspace_bytes(1000, 1016, 1032, 132) == 132 * 2 * (64 * 128 * 4 + 4)
    assert got[2] is stages.BY_NAME["wgmma_persistent"]
    small = stages.select("mma_multistage@BM=64,BN=64,WM=32,WN=32,STAGES=3", "fp16")[0]
    assert small.threads == (128, 1) and small.smem_bytes == 3 * (64 * 32 + 32 * 64) * 2
    for bad, why in [
        ("BN=128,mma_sync", "follows no stage@P=V"),
        ("wgmma_persistent@BN=x", "integer values"),
        ("wgmma_persistent@NOPE=1", "no parameter"),
        ("nope@BN=1", "unknown stage 'nope'"),
    ]:
        with pytest.raises(RooflineError, match=why):
            stages.select(bad, "fp16")


@pytest.mark.parametrize(
    "variant",
    [
        "wgmma_streamk@BN=128",
        "mma_multistage@BM=64,BN=64,WM=32,WN=32,STAGES=3",
        "wgmma_persistent@BN=64",
        "wgmma_persistent@BN=192",
        "wgmma_cluster@BN=64,STAGES=8",
        "wgmma_cluster@BN=192",
        "wgmma_stagger@BN=192",
        "wgmma_streamk@BN=192",
    ],
)
@MATRIX  # tune variants: the second tier (tests/tiers.py)
def test_tile_variants_compile_without_spills(variant):
    """The WGMMA tiles of 64, 128 and 192 columns (m64n64k16, m64n128k16, m64n192k16 through
    wgmma_m64nNk16; a cluster pair dealing out one or three B boxes) and stage 22's small tile,
    whose scalar path holds a whole tile's chunks (GATHER): no spills, no stack."""
    stage = stages.select(variant, "bf16")[0]
    r = compiler.compile_stage(stage, "sm_90a", "bf16").resources
    assert r.spill_bytes == 0 and r.stack_frame_bytes == 0
    assert 0 < r.registers <= 255


@pytest.mark.parametrize("stage, arch, dtype", CASES, ids=lambda v: getattr(v, "name", v))
def test_compiles_with_nvrtc_without_spills(stage, arch, dtype):
    built = compiler.compile_stage(stage, arch, dtype)
    r = built.resources
    assert r.spill_bytes == 0, built.log
    assert r.stack_frame_bytes == 0, built.log
    assert 0 < r.registers <= 255


@pytest.mark.prebuild(stages.BY_NAME["thread_tile_4x4"], stages.BY_NAME["thread_tile_8x8"])
def test_seed_register_story_4x4_vs_8x8():
    # exercise 3: the 8x8 tile needs far more registers than the 4x4 (seed: 39 vs 114, nvcc 13.4)
    r4 = compiler.compile_stage(stages.BY_NAME["thread_tile_4x4"], "sm_90a").resources.registers
    r8 = compiler.compile_stage(stages.BY_NAME["thread_tile_8x8"], "sm_90a").resources.registers
    assert r8 > 2 * r4


def test_ptxas_report_parsing():
    log = (
        "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
        "ptxas info    : Function properties for k\n"
        "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
        "ptxas info    : Used 114 registers, used 1 barriers, 8192 bytes smem, 400 bytes cmem[0]\n"
    )
    r = compiler.parse_ptxas(log, "k")
    assert (r.registers, r.smem_static_bytes, r.stack_frame_bytes) == (114, 8192, 8)
    assert (r.spill_store_bytes, r.spill_load_bytes, r.spill_bytes) == (4, 12, 16)


def test_arch_for_cc():
    assert compiler.arch_for_cc("9.0") == "sm_90a"
    assert compiler.arch_for_cc("8.0") == "sm_80"
    assert compiler.arch_for_cc((8, 9)) == "sm_89"
    with pytest.raises(RooflineError):
        compiler.cc_of_arch("hopper")


def test_compile_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    s = stages.BY_NAME["naive_xcol"]
    first = compiler.compile_stage(s, "sm_90a")
    stamp = (tmp_path / "kernels").stat().st_mtime_ns
    files = sorted(p.name for p in (tmp_path / "kernels").iterdir())
    second = compiler.compile_stage(s, "sm_90a")
    assert first.cubin_path == second.cubin_path
    assert sorted(p.name for p in (tmp_path / "kernels").iterdir()) == files
    assert (tmp_path / "kernels").stat().st_mtime_ns == stamp


def sass_dtype(stage: stages.Stage) -> str:
    """The dtype whose SASS the claims are read from: bf16 where the stage builds it (the
    element-type path a stage's own fp16 or fp32 build leaves out), else its own; the first
    tier's one build of the stage (tests/tiers.py)."""
    return primary_dtype(stage.all_dtypes, stage.dtype)


# one build a stage: the claims are the stage's, not a dtype's, and the dtypes differ only by the
# element-type macro (test_the_dtypes_of_a_stage_differ_only_by_the_element_type); the fp16 and
# fp32 listings are read too, by the stage-specific tests below and test_decode's gemv cases
SASS_CASES = [
    pytest.param(s, sass_dtype(s), marks=pytest.mark.prebuild(s, dtype=sass_dtype(s), sass=True))
    for s in KERNEL_STAGES
]


def test_what_a_stage_claims_is_its_math_not_its_chapter():
    """The SASS claim and the roof come from the stage's own `math`: moving a stage to another
    chapter of the column changes neither."""
    from dataclasses import replace

    from rooflinecli.core import roofs

    for stage in stages.STAGES:
        moved = replace(stage, chapter=stage.chapter + 7)
        assert moved.sass_claims == stage.sass_claims == (() if stage.reference else (stage.math,))
        for dtype in stage.all_dtypes:
            assert roofs.math_instruction(moved, dtype) == roofs.math_instruction(stage, dtype)
        assert stage.math in roofs.MATH_INSTRUCTIONS
        assert (stage.math == "library") == stage.reference
    for astage in attention.ATTENTION_STAGES:
        assert astage.math in ("FFMA", "HMMA", "HGMMA")


@pytest.mark.parametrize("stage, dtype", SASS_CASES, ids=lambda v: getattr(v, "name", v))
def test_sass_holds_the_math_the_stage_claims(stage, dtype):
    """mma.sync stages show HMMA, WGMMA stages HGMMA, SIMT stages FFMA, in their main loop;
    and no stage falls back to a slower path (a WGMMA stage without HMMA, SIMT without either)."""
    from rooflinecli.stages import sass

    built = compiler.compile_stage(stage, "sm_90a", dtype)
    rep = sass.analyze_cubin(built.cubin_path, stage.entry)
    for opcode in stage.sass_claims:
        assert rep.loop[opcode] > 0, (stage.name, dict(rep.loop))
    if "HGMMA" in stage.sass_claims:
        assert rep.kernel["HMMA"] == 0
    if stage.sass_claims == ("FFMA",):
        assert rep.kernel["HMMA"] == 0 and rep.kernel["HGMMA"] == 0


@pytest.mark.prebuild(
    stages.BY_NAME["mma_tma_ws"].with_params({"CLUSTER_M": 2}), dtype="bf16", sass=True
)
@MATRIX  # a tune variant (CLUSTER_M=2)
def test_stage_23_pairs_of_blocks_share_b_by_multicast():
    """CLUSTER_M=2 (in stage 23's tune space): the grid's rows come in pairs (an odd count is
    rounded up), each block's B box is half the tile, and the SASS multicasts B and arrives on
    the peer's barriers, still without spills."""
    from rooflinecli.stages import sass

    base = stages.BY_NAME["mma_tma_ws"]
    pair = base.with_params({"CLUSTER_M": 2})
    assert (base.cluster_rows, pair.cluster_rows) == (1, 2)
    assert base.launch(600, 1016, 132)[0] == (4, 5, 1)  # 600 / 128 -> 5 row tiles
    assert pair.launch(600, 1016, 132)[0] == (4, 6, 1)  # a sixth, past M, completes the pair
    assert pair.launch(8192, 8192, 132)[0] == (32, 64, 1)
    built = compiler.compile_stage(pair, "sm_90a", "bf16")
    assert built.resources.spill_bytes == 0 and built.resources.stack_frame_bytes == 0
    fn = sass.parse(sass.disassemble(built.cubin_path))[pair.entry]
    ops = [i.opcode for i in fn.instrs]
    assert "UTMALDG.2D.MULTICAST" in ops and "UCGABAR_WAIT" in ops
    assert ops.count("SYNCS.ARRIVE.TRANS64.RED.A1T0") >= 1  # the remote arrival on `empty`


TMA_STAGES = [s for s in KERNEL_STAGES if s.params.get("TMA")]


def test_tma_stages_take_the_contracts_b_and_any_m():
    """Stages 23-28 read B row-major (K x N) as the contract gives it, so the runner charges them
    no transpose. TMA row strides are whole 16-byte units: A's rows are K long, B's and C's N
    long, so N and K must be multiples of 8 and M is free; other shapes are refused, saying so."""
    names = {s.name for s in TMA_STAGES}
    assert names == {
        "mma_tma_ws", "wgmma_tma", "wgmma_ws", "wgmma_persistent", "wgmma_persistent_fill",
        "wgmma_cluster", "wgmma_stagger", "wgmma_streamk", "wgmma_stmatrix", "wgmma_swapab",
    }  # fmt: skip
    for s in TMA_STAGES:
        assert s.b_layout == "kn", s.name
        for ok in [(1000, 1016, 1032), (600, 1016, 1032), (1001, 600, 1032), (1, 8, 8)]:
            assert s.refuses(*ok) is None, (s.name, ok)
        why = s.refuses(1000, 1020, 1032)
        assert why == f"{s.name} needs N, K multiples of 8 (got 1000x1020x1032)"
        assert s.refuses(1000, 1016, 1030) and s.refuses(127, 333, 65)
    assert stages.BY_NAME["mma_multistage"].refuses(127, 333, 65) is None  # cp.async: any shape


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.prebuild(stages.BY_NAME[n], dtype="bf16", sass=True))
        for n in (
            "wgmma_tma",
            "wgmma_ws",
            "wgmma_persistent",
            "wgmma_cluster",
            "wgmma_stagger",
            "wgmma_streamk",
            "wgmma_stmatrix",
        )  # fmt: skip
    ],
)
def test_wgmma_stages_read_b_n_major(name):
    """Row-major B lands in shared memory N-major: every HGMMA takes B transposed (imm-trans-b
    = 1: SASS .tnspB) and A as it is (K-major); B comes as 64-column TMA boxes, A as one box."""
    from rooflinecli.stages import sass

    stage = stages.BY_NAME[name]
    built = compiler.compile_stage(stage, "sm_90a", "bf16")
    text = sass.disassemble(built.cubin_path)
    hgmma = [line for line in text.splitlines() if "HGMMA." in line]
    assert hgmma and all(".tnspB" in line and "tnspA" not in line for line in hgmma), hgmma
    ops = [i.opcode for i in sass.parse(text)[stage.entry].instrs]
    copies = ops.count("UTMALDG.2D")  # per place that fills a slot: A's box + BN / 64 of B's
    if stage.cluster_rows > 1:  # a pair: each block multicasts its half of B's boxes
        multicast = ops.count("UTMALDG.2D.MULTICAST")
        assert copies > 0 and multicast == copies * stage.params["BN"] // 64 // 2, ops
        return
    assert copies > 0 and copies % (1 + stage.params["BN"] // 64) == 0, copies


@pytest.mark.prebuild(
    stages.BY_NAME["wgmma_cluster"],
    stages.BY_NAME["wgmma_cluster"].with_params({"CLUSTER_M": 1, "MAX_BLOCKS": 0}),
    dtype="bf16",
    sass=True,
)
@MATRIX  # its control is a tune variant (CLUSTER_M=1, MAX_BLOCKS=0)
def test_stage_27_pairs_persistent_blocks_and_caps_the_grid():
    """Stage 27's persistent grid is whole pairs of blocks, at most MAX_BLOCKS (128: 64 pairs)
    of them; a pair covers two row tiles, so an odd count of row tiles is rounded up. Its SASS
    multicasts B, arrives on the peer's barriers and meets the peer at a cluster barrier, with
    no spills; CLUSTER_M=1 has none of that."""
    from rooflinecli.stages import sass

    pair = stages.BY_NAME["wgmma_cluster"]
    alone = pair.with_params({"CLUSTER_M": 1, "MAX_BLOCKS": 0})
    assert (pair.cluster_rows, pair.persistent_max_blocks, alone.cluster_rows) == (2, 128, 1)
    assert pair.launch(8192, 8192, 132)[0] == (128, 1, 1)  # 2048 tiles: 16 waves of 128
    assert alone.launch(8192, 8192, 132)[0] == (132, 1, 1)
    assert pair.launch(300, 520, 132)[0] == (12, 1, 1)  # 3 row tiles -> 2 pairs x 3 columns
    assert alone.launch(300, 520, 132)[0] == (9, 1, 1)
    assert pair.with_params({"MAX_BLOCKS": 131}).launch(8192, 8192, 132)[0] == (130, 1, 1)
    built = compiler.compile_stage(pair, "sm_90a", "bf16")
    assert built.resources.spill_bytes == 0 and built.resources.stack_frame_bytes == 0
    ops = [i.opcode for i in sass.parse(sass.disassemble(built.cubin_path))[pair.entry].instrs]
    assert "UTMALDG.2D.MULTICAST" in ops and "UCGABAR_WAIT" in ops
    assert ops.count("SYNCS.ARRIVE.TRANS64.RED.A1T0") >= 1  # the remote arrival on `empty`
    assert ops.count("HGMMA.64x256x16.F32.BF16") == 4  # one K step of BK 64, unrolled once
    built = compiler.compile_stage(alone, "sm_90a", "bf16")
    ops = [i.opcode for i in sass.parse(sass.disassemble(built.cubin_path))[alone.entry].instrs]
    assert "UTMALDG.2D.MULTICAST" not in ops and "UCGABAR_WAIT" not in ops


@pytest.mark.prebuild(
    stages.BY_NAME["wgmma_stagger"],
    stages.BY_NAME["wgmma_stagger"].with_params({"LAG": 0}),
    dtype="bf16",
    sass=True,
)
@MATRIX  # its control is a tune variant (LAG=0)
def test_stage_28_staggers_the_consumers_with_one_named_barrier():
    """Stage 28 is stage 27 plus LAG: consumer 0 arrives (BAR.ARV, never waiting) where consumer
    1 waits once, in a loop and after it (fewer slices than LAG); LAG=0 has no arrival. LAG must
    leave one slot of the ring: LAG = STAGES does not compile."""
    from rooflinecli.stages import sass

    lagged = stages.BY_NAME["wgmma_stagger"]
    assert lagged.params["LAG"] > 0 and lagged.launch(8192, 8192, 132)[0] == (128, 1, 1)
    for stage, arrivals in [(lagged, 2), (lagged.with_params({"LAG": 0}), 0)]:
        built = compiler.compile_stage(stage, "sm_90a", "bf16")
        assert built.resources.spill_bytes == 0 and built.resources.stack_frame_bytes == 0
        ops = [i.opcode for i in sass.parse(sass.disassemble(built.cubin_path))[stage.entry].instrs]
        assert ops.count("BAR.ARV") == arrivals
        assert sum(o.startswith("HGMMA.64x256x16.F32") for o in ops) == 4
    with pytest.raises(RooflineError, match="the ring must hold them"):
        compiler.compile_stage(lagged.with_params({"LAG": 4}), "sm_90a", "bf16")


@pytest.mark.prebuild(stages.BY_NAME["wgmma_stmatrix"], dtype="bf16", sass=True)
def test_stage_30_stages_the_whole_tile_with_stmatrix():
    """Stage 36 is stage 28 with its epilogue in one pass: 16 stmatrix.x4 per thread and tile
    (BN / 16; no st.shared), the four 64-column TMA stores issued together after one barrier,
    where stage 28 staged 16 st.shared.b32 per chunk behind two barriers each. Its ring is one
    stage shorter, so ring + the whole tile's staging fits: 3 x 48 + 2 x 32 + 1 KiB."""
    from rooflinecli.stages import sass

    st = stages.BY_NAME["wgmma_stmatrix"]
    assert st.params["STAGES"] == 3 and st.smem_bytes == (3 * 48 + 2 * 32 + 1) * 1024
    assert st.launch(8192, 8192, 132) == stages.BY_NAME["wgmma_stagger"].launch(8192, 8192, 132)[
        :2
    ] + (st.smem_bytes,)
    built = compiler.compile_stage(st, "sm_90a", "bf16")
    assert built.resources.spill_bytes == 0 and built.resources.stack_frame_bytes == 0
    ops = [i.opcode for i in sass.parse(sass.disassemble(built.cubin_path))[st.entry].instrs]
    stsm = [o for o in ops if o.startswith("STSM")]
    assert len(stsm) == 256 // 16 and all(o == "STSM.16.M88.4" for o in stsm), stsm
    assert not [o for o in ops if o.split(".")[0] == "STS"]
    assert sum(o.startswith("HGMMA.64x256x16.F32") for o in ops) == 4
    assert ops.count("BAR.ARV") == 2  # stage 28's stagger, unchanged
    with pytest.raises(RooflineError, match="must fit in 227 KiB"):
        compiler.compile_stage(st.with_params({"STAGES": 4}), "sm_90a", "bf16")


def test_stage_29_fills_every_sm_and_asks_for_a_workspace():
    """Stage 29 launches one block per SM whatever the tile count (stream-K cuts the few tiles
    of a small problem over all of them), and asks the runner for one fp32 64 x 256 partial and
    one flag per consumer warpgroup of every block: 132 x 2 x (65536 + 4) bytes. The runner
    appends that buffer, zeroed, as the last kernel argument; stages without one get nothing."""
    from rooflinecli.gpu import runner

    sk = stages.BY_NAME["wgmma_streamk"]
    assert sk.persistent_fill and sk.params["MAX_BLOCKS"] == 0
    assert sk.launch(8192, 8192, 132)[0] == (132, 1, 1)  # 2048 tiles: 15 waves + 68 cut ones
    assert sk.launch(256, 256, 132)[0] == (132, 1, 1)  # 1 tile, still every SM
    assert sk.with_params({"MAX_BLOCKS": 64}).launch(256, 256, 132)[0] == (64, 1, 1)
    assert stages.BY_NAME["wgmma_stagger"].launch(256, 256, 132)[0] == (2, 1, 1)  # unchanged
    assert sk.workspace_bytes is not None
    assert sk.workspace_bytes(8192, 8192, 8192, 132) == 132 * 2 * (64 * 256 * 4 + 4) == 17302560

    class FakeCupy:
        uint8 = "uint8"

        def zeros(self, n, dtype):  # type: ignore[no-untyped-def]
            return ("zeros", n, dtype)

    grid = sk.launch(4096, 4096, 132)[0]
    assert runner.workspace_args(FakeCupy(), sk, 4096, 4096, 4096, grid) == (
        ("zeros", 132 * 2 * (65536 + 4), "uint8"),
    )
    plain = stages.BY_NAME["wgmma_stagger"]
    assert runner.workspace_args(FakeCupy(), plain, 4096, 4096, 4096, grid) == ()


@pytest.mark.prebuild(stages.BY_NAME["wgmma_streamk"], dtype="bf16", sass=True)
def test_stage_29_hands_partials_over_through_flags():
    """Stage 29's SASS: stage 28's main loop (4 HGMMA per K slice, the stagger's 2 arrivals), one
    TMA store per 64-column chunk, the partial tile written and read as 32 16-byte L2 accesses
    each (STG/LDG.E.128, .cg), the flag set and cleared with release stores and polled with an
    acquire load; no spills, no stack."""
    from rooflinecli.stages import sass

    sk = stages.BY_NAME["wgmma_streamk"]
    built = compiler.compile_stage(sk, "sm_90a", "bf16")
    assert built.resources.spill_bytes == 0 and built.resources.stack_frame_bytes == 0
    ops = [i.opcode for i in sass.parse(sass.disassemble(built.cubin_path))[sk.entry].instrs]
    assert ops.count("HGMMA.64x256x16.F32.BF16") == 4
    assert ops.count("BAR.ARV") == 2
    assert ops.count("UTMASTG.2D") == 4
    assert ops.count("STG.E.128.STRONG.GPU") == ops.count("LDG.E.128.STRONG.GPU") == 32
    assert ops.count("STG.E.STRONG.GPU") == 2  # the flag: set by a worker, cleared by the owner
    assert "MEMBAR.ALL.GPU" in ops and "CCTL.IVALL" in ops  # release; acquire drops stale L1


def test_stage_24_splits_k_along_grid_z_and_asks_for_a_workspace():
    """Stage 24 with few tiles: BM = 64 is one warpgroup and half the shared memory per stage;
    SPLIT_K = 2 launches two blocks per tile along z and asks for 2 counters per tile (padded to
    16 bytes) plus one 64 x 128 fp32 slot per tile: 1000x1016 is 16 x 8 tiles of 64 x 128."""
    plain = stages.BY_NAME["wgmma_tma"]
    assert plain.params["SPLIT_K"] == 1 and plain.workspace_bytes is None
    assert plain.launch(1000, 1016)[0] == (8, 8, 1) and plain.threads == (256, 1)
    assert plain.smem_bytes == 4 * (128 + 128) * 64 * 2 + 1024 == 132096
    sk = stages.select("wgmma_tma@BM=64,SPLIT_K=2", "bf16")[0]
    assert sk.name == "wgmma_tma@BM=64,SPLIT_K=2" and sk.threads == (128, 1)
    assert sk.smem_bytes == 4 * (64 + 128) * 64 * 2 + 1024 == 99328  # two blocks per SM
    assert sk.launch(1000, 1016)[0] == (8, 16, 2)
    assert sk.workspace_bytes is not None
    assert sk.workspace_bytes(1000, 1016, 1032, 256) == 4 * 256 + 128 * 64 * 128 * 4 == 4195328
    three = stages.select("wgmma_tma@SPLIT_K=3", "fp16")[0]
    assert three.launch(1000, 1016)[0] == (8, 8, 3)  # 64 tiles: 128 counters, 2 slots each
    assert three.workspace_bytes(1000, 1016, 1032, 192) == 4 * 128 + 2 * 64 * 128 * 128 * 4


@pytest.mark.prebuild(
    stages.BY_NAME["wgmma_tma"].with_params({"BM": 64, "SPLIT_K": 2}), dtype="bf16", sass=True
)
@MATRIX  # a tune variant (BM=64, SPLIT_K=2)
def test_stage_24_split_k_meets_in_l2_without_spills():
    """Stage 24's split-K end in SASS: the ticket and the done count as two atomics, a block's
    64 x 128 fp32 sums written (or read, by the last block) as 16 16-byte L2 accesses a thread
    (STG/LDG.E.128, .cg), the count polled with an acquire load that sleeps between polls and
    traps after a second; the main loop unchanged (4 HGMMA 64x128 per K tile); no spills."""
    from rooflinecli.stages import sass

    sk = stages.BY_NAME["wgmma_tma"].with_params({"BM": 64, "SPLIT_K": 2})
    built = compiler.compile_stage(sk, "sm_90a", "bf16")
    assert built.resources.spill_bytes == 0 and built.resources.stack_frame_bytes == 0
    ops = [i.opcode for i in sass.parse(sass.disassemble(built.cubin_path))[sk.entry].instrs]
    assert ops.count("HGMMA.64x128x16.F32.BF16") == 4
    assert ops.count("ATOMG.E.ADD.STRONG.GPU") == 2
    assert ops.count("STG.E.128.STRONG.GPU") == ops.count("LDG.E.128.STRONG.GPU") == 16
    assert "MEMBAR.SC.GPU" in ops and "CCTL.IVALL" in ops  # the writer's fence; acquire
    assert "NANOSLEEP" in ops and "BPT.TRAP" in ops


@pytest.mark.prebuild(stages.BY_NAME["mma_tma_ws"], dtype="bf16", sass=True)
def test_stage_23_loads_b_fragments_with_ldmatrix_trans():
    """Stage 23's B tile is k rows of n: its .col fragments come through ldmatrix.trans
    (LDSM.16.MT88.4), as many as A's plain ones (4 + 4 per k16 step of a 64 x 64 warp tile)."""
    from rooflinecli.stages import sass

    stage = stages.BY_NAME["mma_tma_ws"]
    built = compiler.compile_stage(stage, "sm_90a", "bf16")
    ops = [i.opcode for i in sass.parse(sass.disassemble(built.cubin_path))[stage.entry].instrs]
    assert ops.count("LDSM.16.MT88.4") == ops.count("LDSM.16.M88.4") > 0
    copies = ops.count("UTMALDG.2D")  # per place that fills a slot: A's box + BN / 64 of B's
    assert copies > 0 and copies % (1 + stage.params["BN"] // 64) == 0, copies


def test_nvrtc_gets_the_ptx_headers():
    """Stages, user stages and calibration kernels compile with -I kernels/include."""
    inc = compiler.include_dir()
    assert (inc / "ptx_sm80.cuh").is_file() and (inc / "ptx_sm90.cuh").is_file()
    assert f"-I{inc}" in compiler.options_for(stages.BY_NAME["mma_tma_ws"], "sm_90a", "bf16")


def test_a_header_edit_changes_the_cache_key(tmp_path, monkeypatch):
    """Editing (or adding) a header in kernels/include recompiles: the key hashes their content."""
    import shutil

    inc = tmp_path / "include"
    shutil.copytree(compiler.include_dir(), inc)
    monkeypatch.setattr(compiler, "include_dir", lambda: inc)
    args = ("src", ("-arch=sm_90a",), "13.0", "24_wgmma_tma.cu", "gemm_wgmma_tma")
    key = compiler.cache_key(*args)
    assert compiler.cache_key(*args) == key  # the same headers: the same key
    header = inc / "sm90" / "wgmma.cuh"  # a header in a subfolder counts too
    header.write_text(header.read_text().replace("wgmma.fence", "wgmma.fence "))
    edited = compiler.cache_key(*args)
    assert edited != key
    (inc / "sm90" / "extra.cuh").write_text("// new\n")
    assert compiler.cache_key(*args) not in (key, edited)


@pytest.mark.prebuild(stages.BY_NAME["spread_copies"], stages.BY_NAME["multistage"], sass=True)
def test_stage_11_hot_loop_holds_no_edge_code():
    """Stage 11's main loop (the interior one) issues a K tile's 8 x 16 x BK FFMAs, 6 LDS.128
    per k-step and each thread's copies (8 transposing 4-byte A copies, 4 16-byte B copies at
    BK 16), and no bounds checks: no per-thread compare or select (stage 10's loop has both)."""
    from rooflinecli.stages import sass

    for name in ("spread_copies", "multistage"):
        stage = stages.BY_NAME[name]
        built = compiler.compile_stage(stage, "sm_90a")
        fn = sass.parse(sass.disassemble(built.cubin_path))[stage.entry]
        loop = sass.main_loop(fn)
        assert loop is not None
        instrs = sass.body(fn, loop)
        mix, widths = sass.mix(instrs), sass.widths(instrs)
        bk = stage.params["BK"]
        assert mix["FFMA"] == 8 * 16 * bk and widths["LDS.128"] == 6 * bk, (name, mix)
        checks = mix["ISETP"] + mix["SEL"]
        if name == "multistage":
            assert checks > 0  # its edge paths live in the loop
            continue
        assert checks == 0, mix
        assert widths["LDGSTS.32"] == 8 and widths["LDGSTS.128"] == 4, widths
        assert mix["FFMA"] / len(instrs) > 0.9, len(instrs)


ONE_BLOCK = {"BM": 256, "MIN_BLOCKS": 1}  # stage 11's block tile, one 8-warp block per SM


@pytest.mark.prebuild(
    stages.BY_NAME["serpentine_ffma"],
    stages.BY_NAME["serpentine_ffma"].with_params({"SERPENTINE": 0, "WNITER": 4}),
    sass=True,
)
@MATRIX  # its control is a second build of stage 12's largest kernel (4.5 s of NVRTC)
def test_stage_12_serpentine_fmas_reuse_an_operand():
    """Stage 12's hot loop: stage 11's (128 x BK FFMAs, 6 LDS.128 per k-step, no bounds
    checks; pairing the lanes changes only addresses set before it) with a 4-warp block's
    copies (BK 16: 16 A floats, 4 B float4s per thread), within the registers of two blocks per
    SM; in serpentine order nearly every FFMA flags an operand .reuse (ptxas's reuse cache),
    clearly more than in the row-major order of stage 11."""
    from rooflinecli.stages import sass

    reuse = {}
    for stage in (
        stages.BY_NAME["serpentine_ffma"],
        stages.BY_NAME["serpentine_ffma"].with_params({"SERPENTINE": 0, "WNITER": 4}),
    ):
        built = compiler.compile_stage(stage, "sm_90a")
        assert built.resources is not None
        assert built.resources.spill_bytes == 0  # 128 accumulators in 2 x 128 threads per SM
        fn = sass.parse(sass.disassemble(built.cubin_path))[stage.entry]
        loop = sass.main_loop(fn)
        assert loop is not None
        instrs = sass.body(fn, loop)
        mix, widths = sass.mix(instrs), sass.widths(instrs)
        assert mix["FFMA"] == 8 * 16 * 16 and widths["LDS.128"] == 6 * 16, mix
        assert mix["ISETP"] + mix["SEL"] == 0, mix
        assert widths["LDGSTS.32"] == 16 and widths["LDGSTS.128"] == 4, widths
        reuse[stage.params["SERPENTINE"]] = sum(
            ".reuse" in i.operands for i in instrs if i.base == "FFMA"
        )
    assert reuse[1] > 0.9 * 2048 and reuse[1] > reuse[0] + 200, reuse


def test_stage_12_launches_two_blocks_per_sm_and_refuses_what_cannot_be_resident():
    stage12 = stages.BY_NAME["serpentine_ffma"]
    grid, block, smem = stage12.launch(4096, 4096)
    assert grid == (32, 32, 1) and block == (128, 1, 1) and smem == 3 * 16 * 260 * 4
    h200 = occupancy.SmLimits.from_spec(resolve("h200-sxm"))
    for stage, per_sm in ((stage12, 2), (stage12.with_params(ONE_BLOCK), 1)):  # at 255 registers
        occ = occupancy.theoretical(h200, stage.threads[0], 255, stage.smem_bytes)
        assert occ.blocks_per_sm == per_sm and occ.warps_per_sm == 8, occ
    # two blocks' slots (and 1 KiB each the SM keeps) within 228 KiB: 4 stages of BK 32 are not
    wide = stage12.with_params({"BK": 32, "STAGES": 4})
    assert 2 * (wide.smem_bytes + 1024) > 228 * 1024
    with pytest.raises(RooflineError, match="MIN_BLOCKS blocks' slots"):
        compiler.compile_stage(wide, "sm_90a")
    control = stage12.with_params(ONE_BLOCK)
    assert control.threads == (256, 1) and control.tile == (256, 128)


def test_stage_13_fills_the_resident_blocks_and_asks_for_a_workspace():
    """Stage 13 launches exactly the blocks that fit at once (2 per SM: 264 on 132 SMs) however
    many tiles there are (stream-K cuts a few tiles over all of them), and asks for one fp32
    128 x 128 partial tile and one flag per block: 264 x (65536 + 4) bytes. STREAMK=0 keeps the
    same grid (the control differs only in the schedule)."""
    sk = stages.BY_NAME["simt_streamk"]
    assert sk.chapter == 11 and sk.sass_claims == ("FFMA",)
    assert sk.params["MIN_BLOCKS"] == sk.persistent_blocks_per_sm == 2 and sk.persistent_fill
    assert sk.launch(4096, 4096, 132) == ((264, 1, 1), (128, 1, 1), 3 * 16 * 260 * 4)
    assert sk.launch(100, 100, 132)[0] == (264, 1, 1)  # 1 tile, still every block
    assert sk.with_params({"STREAMK": 0}).launch(8192, 8192, 132)[0] == (264, 1, 1)
    assert sk.workspace_bytes is not None
    assert sk.workspace_bytes(4096, 4096, 4096, 264) == 264 * (128 * 128 * 4 + 4) == 17302560
    assert "whole tiles only" in sk.with_params({"STREAMK": 0}).what
    assert "and one wave more" in sk.with_params({"SK_WAVES": 2}).what


@pytest.mark.prebuild(stages.BY_NAME["simt_streamk"], sass=True)
def test_stage_13_runs_stage_12s_hot_loop_and_hands_partials_over_through_flags():
    """Stage 13's interior loop is stage 12's (2048 FFMA, 96 LDS.128, 16 + 4 cp.async per K tile
    of 16, no bounds checks), within the 255 registers of two blocks per SM and without spills;
    a thread's 128 partial sums go to L2 and come back as 32 16-byte accesses each (.cg), the
    flag is set and cleared with release stores and polled with an acquire load."""
    from rooflinecli.stages import sass

    sk = stages.BY_NAME["simt_streamk"]
    built = compiler.compile_stage(sk, "sm_90a")
    assert built.resources is not None
    assert built.resources.spill_bytes == 0 and built.resources.stack_frame_bytes == 0
    fn = sass.parse(sass.disassemble(built.cubin_path))[sk.entry]
    loop = sass.main_loop(fn)
    assert loop is not None
    instrs = sass.body(fn, loop)
    mix, widths = sass.mix(instrs), sass.widths(instrs)
    assert mix["FFMA"] == 8 * 16 * 16 and widths["LDS.128"] == 6 * 16, mix
    assert widths["LDGSTS.32"] == 16 and widths["LDGSTS.128"] == 4, widths
    ops = [i.opcode for i in fn.instrs]
    assert ops.count("STG.E.128.STRONG.GPU") == ops.count("LDG.E.128.STRONG.GPU") == 32
    assert ops.count("STG.E.STRONG.GPU") == 2  # the flag: set by a worker, cleared by the owner
    assert "MEMBAR.ALL.GPU" in ops and "CCTL.IVALL" in ops  # release; acquire drops stale L1


WIDE_SWAP = stages.BY_NAME["wgmma_swapab"].with_params({"BM": 128, "BN": 256, "WN": 128})


@pytest.mark.prebuild(WIDE_SWAP, dtype="bf16", sass=True)
def test_stage_31_with_consumers_of_128_columns_holds_a_128x256_tile_on_three_warpgroups():
    """Stage 31 at WN=128: a producer and two consumers (384 threads) on 128x256 tiles, each
    consumer two m64n128k16 WGMMAs per k step on one A slice (8 HGMMA a K slice, where the
    128x128 tile has 4); its 128 accumulators and addresses fit in 168 registers without
    spills, and the ring of 48 KiB slices is 4 deep."""
    from rooflinecli.stages import sass

    assert WIDE_SWAP.threads == (384, 1)
    assert WIDE_SWAP.smem_bytes == 4 * (256 + 128) * 64 * 2 + 1024
    assert "128 columns per consumer warpgroup" in WIDE_SWAP.what
    built = compiler.compile_stage(WIDE_SWAP, "sm_90a", "bf16")
    assert built.resources is not None
    assert built.resources.spill_bytes == 0 and built.resources.stack_frame_bytes == 0
    assert built.resources.registers <= 65536 // 384
    ops = [i.opcode for i in sass.parse(sass.disassemble(built.cubin_path))[WIDE_SWAP.entry].instrs]
    hgmma = [op for op in ops if op.startswith("HGMMA.64x128x16.F32")]
    assert len(hgmma) == 8, hgmma
    assert not any(op.startswith(("LDL", "STL")) for op in ops)


@pytest.mark.prebuild(WIDE_SWAP.with_params({"RED": 1}), dtype="bf16", sass=True)
def test_stage_31_with_red_adds_partials_into_the_owner_s_slot():
    """Stage 31 at RED=1: a worker adds its partial into the owner's slot with 16-byte vector
    reductions in L2 (REDG ... F32x4: BM / 8 per 64-column group) and counts itself in with an
    atomic add; the owner reads the one sum back and zeroes it (LDG / STG .128, .cg), where RED=0
    reads a partial per worker; the same registers, no spills."""
    from rooflinecli.stages import sass

    red = WIDE_SWAP.with_params({"RED": 1})
    assert "red.global.add" in red.what
    built = compiler.compile_stage(red, "sm_90a", "bf16")
    assert built.resources is not None and built.resources.spill_bytes == 0
    ops = [i.opcode for i in sass.parse(sass.disassemble(built.cubin_path))[red.entry].instrs]
    reds = [op for op in ops if op.startswith("REDG.E.ADD.F32x4")]
    assert len(reds) == 2 * 128 // 8, reds  # two groups a consumer, 16 float4 each
    assert ops.count("LDG.E.128.STRONG.GPU") == ops.count("STG.E.128.STRONG.GPU") == 32
    assert any(op.startswith("ATOMG.E.ADD") for op in ops)
