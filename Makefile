# Set-up and habits. `make run` and `make test` work on a fresh clone (README).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# CuPy per CUDA major of the driver (nvidia-smi); without a GPU, only NVRTC for compiling.
CUDA_MAJOR := $(shell nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9]*\)\..*/\1/p' | head -n 1)
EXTRAS := $(if $(filter 12 13,$(CUDA_MAJOR)),cuda$(CUDA_MAJOR),compile)

.PHONY: install bytecode run test test-kernels lint bench docs docs-check plots clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip "setuptools>=77" wheel

# `make install` always installs; the targets below install only when the venv has not been, or
# pyproject.toml (dependencies, entry points) changed since: the install is editable, so it sees
# every edit of the code, and `pip install -e` again cost `make test` about 9 s each time.
INSTALLED := $(VENV)/.installed
# setuptools' build of an editable install warns, in a 10-line banner, that a folder named as
# the package may take precedence in imports (it is the package): silenced by its message, so
# any other warning and every error still show
PIP_INSTALL := PYTHONWARNINGS="ignore:Editable installation" $(BIN)/python -m pip install -q

install: $(BIN)/python
	$(PIP_INSTALL) -e ".[$(EXTRAS),dev,plot,report]"
	touch $(INSTALLED)
	$(BYTECODE)

$(INSTALLED): pyproject.toml | $(BIN)/python
	$(PIP_INSTALL) -e ".[$(EXTRAS),dev,plot,report]"
	touch $@

# An editable install compiles no bytecode, and where PYTHONDONTWRITEBYTECODE is set (as in CI)
# Python never writes it: every `roofline` process would compile the modules it imports from
# source (`roofline model gemm` took 0.27 s instead of 0.18). compileall writes the .pyc files
# whatever that variable says, and skips the ones that are current (0.07 s).
BYTECODE := $(BIN)/python -m compileall -q rooflinecli

bytecode: $(INSTALLED)
	@$(BYTECODE)

# The main job. Without a GPU, `run` says so in one line (exit 2) and the model of the same GEMM
# is shown instead, on the H100 SXM5: the GPU of the column the ladder follows, and the spec
# every command takes without a GPU (rooflinecli.core.specs.DEFAULT; a test holds them equal).
run: bytecode
	@$(BIN)/roofline run gemm --m 4096; rc=$$?; \
	if [ $$rc -eq 2 ]; then \
	  echo "No GPU run here; the analytic model of the same GEMM on the H100 SXM5 (the column's GPU):"; \
	  $(BIN)/roofline model gemm --m 4096 --spec h100-sxm5; \
	else exit $$rc; fi

# The CPU suite builds each stage once (tests/tiers.py); test-kernels builds the rest of the
# stage x dtype x target matrix. CI (.ci/run) runs both.
test: bytecode
	$(BIN)/python -m pytest -q -m "not matrix"

test-kernels: bytecode
	$(BIN)/python -m pytest -q -m matrix

lint: $(INSTALLED)
	$(BIN)/ruff check rooflinecli tests
	$(BIN)/ruff format --check rooflinecli tests
	$(BIN)/mypy

# Benchmarks on a GPU: the FP32 ladder's documents land in build/bench/ (the whole suite and
# which document each step makes: benchmarks/README.md).
bench: $(INSTALLED)
	PATH="$(abspath $(BIN)):$$PATH" bash benchmarks/gemm_fp32_ladder.sh build/bench ladder

# The report's example page (tests/test_report_example.py holds it to this line's output).
REPORT_EXAMPLE := benchmarks/results/gemm-fp32-4096-interleaved.json.gz --calibration benchmarks/calibration/h200-2026-12-01.json

docs: $(INSTALLED)
	$(BIN)/python -m rooflinecli.docgen docs/cli.md
	$(BIN)/python -m rooflinecli.stages.listing kernels/README.md docs/stages.md
	$(BIN)/roofline report --force $(REPORT_EXAMPLE) -o docs/report-example.html

docs-check: $(INSTALLED)
	$(BIN)/python -m rooflinecli.docgen --check docs/cli.md
	$(BIN)/python -m rooflinecli.stages.listing --check kernels/README.md docs/stages.md

# The pictures of docs/results.md, from the committed H200 documents and calibration (no GPU).
CAL := benchmarks/calibration/h200-2026-12-01.json
plots: $(INSTALLED)
	$(BIN)/roofline plot benchmarks/results/gemm-fp32-4096-interleaved.json.gz --calibration $(CAL) -o docs/roofline-h200-fp32-4096.png --force
	$(BIN)/roofline plot benchmarks/results/profile-fp32-4096.json.gz --calibration $(CAL) -o docs/roofline-h200-fp32-measured.png --force
	$(BIN)/roofline plot benchmarks/results/gemm-bf16-8192-interleaved.json.gz --calibration $(CAL) -o docs/roofline-h200-bf16-8192.png --force
	$(BIN)/roofline plot benchmarks/results/attn-b2-h16-n8192-d128-bf16.json.gz --calibration $(CAL) -o docs/roofline-h200-attention.png --force
	$(BIN)/roofline plot benchmarks/results/llm-llama-7b-bf16-best-1-16-512.json.gz --calibration benchmarks/calibration/h200-2026-12-01-llm.json -o docs/roofline-h200-llm.png --force
	$(BIN)/roofline plot benchmarks/results/token-llama-7b-bf16.json.gz --calibration benchmarks/calibration/h200-token.json -o docs/roofline-h200-token.png --force

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
