"""What the compiler made: SASS from nvdisasm, its loops, and the instruction mix of the main loop.

nvdisasm comes from the `nvidia-cuda-nvdisasm` wheel (no GPU, no driver needed). The main loop
is found from the control flow: a BRA to an earlier label closes a loop whose body runs from
that label to the branch. Among the loops that do arithmetic (FFMA, HMMA, HGMMA, ...), the
innermost ones are candidates, and the one with the most matrix/FMA instructions wins.

Pure Python apart from running nvdisasm; no CuPy.

Listings are cached beside the cubins (listing, listings): keyed by the cubin's bytes and the
nvdisasm that read them, so a warm `inspect` runs no nvdisasm at all (its start-up alone costs
about 0.45 s of CPU a run, and a listing of every stage 12 s of the 14 `inspect gemm` took).
"""

from __future__ import annotations

import bisect
import hashlib
import importlib.util
import os
import re
import shutil
import struct
import subprocess
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rooflinecli import files
from rooflinecli.errors import RooflineError
from rooflinecli.paths import cache_dir, executable_from_env

ENV_VAR = "ROOFLINE_NVDISASM"

# Tensor Core matrix instructions and FMA-like math: what a GEMM main loop is made of.
TENSOR_OPS = frozenset({"HMMA", "HGMMA", "IMMA", "IGMMA", "QGMMA", "DMMA", "BMMA", "OMMA"})
FMA_OPS = frozenset({"FFMA", "DFMA", "FFMA2"})
MATH_OPS = TENSOR_OPS | FMA_OPS

# Memory instructions whose access width we record (bits; a bare opcode moves 32 bits).
_MEM_OPS = frozenset({"LDG", "STG", "LDS", "STS", "LDL", "STL", "LD", "ST", "LDGSTS", "ATOMG"})
_WIDTHS = {"8": 8, "U8": 8, "S8": 8, "16": 16, "U16": 16, "S16": 16, "32": 32, "64": 64,
           "128": 128}  # fmt: skip

# Columns shown for a mix, in order (every opcode is kept in the full counter).
MIX_KEYS: tuple[str, ...] = (
    "LDG", "LDS", "LDGSTS", "UTMALDG", "STS", "STG", "LDSM", "LDL", "STL", "FFMA", "HMMA",
    "HGMMA", "BAR",
)  # fmt: skip

_INSTR_RE = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s+(.*?)\s*;")
_LABEL_RE = re.compile(r"^([.$\w]+):\s*$")
_PRED_RE = re.compile(r"^@!?U?P[T0-9]+\s+")
_TARGET_RE = re.compile(r"`\(([^)]+)\)")
_SECTION_RE = re.compile(r"^\s*\.section\s+\.text\.([^\s,]+)")
_HMMA_SHAPES = {"16816": (16, 8, 16), "1688": (16, 8, 8), "884": (8, 8, 4), "16832": (16, 8, 32),
                "1684": (16, 8, 4), "16864": (16, 8, 64)}  # fmt: skip
_GMMA_SHAPE_RE = re.compile(r"^(\d+)x(\d+)x(\d+)$")


def find_nvdisasm() -> Path:
    """$ROOFLINE_NVDISASM, else the nvidia-cuda-nvdisasm wheel's bin folder, else PATH."""
    named = executable_from_env(ENV_VAR)
    if named is not None:
        return named
    for folder in _wheel_bin_folders():
        p = folder / "nvdisasm"
        if p.is_file() and os.access(p, os.X_OK):
            return p
    found = shutil.which("nvdisasm")
    if found:
        return Path(found)
    raise RooflineError(
        "nvdisasm not found: pip install nvidia-cuda-nvdisasm (or 'roofline[compile]'), "
        f"put it on PATH, or set {ENV_VAR}"
    )


def _wheel_bin_folders() -> list[Path]:
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    out = []
    for root in spec.submodule_search_locations:
        base = Path(root)
        # CUDA 13 wheels share nvidia/cu13/bin; CUDA 12 wheels have nvidia/cuda_nvdisasm/bin
        out += [base / "cu13" / "bin", base / "cuda_nvdisasm" / "bin"]
        out += sorted(base.glob("cu1*/bin"), reverse=True)
    return out


