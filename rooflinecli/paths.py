"""Where the data shipped with the tool lives: in the wheel (rooflinecli/kernels) or checkout."""

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """`kernels` or `specs`: inside the installed package, else the repository's top level."""
    for candidate in (_PKG / name, _PKG.parent / name):
        if candidate.is_dir() and any(candidate.iterdir()):
            return candidate
    raise FileNotFoundError(f"the tool's {name}/ folder is missing (broken install?)")


def executable_from_env(var: str) -> Path | None:
    """The executable a variable like ROOFLINE_NCU names, None when unset; a bad one is an error."""
    import os

    from rooflinecli.errors import RooflineError

    value = os.environ.get(var)
    if not value:
        return None
    p = Path(value)
    if p.is_file() and os.access(p, os.X_OK):
        return p
    raise RooflineError(f"{var}={value} is not an executable file")


def cache_dir() -> Path:
    """Per-user cache for compiled kernels and calibrations (ROOFLINE_CACHE_DIR overrides)."""
    import os

    root = os.environ.get("ROOFLINE_CACHE_DIR")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "roofline"


def read_toml(path: str | Path, what: str) -> dict:  # type: ignore[type-arg]
    """A TOML file the user names (a spec, a preset, a stage): every problem is one
    RooflineError line naming the file (`what`: "spec file", "preset file", ...)."""
    import tomllib

    from rooflinecli.errors import RooflineError

    p = Path(path)
    try:
        with p.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise RooflineError(f"{what} {p} not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise RooflineError(f"{what} {p} is not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise RooflineError(f"{what} {p} is not valid TOML: not UTF-8 text") from None
    except OSError as exc:
        raise RooflineError(f"cannot read {what} {p}: {exc.strerror}") from None
