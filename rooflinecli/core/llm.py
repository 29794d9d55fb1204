"""Where the FLOPs and the time of one decoded LLM token go. Pure Python: no CuPy.

A model preset (presets/*.toml, or a TOML file of the same shape) gives the sizes of a
decoder-only transformer with SwiGLU FFN and RMSNorm (the LLaMA family). For one token decoded
at a given context (the number of positions attended, the new one included):

- weight GEMMs, 2 * in * out FLOPs each: QKV (fused), O, FFN gate, up and down once per layer,
  the LM head once;
- attention, per layer and query head: QK^T and PV, 2 * context * head_dim FLOPs each. With
  grouped-query attention (kv_heads < heads) the FLOPs stay per query head: only the K/V cache
  shrinks;
- everything else, counted per element (constants below): RMSNorm, SiLU(gate) * up, softmax,
  rotary embedding (RoPE) and the residual adds.

The seed's figures for LLaMA-7B come out of this: 13.2 GFLOP/token in weight GEMMs, ~92% of all
FLOPs at context 2048, attention ~7.5% (~2% at 512, ~14% at 4096), the rest < 0.2%.

A FLOP share is not a time share: at a batch of B tokens a weight GEMM is M=B, N=out, K=in; its
weights are read once whatever B is, so at small B it sits far left of the ridge point. The time
model below gives each operation the time the roofs allow (max of compute time and memory time),
one operation after another.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from rooflinecli import names
from rooflinecli.core import model, roofs
from rooflinecli.core.specs import Spec
from rooflinecli.errors import RooflineError
from rooflinecli.paths import data_dir, read_toml

# FLOPs counted per element (or per score) for the operations that are not matrix products.
RMSNORM_FLOPS_PER_ELEMENT = 4  # x*x, add to the sum, x * rsqrt(mean + eps), * gain
SILU_MUL_FLOPS_PER_ELEMENT = 5  # exp(-x), 1 + e, x / (1 + e) (SiLU), then * up
SOFTMAX_FLOPS_PER_SCORE = 5  # * 1/sqrt(head_dim), - max, exp, add to the sum, / sum
ROPE_FLOPS_PER_ELEMENT = 3  # a rotated pair: 4 multiplies and 2 adds, for 2 elements of q or k
RESIDUAL_FLOPS_PER_ELEMENT = 1  # x + f(x), twice per layer
# The per-vector work (mean, + eps, rsqrt, the max of a row) and comparisons are not counted.

GEMM = "weight GEMMs"
ATTENTION = "attention"
OTHER = "other"
GROUPS: tuple[str, ...] = (GEMM, ATTENTION, OTHER)

# key -> (type, required, (min, max) or None)
_FIELDS: dict[str, tuple[type, bool, tuple[int, int] | None]] = {
    "name": (str, True, None),
    "display_name": (str, True, None),
    "source": (str, True, None),
    "notes": (str, False, None),
    "d_model": (int, True, (1, 1 << 17)),
    "layers": (int, True, (1, 1024)),
    "heads": (int, True, (1, 1024)),
    "kv_heads": (int, True, (1, 1024)),
    "head_dim": (int, False, (1, 1024)),  # default: d_model / heads
    "ffn": (int, True, (1, 1 << 20)),
    "vocab": (int, True, (1, 1 << 24)),
    "ffn_kind": (str, True, None),
    "norm": (str, True, None),
}
_CHOICES: dict[str, tuple[str, ...]] = {"ffn_kind": ("swiglu",), "norm": ("rmsnorm",)}
# The size keys a command-line flag may override (--d-model, --layers, ...).
OVERRIDABLE: tuple[str, ...] = (
    "d_model", "layers", "heads", "kv_heads", "head_dim", "ffn", "vocab",
)  # fmt: skip


@dataclass(frozen=True)
class Preset:
    name: str
    display_name: str
    source: str
    d_model: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    ffn_kind: str
    norm: str
    notes: str = ""
    path: str = field(default="", compare=False)
    overrides: tuple[tuple[str, int], ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in _FIELDS if k != "notes" or self.notes}
        if self.overrides:
            d["overrides"] = dict(self.overrides)
        return d

    def describe(self) -> str:
        kv = f"{self.kv_heads} K/V, GQA" if self.kv_heads != self.heads else f"{self.kv_heads} K/V"
        text = (
            f"{self.display_name} ({self.name}): d_model {self.d_model}, {self.layers} layers, "
            f"{self.heads} heads ({kv}), head dim {self.head_dim}, "
            f"FFN {self.ffn} SwiGLU, vocab {self.vocab}"
        )
        if self.overrides:
            text += " [overridden: " + ", ".join(f"{k}={v}" for k, v in self.overrides) + "]"
        return text

    def override(self, **sizes: int | None) -> Preset:
        """The preset with some sizes replaced (None: keep), validated like a file."""
        given = {k: v for k, v in sizes.items() if v is not None}
        if not given:
            return self
        unknown = sorted(set(given) - set(OVERRIDABLE))
        if unknown:
            raise RooflineError(f"preset {self.name}: cannot override {', '.join(unknown)}")
        raw = {**self.raw, **given}
        changed = tuple((k, v) for k, v in given.items())
        return _check(f"{self.name} (with overrides)", raw, self.path, self.overrides + changed)


def _check(
    where: str, raw: dict[str, Any], path: str = "", overrides: tuple[tuple[str, int], ...] = ()
) -> Preset:
    unknown = sorted(set(raw) - set(_FIELDS))
    if unknown:
        raise RooflineError(
            f"preset {where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(_FIELDS)})"
        )
    values: dict[str, Any] = {}
    for key, (typ, required, bounds) in _FIELDS.items():
        if key not in raw:
            if required:
                raise RooflineError(f"preset {where}: missing key {key}")
            continue
        val = raw[key]
        if not isinstance(val, typ) or isinstance(val, bool):
            raise RooflineError(f"preset {where}: {key} must be {typ.__name__}, got {val!r}")
        if bounds is not None and not bounds[0] <= cast(int, val) <= bounds[1]:
            raise RooflineError(
                f"preset {where}: {key} = {val} is outside {bounds[0]}..{bounds[1]}"
            )
        if key in _CHOICES and val not in _CHOICES[key]:
            raise RooflineError(
                f"preset {where}: {key} = {val!r} is not modelled (only {', '.join(_CHOICES[key])})"
            )
        values[key] = val
    if not values["source"].startswith("https://"):
        raise RooflineError(f"preset {where}: source must be an https:// URL")
    for key in ("name", "display_name"):  # titles and workloads show them
        names.check(values[key], f"preset {where}: {key}")
    for key in ("source", "notes"):
        if key in values:
            names.check_text(values[key], f"preset {where}: {key}")
    heads, kv = values["heads"], values["kv_heads"]
    if kv > heads or heads % kv:
        raise RooflineError(
            f"preset {where}: kv_heads = {kv} must divide heads = {heads} (grouped-query attention)"
        )
    if "head_dim" not in values:
        if values["d_model"] % heads:
            raise RooflineError(
                f"preset {where}: d_model = {values['d_model']} is not a multiple of "
                f"heads = {heads}; give head_dim"
            )
        values["head_dim"] = values["d_model"] // heads
    return Preset(**values, path=path, overrides=overrides, raw=dict(raw))


def load_preset_file(path: str | Path) -> Preset:
    p = Path(path)
    raw = read_toml(p, "preset file")
    return _check(p.name, raw, str(p))


def registry(directory: Path | None = None) -> dict[str, Preset]:
    """Every shipped preset by name; a name equals its file's stem."""
    folder = directory or data_dir("presets")
    found: dict[str, Preset] = {}
    for path in sorted(folder.glob("*.toml")):
        preset = load_preset_file(path)
        if preset.name != path.stem:
            raise RooflineError(
                f"preset {path.name}: name {preset.name!r} must equal the file stem"
            )
        found[preset.name] = preset
    return found


