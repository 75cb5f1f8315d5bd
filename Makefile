# Two entry points, both self-contained: they build .venv from nothing but a Python >= 3.10.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_OUT ?= demo-out

.PHONY: demo test test-fast lint clean

$(BIN)/kernelband: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch==2.13.0 first: a CPU build; the `live` extra then finds it satisfied.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[live,ray,dev]"
	touch $(BIN)/kernelband

## demo: install, then replay the shipped default data and write the report to demo-out/
demo: $(BIN)/kernelband
	$(BIN)/kernelband demo --out $(DEMO_OUT)

# pytest-xdist workers: one per core, at most 4 (many tests start processes of their own); a
# test file runs whole on one worker, with the files that share an expensive session fixture
# (tests/conftest.py), which first fills numba's cache in as many processes (kbsim.replay.warm;
# KB_TEST_WARM=0 skips it). TEST_WORKERS=0: serial
TEST_WORKERS ?= auto
XDIST = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --maxprocesses 4 --dist loadgroup)

## test: install, then run the whole test suite on CPU (Triton kernels under TRITON_INTERPRET=1)
test: $(BIN)/kernelband
	TRITON_INTERPRET=1 $(BIN)/python -m pytest -q $(XDIST); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi; exit $$rc

## test-fast: the suite without the tests marked slow (the engine-backed acceptance runs, kill loops)
test-fast: $(BIN)/kernelband
	TRITON_INTERPRET=1 $(BIN)/python -m pytest -q $(XDIST) -m "not slow"

lint: $(BIN)/kernelband
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) $(DEMO_OUT) .pytest_cache .ruff_cache
