"""The user's own kernels: stage file and .cu (checked, compiled), safe formulas, measure()."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rooflinecli import results
from rooflinecli.cli import cli
from rooflinecli.errors import RooflineError
from rooflinecli.stages import compiler
from rooflinecli.stages.userstage import Formula, FormulaError, UserStage, load_user_stage

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "my_gemm.toml"


def test_the_example_loads():
    s = load_user_stage(EXAMPLE)
    assert isinstance(s, UserStage)
    assert (s.name, s.entry, s.dtype, s.threads, s.tile) == (
        "my_gemm",
        "my_gemm",
        "fp32",
        (16, 16),
        (64, 64),
    )
    assert dict(s.params) == {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4}
    assert Path(s.file).is_absolute() and s.file == str(ROOT / "examples" / "my_gemm.cu")
    # the compiler joins data_dir("kernels") / file: an absolute right operand wins
    assert compiler.source_of(s) == (ROOT / "examples" / "my_gemm.cu").read_text()
    assert s.launch(100, 200) == ((4, 2, 1), (16, 16, 1), 0)
    assert s.flops_of(100, 200, 300) == 2 * 100 * 200 * 300
    assert s.bytes_of(100, 200, 300) == 4 * (100 * 300 + 300 * 200 + 100 * 200)
    assert s.defines() == ["-DBM=64", "-DBN=64", "-DBK=16", "-DTM=4", "-DTN=4"]


def test_the_example_compiles_for_hopper_without_spills():
    s = load_user_stage(EXAMPLE)
    built = compiler.compile_stage(s, "sm_90a", use_cache=False)
    assert built.resources.spill_bytes == 0
    assert built.resources.stack_frame_bytes == 0
    assert 0 < built.resources.registers <= 255
    # As 64x16 + Bs 16x64 floats = 8 KiB of static shared memory
    assert built.resources.smem_static_bytes == 2 * 64 * 16 * 4
    assert Path(built.cubin_path).is_file()


def test_a_user_stage_may_include_the_ptx_headers(tmp_path):
    """NVRTC finds kernels/include for user stages too: elem_t, to_float and pack2 for bf16."""
    kernel = """\
#include "ptx_sm80.cuh"
#include "ptx_sm90.cuh"
extern "C" __global__ void mine(int M, int N, int K, float alpha,
                                const elem_t* __restrict__ A, const elem_t* __restrict__ B,
                                float beta, elem_t* __restrict__ C) {
    const int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += to_float(A[row * K + k]) * to_float(B[k * N + col]);
    C[row * N + col] = static_cast<elem_t>(pack2(alpha * acc, 0.0f) & 0xffffu);
}
"""
    s = load_user_stage(_write(tmp_path, STAGE.replace('"fp32"', '"bf16"'), kernel))
    assert compiler.options_for(s, "sm_90a", "bf16")[-1] == "-DELEM_BF16=1"
    built = compiler.compile_stage(s, "sm_90a", "bf16")
    assert built.resources.spill_bytes == 0 and Path(built.cubin_path).is_file()


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2*M*N*K", 2 * 128 * 256 * 512),
        ("4*(M*K + K*N + M*N)", 4 * (128 * 512 + 512 * 256 + 128 * 256)),
        ("min(M, N) * K", 128 * 512),
        ("max(M, N, K) // 2", 256),
        ("M**2 - -N", 128**2 + 256),
        ("M*N*K/64", 128 * 256 * 512 / 64),
        ("1.5e3", 1500),
    ],
)
def test_formulas_evaluate(text, value):
    assert Formula(text)(128, 256, 512) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("__import__('os')", "calling '__import__' is not allowed (only min and max)"),
        ("__import__('os').system('true')", "calling \"__import__('os').system\" is not allowed"),
        ("Q * 2", "unknown name 'Q' (only M, N, K, min, max)"),
        ("M * N.real", "Attribute is not allowed"),
        ("2*M*", "'2*M*' is not a valid expression"),
        ("M if N else K", "IfExp is not allowed"),
        ("[M, N]", "List is not allowed"),
        ("'M'", "'M' is not a number"),
        ("True", "True is not a number"),
        ("lambda: M", "Lambda is not allowed"),
        ("min(M)", "min() takes two or more plain arguments"),
        ("M << 2", "operator LShift is not allowed"),
        ("not M", "operator Not is not allowed"),
        ("M - M", "gives 0 at M=128, N=256, K=512: it must be positive"),
        ("M / (M - 128)", "divides by zero"),
        ("2 ** 1000", "exponent too large"),
        ("10.0 ** 60", "gives a value out of range"),
    ],
)
def test_unsafe_or_broken_formulas_are_refused(text, message):
    with pytest.raises(FormulaError, match=re.escape(message)):
        Formula(text)(128, 256, 512)


STAGE = """\
name = "mine"
source = "mine.cu"
entry = "mine"
dtype = "fp32"
threads = [16, 16]
tile = [16, 16]
params = { BK = 16 }
flops = "2*M*N*K"
"""

KERNEL = """\
extern "C" __global__ void mine(int M, int N, int K, float alpha,
                                const float* __restrict__ A, const float* __restrict__ B,
                                float beta, float* __restrict__ C) {}
