"""`roofline calibrate` on the CPU: every calibration kernel compiles for sm_90a without spills and
its SASS is what it claims to be; the three roof sets, the seed's 989.4 TFLOP/s derivation; the
calibration cache."""

import json

import pytest

from rooflinecli.core import roofs
from rooflinecli.core.specs import resolve
from rooflinecli.gpu import calibrate as cal
from rooflinecli.stages import sass

H100 = resolve("h100-sxm5")


# what the tests reading `built` compile and disassemble (prebuilt once a session: conftest)
BUILT = pytest.mark.prebuild(*cal.KERNELS, sass=True)


@pytest.fixture(scope="module")
def built(prebuilt):
    prebuilt.wait(BUILT)
    out = {}
    for name in cal.KERNELS:  # from the session's cache (conftest), not the user's
        c = cal.compile_kernel(name, "sm_90a")
        out[name] = (c, sass.analyze_cubin(c.cubin_path, cal.KERNELS[name][1]))
    return out


@BUILT
@pytest.mark.parametrize("name", list(cal.KERNELS))
def test_compiles_for_sm90a_without_spills(built, name):
    c, _ = built[name]
    assert c.resources.spill_bytes == 0
    assert c.resources.stack_frame_bytes == 0
    assert 0 < c.resources.registers <= 255


@BUILT
def test_memory_kernels_use_16_byte_loads(built):
    _, hbm = built["cal_hbm_read"]
    _, l2 = built["cal_l2_read"]
    assert hbm.kernel_widths["LDG.128"] >= 4 and hbm.kernel_widths.get("LDG.32", 0) == 0
    assert l2.kernel_widths["LDG.128"] >= 4
    # ld.global.cg: cached in L2 only (STRONG.GPU), not through L1 like the read-only path
    funcs = sass.parse(sass.disassemble(built["cal_l2_read"][0].cubin_path))
    ldg = [i.opcode for i in funcs["mem_read"].instrs if i.base == "LDG"]
    assert ldg and all("CONSTANT" not in op for op in ldg)


@BUILT
def test_fp32_loop_is_all_ffma(built):
    _, rep = built["cal_fp32_fma"]
    assert rep.loop["FFMA"] % (cal.FP32_CHAINS * cal.FP32_UNROLL) == 0
    assert rep.loop["FFMA"] >= 0.95 * rep.loop_instructions


@BUILT
def test_mma_sync_loop(built):
    _, rep = built["cal_mma_sync"]
    assert rep.loop["HMMA"] % cal.MMA_SYNC_NACC == 0 and rep.loop["HMMA"] > 0
    assert rep.loop["HMMA"] >= 0.5 * rep.loop_instructions


@BUILT
def test_wgmma_loop(built):
    c, rep = built["cal_wgmma"]
    assert rep.loop["HGMMA"] % cal.WGMMA_KSTEPS == 0 and rep.loop["HGMMA"] > 0
    assert rep.kernel["HMMA"] == 0
    assert c.resources.smem_static_bytes == (64 + cal.WGMMA_N) * 16 * 2
    funcs = sass.parse(sass.disassemble(c.cubin_path))
    ops = {i.opcode for i in funcs["tc_wgmma"].instrs if i.base == "HGMMA"}
    assert ops == {f"HGMMA.64x{cal.WGMMA_N}x16.F32"}


def test_kernels_per_target():
    assert cal.kernels_for("sm_90a") == list(cal.KERNELS)
    assert "cal_wgmma" not in cal.kernels_for("sm_90")  # wgmma needs the arch-specific target
    assert "cal_wgmma" not in cal.kernels_for("sm_80")
    assert "cal_mma_sync" in cal.kernels_for("sm_80")
    assert cal.kernels_for("sm_75") == ["cal_hbm_read", "cal_l2_read", "cal_fp32_fma"]


@BUILT
def test_compile_source_is_cached(built):
    again = cal.compile_kernel("cal_fp32_fma", "sm_90a")
    assert again.cubin_path == built["cal_fp32_fma"][0].cubin_path


# --------------------------------------------------------------------------- roof sets


