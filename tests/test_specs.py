"""Every spec file validates; the registry, lookup and detection rules."""

import pytest

from rooflinecli.core import specs
from rooflinecli.errors import RooflineError

REQUIRED = {
    "h100-sxm5", "h100-pcie", "h100-nvl", "h200-sxm", "a100-sxm4-80gb", "rtx-a6000", "l40s",
    # the GPUs people have: Blackwell (per GPU), Hopper for China, Ada, GeForce, Ampere PCIe
    "b200", "gb200", "h800-sxm", "l4", "l40", "rtx-4090", "rtx-5090", "a10", "a100-pcie-80gb",
    "a100-pcie-40gb",
}  # fmt: skip


def test_registry_has_the_issue_gpus():
    assert REQUIRED <= set(specs.registry())


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_every_spec_is_sane(name):
    s = specs.registry()[name]
    assert s.source.startswith("https://")
    assert s.tflops["fp32"] > 0
    # dense Tensor Core peaks sit above FP32 but never at sparse (2x dense) levels: fp16 dense /
    # fp32 is 2x-32x on these parts (RTX 4090 and L40, FP32 accumulate at half rate: 2; H100
    # SXM5 989.4/67 = 14.8, A100 312/19.5 = 16; B200 2250/75 = 30)
    if "fp16_tensor_dense" in s.tflops:
        assert 2 <= s.tflops["fp16_tensor_dense"] / s.tflops["fp32"] <= 32
        assert s.tflops["bf16_tensor_dense"] == s.tflops["fp16_tensor_dense"]
        if "tf32_tensor_dense" in s.tflops:
            assert s.tflops["tf32_tensor_dense"] == pytest.approx(
                s.tflops["fp16_tensor_dense"] / 2, rel=0.02
            )
        if "fp8_tensor_dense" in s.tflops:  # twice the FP16 rate, never four times
            assert s.tflops["fp8_tensor_dense"] == pytest.approx(
                2 * s.tflops["fp16_tensor_dense"], rel=0.02
            )
    # FP32 peak is SMs x lanes x 2 x clock within a few percent, where the spec gives both
    if s.sm_count and s.boost_clock_mhz:
        derived = s.sm_count * s.fp32_lanes_per_sm * 2 * s.boost_clock_mhz * 1e6 / 1e12
        assert derived == pytest.approx(s.tflops["fp32"], rel=0.03)
    else:  # a figure no vendor source gives is left out, and says so
        assert "left out" in open(s.path).read()


def test_seed_numbers_h100_sxm5():
    s = specs.resolve("h100-sxm5")
    assert s.tflops["fp32"] == 67
    assert s.tflops["fp16_tensor_dense"] == 989.4
    assert s.memory_bandwidth_gbs == 3350
    assert s.l2_cache_mib == 50
    assert s.sm_count == 132


def test_detection_tells_h100_variants_apart():
    assert specs.for_device("NVIDIA H100 80GB HBM3").name == "h100-sxm5"
    assert specs.for_device("NVIDIA H100 PCIe").name == "h100-pcie"
    assert specs.for_device("NVIDIA H100 NVL").name == "h100-nvl"
    assert specs.for_device("NVIDIA H200").name == "h200-sxm"


@pytest.mark.parametrize(
    "name, device",
    [(s.name, d) for s in specs.registry().values() for d in s.device_names],
)
def test_every_device_name_detects_its_spec(name, device):
    """The detection table: each name a GPU reports (nvidia-smi, CUDA) finds its own spec, in
    any case and with spaces around it."""
    assert specs.for_device(device).name == name
    assert specs.for_device(f"  {device.upper()} ").name == name


