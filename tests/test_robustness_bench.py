"""bench.robustness: its variant sets and measures, and one run of it on the sample model
(data/sample's test set, so that it needs nothing outside the repository)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from helpers import ROOT

from bench.robustness import (
    PARAGRAPH,
    insert_at_boundary,
    lost_characters,
    main,
    variants,
    without,
)


def test_lost_characters_counts_what_should_have_come_through():
    assert lost_characters("I love 😀 and 東京 €5.", "Me encanta 😀 y 5 €.") == 2  # 東, 京
    assert lost_characters("Hi 😀😀", "Hola 😀") == 1  # counted with their multiplicity
    assert lost_characters("Café 1,5 ñ", "Café") == 0  # Latin letters are language
    assert lost_characters("Hello", "Hola ⁇ ⁇") == 2  # sentencepiece's unknown piece


def test_variants_and_complements():
    src, ref = [f"Line number {i} here." for i in range(12)], [f"Línea {i}." for i in range(12)]
    sets = {v.name: v for v in variants(src, ref)}
    assert sets["caps"].src[0] == "LINE NUMBER 0 HERE." and sets["caps"].ref[0] == "LÍNEA 0."
    assert sets["title"].src[0] == "Line Number 0 Here."
    assert len(sets["paragraphs"].src) == 12 // PARAGRAPH
    assert sets["paragraphs"].src[0] == " ".join(src[:PARAGRAPH])
    for name in ("emoji", "spans", "scripts"):
        for line, piece, original in zip(sets[name].src, sets[name].inserted, src):
            assert without(line, piece).replace(" .", ".") == original
    line = insert_at_boundary("I like trees.", "😀", random.Random(3))
    assert line.count("😀") == 1 and line.replace("😀", "").split() == ["I", "like", "trees."]


@pytest.mark.slow
def test_a_run_of_the_benchmark(sample_run: Path, tmp_path: Path, capsys):
    run = Path(shutil.copytree(sample_run, tmp_path / "run"))
    main(["--model", str(run), "--checkpoint", "last", "--corpus", str(ROOT / "data" / "sample"),
          "--sets", "test", "--lines", "20", "--variants", "spans", "caps",
          "--work", str(tmp_path / "work")])
    out = capsys.readouterr().out
    assert "machine" in out and "load average" in out
    on = json.loads((tmp_path / "work" / "results.json").read_text())["on"]["test"]
    assert set(on) == {"clean", "spans", "caps"}
    assert on["spans"]["kept"] == 1.0 and on["spans"]["lost"] == 0
    assert on["caps"]["upper"] == 1.0 and on["clean"]["lines"] == 20