def test_seed_derivation_989():
    # 132 SMs x 1830 MHz x 4096 FLOP/clk/SM = 989.4 TFLOP/s (the clock the official peak implies)
    sets = roofs.roof_sets(H100, clock_mhz=1830)
    assert sets["derived"]["fp16_tensor_dense"] == pytest.approx(989.4, abs=0.1)
    assert sets["derived"]["fp16_tensor_flops_per_clk_sm"] == 4096
    # FP32: 132 x 1830 MHz x 128 lanes x 2
    assert sets["derived"]["fp32"] == pytest.approx(132 * 1830 * 256 / 1e6)
    assert "measured" not in sets


def test_datasheet_set_and_ridges():
    ds = roofs.roof_sets(H100)["datasheet"]
    assert (ds["fp32"], ds["fp16_tensor_dense"], ds["bandwidth_gbs"]) == (67, 989.4, 3350)
    assert ds["ridge_fp32"] == pytest.approx(20.0, abs=0.01)  # the seed's 67 / 3.35 = 20
    assert ds["ridge_fp16_tensor"] == pytest.approx(295.3, abs=0.1)  # 989 / 3.35 = 295


def test_derived_at_boost_clock_and_from_the_memory_bus():
    # without a clock: the spec's boost clock (1980 MHz): 132 x 1980 x 256 = 66.9 TFLOP/s
    sets = roofs.roof_sets(H100)
    assert sets["derived"]["fp32"] == pytest.approx(66.9, abs=0.05)
    assert sets["derived"]["bandwidth_gbs"] == 3350  # no memory clock known: the datasheet's
    calib = {
        "device": {"name": "NVIDIA H100 80GB HBM3", "sm_count": 132, "clock_sm_max_mhz": 1980,
                   "clock_mem_max_mhz": 2619, "memory_bus_width_bits": 5120},
        "measurements": {"fp32_fma_tflops": 64.6, "fp16_mma_sync_tflops": 640.0,
                         "fp16_wgmma_tflops": 720.0, "hbm_read_gbs": 3000.0,
                         "hbm_copy_gbs": 2900.0, "l2_read_gbs": 9000.0},
    }  # fmt: skip
    sets = roofs.roof_sets(H100, calib)
    # 2 x 2619 MHz x 5120 bits / 8 = 3352.3 GB/s
    assert sets["derived"]["bandwidth_gbs"] == pytest.approx(3352.32)
    m = sets["measured"]
    assert (m["fp32"], m["fp16_tensor_dense"], m["bandwidth_gbs"]) == (64.6, 720.0, 3000.0)
    assert m["ridge_fp32"] == pytest.approx(64.6 * 1000 / 3000)
    assert m["l2_gbs"] == 9000.0


def test_tensor_rate_per_architecture():
    assert roofs.tc_fp16_flops_per_clk_sm(resolve("a100-sxm4-80gb"))[0] == 2048
    # no table entry for 8.6: 154.8 TFLOP/s / (84 SMs x 1800 MHz) = 1024 (nearest power of 2)
    assert roofs.tc_fp16_flops_per_clk_sm(resolve("rtx-a6000"))[0] == 1024


# --------------------------------------------------------------------------- the cache


def test_cache_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    dev = {"name": "NVIDIA H200", "driver": "580.159.04", "clock_sm_max_mhz": 1980}
    doc = {"schema": cal.SCHEMA, "device": dev, "measurements": {"fp32_fma_tflops": 64.6}}
    path = cal.save_calibration(doc)
    assert path == tmp_path / "calibration" / "nvidia-h200-drv580.159.04-1980mhz.json"
    assert cal.load_calibration("NVIDIA H200", "580.159.04", 1980) == doc
    assert cal.load_calibration("NVIDIA H200", "580.159.04", 1755) is None  # another clock
    path.write_text("{not json")
    assert cal.load_calibration("NVIDIA H200", "580.159.04", 1980) is None
    path.write_text(json.dumps({"schema": "other"}))
    assert cal.load_calibration("NVIDIA H200", "580.159.04", 1980) is None


def test_calibrate_command_without_gpu(runner):
    from rooflinecli.cli import cli

    res = runner.invoke(cli, ["calibrate", "--quick"])
    assert res.exit_code == 2
    assert res.output.strip().splitlines()[-1].startswith("error: no CUDA device found")


