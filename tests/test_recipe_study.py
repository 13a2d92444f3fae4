"""`bench/studies/recipes.py`, the recipe study: two variants trained side by side on the
CPU with a tiny budget and scored on three sets; its plans, which check every variant's
settings; its budgets; a variant the round does not have, or a missing corpus, in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, TINY_CONFIG

from bench.common import SCORED_SETS
from bench.quality import table_lines
from bench.studies import recipes
from transcli.config.loading import load_config

SAMPLE = ROOT / "data" / "sample"


def sample_corpus(folder: Path) -> Path:
    """data/sample laid out as the shared corpora are: train, and three scoring sets."""
    folder.mkdir()
    for lang in ("en", "es"):
        shutil.copyfile(SAMPLE / f"train.{lang}", folder / f"train.{lang}")
        for name, split in zip(SCORED_SETS, ("valid", "test", "test")):
            lines = (SAMPLE / f"{split}.{lang}").read_text(encoding="utf-8").splitlines()[:12]
            (folder / f"{name}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


@pytest.mark.slow
def test_two_variants_side_by_side_are_trained_scored_and_drawn(tmp_path: Path) -> None:
    corpus = sample_corpus(tmp_path / "corpus")
    work = tmp_path / "work"
    status = recipes.main(["--device", "cpu", "--round", "gpu", "--config", str(TINY_CONFIG),
                           "--only", "base", "dropout0.3", "--updates", "6", "--corpus",
                           str(corpus), "--work", str(work)])
    assert status == 0, (work / "base.log").read_text()[-2000:]
    rows = json.loads((work / "study.json").read_text())
    assert [row["label"] for row in rows] == ["base", "dropout0.3"]
    for row in rows:
        assert row["updates"] == 6
        assert all(0 <= row["scores"][name]["chrf"] <= 100 for name in SCORED_SETS)
    assert (work / "curves.png").stat().st_size > 0
    assert "| base | 6 updates | 6 |" in (work / "study.md").read_text()
    # the variants really differ: the dropout one trained with its own setting
    assert "dropout: 0.3" in (work / "dropout0.3" / "run" / "config.yaml").read_text()


def test_the_table_has_a_row_per_run_and_one_per_failed_variant() -> None:
    scores = {name: {"bleu": 30.0 + i, "chrf": 55.0} for i, name in enumerate(SCORED_SETS)}
    rows = [{"label": "base", "budget": "6 min", "updates": 2500, "tgt_tokens_per_s": 123456.0,
             "scores": scores}, {"label": "vocab32k", "error": "prepare: exit status 1: boom"}]
    text = "\n".join(table_lines(rows))
    assert "| base | 6 min | 2500 | 123,456 | 30.0 | 55.0 | 31.0 | 55.0 | 32.0 | 55.0 |" in text
    assert "| vocab32k | prepare: exit status 1: boom |" in text


def test_a_missing_corpus_file_is_one_line(tmp_path: Path, capsys) -> None:
    assert recipes.main(["--corpus", str(tmp_path), "--work", str(tmp_path / "w")]) == 1
    assert capsys.readouterr().err.startswith(f"recipes: {tmp_path}: missing train.en")


def test_the_challenger_plan_says_what_and_how_long_without_running(tmp_path: Path,
                                                                    capsys) -> None:
    corpus = sample_corpus(tmp_path / "corpus")
    work = tmp_path / "work"
    args = ["--group", "challenger", "--plan", "--corpus", str(corpus), "--work", str(work)]
    assert recipes.main([*args, "--minutes", "5.5"]) == 0
    text = capsys.readouterr().out
    for label in recipes.GROUPS["challenger"]:
        assert f"  {label} " in text
    assert "train.batch_tokens=24000 train.lr_factor=0.99" in text
    assert "total ~8.8 min, within 9 min" in text
    assert not work.exists()  # nothing prepared, trained or written
    assert recipes.main([*args, "--minutes", "8"]) == 0
    assert "over what one GPU call allows: lower --minutes" in capsys.readouterr().out


def test_a_plan_checks_every_variants_settings(tmp_path: Path, capsys) -> None:
    corpus = sample_corpus(tmp_path / "corpus")
    status = recipes.main(["--group", "challenger", "--plan", "--corpus", str(corpus),
                           "--work", str(tmp_path / "w"), "--set", "train.warmup_steps=0"])
    assert status == 1
    assert "'train.warmup_steps' must be at least 1" in capsys.readouterr().err


def test_the_challenger_is_gpu_10m_beside_at_most_three_variants() -> None:
    labels = recipes.GROUPS["challenger"]
    gpu = recipes.ROUNDS["gpu"][1]
    assert labels[0] == "base" and len(labels) <= 4 and set(labels) <= set(gpu)
    assert len(recipes.OUT_FILES) <= 8


@pytest.mark.parametrize("round_", list(recipes.ROUNDS))
def test_every_variant_loads_with_its_rounds_config(round_: str) -> None:
    """A typo fails here, not hours into a probe; the CPU rounds train in bf16."""
    config, variants = recipes.ROUNDS[round_]
    for label, overrides in variants.items():
        cfg = load_config(config, overrides)
        assert (cfg.train.cpu_precision == "bf16") == round_.startswith("cpu"), label


def test_a_recipe_with_a_weight_average_is_scored_on_it() -> None:
    cpu_1h, small = ROOT / "configs" / "cpu-1h.yaml", ROOT / "configs" / "small.yaml"
    assert recipes.checkpoint(cpu_1h, ["data.vocab_size=16000"]) == "avg"
    assert recipes.checkpoint(small, []) == "best"
    assert recipes.checkpoint(small, ["train.ema_decay=0.999"]) == "avg"


def test_each_budget_becomes_its_quality_run(tmp_path: Path) -> None:
    """CPU-minutes: budget / the variant's CPU seconds per update, on one thread, the
    config's warm-up; minutes: the decay ends with the budget, a margin caps the run;
    updates: a step budget with a tenth of it as warm-up."""
    def command(*flags: str, rate: float | None = None) -> list[str]:
        args = recipes.parse_args(["--device", "cpu", "--work", str(tmp_path), *flags])
        args.config = ROOT / "configs" / "cpu-1h.yaml"
        return recipes.quality_args(args, "cpu1h", ["model.dropout=0.1"], rate)

    by_cpu = command("--cpu-minutes", "64", rate=1.5)
    assert by_cpu[by_cpu.index("--steps") + 1] == "2560" and "--threads" in by_cpu
    assert not any("warmup" in item for item in by_cpu)
    by_clock = command("--minutes", "6")
    assert by_clock[by_clock.index("--minutes") + 1] == "9"
    assert {"--set=train.decay_minutes=6.0", "--set=train.warmup_steps=300"} <= set(by_clock)
    by_steps = command("--updates", "2000")
    assert by_steps[by_steps.index("--steps") + 1] == "2000"
    assert "--set=train.warmup_steps=200" in by_steps and "--minutes" not in by_steps


def test_a_variant_the_round_does_not_have_is_one_line(capsys) -> None:
    assert recipes.main(["--device", "cpu", "--plan", "--only", "vocab32k"]) == 2
    assert capsys.readouterr().err == (
        "recipes: round cpu3 has no variant 'vocab32k' (it has "
        + ", ".join(recipes.ROUNDS["cpu3"][1]) + ")\n")
