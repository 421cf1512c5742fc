# Two commands do all the set-up on a fresh machine:
#   make demo   create .venv, install dlc, compile and run the bundled MLP, check it
#   make test   create .venv if needed, install, run pytest and the lit tests
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test pytest lit bench compile-bench zoo zoo-int8 dynamic-bench llm-bench install system-deps clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# (the torch extra pins torch==2.13.0 exactly: pip takes the CPU wheel, not a CUDA build)
	$(BIN)/python -m pip install --quiet -e '.[test,torch]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

test: $(STAMP)
	$(BIN)/python -m pytest -n auto
	$(BIN)/lit -sv lit_tests

pytest: $(STAMP)
	$(BIN)/python -m pytest -n auto

lit: $(STAMP)
	$(BIN)/lit -sv lit_tests

# the bench extra (matplotlib, for the chart) is installed by `make bench` only
BENCH_STAMP := $(VENV)/.installed-bench
$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,torch,bench]'
	touch $(BENCH_STAMP)

# the whole suite (minutes): the single-thread table and the models at 1 and all threads on
# stdout, docs/benchmarks.png, the rows in build/benchmarks/results.json; see docs/benchmarks.md
bench: $(BENCH_STAMP)
	$(BIN)/python benchmarks/bench_models.py --all-threads --markdown --chart docs/benchmarks.png \
		--json build/benchmarks/results.json

# compile time (not part of `make test`): cold and cached compiles of the benchmark models and
# of 1k-16k node chains, each in its own process under a time limit; the markdown table on stdout
compile-bench: $(STAMP)
	$(BIN)/python benchmarks/compile_bench.py --json build/benchmarks/compile.json

# models from real libraries (not part of `make test`): 15 torchvision, transformers and timm
# models (random weights) beside onnxruntime, one thread each, the ratios on stdout and in
# build/zoo/zoo.json (issue 18). torchvision (a CUDA wheel: its native ops do not load beside
# the CPU torch), timm and pillow go to build/zoo/site, outside the environment: installed in
# it, torchvision breaks transformers' model imports (benchmarks/zoo.py says why)
ZOO_SITE := build/zoo/site
$(ZOO_SITE)/.installed: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,torch,zoo]'
	$(BIN)/python -m pip install --quiet --upgrade --no-deps --target $(ZOO_SITE) torchvision timm pillow
	touch $@

zoo: $(ZOO_SITE)/.installed
	$(BIN)/python benchmarks/zoo.py

# the same models quantized by onnxruntime's tools (static QDQ for the vision models, dynamic
# for the transformers) beside onnxruntime, rows in build/zoo/zoo_int8.json
zoo-int8: $(ZOO_SITE)/.installed
	$(BIN)/python benchmarks/zoo_int8.py

# BERT, GPT-2 (dynamic batch and sequence) and ResNet-50 (dynamic batch) compiled once as a
# DynamicModel, run at the shapes of issue 22 beside onnxruntime; rows in build/zoo/dynamic.json
dynamic-bench: $(ZOO_SITE)/.installed
	$(BIN)/python benchmarks/dynamic.py

# language models (issue 26): dlc.CausalLM's prefill and decode tokens/s for GPT-2 small and a
# Llama of its size (random weights) beside onnxruntime and eager PyTorch, 1 and 2 threads
llm-bench: $(STAMP)
	$(BIN)/python benchmarks/llm.py --threads 1 2

# the Debian packages of the tests that skip without them (.ci/run calls this; needs root and
# apt-get): chromium (dlc explore's page in a headless browser), gcc-aarch64-linux-gnu and
# qemu-user (aarch64 exports built and run). Only what is missing is installed.
SYSTEM_DEPS := chromium:chromium aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu \
	aarch64-linux-gnu-gcc:libc6-dev-arm64-cross qemu-aarch64:qemu-user
system-deps:
	@missing=""; for pair in $(SYSTEM_DEPS); do \
		command -v $${pair%%:*} >/dev/null 2>&1 || missing="$$missing $${pair#*:}"; done; \
	if [ -z "$$missing" ]; then echo "system-deps: all present"; exit 0; fi; \
	echo "system-deps: installing$$missing"; \
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends $$missing

clean:
	rm -rf $(VENV) build *.egg-info examples/mlp.onnx
