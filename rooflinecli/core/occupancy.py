"""Theoretical occupancy: how many blocks of a kernel fit on one SM, by CUDA's own rules.

Pure Python, no CuPy. The rules are those of the CUDA occupancy calculator (cuda_occupancy.h)
for compute capability 7.0 and later:

- warps: a block takes ceil(threads / 32) warp slots of max_threads_per_sm / 32;
- registers: a warp is given registers in units of 256, i.e. registers per thread rounded up
  to a multiple of 8 (256 / 32); the register file is split among 4 SM sub-partitions and a
  warp lives in one, so the warps that fit are 4 x floor((registers_per_sm / 4) / per-warp);
  a block whose registers exceed the per-block limit (the same 64K) cannot launch at all;
- shared memory: static + dynamic bytes plus 1 KiB the driver reserves per block (sm_80+),
  rounded up to 128 bytes; the SM has smem_per_sm_kib, a block may take smem_per_block_kib
  (+ the reserved 1 KiB);
- blocks: at most max_blocks_per_sm.

The smallest of the four limits is the answer; occupancy is active warps / maximum warps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

WARP = 32
REG_ALLOC_UNIT = 256  # registers given to a warp at a time (cc 3.0 and later)
SUB_PARTITIONS = 4  # register file quarters, one per warp scheduler (cc 7.0 and later)
MAX_REGS_PER_THREAD = 255
MAX_THREADS_PER_BLOCK = 1024


@dataclass(frozen=True)
class SmLimits:
    """What one SM offers. Build it from a Spec (`from_spec`) or device properties."""

    cc: int  # major*10 + minor
    registers_per_sm: int = 65536
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    smem_per_sm_bytes: int = 228 * 1024
    smem_per_block_bytes: int = 227 * 1024  # opt-in maximum, without the reserved part

    @property
    def max_warps(self) -> int:
        return self.max_threads_per_sm // WARP

    @property
    def smem_granularity(self) -> int:
        return 128 if self.cc >= 70 else 256

    @property
    def smem_reserved_per_block(self) -> int:
        return 1024 if self.cc >= 80 else 0

    @classmethod
    def from_spec(cls, spec: Any) -> SmLimits:
        major, minor = (int(x) for x in spec.compute_capability.split("."))
        return cls(
            cc=major * 10 + minor,
            registers_per_sm=spec.registers_per_sm,
            max_threads_per_sm=spec.max_threads_per_sm,
            max_blocks_per_sm=spec.max_blocks_per_sm,
            smem_per_sm_bytes=spec.smem_per_sm_kib * 1024,
            smem_per_block_bytes=spec.smem_per_block_kib * 1024,
        )


@dataclass(frozen=True)
class Occupancy:
    threads: int
    registers: int
    smem_bytes: int  # static + dynamic, as the kernel asks
    regs_per_warp: int  # allocated, after rounding
    smem_per_block: int  # allocated, reserved part and rounding included
    limit_warps: int
    limit_registers: int
    limit_smem: int
    limit_blocks: int
    max_warps: int

    @property
    def blocks_per_sm(self) -> int:
        return min(self.limit_warps, self.limit_registers, self.limit_smem, self.limit_blocks)

    @property
    def warps_per_block(self) -> int:
        return -(-self.threads // WARP)

    @property
    def warps_per_sm(self) -> int:
        return self.blocks_per_sm * self.warps_per_block

    @property
    def occupancy(self) -> float:
        """Active warps over the SM's maximum, 0..1."""
        return self.warps_per_sm / self.max_warps if self.max_warps else 0.0

    @property
    def limiters(self) -> list[str]:
        """Every resource whose limit equals the answer (several can bind at once)."""
        b = self.blocks_per_sm
        named = (
            ("registers", self.limit_registers),
            ("smem", self.limit_smem),
            ("warps", self.limit_warps),
            ("blocks", self.limit_blocks),
        )
        return [name for name, limit in named if limit == b]

    def to_dict(self) -> dict[str, Any]:
        return {
            "blocks_per_sm": self.blocks_per_sm,
            "warps_per_sm": self.warps_per_sm,
            "occupancy": self.occupancy,
            "limited_by": self.limiters,
            "regs_per_warp_allocated": self.regs_per_warp,
            "smem_per_block_allocated": self.smem_per_block,
            "limit_registers": self.limit_registers,
            "limit_smem": self.limit_smem,
            "limit_warps": self.limit_warps,
            "limit_blocks": self.limit_blocks,
        }


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def theoretical(limits: SmLimits, threads: int, registers: int, smem_bytes: int) -> Occupancy:
    """Blocks of `threads` threads using `registers` per thread and `smem_bytes` of shared memory
    (static + dynamic) that fit on one SM. A limit of 0 means the block cannot launch."""
    if threads < 1:
        raise ValueError("a block has at least one thread")
    warps = -(-threads // WARP)

    # warps
    limit_warps = limits.max_warps // warps if threads <= MAX_THREADS_PER_BLOCK else 0

    # registers: per warp in units of 256, warps placed in the 4 sub-partitions
    regs_per_warp = _round_up(registers * WARP, REG_ALLOC_UNIT)
    if regs_per_warp == 0:
        limit_regs = limits.max_blocks_per_sm  # no registers: no limit from them
    elif (
        registers > MAX_REGS_PER_THREAD
        or regs_per_warp * _round_up(warps, SUB_PARTITIONS) > limits.registers_per_sm
    ):
        limit_regs = 0
    else:
        per_partition = (limits.registers_per_sm // SUB_PARTITIONS) // regs_per_warp
        limit_regs = per_partition * SUB_PARTITIONS // warps

    # shared memory: reserved 1 KiB per block (sm_80+), 128-byte granularity
    smem_alloc = _round_up(smem_bytes + limits.smem_reserved_per_block, limits.smem_granularity)
    if smem_alloc > limits.smem_per_block_bytes + limits.smem_reserved_per_block:
        limit_smem = 0
    elif smem_alloc == 0:
        limit_smem = limits.max_blocks_per_sm
    else:
        limit_smem = limits.smem_per_sm_bytes // smem_alloc

    return Occupancy(
        threads=threads,
        registers=registers,
        smem_bytes=smem_bytes,
        regs_per_warp=regs_per_warp,
        smem_per_block=smem_alloc,
        limit_warps=limit_warps,
        limit_registers=limit_regs,
        limit_smem=limit_smem,
        limit_blocks=limits.max_blocks_per_sm,
        max_warps=limits.max_warps,
    )