def disassemble(cubin: str | Path, nvdisasm: Path | None = None) -> str:
    """nvdisasm -c: the code sections of a cubin as text. -ndf skips the dataflow analysis,
    which annotates nothing in this listing (the same bytes, on the 78 cubins of the test suite)
    and costs a quarter of nvdisasm's time."""
    exe = nvdisasm or find_nvdisasm()
    try:
        out = subprocess.run(
            [str(exe), "-c", "-ndf", str(cubin)], capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RooflineError(f"nvdisasm failed on {cubin}: {exc}") from None
    if out.returncode != 0:
        why = (out.stderr.strip().splitlines() or ["no message"])[0]
        raise RooflineError(f"nvdisasm failed on {cubin}: {why}")
    return out.stdout


# nvdisasm spends about 0.45 s of CPU starting up, whatever it disassembles. Many cubins cost one
# start-up when their code is handed to it at once as a raw instruction stream (`-b SMxy`): the
# listing is then cut back into one per cubin, its addresses made section-relative and its code
# addresses turned into the labels the ELF listing has, so parse() reads both alike
# (tests/test_sass_batch.py compares them).
_RAW_ADDR_OPS = frozenset({"BRA", "BSSY", "CALL", "BREAK", "SSY", "PBK", "JMP", "CAL", "PCNT"})
_HEX_RE = re.compile(r"\b0x([0-9a-fA-F]+)\b")


def _elf_code(cubin: bytes) -> tuple[int, list[tuple[str, bytes]]]:
    """(the SM number in the header's flags, [(kernel, code) of each .text.* section])."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF")
    (flags,) = struct.unpack_from("<I", cubin, 0x30)
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    entsize, count, names_at = struct.unpack_from("<HHH", cubin, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", cubin, shoff + i * entsize) for i in range(count)]
    strtab = heads[names_at][4]
    out = []
    for name_off, _type, _flags, _addr, offset, size in heads:
        end = cubin.index(b"\0", strtab + name_off)
        name = cubin[strtab + name_off : end].decode()
        if name.startswith(".text.") and size:
            out.append((name[len(".text.") :], cubin[offset : offset + size]))
    return (flags >> 8) & 0xFF, out


def _cut_listing(raw: str, chunks: list[tuple[int, int, str]]) -> list[str]:
    """Per chunk (start, end, kernel) of a raw listing: its lines as the ELF listing has them."""
    by_chunk: list[list[tuple[int, str]]] = [[] for _ in chunks]
    starts = [c[0] for c in chunks]
    for line in raw.splitlines():
        m = _INSTR_RE.match(line)
        if not m:
            continue
        addr = int(m.group(1), 16)
        i = bisect.bisect_right(starts, addr) - 1
        if i >= 0 and addr < chunks[i][1]:
            by_chunk[i].append((addr, line))
    return [_relabel(lines, *chunk) for chunk, lines in zip(chunks, by_chunk, strict=True)]


def _relabel(lines: list[tuple[int, str]], start: int, end: int, name: str) -> str:
    """One section's raw lines as the ELF listing writes them: addresses from the section's
    start, code addresses inside it as `(.L_x_ADDR) with the label before its instruction."""
    if len(lines) != (end - start) // 16:
        raise ValueError(f"{name}: {len(lines)} instructions, {(end - start) // 16} expected")
    targets: set[int] = set()

    def label(h: re.Match[str]) -> str:
        at = int(h.group(1), 16)
        if not start <= at < end:
            return h.group(0)
        targets.add(at - start)
        return f"`(.L_x_{at - start:x})"

    body = []
    for addr, line in lines:
        m = _INSTR_RE.match(line)
        assert m is not None
        text = m.group(2)
        op = _PRED_RE.sub("", text.strip()).split(None, 1)
        if op and op[0].split(".", 1)[0] in _RAW_ADDR_OPS:
            text = _HEX_RE.sub(label, text)
        body.append((addr - start, text))
    out = [f'\t.section\t.text.{name},"ax",@progbits', f".text.{name}:"]
    for addr, text in body:
        if addr in targets:
            out.append(f".L_x_{addr:x}:")
        out.append(f"        /*{addr:04x}*/                   {text} ;")
    return "\n".join(out) + "\n"


def disassemble_many(cubins: list[str | Path], nvdisasm: Path | None = None) -> list[str]:
    """Listings of several cubins from one nvdisasm run (see _RAW_ADDR_OPS above), each in the
    form parse() reads; a cubin whose code cannot be batched (an architecture nvdisasm's raw mode
    does not name) gets disassemble()'s listing instead."""
    exe = nvdisasm or find_nvdisasm()
    texts: list[str | None] = [None] * len(cubins)
    groups: dict[int, list[tuple[int, list[tuple[str, bytes]]]]] = {}
    for i, path in enumerate(cubins):
        try:
            sm, code = _elf_code(Path(path).read_bytes())
        except (OSError, ValueError, IndexError):
            continue
        if 75 <= sm <= 121 and code:
            groups.setdefault(sm, []).append((i, code))

    for sm, members in groups.items():
        blob, chunks, owner = bytearray(), [], []
        for i, code in members:
            for name, data in code:
                chunks.append((len(blob), len(blob) + len(data), name))
                owner.append(i)
                blob += data
        with tempfile.NamedTemporaryFile(suffix=".bin") as f:
            f.write(blob)
            f.flush()
            arch = f"SM{sm}a" if sm == 90 else f"SM{sm}"
            try:
                out = subprocess.run(
                    [str(exe), "-b", arch, "-ndf", f.name],
                    capture_output=True, text=True, timeout=600,
                )  # fmt: skip
            except (OSError, subprocess.TimeoutExpired):
                continue
        if out.returncode != 0:
            continue
        try:
            parts = _cut_listing(out.stdout, chunks)
        except ValueError:
            continue
        for i, text in zip(owner, parts, strict=True):
            texts[i] = (texts[i] or "") + text
    return [t if t is not None else disassemble(c, exe) for c, t in zip(cubins, texts, strict=True)]


# What a cached listing is: the form parse() reads, from `-c -ndf` (disassemble) or the raw
# stream cut back into sections (disassemble_many). Changing either changes this.
LISTING_FORM = "nvdisasm -ndf, sections as -c writes them: 1"


def _listing_path(cubin: bytes, exe: Path) -> Path:
    """Where the listing of these cubin bytes, as this nvdisasm (its path, size and time: an
    upgrade is another program) writes it, is kept."""
    real = exe.resolve()
    st = real.stat()
    h = hashlib.sha256(f"{LISTING_FORM}\0{real}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    h.update(cubin)
    return cache_dir() / "sass" / f"{h.hexdigest()[:40]}.sass"


def _read_cubin(cubin: str | Path) -> bytes:
    try:
        return Path(cubin).read_bytes()
    except OSError as exc:
        raise RooflineError(f"cannot read {cubin}: {exc.strerror}") from None


def cached_listing(cubin: str | Path, nvdisasm: Path | None = None) -> str | None:
    """The cached listing of a cubin, None when there is none."""
    exe = nvdisasm or find_nvdisasm()
    try:
        return _listing_path(_read_cubin(cubin), exe).read_text()
    except (OSError, UnicodeDecodeError):
        return None


def store_listing(cubin: str | Path, text: str, nvdisasm: Path | None = None) -> None:
    """Keep the listing of a cubin for the next time: a cache, so a cache that cannot be
    written costs only the time (the command goes on)."""
    exe = nvdisasm or find_nvdisasm()
    try:
        path = _listing_path(_read_cubin(cubin), exe)
        path.parent.mkdir(parents=True, exist_ok=True)
        files.write_atomic(path, text)
    except (OSError, RooflineError):
        pass


def listing(cubin: str | Path, nvdisasm: Path | None = None) -> str:
    """disassemble(), cached: the listing of this cubin from the cache, else nvdisasm's."""
    return listings([cubin], nvdisasm)[0]


def listings(
    cubins: Sequence[str | Path],
    nvdisasm: Path | None = None,
    workers: int | None = None,
    done: Callable[[int], None] | None = None,
) -> list[str]:
    """The listings of these cubins, in their order: the cached ones from the cache; the rest
    from nvdisasm, in batches (disassemble_many: one start-up a batch), up to `workers` runs at
    once (default: one per core), then cached. `done(i)` is called as listing i is had."""
    exe = nvdisasm or find_nvdisasm()
    texts: list[str | None] = [cached_listing(c, exe) for c in cubins]
    missing = [i for i, t in enumerate(texts) if t is None]
    for i, t in enumerate(texts):
        if t is not None and done is not None:
            done(i)
    if not missing:
        return [t for t in texts if t is not None]
    if workers is None:
        from rooflinecli.stages.compiler import cores

        workers = cores()
    runs = max(1, min(workers, len(missing)))
    # heavier cubins in separate runs: deal them out by size, largest first
    by_size = sorted(missing, key=lambda i: -Path(cubins[i]).stat().st_size)
    batches = [by_size[r::runs] for r in range(runs)]

    def run(batch: list[int]) -> None:
        if len(batch) == 1:  # one start-up either way: the ELF listing itself
            got = [disassemble(cubins[batch[0]], exe)]
        else:
            got = disassemble_many([cubins[i] for i in batch], exe)
        for i, text in zip(batch, got, strict=True):
            texts[i] = text
            store_listing(cubins[i], text, exe)
            if done is not None:
                done(i)

    if runs == 1:
        run(batches[0])
    else:  # nvdisasm runs as processes of its own: threads that wait on them suffice
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(runs) as pool:
            for future in [pool.submit(run, b) for b in batches]:
                future.result()
    return [t for t in texts if t is not None]


@dataclass(frozen=True)
class Instr:
    addr: int
    opcode: str  # full mnemonic with modifiers, e.g. LDG.E.128.CONSTANT
    predicate: str | None
    operands: str
    target: str | None  # branch target label, for BRA

    @property
    def base(self) -> str:
        return self.opcode.split(".", 1)[0]


@dataclass
class Function:
    name: str
    instrs: list[Instr] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)  # label -> address it stands before


@dataclass(frozen=True)
class Loop:
    label: str
    start: int  # address of the loop's first instruction (the branch target)
    end: int  # address of the backward branch that closes it

    def contains(self, other: Loop) -> bool:
        return self.start <= other.start and other.end <= self.end and self != other


def parse(text: str) -> dict[str, Function]:
    """Functions of an nvdisasm listing by name, with instructions and label addresses."""
    funcs: dict[str, Function] = {}
    cur: Function | None = None
    pending: list[str] = []
    for line in text.splitlines():
        m = _SECTION_RE.match(line)
        if m:
            cur = funcs.setdefault(m.group(1), Function(m.group(1)))
            pending = []
            continue
        if cur is None:
            continue
        m = _INSTR_RE.match(line)
        if m:
            addr = int(m.group(1), 16)
            for lab in pending:
                cur.labels[lab] = addr
            pending = []
            body = m.group(2).strip()
            pred = None
            pm = _PRED_RE.match(body)
            if pm:
                pred = pm.group(0).strip()
                body = body[pm.end() :]
            parts = body.split(None, 1)
            if not parts:
                continue
            opcode = parts[0]
            operands = parts[1] if len(parts) > 1 else ""
            tm = _TARGET_RE.search(operands)
            target = tm.group(1) if tm and opcode.split(".", 1)[0] == "BRA" else None
            cur.instrs.append(Instr(addr, opcode, pred, operands, target))
            continue
        m = _LABEL_RE.match(line.strip())
        if m:
            pending.append(m.group(1))
    return funcs


def loops(fn: Function) -> list[Loop]:
    """Every backward branch: a loop from its target label to the branch, in address order."""
    found = []
    for ins in fn.instrs:
        if ins.target is None:
            continue
        start = fn.labels.get(ins.target)
        if start is not None and start <= ins.addr:
            found.append(Loop(ins.target, start, ins.addr))
    return sorted(set(found), key=lambda lp: (lp.start, lp.end))


def body(fn: Function, loop: Loop) -> list[Instr]:
    return [i for i in fn.instrs if loop.start <= i.addr <= loop.end]


def mix(instrs: list[Instr]) -> Counter[str]:
    """Instruction counts by base opcode (LDG.E.128.CONSTANT counts as LDG)."""
    return Counter(i.base for i in instrs)


def widths(instrs: list[Instr]) -> Counter[str]:
    """Memory instructions by base opcode and access width, e.g. {'LDG.128': 4, 'LDS.32': 8}."""
    out: Counter[str] = Counter()
    for ins in instrs:
        if ins.base not in _MEM_OPS:
            continue
        bits = 32
        for part in ins.opcode.split(".")[1:]:
            if part in _WIDTHS:
                bits = _WIDTHS[part]
        out[f"{ins.base}.{bits}"] += 1
    return out


def math_count(counts: Counter[str]) -> tuple[int, int]:
    """(Tensor Core instructions, all FMA/matrix instructions): how a main loop is ranked."""
    tensor = sum(counts[k] for k in TENSOR_OPS)
    return tensor, tensor + sum(counts[k] for k in FMA_OPS)


def macs_per_thread(instrs: list[Instr]) -> float:
    """Multiply-adds each thread's share of these instructions performs: an FFMA is 1; an
    HMMA.16816 is 16*8*16 for a warp, /32 per thread; an HGMMA.64xNx16 is 64*N*16 for a
    warpgroup, /128 per thread."""
    total = 0.0
    for ins in instrs:
        base = ins.base
        parts = ins.opcode.split(".")
        if base in ("FFMA", "DFMA"):
            total += 1
        elif base == "FFMA2":
            total += 2
        elif base == "HMMA" and len(parts) > 1 and parts[1] in _HMMA_SHAPES:
            m, n, k = _HMMA_SHAPES[parts[1]]
            total += m * n * k / 32
        elif base in ("HGMMA", "QGMMA", "IGMMA") and len(parts) > 1:
            gm = _GMMA_SHAPE_RE.match(parts[1])
            if gm:
                m, n, k = (int(x) for x in gm.groups())
                total += m * n * k / 128
    return total


def gmma_k_steps(instrs: list[Instr]) -> float | None:
    """k steps a loop iteration covers, from its warpgroup MMAs alone: each HGMMA.64xNxK adds K
    to the accumulator tile it writes (its first register), so k = sum of K / tiles. This
    holds whatever the block's thread count (warp-specialized producers do no math)."""
    total, tiles = 0, set()
    for ins in instrs:
        parts = ins.opcode.split(".")
        if ins.base in ("HGMMA", "QGMMA", "IGMMA") and len(parts) > 1:
            gm = _GMMA_SHAPE_RE.match(parts[1])
            if gm:
                total += int(gm.group(3))
                tiles.add(ins.operands.split(",", 1)[0].strip())
    return total / len(tiles) if tiles else None


@dataclass
class Report:
    """The SASS facts `inspect` shows for one kernel."""

    function: str
    instructions: int
    kernel: Counter[str]
    kernel_widths: Counter[str]
    loops: int
    main_loop: Loop | None
    loop: Counter[str]  # the main loop's mix (empty without one)
    loop_widths: Counter[str]
    loop_instructions: int
    loop_macs_per_thread: float
    loop_gmma_k_steps: float | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "function": self.function,
            "instructions": self.instructions,
            "loops": self.loops,
            "main_loop": (
                None
                if self.main_loop is None
                else {
                    "label": self.main_loop.label,
                    "start": f"0x{self.main_loop.start:04x}",
                    "end": f"0x{self.main_loop.end:04x}",
                    "instructions": self.loop_instructions,
                    "macs_per_thread": self.loop_macs_per_thread,
                    "mix": dict(sorted(self.loop.items())),
                    "widths": dict(sorted(self.loop_widths.items())),
                }
            ),
            "kernel_mix": dict(sorted(self.kernel.items())),
            "kernel_widths": dict(sorted(self.kernel_widths.items())),
        }


