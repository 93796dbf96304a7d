# The two commands of the README: `make demo` and `make test`. Both set up .venv first.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SPEC ?= specs/ort-digits.json
NAME ?= $(basename $(notdir $(SPEC)))
EXTRAS ?= dev,tvm,optimize,mlflow,serve
# the demo's A/A: a ms-scale model, Offline, rounds until decided (bench/verdict_fidelity.py runs
# its ms-scale trials with these flags: keep them alike). Each test is a query of at least 256
# samples (1.5-2.5 s on these 2-core machines): tests of 55-120 samples (0.5 s) varied 8-13 %
# from test to test on a quiet machine and left the A/A undecided after 32 rounds; with 256 it
# decides at the look after 16 rounds there (docs/getting-started.md#the-demo). The time cap is
# the part's budget: past it the A/A says what would decide it.
AA_SPEC ?= specs/ort-resnet-small.json
AA_NAME ?= $(basename $(notdir $(AA_SPEC)))
# every report and the A/A's runs go into the catalog (MLflow's embedded store, .repro/catalog.db:
# `repro catalog history $(SPEC)`); TRACK= switches it off
TRACK ?= --track
AA_ARGS ?= --until-decided --max-rounds 32 --max-time 180 --min-duration-ms 500 \
  --min-query-count 256 --mode performance -s Offline

.PHONY: setup demo test unit lint schema reference docs bench clean

# Setup says what it does and how far it is; pip's full output goes to $(VENV)/setup.log and
# its last lines are shown if it fails.
$(BIN)/repro: pyproject.toml
	@echo "setup 1/3: a virtual environment in $(VENV) ($$($(PYTHON) --version))"
	@$(PYTHON) -m venv $(VENV)
	@echo "setup 2/3: pip"
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip \
	  > $(VENV)/setup.log 2>&1 || { tail -30 $(VENV)/setup.log; exit 1; }
	@echo "setup 3/3: repro[$(EXTRAS)] and its pinned dependencies (onnxruntime, MLPerf LoadGen," \
	  "apache-tvm ~100 MB, ...; about 2 minutes on a fresh machine)"
	@set -o pipefail; $(BIN)/python -m pip install --progress-bar off --disable-pip-version-check \
	  -e ".[$(EXTRAS)]" 2>&1 | tee -a $(VENV)/setup.log | awk ' \
	    /^Collecting / { n++; printf "  [%2d] %s\n", n, $$2; fflush(); next } \
	    /^Installing collected packages/ { printf "  installing the %d packages (unpacking the wheels: a minute or two)\n", n; fflush() } \
	    /^Successfully installed/ { printf "  installed %d packages\n", NF - 2; fflush() }' \
	  || { echo "setup failed; the last lines of $(VENV)/setup.log:"; tail -30 $(VENV)/setup.log; \
	       exit 1; }
	@touch $(BIN)/repro

setup: $(BIN)/repro

# capture is done once and shipped (results/<name>/original/); the demo leads with what any
# machine can decide:
# 1. accuracy and predictions against the shipped original: hardware-independent, decided;
# 2. speed against the shipped original (3 rounds), judged raw and adjusted for this machine's
#    speed where the hardware is the original's; on other hardware shown for information;
# 3. an interleaved A/A of a ms-scale model on this machine (--against self), stopped by the
#    sequential rule of every paired comparison (repro.stats.sequential); undecided, it says
#    what would decide.
# Then the one next command that fits this machine. A negative verdict (exit 1) is a result,
# not a failure of the demo; 2, 3 and 4 are. A replay that LoadGen judged INVALID (exit 3, e.g.
# a latency bound missed on a loaded machine) is a finding too: the report shows it.
demo: setup
	$(BIN)/repro validate $(SPEC) $(AA_SPEC)
	$(BIN)/repro fetch $(SPEC) $(AA_SPEC)
	@echo "== 1/3: accuracy and predictions against the shipped original (any machine decides these)"
	@$(BIN)/repro replay $(SPEC) --mode accuracy; rc=$$?; [ $$rc -eq 0 ] || exit $$rc
	@$(BIN)/repro report --compare results/$(NAME)/ -o reports/$(NAME)-accuracy $(TRACK); rc=$$?; \
	  echo "report: reports/$(NAME)-accuracy/report.md"; [ $$rc -le 1 ]
	@echo "== 2/3: speed against the shipped original (judged on its hardware; elsewhere shown for information)"
	@$(BIN)/repro replay $(SPEC) --mode performance --repeat 3; rc=$$?; \
	  if [ $$rc -eq 3 ]; then echo "replay: not every run was valid or finished; the report says which"; \
	  elif [ $$rc -ne 0 ]; then exit $$rc; fi
	@$(BIN)/repro report --compare results/$(NAME)/ $(TRACK); rc=$$?; \
	  echo "report: reports/$(NAME)/report.md (also .html, .json)"; [ $$rc -le 1 ]
	@echo "== 3/3: interleaved A/A of a ms-scale model on this machine, rounds until decided (looks after 8, 16, 32 rounds; at most 180 s)"
	@$(BIN)/repro replay $(AA_SPEC) --against self $(AA_ARGS) --report-dir reports/$(AA_NAME)-aa $(TRACK); rc=$$?; \
	  echo "report: reports/$(AA_NAME)-aa/report.md"; [ $$rc -le 1 ]
	@$(BIN)/python -m repro.cli.demo_next reports/$(NAME)/report.json \
	  reports/$(AA_NAME)-aa/report.json $(SPEC)
	@[ -z "$(TRACK)" ] || echo "every run and verdict so far: $(BIN)/repro catalog history $(SPEC)"

# The tests on JOBS processes (pytest-xdist), a test file's tests on one process (their
# module-scoped runs are made once); JOBS=0 runs them in this process.
JOBS ?= 2
PYTEST = $(BIN)/python -m pytest -q $(if $(filter 0,$(JOBS)),,-n $(JOBS) --dist loadfile)

test: setup
	$(PYTEST) --durations=20

# a developer's loop: the unit tests alone (~85 s on 2 cores)
unit: setup
	$(PYTEST) tests/unit

lint: setup
	$(BIN)/ruff check repro tests bench
	$(BIN)/ruff format --check repro tests bench
	$(BIN)/mypy

schema: setup
	$(BIN)/repro schema > specs/schema/experiment-v1.schema.json
	$(BIN)/repro schema --report > specs/schema/report-v2.schema.json

# The reference pages of every command and spec field, from the code (the docs build and the tests
# fail when they are stale)
reference: setup
	$(BIN)/python -m repro.cli.reference docs

# The reference site: docs/ built by MkDocs into $(SITE) (`--strict`: a broken link or anchor, or a
# page missing from mkdocs.yml's nav, fails). repro[docs] is installed into $(VENV) once.
SITE ?= site
$(VENV)/.docs-installed: $(BIN)/repro
	@echo "docs: repro[docs] (mkdocs, mkdocs-material) into $(VENV)"
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[docs]" \
	  >> $(VENV)/setup.log 2>&1 || { tail -30 $(VENV)/setup.log; exit 1; }
	@touch $@

docs: $(VENV)/.docs-installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -d $(SITE)

bench: setup
	$(BIN)/python bench/harness_overhead.py

clean:
	rm -rf $(VENV) $(SITE) .pytest_cache .mypy_cache .ruff_cache
