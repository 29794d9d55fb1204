"""sass.disassemble_many: many cubins' listings from one nvdisasm run (the raw instruction stream
cut back per cubin) read by parse() exactly as the ELF listings of the same cubins."""

from __future__ import annotations

import subprocess

import pytest

from rooflinecli.errors import RooflineError
from rooflinecli.stages import compiler, sass
from rooflinecli.stages import gemm as stages

RAW = """\t.headerflags\t@"EF_CUDA_SM90"
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   BRA 0x30 ;
        /*0020*/              @!P0 BRA 0x0 ;
        /*0030*/                   EXIT ;
        /*0040*/                   BSSY B0, 0x60 ;
        /*0050*/                   BRA 0x40 ;
        /*0060*/                   IADD3 R0, R0, 0x40, RZ ;
"""


def test_a_raw_listing_is_cut_per_section_with_section_addresses_and_labels():
    one, two = sass._cut_listing(RAW, [(0, 0x40, "first"), (0x40, 0x70, "second")])
    f1, f2 = sass.parse(one)["first"], sass.parse(two)["second"]
    assert [(i.addr, i.opcode, i.predicate) for i in f1.instrs] == [
        (0x00, "MOV", None), (0x10, "BRA", None), (0x20, "BRA", "@!P0"), (0x30, "EXIT", None),
    ]  # fmt: skip
    assert f1.labels == {".text.first": 0x00, ".L_x_0": 0x00, ".L_x_30": 0x30}
    assert [(lp.start, lp.end) for lp in sass.loops(f1)] == [(0x00, 0x20)]
    assert [i.operands for i in f2.instrs] == ["B0, `(.L_x_20)", "`(.L_x_0)", "R0, R0, 0x40, RZ"]
    assert [(lp.start, lp.end) for lp in sass.loops(f2)] == [(0x00, 0x10)]


def test_a_section_whose_instructions_are_not_all_listed_is_refused():
    with pytest.raises(ValueError, match="second: 3 instructions, 4 expected"):
        sass._cut_listing(RAW, [(0, 0x40, "first"), (0x40, 0x80, "second")])


def _shape(text: str) -> dict[str, list[tuple]]:
    """What parse() makes of a listing, labels replaced by the addresses they stand before."""
    out = {}
    for name, fn in sass.parse(text).items():
        out[name] = [
            (i.addr, i.opcode, i.predicate, i.operands.split("`")[0], fn.labels.get(i.target or ""))
            for i in fn.instrs
        ]
    return out


SIMT = stages.BY_NAME["naive_xcol"]
WGMMA = stages.BY_NAME["wgmma_ws"]


@pytest.mark.prebuild(SIMT, arch="sm_80", dtype="fp32")
@pytest.mark.prebuild(WGMMA, dtype="bf16")
def test_batched_listings_read_as_the_elf_listings_of_each_cubin():
    try:
        exe = sass.find_nvdisasm()
    except RooflineError as exc:
        pytest.skip(str(exc))
    cubins = [
        compiler.compile_stage(SIMT, "sm_80", "fp32").cubin_path,
        compiler.compile_stage(WGMMA, "sm_90a", "bf16").cubin_path,
    ]
    batched = sass.disassemble_many(cubins, exe)
    for cubin, text in zip(cubins, batched, strict=True):
        elf = subprocess.run([str(exe), "-c", "-ndf", cubin], capture_output=True, text=True)
        assert elf.returncode == 0, elf.stderr
        want, got = _shape(elf.stdout), _shape(text)
        assert list(got) == list(want) and got == want
        fn = next(iter(sass.parse(text).values()))
        assert sass.loops(fn), cubin  # both kernels loop over K
