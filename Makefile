# Shoal: the two commands a newcomer needs are `make run` and `make test`.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test test-fast bench system-deps js-deps spark-cds clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

## Start the daemon on the embedded defaults (data in ./data, SQLite event log).
run: $(STAMP)
	$(BIN)/python app.py run

## Install what the suite needs outside Python (JDBC jars for Spark, kafkajs), then run every test.
test: $(STAMP) system-deps js-deps spark-cds
	$(BIN)/python -m pytest $(PYTEST_ARGS)

## Everything but the suites marked slow.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

system-deps:
	@bash scripts/system-deps.sh

## kafkajs for tests/e2e/test_kafkajs_e2e.py, exactly as package-lock.json pins it.
JS_DIR   := tests/e2e/js
JS_STAMP := $(JS_DIR)/node_modules/.installed
js-deps: $(JS_STAMP)
$(JS_STAMP): $(JS_DIR)/package.json $(JS_DIR)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  npm ci --prefix $(JS_DIR) --no-audit --no-fund --loglevel=error && touch $@; \
	elif [ "$${CI:-}" = "true" ]; then echo "js-deps: npm is required under CI" >&2; exit 1; \
	else echo "js-deps: npm not found: the kafkajs e2e test will be skipped" >&2; fi

## Spark's classes pre-parsed for its JVM (projections/spark_cds.py): built once per JDK and
## PySpark (~1 min), it saves each replay seconds of start-up CPU; skipped without Java.
spark-cds: $(STAMP) system-deps
	@$(BIN)/python -m projections.spark_cds

bench: $(STAMP) system-deps spark-cds
	@for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b; done

clean:
	rm -rf $(VENV) data .pytest_cache .hypothesis $(JS_DIR)/node_modules
