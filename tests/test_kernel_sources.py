"""The kernel sources read as a worklog: one home for each PTX wrapper, no copy of a helper, a
short header per stage, and no measurement or history in any comment.

Every PTX instruction the kernels use is wrapped once, in the manner of CuTe's arch layer: in
kernels/include/ptx_sm80.cuh (the Ampere-era instructions) or in one header per operation under
kernels/include/sm90/, sm89/ and sm70/ (mbarriers, clusters, TMA, WGMMA and its descriptors, ...).
Stage files (kernels/NN_*.cu) and calibration kernels (kernels/calibrate/*.cu) include the
headers of what they use; ptx_sm90.cuh includes them all, for user stages. What several stages
run unchanged (an epilogue, the producer and consumer steps of a ring) lives in
kernels/include/gemm/. Each stage file opens with a header of at most HEADER_LINES comment lines
saying what its step changes and why; the figures a stage reaches live in the results documents
and the pages generated from them, never in a kernel source. Read as text: nothing is compiled.
"""

import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "kernels"
INCLUDE = KERNELS / "include"
# the PTX wrappers: one header per operation (sm90/, sm89/, sm70/) and the Ampere-era ptx_sm80.cuh
OPERATION_HEADERS = [
    h for arch in ("sm70", "sm89", "sm90") for h in sorted((INCLUDE / arch).glob("*.cuh"))
]
HEADERS = [INCLUDE / "ptx_sm80.cuh", *OPERATION_HEADERS]
# every shared header: the PTX wrappers, ptx_sm90.cuh (all of sm90/ and sm70/), elem.cuh (the
# element type of fp32/fp16/bf16 stages) and the steps several stages share (gemm/)
ALL_HEADERS = sorted(INCLUDE.rglob("*.cuh"))
SHARED_STEPS = sorted((INCLUDE / "gemm").glob("*.cuh"))
STAGE_FILES = sorted(KERNELS.glob("[0-9][0-9]_*.cu"))
CALIBRATION_FILES = sorted((KERNELS / "calibrate").glob("*.cu"))
SOURCES = sorted(p for p in KERNELS.rglob("*") if p.suffix in (".cu", ".cuh"))
HEADER_LINES = 20  # the most a stage file's leading comment may take
# the PTX each operation header wraps: every asm template in it starts with one of these
OPERATIONS = {
    "sm70/flags.cuh": ("ld.acquire.gpu", "st.release.gpu", "ld.relaxed.gpu", "fence.acq_rel.gpu",
                       "atom.acq_rel.gpu", "ld.acquire.cta", "st.release.cta"),
    "sm70/globaltimer.cuh": ("mov.u64 %0, %%globaltimer",),
    "sm70/ld_global_cg.cuh": ("ld.global.cg",),
    "sm70/named_barrier.cuh": ("bar.sync", "bar.arrive"),
    "sm89/mma_fp8.cuh": ("ROOFLINE_MMA_FP8_M16N8K32",),
    "sm90/cluster.cuh": ("mapa", "mbarrier.arrive.shared::cluster", "barrier.cluster"),
    "sm90/fence.cuh": ("fence.proxy.async",),
    "sm90/griddepcontrol.cuh": ("griddepcontrol.",),
    "sm90/mbarrier.cuh": ("mbarrier.", "{ .reg .b64 state; mbarrier.", "{ .reg .pred p; mbarrier.",
                          "fence.mbarrier_init"),
    "sm90/red.cuh": ("red.global",),
    "sm90/setmaxnreg.cuh": ("setmaxnreg",),
    "sm90/stmatrix.cuh": ("stmatrix",),
    "sm90/tma.cuh": ("cp.async.bulk", "prefetch.tensormap"),
    "sm90/wgmma.cuh": ("wgmma.", "{ .reg .pred p; setp.ne.b32 p, %"),
    "sm90/wgmma_desc.cuh": (),  # descriptors are built in C++: no PTX
    "sm90/wgmma_fp8.cuh": ("{ .reg .pred p; setp.ne.b32 p, %",),
}  # fmt: skip

ASM_RE = re.compile(r"\basm\s*(?:volatile\s*)?\(")
INCLUDE_RE = re.compile(r'^#include "([^"]+)"', re.M)
# a __device__ function definition or declaration: qualifiers, return type, then NAME(
DEVICE_FN_RE = re.compile(
    r"\b__device__\s+(?:(?:__forceinline__|__noinline__|inline|static|constexpr)\s+)*"
    r"[\w:<>,*&\s]*?\b(\w+)\s*\("
)

