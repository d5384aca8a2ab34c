# Every target installs or builds what it needs, so a fresh clone needs nothing else.
.DEFAULT_GOAL := help
CARGO ?= cargo

.PHONY: help
help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

.PHONY: run
run:  ## the main job: the quickstart agent with tools and an approval on the test model
	$(CARGO) run --quiet --example quickstart

.PHONY: format
format:  ## format the Rust code
	$(CARGO) fmt --all

.PHONY: lint-rust
lint-rust:  ## rustfmt check and clippy with warnings denied
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

.PHONY: test-rust
test-rust:  ## every Rust test: unit, integration, doc tests
	$(CARGO) test --workspace

.PHONY: test
test: lint-rust test-rust  ## every check and every test (what CI runs)

.PHONY: bench
bench:  ## benchmarks (report figures; they gate nothing)
	$(CARGO) bench -p starweaver --bench scheduler
