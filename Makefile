# transcli — `make help` lists the targets.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: help install test clean bench

help:  ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml requirements-cpu.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# CPU torch is pinned first so nothing pulls the CUDA wheels.
	$(BIN)/pip install --quiet -r requirements-cpu.txt
	$(BIN)/pip install --quiet -c requirements-cpu.txt -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)  ## Create .venv and install transcli (CPU torch) with the dev tools

test: $(STAMP)  ## Run the test suite (CPU, a few minutes)
	$(BIN)/python -m pytest

bench: $(STAMP)  ## Model forward+backward speed vs torch.nn.Transformer
	$(BIN)/python bench/model_speed.py

clean:  ## Remove the venv and caches (never data or runs)
	rm -rf $(VENV) *.egg-info .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
