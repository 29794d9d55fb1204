"""The user's own GEMM kernel as a stage: a small TOML file next to a .cu file. Pure Python.

    name = "my_gemm"                  # letters, digits, _ and -; not a registry stage's name
    source = "my_gemm.cu"             # relative to this TOML file (or absolute)
    entry = "my_gemm"                 # the extern "C" __global__ function
    dtype = "fp32"
    threads = [16, 16]                # blockDim (x, y)
    tile = [64, 64]                   # rows x columns of C one block computes
    params = { BM = 64, BN = 64 }     # compile-time constants, passed as -DBM=64 ...
    flops = "2*M*N*K"                 # optional; expressions in M, N, K
    bytes = "4*(M*K + K*N + M*N)"     # optional; default: every operand moved once
    what = "one line"                 # optional
    x_is_row = false                  # optional: grid.x walks rows of C
    smem_bytes = 0                    # optional: dynamic shared memory per block
    math = "FFMA"                     # optional: FFMA, HMMA (mma.sync) or HGMMA (wgmma): the
                                      # instruction its work runs on, which picks its roof

The kernel honours the stages' contract (see rooflinecli/stages/gemm.py):

    extern "C" __global__ void ENTRY(int M, int N, int K, float alpha,
                                     const T* A, const T* B, float beta, T* C)

and may #include "ptx_sm80.cuh" / "ptx_sm90.cuh", the stages' PTX wrappers (kernels/include).

Formulas are parsed with `ast` and evaluated by a small interpreter that knows numbers, M, N, K,
+ - * / // **, parentheses, min() and max(): nothing else can run.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from rooflinecli.core.model import DTYPE_BYTES
from rooflinecli.errors import RooflineError
from rooflinecli.paths import LIMITS, read_text, read_toml
from rooflinecli.stages.gemm import BY_NAME, Stage

USER_DTYPES = ("fp32", "fp16", "bf16")
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_MAX_FORMULA = 500
_MAX_VALUE = 1e30  # a FLOP or byte count beyond this is a mistake in the formula

_BINOPS: dict[type, Any] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Pow: lambda a, b: a**b,
}
_VARS = ("M", "N", "K")


class FormulaError(ValueError):
    """A formula that is not allowed or cannot be evaluated; the message is one line."""


class Formula:
    """An arithmetic expression in M, N, K, checked once and evaluated safely."""

    def __init__(self, text: str) -> None:
        if not isinstance(text, str) or not text.strip():
            raise FormulaError("must be a non-empty string")
        if len(text) > _MAX_FORMULA:
            raise FormulaError(f"is longer than {_MAX_FORMULA} characters")
        self.text = text.strip()
        try:
            tree = ast.parse(self.text, mode="eval")
        except SyntaxError:
            raise FormulaError(f"{self.text!r} is not a valid expression") from None
        except (RecursionError, MemoryError):  # ((((...: more nesting than Python parses
            raise FormulaError("is nested too deeply") from None
        try:
            self._check(tree.body)
        except RecursionError:
            raise FormulaError("is nested too deeply") from None
        self._tree = tree.body

    def _check(self, node: ast.AST) -> None:
        if isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise FormulaError(f"operator {type(node.op).__name__} is not allowed")
            self._check(node.left)
            self._check(node.right)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, ast.UAdd | ast.USub):
                raise FormulaError(f"operator {type(node.op).__name__} is not allowed")
            self._check(node.operand)
        elif isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise FormulaError(f"{v!r} is not a number")
            # a literal of 400 digits (or 1e400, read as inf) is no count of FLOPs or bytes
            if (isinstance(v, float) and not math.isfinite(v)) or abs(v) > _MAX_VALUE:
                if isinstance(v, int):
                    shown = f"a number of {len(str(v))} digits"
                else:
                    shown = "a number past float's range" if math.isinf(v) else repr(v)
                raise FormulaError(f"holds {shown}: a number in a formula is at most 1e30")
        elif isinstance(node, ast.Name):
            if node.id not in _VARS:
                raise FormulaError(f"unknown name {node.id!r} (only M, N, K, min, max)")
        elif isinstance(node, ast.Call):
            func = node.func
            if not isinstance(func, ast.Name) or func.id not in ("min", "max"):
                what = func.id if isinstance(func, ast.Name) else ast.unparse(func)
                raise FormulaError(f"calling {what!r} is not allowed (only min and max)")
            if node.keywords or len(node.args) < 2:
                raise FormulaError(f"{func.id}() takes two or more plain arguments")
            for arg in node.args:
                self._check(arg)
        else:
            raise FormulaError(
                f"{type(node).__name__} is not allowed (numbers, M, N, K, + - * / // **)"
            )

    def _eval(self, node: ast.AST, env: dict[str, int]) -> float:
        if isinstance(node, ast.Constant):
            value = node.value
            assert isinstance(value, int | float)  # _check let nothing else through
            return value
        if isinstance(node, ast.Name):
            return env[node.id]
        if isinstance(node, ast.UnaryOp):
            v = self._eval(node.operand, env)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.Call):
            args = [self._eval(a, env) for a in node.args]
            return min(args) if node.func.id == "min" else max(args)  # type: ignore[attr-defined]
        assert isinstance(node, ast.BinOp)
        a, b = self._eval(node.left, env), self._eval(node.right, env)
        if isinstance(node.op, ast.Pow) and (abs(b) > 64 or abs(a) > _MAX_VALUE):
            raise FormulaError("exponent too large")
        try:
            v = _BINOPS[type(node.op)](a, b)
        except ZeroDivisionError:
            raise FormulaError("divides by zero") from None
        except OverflowError:
            raise FormulaError("overflows") from None
        if isinstance(v, complex) or abs(v) > _MAX_VALUE:
            raise FormulaError("gives a value out of range")
        return v  # type: ignore[no-any-return]

    def __call__(self, m: int, n: int, k: int) -> float:
        try:
            v = self._eval(self._tree, {"M": m, "N": n, "K": k})
        except RecursionError:
            raise FormulaError("is nested too deeply") from None
        if not math.isfinite(v) or v <= 0:
            raise FormulaError(f"gives {v} at M={m}, N={n}, K={k}: it must be positive")
        return int(v) if float(v).is_integer() else float(v)

    def __repr__(self) -> str:
        return f"Formula({self.text!r})"


@dataclass(frozen=True)
class UserStage(Stage):
    """A stage from the user's TOML file: Stage.file is the absolute path of the .cu."""

    flops_formula: str = "2*M*N*K"
    bytes_formula: str = ""  # empty: every operand moved once (model.gemm_bytes_ideal)
    toml_path: str = ""

    def flops_of(self, m: int, n: int, k: int) -> float:
        return Formula(self.flops_formula)(m, n, k)

    def bytes_of(self, m: int, n: int, k: int) -> float:
        if not self.bytes_formula:
            return DTYPE_BYTES[self.dtype] * (m * k + k * n + m * n)
        return Formula(self.bytes_formula)(m, n, k)


