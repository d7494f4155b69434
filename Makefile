# Thin wrapper: `make demo` and `make test` each set up .venv on first use (tox.ini has the variants).
PY ?= python3
VENV ?= .venv
BIN = $(VENV)/bin

.PHONY: demo test test-pure lint build bench clean

$(BIN)/.installed: pyproject.toml setup.py
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,mpi,viz,sparse]'
	touch $@

# Rebuild the Cython extensions in place when a .pyx changed (cheap when nothing did).
build: $(BIN)/.installed
	$(BIN)/python setup.py -q build_ext --inplace

demo: build
	$(BIN)/python -m mxref.tools.demo

test: build
	$(BIN)/python -m pytest -q

test-pure: build
	MXREF_ENABLE_EXT=0 $(BIN)/python -m pytest -q

lint: $(BIN)/.installed
	$(BIN)/pip install -q ruff && $(BIN)/ruff check .

clean:
	rm -rf build $(VENV) mxref/_ext/*.so mxref/_ext/*.c