def resolve(name_or_path: str) -> Preset:
    """--preset NAME|PATH: a shipped preset (case-insensitive) or a TOML file."""
    if name_or_path.endswith(".toml") or "/" in name_or_path or Path(name_or_path).is_file():
        return load_preset_file(name_or_path)
    presets = registry()
    key = name_or_path.lower()
    if key in presets:
        return presets[key]
    raise RooflineError(
        f"unknown preset {name_or_path!r}; known: {', '.join(presets)} (or pass a .toml file path)"
    )


# --- FLOPs of one token ---------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """One kind of operation of a decoded token: `count` instances of `flops_each` FLOPs."""

    name: str
    group: str
    what: str
    count: int  # instances per decoded token
    flops_each: int
    shape: tuple[int, int, int] | None = None  # (M, N, K) of one instance at batch 1 (GEMMs)
    # Elements all instances move to or from HBM per token of one sequence (the K/V cache for
    # attention, inputs and outputs of element-wise operations); weight GEMMs: see gemm_record.
    elems: int = 0

    @property
    def flops(self) -> int:
        return self.count * self.flops_each


@dataclass(frozen=True)
class WeightGemm:
    name: str
    what: str
    n: int  # outputs
    k: int  # inputs
    count: int  # per token: once per layer, or once (LM head)

    def shape(self, batch: int) -> tuple[int, int, int]:
        return batch, self.n, self.k