# Tiling code that later stages repeat on purpose: a stage file reads as its worklog step, whole.
# What several stages run unchanged lives in kernels/include/gemm/ (the SIMT float4 epilogue, the
# WGMMA ring's producer and consumer slices, the grouped tile orders, the TMA-store epilogue). A
# new copy of a helper fails the test below until it is listed here, or moved.
WORKLOG_COPIES: dict[str, set[str]] = {
    "a_coords": {"08", "09"},  # stage 09 = stage 08's tiles, double-buffered
    "load_a": {"08", "09"},
    "load_b": {"08", "09"},
    "store_a": {"08", "09"},
    "store_b": {"08", "09"},
    # 11 = 10's fragments, copies spread over k; 12 = 11's; 13 = 12's loop, run per piece
    "load_frags": {"10", "11", "12", "13"},
    "load_chunk": {"20", "21"},  # guarded 8-element global load
    "a_off": {"21", "22"},  # the swizzles (stage 22 generalises A to 128-byte rows)
    "b_off": {"21", "22"},
    # grouped tile order, each its own way (13: per tile number, 23: per block of a 2-D grid)
    "tile_origin": {"13", "23"},
    # stage 29's stream-K schedule (range w's first K tile, the next piece), reused by stage 13
    "start": {"13", "29"},
    "next": {"13", "29"},
    # rows of C per thread chosen at run time from a template ladder, each over its own tile
    # (stages 52 and 56 share theirs: gemm/gemv_splitk.cuh)
    "pick_rows": {"51", "54"},
}


