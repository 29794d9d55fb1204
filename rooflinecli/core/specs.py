"""The hardware spec registry: one TOML file per GPU in specs/, validated on load.

Pure Python: no CuPy. Peaks are dense figures in TFLOP/s (TOP/s for int8); bandwidth in GB/s.
A figure no public vendor source gives is left out of the file, never derived: any peak, and
the SM count, boost clock and L2 size (OPTIONAL), which a run reads from the GPU itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple, cast

from rooflinecli import names
from rooflinecli.core import roof_keys
from rooflinecli.errors import RooflineError
from rooflinecli.paths import data_dir, read_toml

# Peak keys a spec may give, in display order. Sparse figures are not accepted anywhere.
PEAK_KEYS: tuple[str, ...] = (
    "fp64",
    "fp64_tensor_dense",
    "fp32",
    "tf32_tensor_dense",
    "fp16_tensor_dense",
    "bf16_tensor_dense",
    "fp8_tensor_dense",
    "int8_tensor_dense",
)

# key -> (type, required, (min, max) or None)
_FIELDS: dict[str, tuple[type, bool, tuple[float, float] | None]] = {
    "name": (str, True, None),
    "display_name": (str, True, None),
    "architecture": (str, True, None),
    "compute_capability": (str, True, None),
    "device_names": (list, True, None),
    "source": (str, True, None),
    "notes": (str, False, None),
    "sm_count": (int, False, (1, 1024)),
    "boost_clock_mhz": (int, False, (100, 5000)),
    "fp32_lanes_per_sm": (int, True, (16, 512)),
    "memory_type": (str, True, None),
    "memory_gib": (float, True, (1, 4096)),
    "memory_bandwidth_gbs": (float, True, (50, 100_000)),
    "l2_cache_mib": (float, False, (0.5, 1024)),
    "smem_per_sm_kib": (int, True, (16, 1024)),
    "smem_per_block_kib": (int, True, (16, 1024)),
    "registers_per_sm": (int, True, (16384, 1 << 20)),
    "max_threads_per_sm": (int, True, (256, 4096)),
    "max_blocks_per_sm": (int, True, (1, 64)),
    "tflops": (dict, True, None),
    # the SM clock each peak assumes, per peak key (H100 SXM5: FP32 at 1,980, Tensor Core 1,830)
    "peak_clock_mhz": (dict, False, None),
}

# fields a vendor may not publish (a B200's SM count, say): absent, they are None
OPTIONAL = ("sm_count", "boost_clock_mhz", "l2_cache_mib")


class Spec(NamedTuple):
    """One GPU's datasheet, as its specs/NAME.toml gives it (validated by _check, the one maker;
    a NamedTuple, as rooflinecli.present.View says why: this one saves about 2 ms a command)."""

    name: str
    display_name: str
    architecture: str
    compute_capability: str
    device_names: tuple[str, ...]
    source: str
    sm_count: int | None  # None: no public vendor source gives it (OPTIONAL)
    boost_clock_mhz: int | None
    fp32_lanes_per_sm: int
    memory_type: str
    memory_gib: float
    memory_bandwidth_gbs: float
    l2_cache_mib: float | None
    smem_per_sm_kib: int
    smem_per_block_kib: int
    registers_per_sm: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    tflops: dict[str, float]
    peak_clock_mhz: dict[str, float]  # {} where the file states none
    notes: str = ""
    path: str = ""  # the file it was read from

    @property
    def bandwidth_tbs(self) -> float:
        return self.memory_bandwidth_gbs / 1000.0

    def peak(self, key: str) -> float:
        """Dense peak in TFLOP/s for a peak key (see PEAK_KEYS) or a dtype (core.roof_keys)."""
        key = roof_keys.peak_key(key)
        if key not in self.tflops:
            raise RooflineError(f"spec {self.name} gives no {key} peak (the datasheet has none)")
        return self.tflops[key]

    def peak_clock(self, key: str) -> float | None:
        """The SM clock (MHz) a peak assumes, where the spec states it; None where it does not."""
        return self.peak_clock_mhz.get(roof_keys.peak_key(key))

    def to_dict(self) -> dict[str, Any]:
        d = {
            k: getattr(self, k)
            for k in _FIELDS
            if (k != "notes" or self.notes)
            and (k != "peak_clock_mhz" or self.peak_clock_mhz)
            and getattr(self, k) is not None
        }
        d["device_names"] = list(self.device_names)
        d["tflops"] = dict(self.tflops)
        if self.peak_clock_mhz:
            d["peak_clock_mhz"] = dict(self.peak_clock_mhz)
        return d


def _check(path: Path, raw: dict[str, Any]) -> Spec:
    where = path.name
    unknown = sorted(set(raw) - set(_FIELDS))
    if unknown:
        raise RooflineError(f"spec {where}: unknown key(s) {', '.join(unknown)}")
    values: dict[str, Any] = {}
    for key, (typ, required, bounds) in _FIELDS.items():
        if key not in raw:
            if required:
                raise RooflineError(f"spec {where}: missing key {key}")
            if key in OPTIONAL:
                values[key] = None
            continue
        val: Any = raw[key]
        if typ is float and isinstance(val, int) and not isinstance(val, bool):
            val = float(val)
        if not isinstance(val, typ) or isinstance(val, bool):
            raise RooflineError(f"spec {where}: {key} must be {typ.__name__}, got {val!r}")
        if bounds is not None and not (bounds[0] <= cast(float, val) <= bounds[1]):
            raise RooflineError(f"spec {where}: {key} = {val} is outside {bounds[0]}..{bounds[1]}")
        values[key] = val
    device_names = values["device_names"]
    if not device_names or not all(isinstance(n, str) and n for n in device_names):
        raise RooflineError(f"spec {where}: device_names must be a non-empty list of strings")
    values["device_names"] = tuple(device_names)
    # what tables, titles and charts show: names (no control character, not oversize), prose
    for key in ("name", "display_name", "architecture", "compute_capability", "memory_type"):
        names.check(values[key], f"spec {where}: {key}")
    for n in device_names:
        names.check(n, f"spec {where}: device_names")
    for key in ("source", "notes"):
        if key in values:
            names.check_text(values[key], f"spec {where}: {key}")
    peaks = values["tflops"]
    bad = sorted(set(peaks) - set(PEAK_KEYS))
    if bad:
        raise RooflineError(
            f"spec {where}: unknown peak(s) {', '.join(bad)} (dense only: {', '.join(PEAK_KEYS)})"
        )
    if "fp32" not in peaks:
        raise RooflineError(f"spec {where}: tflops.fp32 is required")
    clean: dict[str, float] = {}
    for k in PEAK_KEYS:
        if k in peaks:
            v = peaks[k]
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0.01 <= v <= 100_000:
                raise RooflineError(f"spec {where}: tflops.{k} = {v!r} is not a peak in TFLOP/s")
            clean[k] = float(v)
    values["tflops"] = clean
    clocks = values.get("peak_clock_mhz", {})
    for k, v in clocks.items():
        if k not in clean:
            raise RooflineError(f"spec {where}: peak_clock_mhz.{k} names no peak in tflops")
        if isinstance(v, bool) or not isinstance(v, int | float) or not 100 <= v <= 5000:
            raise RooflineError(f"spec {where}: peak_clock_mhz.{k} = {v!r} is not a clock in MHz")
    values["peak_clock_mhz"] = {k: float(v) for k, v in clocks.items()}
    cc = values["compute_capability"]
    parts = cc.split(".")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise RooflineError(f"spec {where}: compute_capability must look like '9.0', got {cc!r}")
    if not values["source"].startswith("https://"):
        raise RooflineError(f"spec {where}: source must be an https:// URL")
    return Spec(**values, path=str(path))


def from_dict(raw: dict[str, Any], where: str = "results document") -> Spec:
    """The spec a results document carries (validated like a file)."""
    return _check(Path(where), {k: v for k, v in raw.items() if k in _FIELDS})


def load_spec_file(path: str | Path) -> Spec:
    p = Path(path)
    raw = read_toml(p, "spec file")
    return _check(p, raw)


def registry(directory: Path | None = None) -> dict[str, Spec]:
    """Every shipped spec by name. Names match file stems; a device name is claimed once."""
    folder = directory or data_dir("specs")
    specs: dict[str, Spec] = {}
    claimed: dict[str, str] = {}
    for path in sorted(folder.glob("*.toml")):
        spec = load_spec_file(path)
        if spec.name != path.stem:
            raise RooflineError(f"spec {path.name}: name {spec.name!r} must equal the file stem")
        for dn in spec.device_names:
            other = claimed.get(dn.lower())
            if other:
                raise RooflineError(f"device name {dn!r} is claimed by {other} and {spec.name}")
            claimed[dn.lower()] = spec.name
        specs[spec.name] = spec
    return specs


def resolve(name_or_path: str) -> Spec:
    """--spec NAME|PATH: a registry name (case-insensitive) or a TOML file."""
    if name_or_path.endswith(".toml") or "/" in name_or_path or Path(name_or_path).is_file():
        return load_spec_file(name_or_path)
    shipped = data_dir("specs") / f"{name_or_path.lower()}.toml"
    if shipped.is_file():  # a registry name: its own file (tests check the whole registry)
        return load_spec_file(shipped)
    specs = registry()
    key = name_or_path.lower()
    if key in specs:
        return specs[key]
    starting = [name for name in specs if name.startswith(key)]
    if len(starting) == 1:  # a unique start names it: h200 is h200-sxm
        return specs[starting[0]]
    if starting:
        raise RooflineError(f"spec {name_or_path!r} is ambiguous: {', '.join(starting)}")
    raise RooflineError(
        f"unknown spec {name_or_path!r}; known: {', '.join(specs)} (or pass a .toml file path)"
    )


# The spec of every command that needs one when neither --spec nor a GPU names it (model,
# inspect, run --dry-run; `make run` without a GPU): the H100 SXM5, the GPU of the column the
# ladder follows (its peaks, its ridge points of 20 and 295 FLOP/byte, its 132 SMs). The one
# place this default is chosen.
DEFAULT = "h100-sxm5"


class Chosen(NamedTuple):
    """The spec a run uses and why, in the words a command's title gives."""

    spec: Spec
    why: str


