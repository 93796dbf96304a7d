# The two commands of the README: `make demo` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SPEC ?= specs/ort-digits.json
NAME ?= $(basename $(notdir $(SPEC)))
EXTRAS ?= dev,tvm

.PHONY: setup demo test lint schema bench clean

$(BIN)/repro: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(BIN)/repro

setup: $(BIN)/repro

# capture is done once and shipped (results/<name>/original/); the demo replays and reports.
# A negative verdict (exit 1) is a result, not a failure of the demo; 2, 3 and 4 are.
demo: setup
	$(BIN)/repro validate $(SPEC)
	$(BIN)/repro fetch $(SPEC)
	$(BIN)/repro replay $(SPEC) --repeat 3
	$(BIN)/repro report --compare results/$(NAME)/; rc=$$?; \
	  echo "report: reports/$(NAME)/report.md (also .html, .json)"; [ $$rc -le 1 ]

test: setup
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check repro tests bench
	$(BIN)/ruff format --check repro tests bench
	$(BIN)/mypy

schema: setup
	$(BIN)/repro schema > specs/schema/experiment-v1.schema.json
	$(BIN)/repro schema --report > specs/schema/report-v2.schema.json

bench: setup
	$(BIN)/python bench/harness_overhead.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