# key -> (type, required)
_KEYS: dict[str, tuple[type | tuple[type, ...], bool]] = {
    "name": (str, True),
    "source": (str, True),
    "entry": (str, True),
    "dtype": (str, True),
    "threads": (list, True),
    "tile": (list, True),
    "params": (dict, False),
    "flops": (str, False),
    "bytes": (str, False),
    "what": (str, False),
    "x_is_row": (bool, False),
    "smem_bytes": (int, False),
    "math": (str, False),
}
USER_MATH = ("FFMA", "HMMA", "HGMMA", "QGMMA")


def _pair(where: str, key: str, val: list[Any], limit: int) -> tuple[int, int]:
    if len(val) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in val):
        raise RooflineError(f"stage file {where}: {key} must be two whole numbers, got {val!r}")
    a, b = val
    if not (1 <= a <= limit and 1 <= b <= limit):
        raise RooflineError(f"stage file {where}: {key} = {val} must be within 1..{limit}")
    return a, b


_SIGNATURE_HINT = "(int M, int N, int K, float alpha, const T* A, const T* B, float beta, T* C)"


def check_contract(where: str, src: str, entry: str) -> None:
    """The entry is an extern "C" __global__ function with the stages' eight parameters."""
    head = re.search(
        r'extern\s+"C"\s+__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+'
        r"(?:__launch_bounds__\s*\([^)]*\)\s*)?" + re.escape(entry) + r"\s*\(([^)]*)\)",
        src,
    )
    if not head:
        raise RooflineError(
            f'stage file {where}: no extern "C" __global__ void {entry}(...) in the source'
        )
    params = [" ".join(p.split()) for p in head.group(1).split(",")]
    ok = (
        len(params) == 8
        and all(re.match(r"^(const\s+)?int\b", p) for p in params[:3])
        and re.match(r"^(const\s+)?float\b", params[3])
        and re.match(r"^(const\s+)?float\b", params[6])
        and all(p.startswith("const") and "*" in p for p in params[4:6])
        and "*" in params[7]
        and not params[7].startswith("const")
    )
    if not ok:
        raise RooflineError(
            f"stage file {where}: {entry} must take {_SIGNATURE_HINT}, got ({', '.join(params)})"
        )


