"""The rule-based sentence splitter behind `translate --split-sentences`."""

from __future__ import annotations

import pytest

from transcli.inference.sentences import split_sentences


@pytest.mark.parametrize("text, expected", [
    ("I like trees.", ["I like trees."]),
    ("I like trees. They are green.", ["I like trees.", "They are green."]),
    ("Where is it?  Here!   Good…", ["Where is it?", "Here!", "Good…"]),
    ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
    ("Wait... What happened?", ["Wait...", "What happened?"]),
    ("It ended in 1990. 2000 was new.", ["It ended in 1990.", "2000 was new."]),
    ("Hola. ¿Qué tal? ¡Bien!", ["Hola.", "¿Qué tal?", "¡Bien!"]),
    ("Is it you?(Yes.) Fine.", ["Is it you?(Yes.)", "Fine."]),
    ("", []),
    ("   ", []),
    ("  one sentence without an end  ", ["one sentence without an end"]),
])
def test_splits_at_sentence_ends(text, expected):
    assert split_sentences(text) == expected


@pytest.mark.parametrize("text", [
    "Dr. Smith met Mrs. Jones at 5 p.m. Tuesday.",
    "Read J. R. R. Tolkien first.",
    "Bring fruit, e.g. Apples and pears.",
    "Room No. 5 is free.",
    "The price is 3.50 dollars.",
    "it ended. then lower case goes on.",
    "See the U.S. Army report.",
])
def test_does_not_split_inside_a_sentence(text):
    assert split_sentences(text) == [text]


def test_no_is_a_sentence_before_a_word():
    assert split_sentences("No. I will not.") == ["No.", "I will not."]


def test_joining_gives_the_text_back_with_single_spaces():
    text = "First one.\tSecond one!  Third?\nFourth."
    assert " ".join(split_sentences(text)) == "First one. Second one! Third? Fourth."


@pytest.mark.parametrize("text, expected", [
    ("La Sra. García llegó a EE. UU. en 2019. ¿Vendrá mañana? ¡Claro que sí!",
     ["La Sra. García llegó a EE. UU. en 2019.", "¿Vendrá mañana?", "¡Claro que sí!"]),
    ("La Dra. Ruiz lo vio en la pág. 12. Cuesta 1.299,99 €.",
     ["La Dra. Ruiz lo vio en la pág. 12.", "Cuesta 1.299,99 €."]),
])
def test_spanish_abbreviations_do_not_end_a_sentence(text, expected):
    assert split_sentences(text) == expected


@pytest.mark.parametrize("lang", ["en", "es"])
def test_sentences_of_the_dev_sets_two_by_two_split_back(lang):
    """Real sentences others wrote (the shared dev and test sets), each ending and starting
    as a sentence does, joined two by two: at least 99% split back into the two. The
    misses are the rule's known limit: "etc." or an initial at a sentence's end."""
    import re

    from bench.common import CORPORA, SCORED_SETS

    if not (CORPORA / f"dev.tatoeba.{lang}").is_file():
        pytest.skip(f"no shared corpora at {CORPORA}")
    ends = re.compile(r"[.!?…][\"”’»)]*$")
    starts = re.compile(r"^[\"“«(¿¡]*[A-ZÁÉÍÓÚÑ0-9]")
    pairs = missed = 0
    for name in SCORED_SETS:
        lines = [line.strip() for line in (CORPORA / f"{name}.{lang}").read_text(
            encoding="utf-8").splitlines()]
        whole = [line for line in lines if ends.search(line) and starts.match(line)
                 and len(split_sentences(line)) == 1]
        for first, second in zip(whole[::2], whole[1::2]):
            pairs += 1
            missed += split_sentences(f"{first} {second}") != [first, second]
    assert pairs > 3000 and missed <= 0.01 * pairs, (missed, pairs)