def test_roof_rows_of_a_calibration():
    from rooflinecli.commands.calibrate import roof_rows, set_rows

    doc = {
        "measurements": {"hbm_read_gbs": 4350.0, "fp32_fma_tflops": 64.6,
                         "fp16_wgmma_tflops": None},
        "roof_sets": roofs.roof_sets(resolve("h200-sxm")),
    }  # fmt: skip
    rows = {r["key"]: r for r in roof_rows(doc)}
    assert rows["hbm_read_gbs"]["pct_of_datasheet"] == pytest.approx(100 * 4350 / 4800)
    assert rows["fp32_fma_tflops"]["derived"] == pytest.approx(66.9, abs=0.05)
    assert rows["l2_read_gbs"]["datasheet"] is None
    assert rows["fp16_wgmma_tflops"]["pct_of_derived"] is None
    assert [r["set"] for r in set_rows(doc)] == ["datasheet", "derived"]


# --------------------------------------------------------------------------- measure(), faked GPU


class _FakeCuPy:
    """Just enough of CuPy for calibrate.measure(): every launch and copy 'takes' 2 ms, and each
    kernel launch is checked against its CUDA signature."""

    __version__ = "0-fake"
    SIGNATURES = {  # entry -> C parameter types
        "mem_read": ("ptr", "i64", "i32", "f32", "ptr"),
        "fp32_fma": ("i32", "f32", "f32", "f32", "ptr"),
        "tc_mma_sync": ("i32", "f32", "ptr"),
        "tc_wgmma": ("i32", "f32", "ptr"),
    }

    def __init__(self, np, launches):
        import types

        self.np, self.launches, self.float32 = np, launches, np.float32
        fake = self

        class OutOfMemoryError(Exception):
            pass

        class Array:
            def __init__(self, n):
                self.size = n
                self.data = types.SimpleNamespace(copy_from_device_async=fake._copy)

            def __getitem__(self, sl):
                return Array(len(range(*sl.indices(self.size))))

        class Function:
            def __init__(self, name):
                self.name, self.num_regs, self.shared_size_bytes = name, 40, 0

            def __call__(self, grid, block, args):
                kinds = {np.int32: "i32", np.int64: "i64", np.float32: "f32", Array: "ptr"}
                got = tuple(kinds[type(a)] for a in args)
                assert got == fake.SIGNATURES[self.name], (self.name, got)
                assert isinstance(grid, tuple) and isinstance(block, tuple)
                fake.launches.append((self.name, grid, block, args))

        self.Array = Array
        self.cuda = types.SimpleNamespace(
            runtime=types.SimpleNamespace(
                getDeviceCount=lambda: 1,
                getDeviceProperties=lambda i: {
                    "name": b"NVIDIA H200",
                    "major": 9,
                    "minor": 0,
                    "multiProcessorCount": 132,
                    "l2CacheSize": 62914560,
                    "totalGlobalMem": 150 << 30,
                    "sharedMemPerBlockOptin": 232448,
                    "regsPerMultiprocessor": 65536,
                    "maxThreadsPerMultiProcessor": 2048,
                    "maxBlocksPerMultiProcessor": 32,
                    "sharedMemPerMultiprocessor": 233472,
                },  # fmt: skip
                deviceGetAttribute=lambda num, dev: {13: 1980000, 36: 3201000, 37: 6144}[num],
                driverGetVersion=lambda: 13000,
                runtimeGetVersion=lambda: 13000,
                deviceSynchronize=lambda: None,
            ),
            Event=lambda: types.SimpleNamespace(
                record=lambda: None, synchronize=lambda: None, done=True
            ),
            Device=lambda: types.SimpleNamespace(id=0),
            get_elapsed_time=lambda a, b: 2.0,
            get_current_stream=lambda: "stream",
            memory=types.SimpleNamespace(OutOfMemoryError=OutOfMemoryError),
        )
        self.random = types.SimpleNamespace(
            default_rng=lambda seed: types.SimpleNamespace(random=lambda n, dtype: Array(n))
        )
        self.RawModule = lambda path: types.SimpleNamespace(get_function=Function)

    def _copy(self, src, nbytes, stream):
        self.launches.append(("memcpy", nbytes))

    def zeros(self, n, dtype):
        return self.Array(n)

    def empty_like(self, a):
        return self.Array(a.size)

    def get_default_memory_pool(self):
        import types

        return types.SimpleNamespace(free_all_blocks=lambda: None)


