# Two entry points: `make demo` (the main job) and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow test-all test-fast lint format bench clean

TEST_STAMP := $(VENV)/.installed-test

# The package and its runtime dependencies (enough for every pipeline use).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(STAMP)

# Plus the test tools (pytest, hypothesis, ruff, snakefmt, the SLURM executor plugin for dry runs).
$(TEST_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(TEST_STAMP)

# Use 4: no config -> the bundled synthetic example -> reports/example/plan.md + plan.html.
demo: $(STAMP)
	$(BIN)/snakemake -c all
	@echo "plan written to reports/example/plan.md and reports/example/plan.html"

lint: $(TEST_STAMP)
	$(BIN)/ruff check kerneltrace scripts tests bench
	$(BIN)/snakefmt --check Snakefile workflow
	$(BIN)/snakemake --lint

# pytest in TEST_WORKERS processes (pytest-xdist); a test file stays on one worker, so its module
# fixtures (shared pipeline runs) are built once. TEST_WORKERS=0 runs in this process.
TEST_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

# `make test` (the README's test command, <= 5 minutes on 2 cores): lint, the unit tests and one
# end-to-end run of each kind of input. The slow tier (tests/tiers.py: repeated Snakemake runs,
# sweeps of every real capture, the headless browser) and the one-node SLURM cluster run in
# `make test-slow`; CI (.ci/run) runs both. The SLURM tests run first and alone (their daemons and
# status polling share the machine with no other test); as root they apt-get install slurm-wlm and
# munge when missing.
test: lint
	$(PYTEST) -m "not slow and not slurm and not browser"

test-slow: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -m slurm -rs
	$(PYTEST) -m "(slow or browser) and not slurm"

test-all: test test-slow

# Inner loop: ruff + the unit tests (no end-to-end Snakemake run, no sweep of the real captures,
# no SLURM cluster, no headless browser); `make test-all` runs everything.
test-fast: $(TEST_STAMP)
	$(BIN)/ruff check kerneltrace scripts tests bench
	$(PYTEST) -m "not e2e and not shared and not slurm and not browser"

format: $(TEST_STAMP)
	$(BIN)/ruff check --fix kerneltrace scripts tests bench
	$(BIN)/snakefmt Snakefile workflow

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf results reports/example .snakemake