def code(path: Path) -> str:
    """The file without comments (so that prose about `asm(` does not count)."""
    text = re.sub(r"/\*.*?\*/", " ", path.read_text(), flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def device_functions(path: Path) -> set[str]:
    return set(DEVICE_FN_RE.findall(code(path)))


def test_the_files_are_there():
    assert sorted(h.relative_to(INCLUDE).as_posix() for h in OPERATION_HEADERS) == sorted(
        OPERATIONS
    )
    assert (INCLUDE / "ptx_sm90.cuh").is_file() and SHARED_STEPS
    assert len(STAGE_FILES) >= 17
    assert CALIBRATION_FILES


NOT_WRAPPERS = [p for p in ALL_HEADERS if p not in HEADERS]  # ptx_sm90.cuh, elem.cuh, gemm/


@pytest.mark.parametrize(
    "path",
    STAGE_FILES + CALIBRATION_FILES + NOT_WRAPPERS,
    ids=lambda p: p.relative_to(KERNELS).as_posix(),
)
def test_no_inline_asm_outside_the_wrappers(path):
    found = ASM_RE.findall(code(path))
    assert not found, f"{path.name}: inline asm belongs in a PTX wrapper header (kernels/include)"


def asm_templates(header: Path) -> list[str]:
    """The instruction text of every asm in a header: its string literals (and the macros that
    name instructions) up to the first operand list, white space folded."""
    src, out = code(header), []
    for m in ASM_RE.finditer(src):
        head = re.match(r'((?:\s*(?:"(?:[^"\\]|\\.)*"|[A-Z_0-9]+))+)', src[m.end() :])
        assert head, src[m.start() : m.start() + 80]
        text = " ".join(re.sub(r'"\s*"|\\n', " ", head.group(1)).split()).strip('" ')
        out.append(text)
    return out


def test_the_headers_hold_the_asm():
    assert len(asm_templates(INCLUDE / "ptx_sm80.cuh")) >= 10  # the pattern finds what it seeks
    assert sum(len(asm_templates(h)) for h in OPERATION_HEADERS) >= 30


@pytest.mark.parametrize("path", OPERATION_HEADERS, ids=lambda p: p.relative_to(INCLUDE).as_posix())
def test_each_operation_header_wraps_its_operation(path):
    """sm90/tma.cuh wraps TMA and nothing else, and so on: one header per operation."""
    allowed = OPERATIONS[path.relative_to(INCLUDE).as_posix()]
    for text in asm_templates(path):
        assert text.startswith(allowed), f"{path.name} wraps {text[:60]!r}"


@pytest.mark.parametrize("path", HEADERS, ids=lambda p: p.relative_to(INCLUDE).as_posix())
def test_each_wrapper_says_what_it_wraps(path):
    """A comment line right above every wrapper (above its template line, if any)."""
    lines = path.read_text().splitlines()
    found = 0
    for i, line in enumerate(lines):
        if line.startswith("__device__"):
            found += 1
            above = i - 1 if not lines[i - 1].startswith("template") else i - 2
            assert lines[above].startswith("//"), f"{path.name}:{i + 1}: {line[:60]}"
    assert found, path.name


def test_ptx_sm90_includes_every_operation_header():
    included = set(INCLUDE_RE.findall((INCLUDE / "ptx_sm90.cuh").read_text()))
    assert included == {h.relative_to(INCLUDE).as_posix() for h in OPERATION_HEADERS}


def provided(header: str, seen: set[str] | None = None) -> set[str]:
    """The names a header defines, with those of every header it includes."""
    seen = set() if seen is None else seen
    if header in seen:
        return set()
    seen.add(header)
    path = INCLUDE / header
    src = code(path)
    names = set(DEVICE_FN_RE.findall(src)) | set(
        re.findall(r"\bstruct\s+(?:__align__\(\d+\)\s+)?(\w+)", src)
    )
    for inner in INCLUDE_RE.findall(path.read_text()):
        names |= provided(inner, seen)
    return names


@pytest.mark.parametrize("path", STAGE_FILES + CALIBRATION_FILES, ids=lambda p: p.name)
def test_each_source_includes_the_headers_of_what_it_uses(path):
    """No stage or calibration kernel includes ptx_sm90.cuh whole: it includes the operation
    headers whose wrappers it calls (directly, or through a shared step of gemm/ it includes),
    and each operation header it includes is one it calls a wrapper of."""
    includes = INCLUDE_RE.findall(path.read_text())
    assert "ptx_sm90.cuh" not in includes
    body = code(path)
    reachable = set().union(*(provided(h) for h in includes)) if includes else set()
    for header in OPERATION_HEADERS:
        name = header.relative_to(INCLUDE).as_posix()
        used = {n for n in provided(name) if re.search(rf"\b{n}\b", body)}
        missing = used - reachable
        assert not missing, f"{path.name} calls {sorted(missing)} without including {name}"
        if name in includes:
            assert used, f"{path.name} includes {name} but calls none of its wrappers"


def test_each_asm_template_is_written_once():
    """No wrapper is a copy of another: the same instruction text appears in one asm only."""
    seen: dict[str, str] = {}
    for header in HEADERS:
        for text in asm_templates(header):
            assert text not in seen, f"{header.name} wraps {text!r} twice (also {seen[text]})"
            seen[text] = header.name


def test_headers_define_each_function_once():
    names: defaultdict[str, list[str]] = defaultdict(list)
    for header in ALL_HEADERS:
        for m in DEVICE_FN_RE.finditer(code(header)):
            names[m.group(1)].append(header.name)
    assert names["mma_m16n8k16"] and names["tma_load_2d"]  # the pattern finds definitions
    assert {n: f for n, f in names.items() if len(f) > 1} == {}


def test_no_source_redefines_a_header_primitive():
    primitives = set().union(*(device_functions(h) for h in ALL_HEADERS))
    assert {"elem_to_float", "elem_from_float"} <= primitives
    for path in STAGE_FILES + CALIBRATION_FILES:
        again = device_functions(path) & primitives
        assert not again, f"{path.name} defines {sorted(again)}: kernels/include has them"


def test_no_helper_is_defined_in_two_stage_files():
    where: defaultdict[str, set[str]] = defaultdict(set)
    for path in STAGE_FILES:
        for name in device_functions(path):
            where[name].add(path.name[:2])
    assert "a_coords" in where and "load_frags" in where  # the pattern finds definitions
    copies = {name: files for name, files in where.items() if len(files) > 1}
    assert copies == WORKLOG_COPIES


def leading_comment(path: Path) -> list[str]:
    """The comment lines a file opens with, up to its first line of code."""
    lines = path.read_text().splitlines()
    n = next((i for i, line in enumerate(lines) if not line.startswith("//")), len(lines))
    return lines[:n]


def prose(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment and string literal: where a figure or a path could be."""
    src = path.read_text()
    found = re.finditer(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"', src, flags=re.S)
    return [(src.count("\n", 0, m.start()) + 1, m.group(0)) for m in found]


# what a kernel source never says: measured figures, results documents, logs, device scripts,
# and how the project was made (case-insensitive; a modulo in prose is written `k % 8`)
NOT_IN_KERNELS = {
    "a measured percentage": r"\d%",
    "a throughput": r"\d\s*(?:[kMGTP]?FLOP/s|TFLOPS)\b",
    "a bandwidth": r"\d\s*[kMGT]i?B/s\b",
    "a time": r"\d\s*(?:µs|us|ms)\b",
    "a measurement": r"\bmeasured (?:on|at)\b|\bran at\b",
    "a results document": r"\.json\b",
    "a log": r"\blogs?/|\.log\b",
    "a device script": r"\b\w+\.sh\b",
    "history": r"\bsession\b|\blent\b|\bdevice[-_ ](?:call|log)|\bcalls? [0-9]|\bgpu_s[0-9]"
    r"|\bissue [0-9]|-s[0-9]\.json",
}


@pytest.mark.parametrize("path", STAGE_FILES, ids=lambda p: p.name)
def test_each_stage_file_opens_with_a_short_header(path):
    """A worklog step: `// Stage NN: ...` first, at most HEADER_LINES lines of why and what."""
    header = leading_comment(path)
    assert header and header[0].startswith(f"// Stage {path.name[:2]}: "), header[:1]
    assert len(header) <= HEADER_LINES, f"{path.name}: a header of {len(header)} lines"


def test_the_header_rules_see_what_they_look_for():
    assert len(leading_comment(KERNELS / "12_serpentine_ffma.cu")) > 5
    # (the history words are split so that the repository's own history check passes this file)
    bad = "// 97.9% of cuBLAS, 394 TFLOP/s, 4.6 TB/s, 13.5 us (gemm-x.json, logs/" + "s8/a.log, "
    bad += "gpu_" + "s8b.sh)"
    hits = [what for what, rx in NOT_IN_KERNELS.items() if re.search(rx, bad, re.I)]
    assert hits == [
        "a measured percentage", "a throughput", "a bandwidth", "a time", "a results document",
        "a log", "a device script", "history",
    ]  # fmt: skip
    fine = "// chunk c ^ (k % 8), 2.67 FLOP/byte, 4096 FLOPs, 8 KiB, a round trip, 64-column boxes"
    assert [w for w, rx in NOT_IN_KERNELS.items() if re.search(rx, fine, re.I)] == []


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(KERNELS).as_posix())
def test_no_kernel_source_holds_a_measurement_or_history(path):
    bad = [
        f"{path.name}:{line}: {what}: {text.strip()[:90]}"
        for line, text in prose(path)
        for what, rx in NOT_IN_KERNELS.items()
        if re.search(rx, text, re.I)
    ]
    assert not bad, "\n".join(bad)


def test_stages_cited_in_the_sources_exist():
    """`stage NN` in a comment names a stage file (the families were renumbered once)."""
    numbers = {p.name[:2] for p in STAGE_FILES}
    cite = re.compile(r"\bstages? (\d\d(?:(?:\s*[-/,]\s*|\s+and\s+|\s+or\s+)\d\d)*)", re.I)
    bad, seen = [], 0
    for path in SOURCES:
        for line, text in prose(path):
            for m in cite.finditer(text):
                for n in re.findall(r"\d\d", m.group(1)):
                    seen += 1
                    if n not in numbers:
                        bad.append(f"{path.name}:{line}: stage {n}")
    assert seen > 50 and not bad, bad


def test_kernels_readme_is_the_registries_listing(tmp_path):
    """kernels/README.md: one line per stage, generated from the registries' `what` fields."""
    from rooflinecli.stages import listing

    text = listing.kernels_readme()
    fix = "python -m rooflinecli.stages.listing kernels/README.md"
    assert (KERNELS / "README.md").read_text() == text, f"out of date: {fix}"
    rows = [line for line in text.splitlines() if re.match(r"\| \d\d \| ", line)]
    files = {re.search(r"`(\d\d_\w+\.cu)`", row).group(1) for row in rows}  # type: ignore[union-attr]
    assert files == {p.name for p in STAGE_FILES}  # every stage file, and only those
    for title, lo, hi in listing.FAMILIES:  # each family's rows under its own heading
        section = text.split(f"## {title} ({lo:02d}-{hi:02d})")[1].split("\n## ")[0]
        numbers = {int(n) for n in re.findall(r"^\| (\d\d) \|", section, re.M)}
        assert numbers and all(lo <= n <= hi for n in numbers), title
    stale = tmp_path / "README.md"
    stale.write_text("old\n")
    assert listing.main(["--check", str(stale)]) == 1
    assert listing.main([str(stale)]) == 0 and listing.main(["--check", str(stale)]) == 0
