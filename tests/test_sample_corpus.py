"""Invariants of the embedded corpus in data/sample/.

`make demo` and several tests train on these files, so a broken line (misaligned
pair, stray whitespace, a test sentence leaking into train) would silently
spoil every run that uses them. These checks are cheap and catch it at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
SPLITS = ("train", "valid", "test")


def _lines(split: str, lang: str) -> list[str]:
    raw = (SAMPLE / f"{split}.{lang}").read_bytes().decode("utf-8")  # strict UTF-8
    assert raw.endswith("\n"), f"{split}.{lang}: missing final newline"
    assert "\r" not in raw, f"{split}.{lang}: CR characters"
    return raw[:-1].split("\n")


def _pairs(split: str) -> list[tuple[str, str]]:
    en, es = _lines(split, "en"), _lines(split, "es")
    assert len(en) == len(es), f"{split}: {len(en)} English vs {len(es)} Spanish lines"
    return list(zip(en, es))


@pytest.mark.parametrize("split", SPLITS)
def test_lines_are_clean_and_aligned(split: str) -> None:
    for number, (en, es) in enumerate(_pairs(split), start=1):
        for text in (en, es):
            assert text and text == text.strip(), f"{split} line {number}: {text!r}"
            assert "\t" not in text, f"{split} line {number}: tab"
        assert en[-1] in ".?!" and es[-1] in ".?!", f"{split} line {number}"


@pytest.mark.parametrize("split", SPLITS)
def test_spanish_questions_and_exclamations_are_opened(split: str) -> None:
    for number, (en, es) in enumerate(_pairs(split), start=1):
        assert es.count("¿") == es.count("?"), f"{split} line {number}: {es}"
        assert es.count("¡") == es.count("!"), f"{split} line {number}: {es}"
        assert en.endswith("?") == es.endswith("?"), f"{split} line {number}"


def test_sizes_and_no_duplicates_or_leaks() -> None:
    train = _pairs("train")
    assert len(train) >= 1500
    train_en = [en for en, _ in train]
    assert len(set(train_en)) == len(train_en), "duplicate English line in train"
    held_out = [en.lower() for split in ("valid", "test") for en, _ in _pairs(split)]
    assert len(set(held_out)) == len(held_out), "duplicate line across valid/test"
    leaked = set(held_out) & {en.lower() for en in train_en}
    assert not leaked, f"valid/test sentences in train: {sorted(leaked)[:3]}"


def test_demo_sentence_is_in_train() -> None:
    assert ("I like trees.", "Me gustan los árboles.") in _pairs("train")
