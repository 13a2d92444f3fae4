# transcli — `make help` lists the targets.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TRANSCLI := $(BIN)/python -m transcli

# Workflow variables (override on the command line: make train CONFIG=configs/base.yaml).
# The defaults work together: configs/demo.yaml names data/sample's train, valid and test
# files. CORPUS=path/train (path/train.en + path/train.es) replaces the config's training
# data; the config then carves valid/test off it unless it names its own.
CONFIG ?= configs/demo.yaml
CORPUS ?=
DATA   ?= out/data
RUN    ?= out/run
INPUT  ?= data/sample/test.en
OUTPUT ?= out/hyp.es
REF    ?= data/sample/test.es
ARGS   ?=
MINUTES ?= 5
SUITE  ?= test

# A variable given empty (`make train RUN= ARGS=--resume`) would let the next word take
# its place (`--out --resume`): each target refuses an empty one it needs.
need = $(foreach var,$(1),$(if $(strip $($(var))),,$(error $(var)= is empty: give it a value (make help shows the defaults))))

# The GPU stages run with the machine's own Python (GPU images have CUDA torch and every
# package transcli needs except `datasets`) and never build the venv.
GPU_PY := PYTHONPATH=. PYTHONUNBUFFERED=1 $(PYTHON)

.PHONY: help install test test-all test-busy demo prepare train translate evaluate bench gpu-carry \
        gpu-check gpu-e2e clean

help:  ## List the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'
	@echo "Variables: CONFIG=$(CONFIG) CORPUS=$(CORPUS) DATA=$(DATA) RUN=$(RUN)"
	@echo "           INPUT=$(INPUT) OUTPUT=$(OUTPUT) REF=$(REF) ARGS='$(ARGS)' SUITE=$(SUITE)"

$(STAMP): pyproject.toml requirements-cpu.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# CPU torch is pinned first so nothing pulls the CUDA wheels.
	$(BIN)/pip install --quiet -r requirements-cpu.txt
	$(BIN)/pip install --quiet -c requirements-cpu.txt -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)  ## Create .venv and install transcli (CPU torch) with the dev tools

test: $(STAMP)  ## Lint, then every test not marked slow (under 3 minutes on 2 cores)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -m "not slow" --numprocesses auto --maxprocesses 4 --dist loadfile

test-all: $(STAMP)  ## Lint, then the whole suite, slow tests included (about 8 minutes): what CI runs
	$(BIN)/ruff check .
	@command -v chromium >/dev/null || echo "note: no Chromium: the web page's tests are skipped (apt-get install chromium chromium-driver)"
	$(BIN)/python -m pytest --numprocesses auto --maxprocesses 4 --dist loadfile

test-busy: $(STAMP)  ## make SUITE (test, or test-all) beside two busy-looping processes
	@$(call need,SUITE)scripts/busy.sh $(MAKE) --no-print-directory $(SUITE)

demo: $(STAMP)  ## Prepare data/sample, train a small model a few minutes on CPU, translate, score
	bash scripts/demo.sh

prepare: $(STAMP)  ## Prepare CONFIG's data (or CORPUS.en + CORPUS.es) into DATA
	$(call need,CONFIG DATA)$(TRANSCLI) prepare --config $(CONFIG) $(if $(CORPUS),--src-file $(CORPUS).en --tgt-file $(CORPUS).es) --out $(DATA) $(ARGS)

# --resume continues with the run's own config.yaml, unless CONFIG= is given on make's line
TRAIN_CONFIG = $(if $(and $(filter --resume,$(ARGS)),$(filter-out command line,$(origin CONFIG))),,--config $(CONFIG))

train: $(STAMP)  ## Train CONFIG on DATA into RUN (ARGS=--resume to continue)
	$(call need,$(if $(TRAIN_CONFIG),CONFIG) DATA RUN)$(TRANSCLI) train $(TRAIN_CONFIG) --data $(DATA) --out $(RUN) $(ARGS)

translate: $(STAMP)  ## Translate INPUT to OUTPUT with the model in RUN (- for stdin/stdout)
	@$(call need,RUN INPUT OUTPUT)$(TRANSCLI) translate --model $(RUN) -i $(INPUT) -o $(OUTPUT) $(ARGS)

evaluate: $(STAMP)  ## Score OUTPUT against REF with sacreBLEU
	$(call need,OUTPUT REF)$(TRANSCLI) evaluate --hyp $(OUTPUT) --ref $(REF) $(ARGS)

bench: $(STAMP)  ## Training speed of configs/small.yaml, target tokens/s (4 min)
	$(BIN)/python -m bench.train_speed

gpu-carry: $(STAMP)  ## Beforehand (no GPU): prepare gpu-10m + base, copy dev sets into gpu-carry/
	$(BIN)/python -m bench.gpu_check carry $(ARGS)

gpu-check:  ## On a CUDA machine: training table, profile, translation, GPU tests (9 min; ARGS=--plan)
	@$(GPU_PY) -m bench.gpu_check check $(ARGS)

gpu-e2e:  ## On a CUDA machine: train base MINUTES, then BLEU on dev.tatoeba + newstest2012
	@$(call need,MINUTES)$(GPU_PY) -m bench.gpu_check e2e --minutes $(MINUTES) $(ARGS)

clean:  ## Remove the venv and caches (never data or runs)
	rm -rf $(VENV) *.egg-info .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
