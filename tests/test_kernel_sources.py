"""The kernel sources read as a worklog: one home for each PTX wrapper, no copy of a helper, a
short header per stage, and no measurement or history in any comment.

Every PTX instruction the kernels use is wrapped once, in kernels/include/ptx_sm80.cuh or
ptx_sm90.cuh; stage files (kernels/NN_*.cu) and calibration kernels (kernels/calibrate/*.cu)
include them. Each stage file opens with a header of at most HEADER_LINES comment lines saying
what its step changes and why; the figures a stage reaches live in the results documents and the
pages generated from them, never in a kernel source. Read as text: nothing is compiled here.
"""

import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "kernels"
HEADERS = sorted((KERNELS / "include").glob("ptx_*.cuh"))  # the PTX wrappers
# every shared header: the PTX wrappers, and elem.cuh (the element type of fp32/fp16/bf16 stages)
ALL_HEADERS = sorted((KERNELS / "include").glob("*.cuh"))
STAGE_FILES = sorted(KERNELS.glob("[0-9][0-9]_*.cu"))
CALIBRATION_FILES = sorted((KERNELS / "calibrate").glob("*.cu"))
SOURCES = sorted(p for p in KERNELS.rglob("*") if p.suffix in (".cu", ".cuh"))
HEADER_LINES = 20  # the most a stage file's leading comment may take

ASM_RE = re.compile(r"\basm\s*(?:volatile\s*)?\(")
# a __device__ function definition or declaration: qualifiers, return type, then NAME(
DEVICE_FN_RE = re.compile(
    r"\b__device__\s+(?:(?:__forceinline__|__noinline__|inline|static|constexpr)\s+)*"
    r"[\w:<>,*&\s]*?\b(\w+)\s*\("
)

# Tiling and epilogue code that later stages repeat on purpose: a stage file reads as its worklog
# step, whole (only architecture primitives go in kernels/include). A new copy of a helper fails
# the test below until it is listed here, or moved.
WORKLOG_COPIES: dict[str, set[str]] = {
    # 16-byte alignment of a pointer (float4)
    "aligned16": {"07", "08", "09", "10", "11", "12", "13"},
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
    # grouped tile order (23: per block; 13, 26, 29: per tile number; 27, 28, 30: per pair of rows)
    "tile_origin": {"13", "23", "26", "27", "28", "29", "30"},
    # stage 29's stream-K schedule (range w's first K tile, the next piece), reused by stage 13
    "start": {"13", "29"},
    "next": {"13", "29"},
    "store_block": {"24", "25", "26"},  # the WGMMA accumulator layout's register epilogue
    "store_tile_tma": {"26", "27", "28", "29"},  # the TMA-store epilogue of stage 26, unchanged
    # a ring slot released to both producers of a pair (30: once per warpgroup, WG_RELEASE)
    "release_slot": {"27", "28", "30"},
    # 16 bytes of B to floats (stage 52 = stage 51's loads, split K; 54 = 52's, stream-K)
    "unpack16": {"51", "52", "54"},
    "pick_rows": {
        "51",
        "52",
        "54",
    },  # rows of C per thread chosen at run time from a template ladder
    "element": {"52", "54"},  # one element of 16 bytes of A as a float
    "fma_row": {"52", "54"},  # the scalar path: one row of B times A's column
}


def code(path: Path) -> str:
    """The file without comments (so that prose about `asm(` does not count)."""
    text = re.sub(r"/\*.*?\*/", " ", path.read_text(), flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def device_functions(path: Path) -> set[str]:
    return set(DEVICE_FN_RE.findall(code(path)))


def test_the_files_are_there():
    assert [h.name for h in HEADERS] == ["ptx_sm80.cuh", "ptx_sm90.cuh"]
    assert len(STAGE_FILES) >= 17
    assert CALIBRATION_FILES


@pytest.mark.parametrize("path", STAGE_FILES + CALIBRATION_FILES, ids=lambda p: p.name)
def test_no_inline_asm_outside_the_headers(path):
    found = ASM_RE.findall(code(path))
    assert not found, f"{path.name}: inline asm belongs in kernels/include/ptx_sm*.cuh"


def test_the_headers_hold_the_asm():
    # the pattern above finds what it looks for
    for header in HEADERS:
        assert len(ASM_RE.findall(code(header))) >= 10, header.name


def test_each_asm_template_is_written_once():
    """No wrapper is a copy of another: the same instruction text appears in one asm only."""
    seen: dict[str, str] = {}
    for header in HEADERS:
        src = code(header)
        for m in ASM_RE.finditer(src):
            # the string literals (and macros naming instructions) up to the first operand list
            head = re.match(r'((?:\s*(?:"(?:[^"\\]|\\.)*"|[A-Z_0-9]+))+)', src[m.end() :])
            assert head, src[m.start() : m.start() + 80]
            text = " ".join(head.group(1).split())
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
    assert "store_block" in where and "load_frags" in where  # the pattern finds definitions
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
