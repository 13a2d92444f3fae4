"""`bench/studies/cpu_recipes.py`'s variants: every one loads with its round's config (a
typo fails here, not hours into a probe), each is scored on the weights its recipe keeps,
and a label the round does not have is one line."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import ROOT

from bench.studies import cpu_recipes
from transcli.config.loading import load_config


@pytest.mark.parametrize("round_", list(cpu_recipes.ROUNDS))
def test_every_variant_loads_with_its_rounds_config(round_: int) -> None:
    config, variants = cpu_recipes.ROUNDS[round_]
    for label, overrides in variants.items():
        cfg = load_config(config, cpu_recipes.BF16 + overrides)
        assert cfg.train.cpu_precision == "bf16", label


def test_a_recipe_with_a_weight_average_is_scored_on_it() -> None:
    cpu_1h, small = (cpu_recipes.ROUNDS[n][0] for n in (2, 1))
    assert cpu_recipes.checkpoint_for(cpu_1h, ["data.vocab_size=16000"]) == "avg"
    assert cpu_recipes.checkpoint_for(small, []) == "best"
    assert cpu_recipes.checkpoint_for(small, ["train.ema_decay=0.999"]) == "avg"


def test_a_variant_of_another_round_is_one_line() -> None:
    result = subprocess.run([sys.executable, "-m", "bench.studies.cpu_recipes", "table",
                             "--round", "2", "--only", "decay-lr1"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].endswith(
        "round 2 has no variant 'decay-lr1' (it has " + ", ".join(cpu_recipes.ROUND_2) + ")")
