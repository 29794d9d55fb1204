"""Why a GEMM stage lands where it does at a shape, from its record alone: the output tiles it
launched and the waves they made over the SMs, the share of the last wave's SMs left idle, and
the time its roofs allow against the time it took. Pure arithmetic on record fields (`tiles`,
`grid`, `sm_count`, `blocks_per_sm`, `splits_k`, `flops`, `attainable_tflops`, `time_ms`), so a
document reads the same with any later registry. A grid of more blocks than tiles shares the
tiles' K among them; a stream-K stage (`splits_k`) cuts its last wave's tiles along K.

    64 tiles on 132 SMs: one wave at 48%; the roofs allow 9.1 us, it took 25.9 us (2.8x)
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from rooflinecli.core import roofs


class Waves(NamedTuple):
    tiles: int  # work units: output tiles (times split-K's runs where the grid has them)
    blocks: int  # the grid's blocks
    runs: int  # runs of K a tile is cut into along grid z (split-K), 1 without
    slots: int  # blocks resident at once: SMs x blocks per SM
    sm_count: int
    waves: float  # tiles over the blocks that run at once
    last_busy: float  # of the last wave, the share of the resident slots that have a tile
    per_sm: int = 1  # blocks an SM holds at once


def _int(v: Any) -> int | None:
    if isinstance(v, int) and not isinstance(v, bool) and v > 0:
        return v
    return None


def waves(r: dict[str, Any]) -> Waves | None:
    """The waves of a record that says what it launched (None where it does not)."""
    tiles, sms = _int(r.get("tiles")), _int(r.get("sm_count"))
    grid = r.get("grid")
    if tiles is None or sms is None or not isinstance(grid, list) or len(grid) != 3:
        return None
    dims = [_int(x) for x in grid]
    if any(d is None for d in dims):
        return None
    blocks = math.prod(d for d in dims if d is not None)
    per_sm = _int(r.get("blocks_per_sm")) or 1
    work = tiles * (dims[2] or 1)  # split-K's runs are grid z: each a unit of work
    slots = min(blocks, sms * per_sm)  # a persistent grid walks the tiles with fewer blocks
    count = math.ceil(work / slots)
    last = work - (count - 1) * slots
    return Waves(
        work, blocks, dims[2] or 1, slots, sms, work / slots, last / (sms * per_sm), per_sm
    )


def busy_share(w: Waves, splits_k: bool = False) -> float:
    """The share of the SMs' block slots that have a unit of work, over every wave: the work
    units over the slots of the SMs (SMs x blocks per SM) in every wave, the last one's idle
    slots included, and those a grid of fewer blocks never fills. 172 tiles on 132 SMs:
    172 / 264 = 0.65; 64 tiles: 64 / 132. A stream-K stage (`splits_k`) cuts its last wave's
    tiles along K over every block: its blocks' share of the slots alone."""
    capacity = w.sm_count * w.per_sm
    if splits_k:
        return min(w.blocks, capacity) / capacity
    return w.tiles / (math.ceil(w.tiles / w.slots) * capacity)


def roof_share(flops: float, nbytes: float, peak_tflops: float, bandwidth_gbs: float,
               busy: float) -> float:  # fmt: skip
    """The share of its roofline time a launch keeps when only `busy` of the SMs' block slots
    have work (busy_share): its compute roof shrinks with the idle slots, HBM's does not, so a
    launch its bytes bound loses nothing to a part-empty wave: the roofs' time over theirs
    with the peak scaled by `busy`, max(F / P, B / BW) / max(F / (P busy), B / BW)."""
    allowed = roofs.roof_seconds(flops, nbytes, peak_tflops, bandwidth_gbs)
    return allowed / roofs.roof_seconds(flops, nbytes, peak_tflops * busy, bandwidth_gbs)


def roof_time_ms(r: dict[str, Any]) -> float | None:
    """The time the record's roofs allow at its ideal intensity (FLOPs over the attainable
    speed), in ms."""
    flops, at = r.get("flops"), r.get("attainable_tflops")
    if not isinstance(flops, int | float) or not isinstance(at, int | float) or at <= 0:
        return None
    if not math.isfinite(flops) or not math.isfinite(at) or flops <= 0:
        return None
    return float(flops) / (float(at) * 1e12) * 1e3


def _us(ms: float) -> str:
    us = ms * 1e3
    return f"{us:,.0f} us" if us >= 100 else f"{us:.3g} us"


