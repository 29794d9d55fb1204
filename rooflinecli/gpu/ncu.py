"""Nsight Compute counters: which metrics the tool reads, what each one counts, and the arithmetic
that turns them into FLOPs, bytes per memory level and intensities. Pure Python, no GPU.

Used by `roofline profile gemm`, `roofline profile app` and `measure(..., counters=True)`.

Metrics relied on (each a `.sum` over the whole GPU for one kernel launch):

time
  gpu__time_duration.sum                       the kernel's duration on the GPU (ncu prints ns)

FLOPs counted by instruction, CUDA cores (SIMT), thread instructions whose predicate was on:
  sm__sass_thread_inst_executed_op_{dadd,dmul,dfma}_pred_on.sum   FP64: add 1, mul 1, fma 2
  sm__sass_thread_inst_executed_op_{fadd,fmul,ffma}_pred_on.sum   FP32: add 1, mul 1, fma 2
  sm__sass_thread_inst_executed_op_{hadd,hmul,hfma}_pred_on.sum   FP16: add 1, mul 1, fma 2
    (as Nsight Compute's own roofline sections count them; a packed HADD2/HMUL2/HFMA2 does
    two operations per thread, so a kernel of packed half2 math may count half its FLOPs: the
    record says so whenever FP16 SIMT work is present)

Tensor Core work: the tensor path's operation counters, one per source precision, dense and
sparse together. One "op" is taken as one floating-point operation (a multiply-add counts 2): a
public report found ncu's fp8 counter equal to 2*M*N*K for an fp8 GEMM on an RTX 4090; on this
project's H200 it is not yet confirmed: `roofline profile gemm` checks the sum against 2MNK for
every stage (flops_check, 0.1%, and says so when it is off by a factor of 2), and
tests/gpu/test_profile_app_gpu.py checks a cuBLAS FP16 matmul within 0.5%:
  sm__ops_path_tensor_src_fp16.sum              FP16 sources, any accumulator (the name public
    Hopper metric lists give; the H200's listing had neither half below: the committed profile
    documents list both under dropped_metrics, so FP16 went uncounted); else
    sm__ops_path_tensor_src_fp16_dst_fp16.sum + sm__ops_path_tensor_src_fp16_dst_fp32.sum
  sm__ops_path_tensor_src_bf16_dst_fp32.sum     BF16 sources, FP32 accumulator
  sm__ops_path_tensor_src_tf32_dst_fp32.sum     TF32 sources, FP32 accumulator
  sm__ops_path_tensor_src_fp8.sum               FP8 (E4M3/E5M2) sources; else the pair
    sm__ops_path_tensor_src_fp8_dst_fp16.sum + sm__ops_path_tensor_src_fp8_dst_fp32.sum
  sm__ops_path_tensor_src_fp64.sum              FP64 DMMA
  sm__ops_path_tensor_src_int8.sum              INT8 (integer operations, not FLOPs)
  Where a GPU lists only the halves split by sparsity, X_sparsity_off.sum + X_sparsity_on.sum
  (X any of the above but fp64) is read instead.
  sm__inst_executed_pipe_tensor_op_gmma.sum     WGMMA instructions (sm_90a; optional): tells
    whether operands were read from shared memory by WGMMA, which no byte counter here sees

Bytes per memory level:
  dram__bytes_read.sum, dram__bytes_write.sum   DRAM (HBM) traffic
  dram__sectors_read.sum                        DRAM sectors read, x 32 bytes (profile gemm only)
  lts__t_bytes.sum                              bytes requested from the L2 by its clients
  l1tex__t_bytes.sum                            bytes through the L1TEX tag stage: global and
    local loads and stores by the LSU (cp.async's global side included), not shared memory
  sm__sass_data_bytes_mem_shared.sum            shared-memory bytes moved by SASS instructions
    (LDS, STS, LDSM, shared atomics, cp.async's shared side)
  l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum   bytes TMA loaded from L2 into
    shared memory (sm_90+; optional)
  l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum  bytes TMA stored from shared memory
    to L2 (sm_90+; optional)
  The shared-memory level ("smem") is the sum of the last three.

A metric the GPU's ncu does not list (`ncu --query-metrics`) is never asked for (ncu would refuse
the whole run); the count it feeds is then null and the record says why. "Optional" metrics
belong to units older GPUs lack (TMA, WGMMA): unlisted, they count 0 with no note.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# --------------------------------------------------------------------------- the catalogue

Term = tuple[str, float]  # (metric, factor)


@dataclass(frozen=True)
class Count:
    """One quantity read from ncu: the first alternative whose metrics are all listed is used."""

    key: str
    what: str
    alternatives: tuple[tuple[Term, ...], ...]
    optional: bool = False

    @property
    def metrics(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m for alt in self.alternatives for m, _ in alt))


def _one(metric: str, factor: float = 1.0) -> tuple[tuple[Term, ...], ...]:
    return (((metric, factor),),)


def _thread(op: str) -> str:
    return f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum"


def _simt(prec: str, add: str, mul: str, fma: str) -> Count:
    return Count(
        f"simt_{prec}",
        f"{prec.upper()} SIMT FLOPs: {add.upper()} + {mul.upper()} + 2 x {fma.upper()} "
        "thread instructions (predicate on)",
        (((_thread(add), 1.0), (_thread(mul), 1.0), (_thread(fma), 2.0)),),
    )


def _ops(suffix: str) -> str:
    return f"sm__ops_path_tensor_src_{suffix}.sum"


TIME = Count("time", "kernel duration on the GPU", _one("gpu__time_duration.sum"))

# precision -> count, in the order records list them
SIMT: dict[str, Count] = {
    "fp64": _simt("fp64", "dadd", "dmul", "dfma"),
    "fp32": _simt("fp32", "fadd", "fmul", "ffma"),
    "fp16": _simt("fp16", "hadd", "hmul", "hfma"),
}


def _tensor(prec: str, what: str, plain: str, *splits: str, sparsity: bool = True) -> Count:
    """The plain counter, else the pair split by accumulator, else the pair split by sparsity:
    which of them ncu lists differs between GPUs and ncu versions."""
    alts: list[tuple[Term, ...]] = [((_ops(plain), 1.0),)]
    if splits:
        alts.append(tuple((_ops(x), 1.0) for x in splits))
    if sparsity:
        alts.append(((_ops(f"{plain}_sparsity_off"), 1.0), (_ops(f"{plain}_sparsity_on"), 1.0)))
    return Count(f"tensor_{prec}", f"{what} Tensor Core operations", tuple(alts))


TENSOR: dict[str, Count] = {
    "fp16": _tensor("fp16", "FP16", "fp16", "fp16_dst_fp16", "fp16_dst_fp32"),
    "bf16": _tensor("bf16", "BF16", "bf16_dst_fp32"),
    "tf32": _tensor("tf32", "TF32", "tf32_dst_fp32"),
    "fp8": _tensor("fp8", "FP8", "fp8", "fp8_dst_fp16", "fp8_dst_fp32"),
    "fp64": _tensor("fp64", "FP64", "fp64", sparsity=False),
    "int8": _tensor("int8", "INT8", "int8"),
}
WGMMA = Count(
    "wgmma_inst",
    "WGMMA warp instructions",
    _one("sm__inst_executed_pipe_tensor_op_gmma.sum"),
    optional=True,
)
DRAM_READ = Count("dram_read", "bytes read from DRAM", _one("dram__bytes_read.sum"))
DRAM_WRITE = Count("dram_write", "bytes written to DRAM", _one("dram__bytes_write.sum"))
DRAM_SECTORS = Count("dram_read_sectors", "DRAM sectors read x 32", _one("dram__sectors_read.sum"))
L2 = Count("l2", "bytes requested from the L2", _one("lts__t_bytes.sum"))
L1 = Count("l1", "bytes through the L1TEX tag stage (global/local)", _one("l1tex__t_bytes.sum"))
SMEM = Count(
    "smem_sass",
    "shared-memory bytes of SASS instructions",
    _one("sm__sass_data_bytes_mem_shared.sum"),
)
TMA_LOAD = Count(
    "tma_load",
    "bytes TMA loaded into shared memory",
    _one("l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"),
    optional=True,
)
TMA_STORE = Count(
    "tma_store",
    "bytes TMA stored from shared memory",
    _one("l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum"),
    optional=True,
)

COUNTS: tuple[Count, ...] = (
    TIME,
    *SIMT.values(),
    *TENSOR.values(),
    WGMMA,
    DRAM_READ,
    DRAM_WRITE,
    L2,
    L1,
    SMEM,
    TMA_LOAD,
    TMA_STORE,
)
BY_KEY: dict[str, Count] = {c.key: c for c in (*COUNTS, DRAM_SECTORS)}

# A level nearer the registers than DRAM gets an intensity only if it moved at least this share
# of the bytes the levels further out moved (and of the ideal bytes, when known). Every byte a
# kernel uses comes in through DRAM, then the L2, then the L1 or shared memory; a level that saw
# less than 1% of that was bypassed (TMA copies L2 straight into shared memory, WGMMA reads shared
# memory without an instruction that loads), and FLOPs per byte of its trickle says nothing about
# the kernel (`profile gemm --dtype bf16` gave cuBLAS an "L1 intensity" of 11 million).
MIN_SHARE = 0.01

LEVELS: tuple[str, ...] = ("dram", "l2", "l1", "smem")
LEVEL_NAMES = {"dram": "DRAM", "l2": "L2", "l1": "L1", "smem": "shared memory"}
# the levels whose bytes a level is judged against (all further out from the registers)
_FED_BY: dict[str, tuple[str, ...]] = {
    "dram": (),
    "l2": ("dram",),
    "l1": ("l2", "dram"),
    "smem": ("l2", "dram"),
}


# --------------------------------------------------------------------------- choosing metrics


@dataclass
class Plan:
    """Which alternative of each count is asked of ncu, and why some are not."""

    chosen: dict[str, tuple[Term, ...] | None] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # key -> why it cannot be counted

    @property
    def metrics(self) -> list[str]:
        out: list[str] = []
        for alt in self.chosen.values():
            for m, _ in alt or ():
                if m not in out:
                    out.append(m)
        return out

    def dropped(self, counts: tuple[Count, ...]) -> list[str]:
        """The metrics of counts this GPU cannot make (their first alternative's names)."""
        return [
            m
            for c in counts
            if c.key in self.missing and not c.optional
            for m, _ in c.alternatives[0]
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": {k: [m for m, _ in alt] if alt else None for k, alt in self.chosen.items()},
            "not_counted": dict(self.missing),
        }


def base(metric: str) -> str:
    """'dram__bytes_read.sum' -> 'dram__bytes_read' (what `ncu --query-metrics` lists)."""
    return metric.rsplit(".", 1)[0]


def plan(counts: tuple[Count, ...], available: set[str] | None) -> Plan:
    """The alternative of each count whose metrics this GPU lists. Without a listing, the first
    alternative of each count that is not optional (asking for an unknown metric makes ncu refuse
    the whole run, so nothing optional is risked)."""
    p = Plan()
    for c in counts:
        if available is None:
            p.chosen[c.key] = None if c.optional else c.alternatives[0]
            if c.optional:
                p.missing[c.key] = "not asked: ncu's list of metrics could not be read"
            continue
        alt = next((a for a in c.alternatives if all(base(m) in available for m, _ in a)), None)
        p.chosen[c.key] = alt
        if alt is None and not c.optional:
            names = " or ".join("+".join(base(m) for m, _ in a) for a in c.alternatives)
            p.missing[c.key] = f"ncu lists no {names} on this GPU"
    return p


def available_in(counters: dict[str, Any]) -> set[str]:
    """Metric base names present in a row of counters (stands in for a listing)."""
    return {base(k) for k in counters}


# --------------------------------------------------------------------------- arithmetic (pure)


def value(counters: dict[str, float | None], p: Plan, key: str) -> float | None:
    """A count from summed counters: None when it cannot be counted or ncu gave no value."""
    if key not in p.chosen:
        return None
    alt = p.chosen[key]
    if alt is None:
        return 0.0 if BY_KEY[key].optional and key not in p.missing else None
    total = 0.0
    for m, factor in alt:
        v = counters.get(m)
        if v is None:
            return None
        total += factor * v
    return total


@dataclass
class Work:
    """FLOPs of one launch (or a sum of launches) by precision and pipe."""

    by: dict[str, float | None]  # "fp32 simt", "fp16 tensor", ... -> FLOPs (None: not counted)
    notes: list[str]
    # counts ncu was asked for but gave no value (n/a): the work is not known, not even roughly
    # (a count this GPU does not list at all is only noted: its unit is most likely absent)
    unknown: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.unknown

    @property
    def total(self) -> float | None:
        """Everything counted; None only when nothing could be counted at all."""
        known = [v for v in self.by.values() if v is not None]
        return sum(known) if known else None

    @property
    def simt(self) -> float | None:
        known = [v for k, v in self.by.items() if k.endswith(" simt") and v is not None]
        return sum(known) if known else None

    @property
    def tensor(self) -> float | None:
        known = [v for k, v in self.by.items() if k.endswith(" tensor") and v is not None]
        return sum(known) if known else None

    def dominant(self) -> tuple[str, str] | None:
        """(precision, pipe) of the largest count, None without any FLOPs."""
        best = max(((v, k) for k, v in self.by.items() if v), default=None)
        if best is None:
            return None
        prec, pipe = best[1].split(" ")
        return prec, pipe


def work(counters: dict[str, float | None], p: Plan) -> Work:
    by: dict[str, float | None] = {}
    missing: list[str] = []
    unknown: list[str] = []
    for pipe, table in (("simt", SIMT), ("tensor", TENSOR)):
        for prec, c in table.items():
            v = value(counters, p, c.key)
            by[f"{prec} {pipe}"] = v
            if v is None:
                missing.append(f"{prec} {pipe} ({p.missing.get(c.key) or 'ncu gave no value'})")
                if c.key not in p.missing:
                    unknown.append(f"{prec} {pipe}")
    notes = []
    if missing:
        notes.append("not counted: " + "; ".join(missing))
    alone = [counters.get(_thread(op)) for op in ("hadd", "hmul", "hfma")]
    others = [v for k, v in by.items() if k != "fp16 simt" and v]
    if by.get("fp16 simt") and not others and not alone[0] and not alone[1]:
        # HFMA alone, and no other work: the compiler sets registers with HFMA2.MMA Rd, -RZ,
        # RZ, a, b (a move, no arithmetic), and ncu counts it as an HFMA. On the H200 (ncu
        # 2025.3) CuPy's float32 `x mod 1` kernel after cupy.random.rand, an FSETP and an FSEL
        # per element, gave hfma = 1 per element and fadd = fmul = ffma = 0.
        notes.append(
            f"fp16 SIMT not counted ({alone[2]:,.0f} HFMA by ncu's counter, no HADD or HMUL, no "
            "other FLOPs): the compiler puts constants in registers with HFMA2.MMA, which that "
            "counter counts, so it is no evidence of FP16 work"
        )
        by["fp16 simt"] = None
    if by.get("fp16 simt") and by.get("fp32 simt"):
        # On the H200 (ncu 2025.3) the HADD/HMUL/HFMA thread counters fired on an FP32-only
        # kernel: axpb, one FFMA per element, gave hfma = ffma = 67,108,864 (benchmarks/probes/
        # h200-findings.json, fp16-counters-in-fp32-kernel). Beside FP32 work they are not FP16.
        notes.append(
            f"fp16 SIMT not added ({by['fp16 simt']:,.0f} by ncu's HADD/HMUL/HFMA counters): "
            "beside FP32 work those counters also count FP32 instructions on this GPU, so a "
            "kernel mixing real FP16 SIMT work with FP32 is under-counted"
        )
        by["fp16 simt"] = None
    if by.get("fp16 simt"):
        notes.append(
            "fp16 SIMT counts 1 per HADD/HMUL and 2 per HFMA thread instruction, as ncu's "
            "roofline does; a packed half2 instruction does twice that, so this may be half"
        )
    if by.get("int8 tensor"):
        notes.append("int8 Tensor Core work is integer operations, counted with the FLOPs")
    return Work(by, notes, unknown)


def level_bytes(counters: dict[str, float | None], p: Plan) -> dict[str, float | None]:
    """Bytes at each level (None where not counted), plus the parts they are made of."""
    rd, wr = value(counters, p, "dram_read"), value(counters, p, "dram_write")
    sass, tld, tst = (value(counters, p, k) for k in ("smem_sass", "tma_load", "tma_store"))
    smem = None if sass is None or tld is None or tst is None else sass + tld + tst
    return {
        "dram": None if rd is None or wr is None else rd + wr,
        "dram_read": rd,
        "dram_write": wr,
        "l2": value(counters, p, "l2"),
        "l1": value(counters, p, "l1"),
        "smem": smem,
        "smem_sass": sass,
        "smem_tma": None if tld is None or tst is None else tld + tst,
    }


def _bytes(v: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if v >= scale:
            return f"{v / scale:,.2f} {unit}"
    return f"{v:,.0f} B"


def intensities(
    flops: float | None,
    nbytes: dict[str, float | None],
    bytes_ideal: float | None = None,
    wgmma: float | None = None,
    why_missing: dict[str, str] | None = None,
) -> tuple[dict[str, float | None], dict[str, str | None]]:
    """FLOP/byte at each level, or None with the reason (the MIN_SHARE rule above).

    nbytes: bytes per level ("dram", "l2", "l1", "smem"); wgmma: WGMMA instructions executed (its
    operand reads from shared memory are in no counter, so the shared level is not measured)."""
    ai: dict[str, float | None] = {}
    notes: dict[str, str | None] = {}
    why_missing = why_missing or {}
    for level in LEVELS:
        b = nbytes.get(level)
        name = LEVEL_NAMES[level]
        ai[level], notes[level] = None, None
        if b is None:
            notes[level] = f"{name} bytes not counted ({why_missing.get(level, 'no value')})"
            continue
        if not flops:
            notes[level] = "no FLOPs counted"
            continue
        if level == "smem" and wgmma:
            notes[level] = (
                f"WGMMA ran ({wgmma:,.0f} instructions) and read its operands from shared memory, "
                f"which no counter here sees: the {_bytes(b)} counted (TMA and SASS loads/stores) "
                "are a lower bound, so no intensity"
            )
            continue
        refs = [(nbytes.get(o), LEVEL_NAMES[o]) for o in _FED_BY[level]]
        if bytes_ideal:
            refs.append((bytes_ideal, "the ideal (every operand once)"))
        known = [(r, who) for r, who in refs if r]
        ref, who = max(known, default=(None, ""))
        if b == 0:
            notes[level] = f"{name} moved no bytes"
            continue
        if ref is not None and b < MIN_SHARE * ref:
            notes[level] = (
                f"{name} moved {_bytes(b)}, {100 * b / ref:.2g}% of the {_bytes(ref)} of {who} "
                f"(under {MIN_SHARE:.0%}): the kernel's data bypassed it, so no intensity"
            )
            continue
        ai[level] = flops / b
    return ai, notes