"""


def _write(tmp_path: Path, toml: str, cu: str | None = KERNEL) -> Path:
    if cu is not None:
        (tmp_path / "mine.cu").write_text(cu)
    path = tmp_path / "mine.toml"
    path.write_text(toml)
    return path


BAD_STAGES = [
    (STAGE + "color = 1\n", None, "unknown key(s) color"),
    (STAGE.replace('entry = "mine"\n', ""), None, "missing key entry"),
    (
        STAGE.replace("[16, 16]\ntile", "[16, 16, 1]\ntile"),
        None,
        "threads must be two whole numbers",
    ),
    (
        STAGE.replace("threads = [16, 16]", "threads = [64, 32]"),
        None,
        "threads [64, 32] exceed 1024",
    ),
    (
        STAGE.replace("tile = [16, 16]", "tile = [0, 16]"),
        None,
        "tile = [0, 16] must be within 1..65536",
    ),
    (STAGE.replace('"fp32"', '"fp64"'), None, "dtype 'fp64' is not one of fp32, fp16, bf16"),
    (
        STAGE.replace('name = "mine"', 'name = "cublas"'),
        None,
        "name 'cublas' is taken by a built-in stage",
    ),
    (STAGE.replace('name = "mine"', 'name = "../x"'), None, "name '../x' must be letters, digits"),
    (
        STAGE.replace('entry = "mine"', 'entry = "mine()"'),
        None,
        "entry 'mine()' is not a C identifier",
    ),
    (STAGE.replace("BK = 16", "BK = 1.5"), None, "parameter BK must be a whole number"),
    (
        STAGE.replace("2*M*N*K", "__import__('os')"),
        None,
        "flops formula calling '__import__' is not allowed",
    ),
    (STAGE.replace("2*M*N*K", "2*X"), None, "flops formula unknown name 'X'"),
    (STAGE.replace("2*M*N*K", "2*M*("), None, "flops formula '2*M*(' is not a valid expression"),
    (STAGE + 'bytes = "M - M"\n', None, "bytes formula gives 0"),
    (STAGE.replace('"mine.cu"', '"gone.cu"'), None, "gone.cu not found"),
    (STAGE, KERNEL.replace("void mine", "void yours"), 'no extern "C" __global__ void mine(...)'),
    (STAGE, KERNEL.replace("float beta, ", ""), "mine must take (int M, int N, int K, float alpha"),
    (STAGE, KERNEL.replace("const float* __restrict__ A", "float* A"), "mine must take"),
    (STAGE + "[oops\n", None, "is not valid TOML"),
    (STAGE + 'math = "IMMA"\n', None, "math 'IMMA' is not one of FFMA, HMMA, HGMMA"),
]


def test_a_user_stage_declares_its_math_and_is_placed_by_it(tmp_path):
    """FFMA unless the file says otherwise; a Tensor Core kernel (math = "HMMA") claims HMMA in
    its SASS and stands under the fp16 Tensor Core roof, the FFMA one under the FP32 peak."""
    from rooflinecli.core import roofs, specs

    plain = load_user_stage(_write(tmp_path, STAGE.replace('"fp32"', '"fp16"')))
    tensor = load_user_stage(
        _write(tmp_path, STAGE.replace('"fp32"', '"fp16"') + 'math = "HMMA"\n')
    )
    assert (plain.math, plain.sass_claims) == ("FFMA", ("FFMA",))
    assert (tensor.math, tensor.sass_claims) == ("HMMA", ("HMMA",))
    spec = specs.resolve("h200-sxm")
    assert roofs.model_record(plain, 64, 64, 64, spec, dtype="fp16")["roof_key"] == "fp32"
    assert (
        roofs.model_record(tensor, 64, 64, 64, spec, dtype="fp16")["roof_key"]
        == "fp16_tensor_dense"
    )


@pytest.mark.parametrize(("toml", "cu", "message"), BAD_STAGES)
def test_bad_stage_files_are_one_line_errors(tmp_path, toml, cu, message):
    path = _write(tmp_path, toml, KERNEL if cu is None else cu)
    with pytest.raises(RooflineError, match=re.escape(message)) as info:
        load_user_stage(path)
    assert "\n" not in info.value.message


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            STAGE.replace("2*M*N*K", "__import__('os').system('echo pwned')"),
            "flops formula calling",
        ),
        (STAGE.replace("2*M*N*K", "M ** N ** K"), "flops formula exponent too large"),
        (STAGE + "oops = 1\n", "unknown key(s) oops"),
    ],
)
def test_bad_stage_files_via_the_cli_exit_2_with_one_line(tmp_path, runner, toml, message):
    path = _write(tmp_path, toml)
    r = runner.invoke(cli, ["run", "llm", "--dtype", "fp32", "--extra-stage", str(path)])
    assert r.exit_code == 2
    assert r.stderr.startswith(f"error: stage file {path}: {message}")
    assert len(r.stderr.strip().splitlines()) == 1
    assert "pwned" not in r.output


def test_a_stage_file_of_another_dtype_is_refused_by_run_llm(tmp_path, runner):
    path = _write(tmp_path, STAGE)
    r = runner.invoke(cli, ["run", "llm", "--dtype", "fp16", "--extra-stage", str(path)])
    assert r.exit_code == 2
    assert (
        r.stderr.strip() == f"error: stage mine ({path.resolve()}) is fp32, not fp16 (use --dtype)"
    )


def test_a_missing_stage_file(runner, tmp_path):
    r = runner.invoke(
        cli, ["run", "llm", "--dtype", "fp32", "--extra-stage", str(tmp_path / "no.toml")]
    )
    assert r.exit_code == 2
    assert r.stderr.strip() == f"error: stage file {tmp_path / 'no.toml'} not found"


# --- measure() and document(): the Python API ----------------------------------------------


def test_importing_rooflinecli_does_not_import_cupy():
    code = (
        "import sys, rooflinecli\n"
        "from rooflinecli import measure, document\n"
        "assert callable(measure) and callable(document)\n"
        "assert 'cupy' not in sys.modules, 'cupy imported'\n"
        "import rooflinecli.api as api\n"
        "assert api.document is document and api.measure is measure\n"
        "try:\n"
        "    rooflinecli.nothing\n"
        "except AttributeError:\n"
        "    print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def _record(**over):
    # what measure() returns for a 4096^3 FP32 GEMM timed at 10 ms on an H100
    rec = {
        "stage": "my_matmul", "kind": "user", "dtype": "fp32", "m": 4096, "n": 4096, "k": 4096,
        "flops": 2 * 4096**3, "bytes_ideal": 12 * 4096**2, "ai_ideal": 2 * 4096**3 / (12 * 4096**2),
        "time_ms": 10.0, "tflops": 2 * 4096**3 / 10e-3 / 1e12,
        "device_name": "NVIDIA H100 80GB HBM3",
    }  # fmt: skip
    rec.update(over)
    return results.complete_record(rec)


def test_document_places_measured_records_on_the_roofline():
    from rooflinecli import document

    doc = document([_record()])  # spec from the device the record names
    results.validate(doc)
    assert doc["spec"]["name"] == "h100-sxm5"
    assert doc["device"] == {"name": "NVIDIA H100 80GB HBM3"}
    (r,) = doc["records"]
    # AI = 2 x 4096 / 12 = 682.67 FLOP/byte, right of the FP32 ridge 20: compute roof 67 TFLOP/s;
    # 137.4 GFLOP in 10 ms = 13.744 TFLOP/s = 20.51% of it
    assert r["roof"] == "compute" and r["attainable_tflops"] == 67.0
    assert r["pct_of_roof"] == pytest.approx(100 * 13.7438953472 / 67, rel=1e-9)
    assert r["pct_of_peak"] == r["pct_of_roof"]
    assert r["ridge_point"] == pytest.approx(20.0)
    text = results.dumps(doc)
    assert json.loads(text)["records"][0]["stage"] == "my_matmul"


def test_document_needs_a_spec_when_records_name_no_known_device():
    from rooflinecli import document

    with pytest.raises(RooflineError, match="pass spec="):
        document([_record(device_name=None)])
    doc = document([_record(device_name=None, bytes_ideal=None, ai_ideal=None)], spec="h200-sxm")
    (r,) = doc["records"]
    assert r["roof"] is None and r["pct_of_roof"] is None and r["pct_of_peak"] > 0


def test_measure_checks_its_arguments_before_touching_the_gpu():
    from rooflinecli import measure

    with pytest.raises(ValueError, match="flops must be a positive number"):
        measure(lambda: None, flops=0, name="x")
    with pytest.raises(ValueError, match="shape must be three positive whole numbers"):
        measure(lambda: None, flops=1, name="x", shape=(1, 2))
    with pytest.raises(TypeError, match="fn must be callable"):
        measure(None, flops=1, name="x")  # type: ignore[arg-type]
