"""Splitting a paragraph into sentences, so `translate --split-sentences` can translate
a multi-sentence line one sentence at a time (the model was trained on sentences and
tends to drop or repeat text when fed several at once).

A small rule-based splitter, enough for ordinary English and Spanish prose: a sentence ends at
`.`, `!`, `?` or `…` (a run of them, then closing quotes or brackets), followed by
whitespace and a sentence start (an upper-case letter or a digit, possibly after
opening quotes, brackets, `¿` or `¡`). A period does not end a sentence after a known
abbreviation ("Dr.", "e.g.", "Sra.", "pág."), a single letter ("J. R. R. Tolkien") or "No." before a
number. Text that breaks these rules stays in one piece: a missed split costs little,
a wrong one cuts a sentence in two.
"""

from __future__ import annotations

import re

# Abbreviations whose period does not end a sentence (compared in lower case, without
# their final period). "No." is handled apart: it is also a one-word sentence.
ABBREVIATIONS = frozenset("""
    mr mrs ms dr prof sr jr st mt ft vs etc e.g i.e a.k.a cf al approx dept est fig jan feb mar
    apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun inc ltd co corp gen
    col lt sgt capt cmdr rev hon gov sen rep pres u.s u.k a.m p.m ph.d vol pp ed eds
    sra srta sres sras dra dras dres dña ud uds vd vds lic ing arq av avda pág págs núm
    tel aprox cía atte depto ee
""".split())  # the last two rows: Spanish ("la Sra.", "EE. UU.", "pág. 12")

# A run of terminal punctuation (from its first mark: a run of thousands is read once),
# closing quotes/brackets, then the whitespace after it.
_END = re.compile(r"(?<![.!?…])[.!?…]+[\"'”’»)\]]*\s+")
_OPENERS = "\"'“‘«([¿¡"


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, stripped; [] for blank text, [text.strip()] when it
    holds one sentence. Joining them with single spaces gives back `text` with its
    whitespace between sentences normalised."""
    return [text[start:end] for start, end in sentence_bounds(text)]


def sentence_bounds(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, without the whitespace around it: what
    lies between two sentences is kept by whoever joins their translations."""
    bounds, start = [], 0
    for match in _END.finditer(text):
        if _ends_sentence(text, match):
            bounds.append(_stripped(text, start, match.end()))
            start = match.end()
    bounds.append(_stripped(text, start, len(text)))
    return [(a, b) for a, b in bounds if a < b]


def _stripped(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _ends_sentence(text: str, match: re.Match[str]) -> bool:
    """Whether the punctuation of `match` ends a sentence (see the module doc). Only the
    characters next to it are read (each match reading the text around it made a line
    of thousands of sentences quadratic)."""
    after = match.end()
    while after < len(text) and text[after] in _OPENERS:
        after += 1
    if after == len(text) or not (text[after].isupper() or text[after].isdigit()):
        return False
    punctuation = match.group().rstrip()
    if punctuation.rstrip("\"'”’»)]") != ".":
        return True  # "!", "?", "…", "..." and mixtures end a sentence
    word = _word_before(text, match.start()).lstrip(_OPENERS).lower()
    if len(word) == 1 and word.isalpha():
        return False  # an initial
    if word == "no" and text[after].isdigit():
        return False  # "No. 5"
    return word not in ABBREVIATIONS


def _word_before(text: str, end: int) -> str:
    """The run of non-space characters that ends at `end`."""
    start = end
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    return text[start:end]
