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
    LONG,
    PARAGRAPH,
    digits_changed,
    heldout,
    insert_at_boundary,
    kept_share,
    lost_characters,
    main,
    short,
    variants,
    without,
)


def test_lost_characters_counts_what_should_have_come_through():
    assert lost_characters("I love 😀 and 東京 €5.", "Me encanta 😀 y 5 €.") == 2  # 東, 京
    assert lost_characters("Hi 😀😀", "Hola 😀") == 1  # counted with their multiplicity
    assert lost_characters("Café 1,5 ñ", "Café") == 0  # Latin letters are language
    assert lost_characters("Hello", "Hola ⁇ ⁇") == 2  # sentencepiece's unknown piece
    assert lost_characters("¿Vienes? ¡Sí! 😀", "Are you coming? Yes! 😀") == 0  # English


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


def test_the_new_measures():
    assert kept_share([["64", "loong64"]], ["bits 64 para loong64"]) == 1.0
    assert kept_share([["64"]], ["bits para loong64"]) == 0.0  # not inside a longer word
    assert digits_changed("It weighs 386.25 kg.", "Pesa 386.25 kg.25 kg.")
    assert not digits_changed("At 5, 12:30.", "A las 12:30, 5.")
    assert short("Video.js is pretty easy to set up.", "Video.")
    assert not short("I don't know what you're talking about.", "No sé de qué hablas.")


def test_the_new_variants_and_the_held_out_lines():
    src, ref = [f"Line number {i} here." for i in range(20)], [f"Línea {i}." for i in range(20)]
    sets = {v.name: v for v in variants(src, ref)}
    assert sets["long"].src[0] == ", and ".join(line[:-1] for line in src[:LONG]) + "."
    assert sets["oneword"].src[:3] == ["Line", "number", "2"] and sets["oneword"].ref is None
    assert sets["prices"].kept[0] == [sets["prices"].inserted[0]]
    held = heldout()
    assert len(held.src) >= 30 and all(span in line for line, spans in zip(held.src, held.kept)
                                       for span in spans)