def _check_keys(raw: dict[str, Any], where: str) -> None:
    """Every key of a stage file known, the required ones given, each of its type."""
    unknown = sorted(set(raw) - set(_KEYS))
    if unknown:
        raise RooflineError(
            f"stage file {where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(_KEYS)})"
        )
    for key, (typ, required) in _KEYS.items():
        if key not in raw:
            if required:
                raise RooflineError(f"stage file {where}: missing key {key}")
            continue
        val = raw[key]
        if not isinstance(val, typ) or (typ is not bool and isinstance(val, bool)):
            want = typ.__name__ if isinstance(typ, type) else "/".join(t.__name__ for t in typ)
            raise RooflineError(f"stage file {where}: {key} must be {want}, got {val!r}")


def _params(raw: dict[str, Any], where: str) -> dict[str, int]:
    """A stage file's compile-time parameters: C identifiers with whole numbers."""
    params: dict[str, int] = {}
    for key, val in raw.get("params", {}).items():
        if not _IDENT_RE.match(key):
            raise RooflineError(f"stage file {where}: parameter {key!r} is not a C identifier")
        if not isinstance(val, int) or isinstance(val, bool):
            raise RooflineError(f"stage file {where}: parameter {key} must be a whole number")
        params[key] = val
    return params


def _formulas(raw: dict[str, Any], where: str) -> dict[str, str]:
    """A stage file's FLOP and byte formulas, each parsed and evaluated once."""
    formulas: dict[str, str] = {}
    for key in ("flops", "bytes"):
        if key in raw:
            try:
                Formula(raw[key])(128, 256, 512)  # parse, and evaluate once to catch 1/(M-128)
            except FormulaError as exc:
                raise RooflineError(f"stage file {where}: {key} formula {exc}") from None
            formulas[key] = raw[key].strip()
    return formulas


def load_user_stage(path: str | Path) -> UserStage:
    """Read and check a user stage file; every problem is one RooflineError line."""
    p = Path(path)
    where = str(p)
    raw = read_toml(p, "stage file")

    _check_keys(raw, where)
    name, entry, dtype = raw["name"], raw["entry"], raw["dtype"]
    if not _NAME_RE.match(name):
        raise RooflineError(
            f"stage file {where}: name {name!r} must be letters, digits, _ or - (at most 64)"
        )
    if name in BY_NAME:
        raise RooflineError(f"stage file {where}: name {name!r} is taken by a built-in stage")
    if not _IDENT_RE.match(entry):
        raise RooflineError(f"stage file {where}: entry {entry!r} is not a C identifier")
    if dtype not in USER_DTYPES:
        raise RooflineError(
            f"stage file {where}: dtype {dtype!r} is not one of {', '.join(USER_DTYPES)}"
        )
    threads = _pair(where, "threads", raw["threads"], 1024)
    if threads[0] * threads[1] > 1024:
        raise RooflineError(f"stage file {where}: threads {list(threads)} exceed 1024 per block")
    tile = _pair(where, "tile", raw["tile"], 1 << 16)
    params = _params(raw, where)
    instruction = raw.get("math", "FFMA")
    if instruction not in USER_MATH:
        raise RooflineError(
            f"stage file {where}: math {instruction!r} is not one of {', '.join(USER_MATH)}"
        )
    smem = raw.get("smem_bytes", 0)
    if not 0 <= smem <= 256 * 1024:
        raise RooflineError(f"stage file {where}: smem_bytes = {smem} is outside 0..262144")

    formulas = _formulas(raw, where)

    source = Path(raw["source"])
    if not source.is_absolute():
        source = p.resolve().parent / source
    try:
        src = read_text(source, "source", LIMITS["source"])
    except RooflineError as exc:
        raise RooflineError(f"stage file {where}: {exc.message}") from None
    check_contract(where, src, entry)

    return UserStage(
        name=name,
        what=raw.get("what", f"user stage from {p.name}"),
        dtype=dtype,
        chapter=0,
        math=instruction,
        file=str(source.resolve()),  # absolute: compiler.source_of keeps it as given
        entry=entry,
        params=MappingProxyType(params),
        threads=threads,
        tile=tile,
        x_is_row=raw.get("x_is_row", False),
        smem_bytes=smem,
        flops_formula=formulas.get("flops", "2*M*N*K"),
        bytes_formula=formulas.get("bytes", ""),
        toml_path=str(p.resolve()),
    )
