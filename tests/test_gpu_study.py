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