def test_a_spec_without_the_figures_no_vendor_gives_loads_and_writes_none():
    b200 = specs.resolve("b200")
    assert b200.sm_count is None and b200.boost_clock_mhz is None and b200.l2_cache_mib is None
    d = b200.to_dict()
    assert "sm_count" not in d and "l2_cache_mib" not in d
    assert specs.from_dict(d) == b200._replace(path="results document")
    # the derived roofs need SMs and a clock: the spec's, else the GPU's own
    from rooflinecli.core import roofs

    assert roofs.roof_sets(b200)["derived"]["fp32"] is None
    dev = {"sm_count": 148, "clock_sm_max_mhz": 1965}
    got = roofs.roof_sets(b200, {"device": dev, "measurements": {}})["derived"]
    assert got["fp32"] == pytest.approx(148 * 128 * 2 * 1965 / 1e6)


def test_unknown_gpu_tells_how_to_pass_a_spec():
    with pytest.raises(RooflineError, match="pass --spec FILE.toml"):
        specs.for_device("NVIDIA GeForce GTX 480")


def test_unknown_name_lists_known():
    with pytest.raises(RooflineError, match="unknown spec 'b300'; known: a10, a100-pcie-40gb"):
        specs.resolve("b300")


def _write(tmp_path, text):
    p = tmp_path / "x.toml"
    p.write_text(text)
    return p


GOOD = specs.registry()["h100-sxm5"].path


def test_spec_file_path_loads(tmp_path):
    text = open(GOOD).read()
    assert specs.resolve(str(_write(tmp_path, text))).name == "h100-sxm5"


@pytest.mark.parametrize(
    "edit, message",
    [
        (("sm_count = 132", "sm_count = 132\nwarp_size = 32"), "unknown key(s) warp_size"),
        (("fp32_lanes_per_sm = 128\n", ""), "missing key fp32_lanes_per_sm"),
        (("sm_count = 132", 'sm_count = "132"'), "sm_count must be int"),
        (("sm_count = 132", "sm_count = 0"), "sm_count = 0 is outside"),
        (
            ("fp32 = 67", "fp32 = 67\nfp16_tensor_sparse = 1979"),
            "unknown peak(s) fp16_tensor_sparse",
        ),
        (("fp32 = 67", "fp32 = 67\nfp32 = 68"), "not valid TOML"),
        (('compute_capability = "9.0"', 'compute_capability = "9"'), "compute_capability"),
    ],
)
def test_malformed_spec_is_one_clear_error(tmp_path, edit, message):
    text = open(GOOD).read()
    assert edit[0] in text
    p = _write(tmp_path, text.replace(edit[0], edit[1], 1))
    with pytest.raises(RooflineError) as exc:
        specs.load_spec_file(p)
    assert message in exc.value.message
    assert "\n" not in exc.value.message


def test_no_device_name_claimed_twice():
    seen = {}
    for s in specs.registry().values():
        for n in s.device_names:
            assert n.lower() not in seen, (n, seen.get(n.lower()), s.name)
            seen[n.lower()] = s.name


@pytest.mark.parametrize("columns", [80, 100])
def test_the_list_fits_the_terminal_and_shows_every_name_whole(columns):
    """The name (what --spec takes) leads every table, whole; no cell is cut with an ellipsis;
    where the columns do not fit, they go on in another table led by the name again."""
    from click.testing import CliRunner

    from rooflinecli.cli import cli

    env = {"COLUMNS": str(columns), "NO_COLOR": "1", "TERM": "dumb"}
    res = CliRunner(env=env).invoke(cli, ["specs"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert max(map(len, lines)) <= columns
    assert "…" not in res.stdout
    rows = [[c.strip() for c in ln[1:-1].split("│")] for ln in lines if ln.startswith("│")]
    names = set(specs.registry())
    tables = sum(ln.startswith("┏") for ln in lines)
    assert tables >= 2  # the 13 columns do not fit 100 terminal columns side by side
    firsts = [r[0] for r in rows]
    assert set(firsts) == names and all(firsts.count(n) == tables for n in names)
    h100 = [c for r in rows if r[0] == "h100-sxm5" for c in r[1:]]
    for value in ("NVIDIA H100 SXM5 80GB", "3,350", "34 (10.1)", "989.4 (295.3)"):
        assert value in h100, value
