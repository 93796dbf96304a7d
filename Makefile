# The two commands of the README: `make demo` and `make test`. Both set up .venv first.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SPEC ?= specs/ort-digits.json
NAME ?= $(basename $(notdir $(SPEC)))
EXTRAS ?= dev,tvm,optimize
# the demo's A/A (bench/verdict_fidelity.py runs its trials with these flags: keep them alike)
AA_ARGS ?= --until-decided --max-rounds 32 --max-time 150 --min-duration-ms 500 \
  --mode performance -s SingleStream -s Server -s Offline

.PHONY: setup demo test lint schema docs bench clean

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
	    /^Successfully installed/ { printf "  installed %d packages\n", NF - 2; fflush() }' \
	  || { echo "setup failed; the last lines of $(VENV)/setup.log:"; tail -30 $(VENV)/setup.log; \
	       exit 1; }
	@touch $(BIN)/repro

setup: $(BIN)/repro

# capture is done once and shipped (results/<name>/original/); the demo takes both paths:
# 1. replay against the shipped original (3 rounds), judged raw and adjusted for this machine's
#    speed (probes): reproduced, reproduced after machine adjustment, or not comparable on other
#    hardware (accuracy still judged);
# 2. an interleaved A/A check on this machine (--against self), stopped by the sequential rule
#    of every paired comparison (repro.stats.sequential); undecided, it says what would decide.
# A negative verdict (exit 1) is a result, not a failure of the demo; 2, 3 and 4 are. A replay
# that LoadGen judged INVALID (exit 3, e.g. a latency bound missed on a loaded machine) is a
# finding too: the report shows it. A failed replay leaves no finished run, and the report says so.
demo: setup
	$(BIN)/repro validate $(SPEC)
	$(BIN)/repro fetch $(SPEC)
	@echo "== 1/2: replay against the shipped original (results/$(NAME)/original/)"
	@$(BIN)/repro replay $(SPEC) --repeat 3; rc=$$?; \
	  if [ $$rc -eq 3 ]; then echo "replay: not every run was valid or finished; the report says which"; \
	  elif [ $$rc -ne 0 ]; then exit $$rc; fi
	@$(BIN)/repro report --compare results/$(NAME)/; rc=$$?; \
	  echo "report: reports/$(NAME)/report.md (also .html, .json)"; [ $$rc -le 1 ]
	@echo "== 2/2: interleaved A/A on this machine, rounds until decided (looks after 8, 16, 32 rounds; at most 150 s)"
	@echo "   (MultiStream is left out: the p99 of a query of µs-scale samples is the scheduler's jitter, not the model's)"
	@$(BIN)/repro replay $(SPEC) --against self $(AA_ARGS) --report-dir reports/$(NAME)-aa; rc=$$?; \
	  echo "report: reports/$(NAME)-aa/report.md"; [ $$rc -le 1 ]

test: setup
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check repro tests bench
	$(BIN)/ruff format --check repro tests bench
	$(BIN)/mypy

schema: setup
	$(BIN)/repro schema > specs/schema/experiment-v1.schema.json
	$(BIN)/repro schema --report > specs/schema/report-v2.schema.json

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