def weight_gemms(p: Preset) -> list[WeightGemm]:
    q_out = p.heads * p.head_dim
    kv_out = p.kv_heads * p.head_dim
    return [
        WeightGemm(
            "qkv", "Q, K and V projections (fused)", q_out + 2 * kv_out, p.d_model, p.layers
        ),
        WeightGemm("o_proj", "attention output projection", p.d_model, q_out, p.layers),
        WeightGemm("ffn_gate", "FFN gate projection", p.ffn, p.d_model, p.layers),
        WeightGemm("ffn_up", "FFN up projection", p.ffn, p.d_model, p.layers),
        WeightGemm("ffn_down", "FFN down projection", p.d_model, p.ffn, p.layers),
        WeightGemm("lm_head", "LM head (logits), once per token", p.vocab, p.d_model, 1),
    ]


def flop_split(p: Preset, context: int) -> list[Part]:
    """Every operation of one token decoded at `context`, in table order."""
    if context < 1:
        raise RooflineError(f"context must be at least 1, got {context}")
    parts = [
        Part(g.name, GEMM, g.what, g.count, model.gemm_flops(1, g.n, g.k), (1, g.n, g.k))
        for g in weight_gemms(p)
    ]
    per_head = p.layers * p.heads
    kv_cache = p.layers * context * p.kv_heads * p.head_dim  # K (or V) elements, all layers
    parts += [
        Part(
            "attn_qk", ATTENTION, "scores q . k for every position", per_head,
            2 * context * p.head_dim, (1, context, p.head_dim), kv_cache,
        ),
        Part(
            "attn_pv", ATTENTION, "weighted sum of the values", per_head,
            2 * context * p.head_dim, (1, p.head_dim, context), kv_cache,
        ),
    ]  # fmt: skip
    rotated = (p.heads + p.kv_heads) * p.head_dim
    parts += [
        Part(
            "rmsnorm", OTHER, "RMSNorm: 2 per layer and 1 before the LM head", 2 * p.layers + 1,
            RMSNORM_FLOPS_PER_ELEMENT * p.d_model, None, (2 * p.layers + 1) * 2 * p.d_model,
        ),
        Part(
            "silu_mul", OTHER, "SiLU(gate) * up", p.layers,
            SILU_MUL_FLOPS_PER_ELEMENT * p.ffn, None, p.layers * 3 * p.ffn,
        ),
        # fused into the attention kernel: the scores never travel to HBM
        Part(
            "softmax", OTHER, "softmax over the scores of a head", per_head,
            SOFTMAX_FLOPS_PER_SCORE * context, None, 0,
        ),
        Part(
            "rope", OTHER, "rotary position embedding of q and k", p.layers,
            ROPE_FLOPS_PER_ELEMENT * rotated, None, p.layers * 2 * rotated,
        ),
        Part(
            "residual", OTHER, "residual adds, 2 per layer", 2 * p.layers,
            RESIDUAL_FLOPS_PER_ELEMENT * p.d_model, None, 2 * p.layers * 3 * p.d_model,
        ),
    ]  # fmt: skip
    return parts


def group_totals(parts: list[Part]) -> dict[str, int]:
    """FLOPs per token of each group and 'total'."""
    out = {g: sum(x.flops for x in parts if x.group == g) for g in GROUPS}
    out["total"] = sum(out.values())
    return out


# --- Weight GEMMs on the roofline -----------------------------------------------------------


def crossing_batch(
    n: int, k: int, elem_bytes: int, peak_tflops: float, bandwidth_gbs: float
) -> int | None:
    """The smallest batch B at which a BxNxK weight GEMM reaches the ridge point, or None.

    intensity(B) = 2BNK / (e (BK + KN + BN)) >= r  <=>  1/B <= 2/(r e) - 1/N - 1/K, so
    B* = 1 / (2/(r e) - 1/N - 1/K) when that is positive (else it never gets there: even an
    infinite batch gives 2NK / (e (N + K)) < r). The integer found from B* is then checked with
    the model's own intensity and ridge point, so it agrees with `roof` exactly.
    """
    ridge = roofs.ridge_point(peak_tflops, bandwidth_gbs)
    room = 2.0 / (ridge * elem_bytes) - 1.0 / n - 1.0 / k
    if room <= 0:
        return None

    def reaches(b: int) -> bool:
        flops = model.gemm_flops(b, n, k)
        return model.intensity(flops, model.gemm_bytes_ideal(b, n, k, elem_bytes)) >= ridge

    b = max(1, math.ceil(1.0 / room))
    while b > 1 and reaches(b - 1):
        b -= 1
    while not reaches(b):
        b += 1
    return b


