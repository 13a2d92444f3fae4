"""Term annotation: the annotation's form, and the Dice dictionary that aligns words."""

from __future__ import annotations

from pathlib import Path

import pytest

from transcli.data.prepared_dir import open_prepared_dir
from transcli.data.terms import (
    aligned_terms,
    annotate,
    dictionary,
)


def test_annotate_writes_the_spanish_form_after_the_english_words() -> None:
    assert annotate("the car is red", [(4, 7, "coche")]) == "the car [ coche ] is red"
    # any order, at the end, before punctuation, several words
    assert annotate("The doctor saw the nurse.", [(19, 24, "enfermera"), (4, 10, "médico")]) \
        == "The doctor [ médico ] saw the nurse [ enfermera ]."
    assert annotate("machine learning", [(0, 16, "aprendizaje automático")]) == \
        "machine learning [ aprendizaje automático ]"
    assert annotate("nothing to do", []) == "nothing to do"


@pytest.mark.parametrize("terms", [[(4, 4, "x")], [(4, 20, "x")], [(-1, 3, "x")],
                                   [(0, 7, "x"), (4, 10, "y")]])
def test_annotate_refuses_empty_outside_and_overlapping_terms(terms) -> None:
    with pytest.raises(ValueError, match="empty, out of the text or overlaps"):
        annotate("The doctor came.", terms)


def test_the_spanish_form_takes_the_pieces_it_takes_in_a_spanish_sentence(prepared: Path
                                                                           ) -> None:
    """The copy the model learns: the annotation's pieces for "perros" are the target's."""
    sp = open_prepared_dir(prepared).tokenizer.sp

    def has(text: str, pieces: list[str]) -> bool:
        encoded = sp.Encode(text, out_type=str)
        return any(encoded[i:i + len(pieces)] == pieces for i in range(len(encoded)))

    form = sp.Encode("perros", out_type=str)  # as after a space: its first piece has "▁"
    assert has("Me gustan los perros.", form)
    assert has(annotate("I like dogs.", [(7, 11, "perros")]), form)
    assert not has("I like dogs [perros].", form)  # why the spaces inside the brackets


# English content words: doctor 3 lines, came 2, left 1, slept 1, nurse 1; Spanish:
# médico 2, vino 2, salió 1, doctor 1, durmió 1, enfermera 1 ("the", "el", "la": short).
PAIRS = [("The doctor came.", "Vino el médico."),
         ("The doctor left.", "El médico salió."),
         ("The doctor slept.", "El doctor durmió."),
         ("The nurse came.", "Vino la enfermera.")]


def test_the_dictionary_takes_the_best_dice_within_its_bounds() -> None:
    # doctor: médico 2 x 2 / (3 + 2) = 0.8 in 2 lines; came: vino 2 x 2 / (2 + 2) = 1.0
    assert dictionary(PAIRS) == {"doctor": "médico", "came": "vino"}
    assert dictionary(PAIRS, min_dice=0.85) == {"came": "vino"}  # 0.8 is below
    assert dictionary(PAIRS, {"doctor"}) == {"doctor": "médico"}
    # one line is enough: left -> salió 1.0 (médico 0.67), nurse -> enfermera 1.0 (vino
    # 0.67); slept: durmió and doctor both 1.0 in one line, doctor met first in its line
    assert dictionary(PAIRS, min_count=1) == {"doctor": "médico", "came": "vino",
                                              "left": "salió", "slept": "doctor",
                                              "nurse": "enfermera"}


def test_a_pairs_terms_are_its_words_whose_translation_the_target_has() -> None:
    lexicon = {"doctor": "médico", "came": "vino", "physician": "médico", "left": "salió"}
    source, target = "The Doctor came, the doctor and the physician left.", "Vino el Médico."
    terms = aligned_terms(source, target, lexicon)
    # the first "Doctor" only; "physician" finds médico taken; no salió in the target
    assert terms == [(4, 10, 8, 14), (11, 15, 0, 4)]
    assert annotate(source, [(s, e, target[fs:fe]) for s, e, fs, fe in terms]) == \
        "The Doctor [ Médico ] came [ Vino ], the doctor and the physician left."
