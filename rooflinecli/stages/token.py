"""The token stage (kernels/57_decode_token.cu): a decode token's whole chain of weight GEMMs in
one persistent launch. Pure Python: no CuPy.

Its contract is a chain's, not one GEMM's, hence a registry of its own here (as attention and
FP8 have): `run llm --chain` runs it as the way `token`, beside our per-GEMM picks and cuBLAS.

    extern "C" __global__ void decode_token(const TokenGemm* gemms, int count,
        const TmaMap* maps, const elem_t* x, float* ws, long long ws_set, unsigned int* sync,
        unsigned long long* stamps)

`gemms` holds one 32-byte record per GEMM (N, K, the GEMM whose output it reads, its first
column-block counter, its float32 workspace's offset, its output C); `maps` one tensor map per
GEMM over its K x N weights (boxes of KC rows x NC columns); `x` the token input; `ws` two sets
of ws_set floats, the GEMMs' float32 workspaces, zero before the first launch (a launch uses
one set and zeroes the other); `sync` the count of finished launches, the count of finished
blocks, then one counter per column block of every GEMM, zero before the first launch;
`stamps` null, or in a build with STAMPS=1 the timeline: per GEMM and block, when its run
began, when its input was in and when it ended (%globaltimer). One block per SM.

Two consumers share the source: multiply-adds on CUDA cores (`decode_token`, batch 1-4, every
GEMM's whole input in shared memory) and mma.sync on Tensor Cores (`decode_token_mma`, MMA=1,
batch 1-16, 128-byte swizzled boxes of 64 columns, the input only as far as a run reads it:
KRUN chunks of KC rows, counted here from the chain and the SM count).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from rooflinecli.core.elements import element
from rooflinecli.errors import RooflineError

FILE = "57_decode_token.cu"
ENTRY = "decode_token"
ARCH = "sm_90a"  # TMA and mbarrier transaction counts
DTYPES = ("fp16", "bf16")
MAX_ROWS = 4  # the batch on CUDA cores: every GEMM's input (MROWS x K) sits in shared memory
MAX_ROWS_MMA = 16  # the batch on Tensor Cores: the M side of one m16n8k16 tile
SWIZZLE_COLS = 64  # MMA: a box row of 128 bytes, the swizzle's width
SM_COUNT = 132  # H100 SXM and H200: the SMs a refusal counts runs for (a launch counts its own)
SMEM_LIMIT = 232_448  # an H100/H200 block's dynamic shared memory at most (227 KiB)
ALIGN_SLACK = 128  # the ring is moved up to a 128-byte boundary
ALIGN_SLACK_MMA = 1024  # MMA: to a 1024-byte one, the 128-byte swizzle's atom
RECORD_BYTES = 32  # sizeof(TokenGemm)
MIN_STAGES = 3  # boxes in flight beside the one the consumers read, at least
WS_ALIGN = 4  # workspace offsets in floats: 16 bytes, for red.global.add.v4.f32
QUEUE_BYTES = 8 + 4 * 64  # the store warp's queue: its tail and head, 64 entries


def run_chunks(shapes: Sequence[tuple[int, int]], blocks: int, kc: int, nc: int) -> int:
    """The K chunks of kc rows a block's run reads at most, over GEMMs of these (N, K) cut into
    units of nc columns by kc rows on `blocks` blocks: a run of u units reads min(u, the GEMM's
    chunks) chunks, and the kernel's share_of gives a block at most ceil(units / blocks)."""
    most = 1
    for n, k in shapes:
        nk = -(-k // kc)
        most = max(most, min(nk, -(-(-(-n // nc) * nk) // blocks)))
    return most


@dataclass(frozen=True)
class TokenStage:
    name: str
    what: str
    params: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    math: str = "FFMA"  # M <= 4 rows: a multiply-add per weight, on CUDA cores
    file: str = FILE
    entry: str = ENTRY
    min_cc: int = 90
    dtypes: tuple[str, ...] = DTYPES

    @property
    def threads(self) -> int:
        """The consumer warps, the producer warp and (STORE_WARP, 1 unless 0) the store warp."""
        return 32 * (self.params["CONSUMER_WARPS"] + 1 + self.params.get("STORE_WARP", 1))

    @property
    def mma(self) -> bool:
        """Tensor Core consumers (MMA=1) rather than CUDA-core multiply-adds."""
        return bool(self.params.get("MMA", 0))

    @property
    def max_rows(self) -> int:
        return MAX_ROWS_MMA if self.mma else MAX_ROWS

    @property
    def box(self) -> tuple[int, int]:
        """(columns, rows) of one TMA box: NC x KC unswizzled, or (MMA) 64 x KC swizzled, four
        to a ring slot."""
        return (SWIZZLE_COLS if self.mma else self.params["NC"]), self.params["KC"]

    def tile_bytes(self) -> int:
        return self.params["KC"] * self.params["NC"] * 2

    def smem_bytes(self, rows: int, kmax: int, krun: int | None = None) -> int:
        """Dynamic shared memory of a build for `rows` rows of A and K up to `kmax` (MMA: of
        which `krun` chunks of KC held at once, default all): the ring, the input, the column
        sums, the mbarriers, the launch count, a flag and the store warp's queue (the kernel's
        layout)."""
        ring = self.stages(rows, kmax, krun) * (self.tile_bytes() + 16)
        return self._fixed(rows, kmax, krun) + ring

    def _fixed(self, rows: int, kmax: int, krun: int | None = None) -> int:
        """All but the ring: the alignment slack, the input (elem_t), each consumer warp's
        column sums (float; none with MMA), the launch count, the flag and the queue."""
        p = self.params
        if self.mma:  # 8 or 16 rows, each KRUN chunks and 16 bytes of padding
            held = self._chunks(kmax, krun) * p["KC"]
            return ALIGN_SLACK_MMA + (8 if rows <= 8 else 16) * (held + 8) * 2 + 8 + QUEUE_BYTES
        return (ALIGN_SLACK + rows * self.kmax(kmax) * 2
                + p["CONSUMER_WARPS"] * rows * p["NC"] * 4 + 8 + QUEUE_BYTES)  # fmt: skip

    def kmax(self, k: int) -> int:
        kc = self.params["KC"]
        return -(-k // kc) * kc

    def krun(self, shapes: Sequence[tuple[int, int]], sm_count: int) -> int | None:
        """The K chunks the MMA build's input holds for a chain of these (N, K) on `sm_count`
        blocks (run_chunks, in this stage's boxes); None for the CUDA-core build, whose input
        holds every GEMM's whole K."""
        if not self.mma:
            return None
        return run_chunks(shapes, sm_count, self.params["KC"], self.params["NC"])

    def _chunks(self, kmax: int, krun: int | None) -> int:
        """The K chunks the input holds: `krun`, or all of K up to `kmax` where it is None."""
        return krun if krun is not None else self.kmax(kmax) // self.params["KC"]

    def stages(self, rows: int, kmax: int, krun: int | None = None) -> int:
        """The ring's depth: as many boxes as the shared memory holds beside the input (at most
        params' STAGES where given)."""
        most = (SMEM_LIMIT - self._fixed(rows, kmax, krun)) // (self.tile_bytes() + 16)
        return min(most, self.params.get("STAGES", most))

    def defines(
        self, dtype: str, rows: int, kmax: int, krun: int | None = None
    ) -> dict[str, int | str]:
        """The -D values of a build for one chain (its batch and largest K; MMA: the chunks a
        run holds)."""
        refusal = self.refuses_build(dtype, rows, kmax, krun)
        if refusal:
            raise RooflineError(refusal)
        out: dict[str, int | str] = {**self.params, "MROWS": rows, "KMAX": self.kmax(kmax),
                                     "STAGES": self.stages(rows, kmax, krun)}  # fmt: skip
        if self.mma:
            out["KRUN"] = self._chunks(kmax, krun)
        define = element(dtype).define  # a 16-bit stage: fp16 by default
        if define:
            out[define] = 1
        return out

    def launch(
        self, rows: int, kmax: int, sm_count: int, krun: int | None = None
    ) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        """(grid, block, dynamic shared bytes) of a build for `rows` rows and K up to `kmax`:
        one block per SM."""
        return (sm_count, 1, 1), (self.threads, 1, 1), self.smem_bytes(rows, kmax, krun)

    # the stage contract (rooflinecli.stages.contract.KernelStage)
    @property
    def kind(self) -> str:
        return "token"

    @property
    def source(self) -> str:
        return self.file

    @property
    def kernel_dtypes(self) -> tuple[str, ...]:
        return self.dtypes

    @property
    def param_sets(self) -> Mapping[str, Mapping[str, int]]:
        return MappingProxyType({"": self.params})

    @property
    def tune_space(self) -> Mapping[str, tuple[int, ...]]:
        return MappingProxyType({})  # `roofline tune` tunes GEMM stages

    def refusal_for(self, problem: Any) -> str | None:
        """refuses() of the problem (dtype, batch, [(M, N, K), ...])."""
        dtype, batch, shapes = problem
        return self.refuses(dtype, batch, shapes)

    def launch_for(
        self, problem: Any, sm_count: int | None = None
    ) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        """launch() of the problem (dtype, batch, [(M, N, K), ...]) on `sm_count` SMs."""
        _dtype, batch, shapes = problem
        if not sm_count:
            raise RooflineError(f"stage {self.name} is persistent: it needs the SM count")
        krun = self.krun([(n, k) for _m, n, k in shapes], sm_count)
        return self.launch(batch, max(k for _m, _n, k in shapes), sm_count, krun)

    def refuses_build(
        self, dtype: str, rows: int, kmax: int, krun: int | None = None
    ) -> str | None:
        if dtype not in self.dtypes:
            return f"{self.name} streams fp16 or bf16 weights, not {dtype}"
        if not 1 <= rows <= self.max_rows:
            why = "the M side of one MMA tile" if self.mma else "its input sits in shared memory"
            return f"{self.name} takes batch 1 to {self.max_rows} ({why})"
        if self.stages(rows, kmax, krun) < MIN_STAGES:
            return f"{self.name}: an input of {rows} x {kmax} leaves no room for the ring"
        return None

    def refuses(self, dtype: str, batch: int, shapes: Sequence[tuple[int, int, int]],
                sm_count: int = SM_COUNT) -> str | None:  # fmt: skip
        """Why the stage cannot run a chain of these (M, N, K) GEMMs on `sm_count` blocks, or
        None."""
        kmax = max(k for _m, _n, k in shapes)
        why = self.refuses_build(
            dtype, batch, kmax, self.krun([(n, k) for _m, n, k in shapes], sm_count)
        )
        if why:
            return why
        odd = [f"{m}x{n}x{k}" for m, n, k in shapes if n % 8]
        if odd:  # TMA's row pitch: N x 2 bytes, a multiple of 16
            return f"{self.name} needs N a multiple of 8 (TMA row pitch), not {', '.join(odd)}"
        return None


TOKEN_STAGES: tuple[TokenStage, ...] = (
    TokenStage(
        "decode_token",
        "a whole decode token in one persistent launch: a producer warp per SM streams every "
        "GEMM's weights through a TMA ring without stopping between GEMMs, the consumers wait "
        "only for the column blocks of the activation their share reads",
        # the best of KC 16-64, 4-16 consumer warps and rings of 4 to 12 boxes on LLaMA-7B
        # (H200, bf16, batch 1 and 3): a deeper ring was no faster
        MappingProxyType({"KC": 64, "NC": 256, "CONSUMER_WARPS": 8, "STAGES": 4}),
    ),
    TokenStage(
        "decode_token_mma",
        "the same token on Tensor Cores, for batches of 1 to 16: each consumer warp owns 32 of "
        "a box's 256 columns and multiplies the batch by them with mma.sync, from 128-byte "
        "swizzled boxes that ldmatrix reads without bank conflicts",
        MappingProxyType({"KC": 64, "NC": 256, "CONSUMER_WARPS": 8, "STAGES": 4, "MMA": 1}),
        math="HMMA",
    ),
)
TOKEN_BY_NAME: dict[str, TokenStage] = {s.name: s for s in TOKEN_STAGES}


@dataclass(frozen=True)
class Plan:
    """What the host packs for a chain: each GEMM's workspace offset in floats within a set,
    the length of a set (the kernel has two: a launch uses one and zeroes the other), each
    GEMM's first column-block counter in `sync`, and the length of `sync`."""

    ws_offset: tuple[int, ...]
    ws_floats: int
    ctr_offset: tuple[int, ...]
    sync_words: int


SYNC_HEAD = 2  # sync[0]: launches finished; sync[1]: blocks finished (the last counts the launch)


def plan(rows: int, ns: Sequence[int], sources: Sequence[int], nc: int = 256) -> Plan:
    """The layout of a chain of GEMMs (their N, and the GEMM each reads, -1 the input): per GEMM
    a rows x N float32 workspace, 16-byte aligned, and one counter per column block of nc
    columns, after the two words of the head."""
    count = len(ns)
    if count == 0 or len(sources) != count:
        raise RooflineError("a token chain needs one source per GEMM")
    for g, src in enumerate(sources):
        if not -1 <= src < g:
            raise RooflineError(f"GEMM {g} reads GEMM {src}: not an earlier one")
    offsets, pos, ctrs, words = [], 0, [], SYNC_HEAD
    for n in ns:
        offsets.append(pos)
        pos += -(-rows * n // WS_ALIGN) * WS_ALIGN
        ctrs.append(words)
        words += -(-n // nc)
    return Plan(tuple(offsets), pos, tuple(ctrs), words)
