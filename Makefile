# The two commands a new checkout needs: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck unit bench fuzz clean install uninstall

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/toolpin demo

# Worker processes for the suite (docs/testing.md: measured on this 2-core machine).
TEST_WORKERS ?= 4

test: $(VENV)/.installed
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy src
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist worksteal

bench: $(VENV)/.installed
	$(BIN)/python bench/run_all.py

# `make install`: toolpin on PATH from this checkout, in a virtual environment of its own
# (PREFIX/lib/toolpin/venv) with the command linked into PREFIX/bin; needs only Python and
# the dependencies from the package index. The installed command stays valid when this
# checkout moves or is deleted (it is not the repository's .venv).
PREFIX ?= $(HOME)/.local
TOOL_VENV ?= $(PREFIX)/lib/toolpin/venv
# Never PREFIX/share/toolpin: on Linux that is toolpin's own data folder (pins, audit log).

install:
	$(PYTHON) -m venv --clear $(TOOL_VENV)
	$(TOOL_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(TOOL_VENV)/bin/python -m pip install --quiet .
	mkdir -p $(PREFIX)/bin
	ln -sf $(TOOL_VENV)/bin/toolpin $(PREFIX)/bin/toolpin
	@$(PREFIX)/bin/toolpin --version
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) echo "toolpin is on PATH: $(PREFIX)/bin/toolpin";; \
	  *) echo "installed $(PREFIX)/bin/toolpin; add $(PREFIX)/bin to PATH";; esac

uninstall:
	rm -f $(PREFIX)/bin/toolpin
	rm -rf $(PREFIX)/lib/toolpin

# The proxy's framing fuzzer and its differential acceptance test with long budgets (the
# normal suite runs 60 and 25 examples).
fuzz: $(VENV)/.installed
	TOOLPIN_FUZZ_EXAMPLES=$${TOOLPIN_FUZZ_EXAMPLES:-3000} $(BIN)/pytest -q tests/proxy/test_proxy_fuzz.py
	TOOLPIN_ACCEPT_EXAMPLES=$${TOOLPIN_ACCEPT_EXAMPLES:-300} $(BIN)/pytest -q tests/proxy/test_proxy_acceptance.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