@pytest.fixture
def own_cache(tmp_path, monkeypatch, session_cache):
    """A cache of the test's own (tmp_path) for the calibrations it saves, whose compiled kernels
    are the session's (a link): measure() finds them there instead of compiling them again."""
    kernels = session_cache / "kernels"
    kernels.mkdir(parents=True, exist_ok=True)
    (tmp_path / "kernels").symlink_to(kernels, target_is_directory=True)
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.prebuild(*cal.kernels_for("sm_90a"))
def test_measure_with_a_fake_gpu(monkeypatch, tmp_path, own_cache):
    import sys

    import numpy as np

    from rooflinecli.gpu import device

    launches: list = []
    monkeypatch.setitem(sys.modules, "cupy", _FakeCuPy(np, launches))
    monkeypatch.setattr(device, "smi", lambda query, gpu="0": None)  # no nvidia-smi here
    doc = cal.measure("h200-sxm", quick=True)
    m = doc["measurements"]
    # every launch "takes" 2 ms: 2 GiB read in 2 ms = 1073.7 GB/s, copy counts both directions
    assert m["hbm_read_gbs"] == pytest.approx(2**31 / 2e-3 / 1e9)
    assert m["hbm_copy_gbs"] == pytest.approx(2 * m["hbm_read_gbs"])
    # the loop counts were scaled so one launch takes target_ms (4 ms quick): 2 ms -> x2
    fp32 = doc["details"]["fp32_fma"]
    assert fp32["iters"] == 512 and fp32["block"] == 256
    assert fp32["grid"] == 132 * fp32["blocks_per_sm"] * 4  # whole waves
    assert m["fp32_fma_tflops"] == pytest.approx(fp32["flops"] / 2e-3 / 1e12)
    assert fp32["flops"] == fp32["grid"] * 256 * 16 * 8 * 2 * 512
    wg = doc["details"]["fp16_wgmma"]
    assert wg["flops"] == wg["grid"] * cal.WGMMA_KSTEPS * 64 * 256 * 16 * 2 * wg["iters"]
    assert m["fp16_mma_sync_tflops"] > 0 and m["l2_read_gbs"] > 0
    l2 = doc["details"]["l2_read"]
    assert l2["buffer_bytes"] == 62914560 // 4 and l2["passes"] == 128
    assert doc["device"]["memory_bus_width_bits"] == 6144
    assert doc["device"]["clock_mem_max_mhz"] == 3201  # from the attribute: no nvidia-smi
    assert doc["notes"] == []
    sets = doc["roof_sets"]
    assert set(sets) == {"datasheet", "derived", "measured"}
    assert sets["derived"]["bandwidth_gbs"] == pytest.approx(2 * 3201 * 6144 / 8 / 1000)
    assert sets["measured"]["fp16_tensor_dense"] == max(
        m["fp16_wgmma_tflops"], m["fp16_mma_sync_tflops"]
    )
    names = [x[0] for x in launches]
    assert {"mem_read", "memcpy", "fp32_fma", "tc_mma_sync", "tc_wgmma"} <= set(names)
    path = cal.save_calibration(doc)
    assert cal.load_calibration("NVIDIA H200", None, 1980)["measurements"] == m
    assert path.parent == tmp_path / "calibration"


@pytest.mark.prebuild(*cal.kernels_for("sm_90a"))
def test_calibrate_command_with_a_fake_gpu(runner, monkeypatch, own_cache):
    import sys

    import numpy as np

    from rooflinecli.cli import cli
    from rooflinecli.gpu import device as gpu_device

    monkeypatch.setitem(sys.modules, "cupy", _FakeCuPy(np, []))
    monkeypatch.setattr(gpu_device, "smi", lambda query, gpu="0": None)
    res = runner.invoke(cli, ["calibrate", "--quick"])
    assert res.exit_code == 0, res.output
    for text in ("HBM read", "FP32 FMA", "wgmma m64n256k16", "% datasheet", "derived",
                 "measured", "Cached in"):  # fmt: skip
        assert text in res.output
    res = runner.invoke(cli, ["calibrate", "--quick", "--format", "json"])
    doc = json.loads(res.output)
    assert doc["schema"] == cal.SCHEMA and doc["spec"] == "h200-sxm"
