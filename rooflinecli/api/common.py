"""What every job shares: the spec and the compile target chosen before any GPU is looked for,
user stages compiled first, the settings a run records of its timing, the tune table's picks,
and a document placed on the roofs of a calibration."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rooflinecli.core import roofs
from rooflinecli.core.specs import Spec
from rooflinecli.errors import RooflineError


def _device_name() -> str:
    from rooflinecli.gpu import device

    return str(device.info()["name"])


def default_spec(spec_arg: str | None) -> tuple[Spec, str]:
    """--spec, else the GPU nvidia-smi reports, else core.specs.DEFAULT, saying which and why
    (the commands put it in their title; core.specs.choose decides). Never imports CuPy."""
    from rooflinecli.core import specs
    from rooflinecli.gpu.device import smi_device_name

    return specs.choose(spec_arg, None if spec_arg else smi_device_name())


DEFAULT_ARCH = "sm_90a"  # the target of core.specs.DEFAULT (a test holds them equal)


def target_arch(arch: str | None = None) -> tuple[str, str]:
    """(NVRTC target, why): --arch, else the compute capability nvidia-smi reports, else
    DEFAULT_ARCH. Never imports CuPy: this is what compiles before any GPU is looked for."""
    from rooflinecli.gpu.device import smi_compute_capability
    from rooflinecli.stages import compiler

    if arch:
        compiler.cc_of_arch(arch)  # a malformed one: one line
        return arch, "given"
    cc = smi_compute_capability()
    if cc:
        return compiler.arch_for_cc(cc), f"detected compute capability {cc}"
    return DEFAULT_ARCH, "no GPU: the default, --arch chooses"


def compile_user_stages(stages: Sequence[Any], arch: str, dtype: str) -> None:
    """Compile each user stage (--extra-stage) with NVRTC for `arch`, so a compile error is one
    line naming its stage file and the compiler's first error, before any GPU is looked for.
    Cached: the run that follows finds the cubin."""
    from rooflinecli.stages import compiler

    for stage in stages:
        toml = getattr(stage, "toml_path", "")
        if not toml:
            continue
        try:
            compiler.compile_stage(stage.for_arch(arch), arch, dtype)
        except RooflineError as exc:
            raise RooflineError(f"stage file {toml}: {exc.message}") from None


def timing_settings(seed: int, timing: Any) -> dict[str, Any]:
    """The settings every run document records of its seed and its timing (a gpu.timer.Timing;
    the GPU layer is imported where a run starts, not here)."""
    return {
        "seed": seed,
        "budget_ms": timing.budget_ms,
        "repeats": timing.max_repeats if timing.min_repeats == timing.max_repeats else None,
        "max_noise_pct": timing.max_noise_pct,
        "flush_l2": timing.flush_l2,
        "l2_flush_kind": timing.flush_kind if timing.flush_l2 else None,
    }


def pick_best(
    shapes: Sequence[tuple[int, int, int]], dtype: str, device_name: str | None = None
) -> dict[tuple[int, int, int], Any]:
    """`--stages best`: per shape, the stage of the tune tables of the GPU here (or the device
    named), as rooflinecli.stages.dispatch resolves it (a Pick: stage, class, table)."""
    from rooflinecli import plan

    return plan.picks_for(shapes, dtype, device_name or _device_name())


def place_on_roofs(doc: dict[str, Any], roof_set: str, calibration: str | None) -> dict[str, Any]:
    """--roofs and --calibration applied to a document: the calibration file given, else the
    one cached for the document's device (rooflinecli.gpu.calibrate), then core.roofs."""
    if roof_set == "datasheet":
        return doc
    from rooflinecli.gpu import calibrate

    device = doc.get("device") or {}
    cal = None
    if calibration:
        cal = calibrate.read_calibration(calibration)
    elif device:
        cal = calibrate.load_calibration(
            device["name"], device.get("driver"), device.get("clock_sm_max_mhz")
        )
    return roofs.place_on_roofs(doc, roof_set, cal)


def load_calibration(path: str | None, doc: dict[str, Any]) -> dict[str, Any] | None:
    """The calibration named by --calibration, else the one cached for the document's device
    (`roofline calibrate` on it), else None. One of another GPU is refused."""
    from rooflinecli.gpu import calibrate  # the calibration cache: pure, no CuPy

    device = doc.get("device") or {}
    if path is None:
        if not device.get("name"):
            return None
        return calibrate.load_calibration(
            device["name"], device.get("driver"), device.get("clock_sm_max_mhz")
        )
    cal = calibrate.read_calibration(path)
    theirs = (cal.get("device") or {}).get("name")
    if device.get("name") and theirs != device["name"]:
        raise RooflineError(f"{path} calibrates {theirs}, the document ran on {device['name']}")
    spec = (doc.get("spec") or {}).get("name")
    if not device and cal.get("spec") and spec and cal["spec"] != spec:
        raise RooflineError(f"{path} calibrates spec {cal['spec']}, the document models {spec}")
    return cal


def calibration_for(doc: dict[str, Any], given: dict[str, Any] | None) -> dict[str, Any] | None:
    """The calibration a document's roofs take: the one given, where it calibrates the
    document's GPU (or the document is a model), else the one cached for its GPU, if any."""
    device = (doc.get("device") or {}).get("name")
    theirs = ((given or {}).get("device") or {}).get("name")
    if given is not None and (not device or theirs == device):
        return given
    return load_calibration(None, doc)


def fail_unverified(doc: dict[str, Any]) -> None:
    """A run whose document holds a stage that failed its check ends with exit 1, naming each
    such stage once (after the document is written and shown)."""
    from rooflinecli.errors import GateFailure

    failed = sorted({r["stage"] for r in doc["records"] if r.get("verified") is False})
    if failed:
        raise GateFailure(f"verification failed: {', '.join(failed)}")
