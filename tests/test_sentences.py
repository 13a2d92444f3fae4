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
