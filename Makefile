# The two commands a new checkout needs: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck unit bench fuzz clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/toolpin demo

test: $(VENV)/.installed
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy src
	$(BIN)/pytest -q

bench: $(VENV)/.installed
	$(BIN)/python bench/run_all.py

# The proxy's framing fuzzer with a long budget (the normal suite runs 60 examples).
fuzz: $(VENV)/.installed
	TOOLPIN_FUZZ_EXAMPLES=$${TOOLPIN_FUZZ_EXAMPLES:-3000} $(BIN)/pytest -q tests/proxy/test_proxy_fuzz.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