def sentence(r: dict[str, Any]) -> str | None:
    """'64 tiles on 132 SMs: one wave at 48%; the roofs allow 9.1 us, it took 25.9 us (2.8x)',
    or None for a record that does not say what it launched."""
    w = waves(r)
    if w is None:
        return None
    unit = "tile" if w.tiles == 1 else "tiles"
    if w.runs > 1:  # split-K along grid z: each block one run of K of a tile
        unit = f"blocks ({w.tiles // w.runs} tiles x {w.runs} runs of K)"
    if w.blocks > w.tiles:  # more blocks than tiles: they share the tiles' K
        busy = min(w.blocks, w.sm_count) / w.sm_count
        text = (f"{w.tiles} {unit} split along K over {w.blocks} blocks on {w.sm_count} SMs: "
                f"{100 * busy:.0f}% of the SMs busy")  # fmt: skip
    elif r.get("splits_k") is True and w.waves > 1:  # stream-K: the tail is cut along K
        text = (f"{w.tiles} {unit} on {w.sm_count} SMs: {w.waves:.2f} waves, the last one's "
                "tiles split along K over every SM")  # fmt: skip
    elif w.waves <= 1:
        text = f"{w.tiles} {unit} on {w.sm_count} SMs: one wave at {100 * w.last_busy:.0f}%"
    else:
        text = (f"{w.tiles} {unit} on {w.sm_count} SMs: {w.waves:.2f} waves, the last at "
                f"{100 * w.last_busy:.0f}%")  # fmt: skip
    allow, took = roof_time_ms(r), r.get("time_ms")
    if allow and isinstance(took, int | float) and math.isfinite(took) and took > 0:
        text += f"; the roofs allow {_us(allow)}, it took {_us(took)} ({took / allow:.1f}x)"
    return text


# widths whose score is within this share of the best one count as equal, and the widest of them
# wins: a wider tile re-reads A fewer times and issues the Tensor Cores' widest instruction
FILL_TIE = 0.02


def tile_intensity(bm: int, bn: int) -> float:
    """Multiply-adds per element a BM x BN tile loads per step of K (BM BN / (BM + BN)): a wider
    tile feeds the Tensor Cores more work per byte through shared memory, so it runs nearer
    their rate."""
    return bm * bn / (bm + bn)


def fill(m: int, n: int, bm: int, bn: int, slots: int, rows_multiple: int = 1) -> float:
    """The share of `slots` blocks' time that does useful work when BM x BN tiles cover an
    M x N output in waves of `slots`: the output's area in tiles (edge tiles counted by their
    part inside it) over the tile slots of every wave, the last one's idle slots included.
    `rows_multiple`: row tiles launch in whole clusters of that many (a pair's second row tile
    past M still takes a block)."""
    rows = math.ceil(math.ceil(m / bm) / rows_multiple) * rows_multiple
    tiles = rows * math.ceil(n / bn)
    return (m / bm) * (n / bn) / (math.ceil(tiles / slots) * slots)


def fill_width(
    m: int, n: int, bm: int, widths: tuple[int, ...], slots: int, rows_multiple: int = 1
) -> int:
    """The tile width of `widths` whose tiles do the most useful work on `slots` blocks at an
    M x N output: the share of the slots' time they fill, weighed by the tile's intensity (the
    widest of those within FILL_TIE of the best), as DeepGEMM chooses its BLOCK_N. At
    1024 x 6144 on 132 SMs, BN = 192 makes 256 tiles (1.94 waves, 97%) where 256 makes 192 (1.45
    waves, 73%); at 4096 x 11008, 128's 2752 tiles fill 99% of 21 waves against 256's 95% of 11,
    too little to pay for the narrower tile."""
    if not widths:
        raise ValueError("no tile widths to choose from")
    score = {w: fill(m, n, bm, w, slots, rows_multiple) * tile_intensity(bm, w) for w in widths}
    top = max(score.values())
    return max(w for w in widths if score[w] >= top * (1 - FILL_TIE))


def persistent_blocks(
    tiles: int, cap: int, cluster: int = 1, fill: bool = False, even: bool = False
) -> int:
    """The grid of a persistent stage (the one rule of the registry's and the FP8 stages'):
    at most `cap` blocks, a whole number of clusters; one per tile at most, unless the stage
    fills the cap (stream-K cuts the tiles along K), and then, `even`, a whole number of blocks
    per tile where the tiles fit, so no block's range of K runs into a second tile. `tiles`
    counts whole clusters of row tiles."""
    blocks = cap - cap % cluster
    if not fill:
        return min(tiles, blocks)
    if even and tiles <= blocks:
        return tiles * (blocks // tiles)
    return blocks
