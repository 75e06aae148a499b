# Shoal: the two commands a newcomer needs are `make run` and `make test`.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test test-fast bench system-deps spark-cds clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

## Start the daemon on the embedded defaults (data in ./data, SQLite event log).
run: $(STAMP)
	$(BIN)/python app.py run

## Install what the suite needs outside Python (JDBC jars for Spark), then run every test.
test: $(STAMP) system-deps spark-cds
	$(BIN)/python -m pytest $(PYTEST_ARGS)

## Everything but the suites marked slow.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

system-deps:
	@bash scripts/system-deps.sh

## Spark's classes pre-parsed for its JVM (projections/spark_cds.py): built once per JDK and
## PySpark (~1 min), it saves each replay seconds of start-up CPU; skipped without Java.
spark-cds: $(STAMP) system-deps
	@$(BIN)/python -m projections.spark_cds

bench: $(STAMP) system-deps spark-cds
	@for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b; done

clean:
	rm -rf $(VENV) data .pytest_cache .hypothesis