def gemm_record(p: Preset, g: WeightGemm, batch: int, spec: Spec, dtype: str) -> dict[str, Any]:
    """A results record for one weight GEMM at a batch: shape, roofline place, allowed time."""
    elem = model.DTYPE_BYTES[dtype]
    m, n, k = g.shape(batch)
    flops = model.gemm_flops(m, n, k)
    # FP8 weights and activations write a 16-bit output (model.OUTPUT_BYTES)
    nbytes = model.gemm_bytes_ideal(m, n, k, elem, out_bytes=model.OUTPUT_BYTES.get(dtype))
    ai = model.intensity(flops, nbytes)
    roof = roofs.datasheet_roof(spec, dtype)
    seconds = roofs.roof_seconds(flops, nbytes, roof.peak_tflops, roof.bandwidth_gbs)
    rec: dict[str, Any] = {
        "stage": g.name,
        "kind": "llm",
        "dtype": dtype,
        "m": m,
        "n": n,
        "k": k,
        "alpha": 1.0,
        "beta": 0.0,
        "flops": flops,
        "bytes_ideal": nbytes,
        "ai_ideal": ai,
    }
    roofs.put_under(rec, roof, "datasheet", spec.peak_clock(roof.peak_key))
    rec.update(
        {
            "workload": f"{p.name}:{g.name}:b{batch}",
            "preset": p.name,
            "batch": batch,
            "count": g.count,
            "crossing_batch": crossing_batch(n, k, elem, roof.peak_tflops, roof.bandwidth_gbs),
            "time_us_call": seconds * 1e6,
            "time_us_per_token": g.count * seconds / batch * 1e6,
        }
    )
    return rec


def time_split(p: Preset, context: int, batch: int, spec: Spec, dtype: str) -> list[dict[str, Any]]:
    """FLOPs and the time the roofs allow per token, by operation, at a batch of sequences.

    Weight GEMMs: BxNxK, weights read once per batch. Attention: each sequence reads its own
    K/V cache, so batching does not amortize it; its FLOPs go under the dtype's (Tensor Core)
    roof. Element-wise operations read their inputs and write their outputs once (unfused,
    weights of the norms neglected) under the FP32 (CUDA core) roof; softmax is taken as fused
    into attention. Operations run one after another, none overlapping.
    """
    elem = model.DTYPE_BYTES[dtype]
    peak, bw = spec.peak(dtype), spec.memory_bandwidth_gbs
    simt_peak = spec.peak("fp32")
    rows: list[dict[str, Any]] = []
    for g in weight_gemms(p):
        rec = gemm_record(p, g, batch, spec, dtype)
        rows.append(
            {
                "part": g.name,
                "group": GEMM,
                "flops_per_token": g.count * model.gemm_flops(1, g.n, g.k),
                "bytes_per_token": g.count * rec["bytes_ideal"] / batch,
                "seconds_per_token": rec["time_us_per_token"] * 1e-6,
            }
        )
    for part in flop_split(p, context):
        if part.group == GEMM:
            continue
        roof = peak if part.group == ATTENTION else simt_peak
        nbytes = part.elems * elem
        rows.append(
            {
                "part": part.name,
                "group": part.group,
                "flops_per_token": part.flops,
                "bytes_per_token": nbytes,
                "seconds_per_token": roofs.roof_seconds(part.flops, nbytes, roof, bw),
            }
        )
    flops_total = sum(r["flops_per_token"] for r in rows)
    time_total = sum(r["seconds_per_token"] for r in rows)
    for r in rows:
        r["flop_share"] = 100.0 * r["flops_per_token"] / flops_total
        r["time_share"] = 100.0 * r["seconds_per_token"] / time_total
    return rows


BEST = "best"  # per_token's row of the picks of `--stages best` (records with dispatch_class)


def _counts_as(record: dict[str, Any], name: str) -> bool:
    if name == BEST:
        return record.get("dispatch_class") is not None
    return bool(record["stage"] == name)


def per_token(
    records: list[dict[str, Any]], stage_names: list[str], n_gemms: int, batches: list[int]
) -> list[dict[str, Any]]:
    """Per stage and batch, the measured time of all the weight GEMMs of one token (us), and
    what the roofs allow. The name BEST stands for the picks of `--stages best`, whichever
    stage each GEMM ran."""
    rows: list[dict[str, Any]] = []
    for name in stage_names:
        row: dict[str, Any] = {"stage": name}
        for b in batches:
            times = [
                r["time_us_per_token"] for r in records if _counts_as(r, name) and r["batch"] == b
            ]
            ok = len(times) == n_gemms and all(t is not None for t in times)
            row[f"us_b{b}"] = sum(times) if ok else None
        rows.append(row)
    allowed: dict[str, Any] = {"stage": "roofs allow"}
    for b in batches:
        seen = {r["gemm"]: r["allowed_us_per_token"] for r in records if r["batch"] == b}
        allowed[f"us_b{b}"] = sum(seen.values()) if len(seen) == n_gemms else None
    rows.append(allowed)
    return rows
