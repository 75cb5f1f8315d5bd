# Two entry points, both self-contained: they build .venv from nothing but a Python >= 3.10.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_OUT ?= demo-out

.PHONY: demo test test-fast lint clean

# torch==2.13.0 as pip would choose it (pip's own configuration: its index, find-links, the
# build for this platform), fetched with pip, then installed with everything else by uv (put in
# the venv by pip), which installs in seconds what pip takes most of a minute for (torch's and
# Ray's wheels above all; a fresh venv on 2 cores, cold uv cache: 32 s against 43 s with pip
# installing torch). pip does it all where uv cannot be installed. The venv's own pip is not
# upgraded: it does both. The download folder is emptied first (an interrupted install's wheel).
# Bytecode: uv writes no .pyc (pip does), and where PYTHONDONTWRITEBYTECODE is set no process
# does, so each would parse numba, torch, numpy... from source again (~0.7 s more per interpreter
# start, ~85 s more over `make test` on 2 cores). Rather than uv's --compile-bytecode, which
# compiles all ~16,000 modules of the venv (35 CPU-s, 14-18 s on 2 cores), two interpreters at
# once import what kernelband's commands and evaluator workers load (WARM_IMPORTS_*), writing the
# bytecode of those ~2,600 modules (2 cores: 8 s, against 13 s for one interpreter)
WARM_IMPORTS_LIVE := torch triton live.runner.runner live.evaluator.forkserver \
	live.evaluator.worker live.evaluator.run_candidate kernelband.cli.live kernelband.cli.tasks
WARM_IMPORTS_REST := ray kernelband.cli.demo kernelband.cli.replay kernelband.cli.analyze \
	kernelband.cli.traces analysis.demo analysis.report kbsim.replay.sweep
IMPORT_ALL := import importlib, sys; [importlib.import_module(name) for name in sys.argv[1:]]
$(BIN)/kernelband: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	rm -rf $(VENV)/torch-wheel
	if $(BIN)/pip install -q uv && $(BIN)/pip download -q --no-deps -d $(VENV)/torch-wheel torch==2.13.0; then \
	  $(BIN)/uv pip install -q --python $(BIN)/python \
	    $(VENV)/torch-wheel/torch-*.whl -e ".[live,ray,dev]"; \
	else $(BIN)/pip install -q torch==2.13.0 && $(BIN)/pip install -q -e ".[live,ray,dev]"; fi
	rm -rf $(VENV)/torch-wheel
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -c "$(IMPORT_ALL)" $(WARM_IMPORTS_LIVE) & live=$$!; \
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -c "$(IMPORT_ALL)" $(WARM_IMPORTS_REST); rest=$$?; \
	wait $$live && [ $$rest -eq 0 ] \
	  || echo "writing the bytecode failed: kernelband works, its processes start slower" >&2
	touch $(BIN)/kernelband

## demo: install, then replay the shipped default data and write the report to demo-out/
demo: $(BIN)/kernelband
	$(BIN)/kernelband demo --out $(DEMO_OUT)

# pytest-xdist workers: one per core and one more for the tests that mostly wait, at most 4
# (many tests start processes of their own); a test file runs whole on one worker, with the
# files that share an expensive session fixture (tests/conftest.py), the longest first; they
# start when the first of numba's two cache fill groups ends, and no test before the other does
# (kbsim.replay.warm; KB_TEST_WARM=0 skips it). TEST_WORKERS=0: serial
TEST_WORKERS ?= auto
XDIST = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --maxprocesses 4 --dist loadgroup)

## test: install, then run the whole test suite on CPU (Triton kernels under TRITON_INTERPRET=1)
# PYTHONDONTWRITEBYTECODE emptied: the first process that imports a module WARM_IMPORTS_* left out
# (the project's tests, Ray's workers, inductor...) writes its bytecode for the hundreds after it
test: $(BIN)/kernelband
	PYTHONDONTWRITEBYTECODE= TRITON_INTERPRET=1 $(BIN)/python -m pytest -q $(XDIST); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi; exit $$rc

## test-fast: the suite without the tests marked slow (the engine-backed acceptance runs, kill loops)
test-fast: $(BIN)/kernelband
	PYTHONDONTWRITEBYTECODE= TRITON_INTERPRET=1 $(BIN)/python -m pytest -q $(XDIST) -m "not slow"

lint: $(BIN)/kernelband
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) $(DEMO_OUT) .pytest_cache .ruff_cache