def choose(given: str | None, device_name: str | None, default: str | None = DEFAULT) -> Chosen:
    """The spec a run uses: the one given (--spec: a registry name or a TOML file), else the
    spec of the GPU the run is on (`device_name` as the GPU reports it), else `default` (DEFAULT:
    no GPU, or a GPU no spec names). With default=None a GPU no spec names, or none, is an error.

    The one place this is decided; the caller asks the GPU its name (no GPU code here)."""
    if given:
        return Chosen(resolve(given), "given")
    if device_name:
        try:
            return Chosen(for_device(device_name), f"detected {device_name}")
        except RooflineError:
            if default is None:
                raise
            return Chosen(
                resolve(default), f"no spec matches {device_name}: the default, --spec chooses"
            )
    if default is None:
        raise RooflineError("no GPU here names a spec: pass --spec (a name from `roofline specs`)")
    return Chosen(resolve(default), "no GPU: the default, --spec chooses")


def for_device(device_name: str) -> Spec:
    """The spec whose device_names holds the name the running GPU reports."""
    want = device_name.strip().lower()
    for spec in registry().values():
        if want in (n.lower() for n in spec.device_names):
            return spec
    raise RooflineError(
        f"no spec matches GPU {device_name!r}; pass --spec FILE.toml "
        "(copy specs/h100-sxm5.toml and put this name in device_names)"
    )