def structured(found: list[Loop]) -> list[Loop]:
    """Drop back-jumps that are not loops: real loops nest or are disjoint; when two regions
    overlap only partly, the later-ending one is an out-of-line block (a barrier's slow path
    placed after the epilogue, say) returning into the loop, and is dropped."""
    drop = set()
    for a in found:
        for b in found:
            if a.start < b.start <= a.end < b.end:
                drop.add(b)
    return [lp for lp in found if lp not in drop]


def main_loop(fn: Function) -> Loop | None:
    """The innermost loop doing arithmetic with the most matrix (then FMA) instructions.

    Loops without any (spin-waits on a barrier, remainder loops of index math) are ignored,
    also when deciding what is innermost: a main loop around an mbarrier wait still counts.
    Partly overlapping regions are resolved first (see structured)."""
    scored = []
    for lp in structured(loops(fn)):
        tensor, math = math_count(mix(body(fn, lp)))
        if math:
            scored.append((lp, tensor, math))
    inner = [s for s in scored if not any(s[0].contains(o[0]) for o in scored)]
    if not inner:
        return None
    best = max(inner, key=lambda s: (s[1], s[2], -s[0].start))
    return best[0]


def analyze(text: str, entry: str) -> Report:
    """The whole-kernel and main-loop instruction mix of `entry` in an nvdisasm listing."""
    funcs = parse(text)
    if entry not in funcs:
        have = ", ".join(sorted(funcs)) or "none"
        raise RooflineError(f"no function {entry} in the SASS (functions: {have})")
    fn = funcs[entry]
    lp = main_loop(fn)
    inner = body(fn, lp) if lp else []
    return Report(
        function=entry,
        instructions=len(fn.instrs),
        kernel=mix(fn.instrs),
        kernel_widths=widths(fn.instrs),
        loops=len(loops(fn)),
        main_loop=lp,
        loop=mix(inner),
        loop_widths=widths(inner),
        loop_instructions=len(inner),
        loop_macs_per_thread=macs_per_thread(inner),
        loop_gmma_k_steps=gmma_k_steps(inner),
    )


def analyze_cubin(cubin: str | Path, entry: str, nvdisasm: Path | None = None) -> Report:
    return analyze(listing(cubin, nvdisasm), entry)
