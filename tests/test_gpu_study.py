"""`bench/studies/gpu_recipes.py` on the CPU with a tiny budget: variants trained side by side,
scored on three sets, one table and the curves; its table from recorded rows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, TINY_CONFIG

from bench.common import SCORED_SETS
from bench.studies import gpu_recipes

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
    status = gpu_recipes.main(["--device", "cpu", "--config", str(TINY_CONFIG), "--only", "base",
                             "dropout0.3", "--updates", "6", "--corpus", str(corpus),
                             "--work", str(work)])
    assert status == 0
    rows = json.loads((work / "study.json").read_text())
    assert [row["variant"] for row in rows] == ["base", "dropout0.3"]
    for row in rows:
        assert row["updates"] == 6
        assert all(0 <= row[name]["chrf"] <= 100 for name in SCORED_SETS)
    assert (work / "curves.png").stat().st_size > 0
    assert "| base | 6 |" in (work / "study.md").read_text()
    # the variants really differ: the dropout one trained with its own setting
    assert "dropout: 0.3" in (work / "dropout0.3" / "run" / "config.yaml").read_text()


def test_the_table_from_recorded_rows() -> None:
    scores = {name: {"bleu": 30.0 + i, "chrf": 55.0} for i, name in enumerate(SCORED_SETS)}
    rows = [{"variant": "base", "updates": 2500, "tgt_tok_s": 123456.0, **scores},
            {"variant": "vocab32k", "error": "prepare: exit status 1: boom"}]
    text = gpu_recipes.table(rows)
    assert "| base | 2,500 | 123,456 | 30.0 / 55.0 | 31.0 / 55.0 | 32.0 / 55.0 |" in text
    assert "| vocab32k | prepare: exit status 1: boom |" in text


def test_a_missing_corpus_file_is_one_line(tmp_path: Path, capsys) -> None:
    assert gpu_recipes.main(["--corpus", str(tmp_path), "--work", str(tmp_path / "w")]) == 1
    assert "missing train.en" in capsys.readouterr().err


def test_the_challenger_plan_says_what_and_how_long_without_running(tmp_path: Path,
                                                                    capsys) -> None:
    corpus = sample_corpus(tmp_path / "corpus")
    work = tmp_path / "work"
    args = ["--group", "challenger", "--plan", "--corpus", str(corpus), "--work", str(work)]
    assert gpu_recipes.main([*args, "--minutes", "5.5"]) == 0
    text = capsys.readouterr().out
    for label in gpu_recipes.GROUPS["challenger"]:
        assert f"  {label} " in text
    assert "train.batch_tokens=24000 train.lr_factor=0.99" in text
    assert "total ~8.8 min, within 9 min" in text
    assert not any(work.iterdir())  # nothing prepared, trained or written
    assert gpu_recipes.main([*args, "--minutes", "8"]) == 0
    assert "over what one GPU call allows: lower --minutes" in capsys.readouterr().out


def test_a_plan_checks_every_variants_settings(tmp_path: Path, capsys) -> None:
    corpus = sample_corpus(tmp_path / "corpus")
    status = gpu_recipes.main(["--group", "challenger", "--plan", "--corpus", str(corpus),
                               "--work", str(tmp_path / "w"), "--set", "train.warmup_steps=0"])
    assert status == 1
    assert "'train.warmup_steps' must be at least 1" in capsys.readouterr().err


def test_the_challenger_is_gpu_10m_beside_at_most_three_variants() -> None:
    labels = gpu_recipes.GROUPS["challenger"]
    assert labels[0] == "base" and len(labels) <= 4 and set(labels) <= set(gpu_recipes.VARIANTS)
    assert len(gpu_recipes.OUT_FILES) <= 8
