"""Degenerate repetition: a translation that loops ("de los detalles de los detalles de
los detalles ...", or a line of 50 dots) where its source does not.

`repeats` measures how often a text repeats itself; `degenerate` compares a translation
with its source (so "no no no no" translated as "no no no no" is not a loop), and is what
`Translator` checks to translate a line again, `evaluate` counts and bench.robustness
reports. `ban_repeats` is the search side: `decode.no_repeat_ngram` forbids a token that
would complete an n-gram the hypothesis already holds.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Callable, Sequence

import regex

if TYPE_CHECKING:  # imported by `evaluate`'s scoring, which needs no torch
    from torch import Tensor

RETRY_NGRAMS = (3, 2)  # the n-gram sizes a looping line is searched again with, in turn
# Words and runs of punctuation ("..." is one token, as a reader sees it).
_TOKENS = regex.compile(r"\w+|[^\w\s]+")
MAX_UNIT = 4  # a loop's unit: up to this many tokens repeated back to back
TIMES = 3  # this many copies (back to back, or of a trigram close together) make a loop
WINDOW = 30  # tokens: a trigram's copies this close together count together
# 1 to 3 characters other than spaces back to back this many times: inside a word
# ("7111111"), or punctuation and symbols (a run of 50 dots, "-.-.-.-.-.-.")
CHAR_TIMES = 6
_CHAR_RUNS = regex.compile(rf"(\S{{1,3}}?)\1{{{CHAR_TIMES - 1},}}")
_SYMBOL_RUNS = regex.compile(rf"([^\w\s]{{1,3}}?)\1{{{CHAR_TIMES - 1},}}")


def repeats(text: str, gram: int = 3) -> int:
    """The most copies of one thing in `text` (case ignored): of a unit of 1 to
    `MAX_UNIT` tokens back to back ("no no no": 3), or of one `gram`-gram of words within
    `WINDOW` tokens (a paragraph may say "de la economía" once per sentence)."""
    tokens = _TOKENS.findall(text.lower())
    most = 1 if tokens else 0
    for unit in range(1, MAX_UNIT + 1):
        run = 0  # tokens in a row equal to the one `unit` before them
        for i in range(unit, len(tokens)):
            run = run + 1 if tokens[i] == tokens[i - unit] else 0
            most = max(most, 1 + run // unit)
    where: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, ngram in enumerate(zip(*(tokens[k:] for k in range(gram)))):
        if not all(token[0].isalnum() or token[0] == "_" for token in ngram):
            continue  # ", en el" three times is a long sentence, not a loop
        seen = where[ngram]
        seen.append(i)
        while i - seen[0] >= WINDOW:
            seen.pop(0)
        most = max(most, len(seen))
    return most


def char_repeats(text: str) -> int:
    """The most copies of 1 to 3 characters other than spaces (letters, digits, punctuation,
    symbols) back to back in `text` (case ignored), counted from `CHAR_TIMES` on (0
    below)."""
    return max((len(m.group()) // len(m.group(1)) for m in _CHAR_RUNS.finditer(text.lower())),
               default=0)


def degenerate(source: str, translation: str) -> bool:
    """Whether `translation` loops: some words repeat `TIMES` times or more, or some
    characters `CHAR_TIMES` times or more, and more often than anything in `source`. The
    source's pairs of words count too: two English words are often three Spanish ones
    ("every day" said three times is "todos los días" three times)."""
    words = repeats(translation)
    if words >= TIMES and words > repeats(source, gram=2):
        return True
    chars = char_repeats(translation)
    return chars >= CHAR_TIMES and chars > char_repeats(source)


_TANDEM = regex.compile(rf"\b(\w+(?:\W+\w+){{0,{MAX_UNIT - 1}}}?)(?:\W+\1\b){{{TIMES - 1},}}",
                        flags=regex.IGNORECASE)


def collapsed(text: str) -> str:
    """`text` with each unit of 1 to `MAX_UNIT` words repeated `TIMES` times or more back
    to back said once ("Todavía todavía todavía no" -> "Todavía no"), and each run of
    punctuation or symbols repeated `CHAR_TIMES` times or more said as "..." is (a mark
    three times, a longer unit once): the last resort for a translation that still loops
    when searched again."""
    text = _TANDEM.sub(lambda match: match.group(1), text)
    return _SYMBOL_RUNS.sub(lambda match: match.group(1) * (3 if len(match.group(1)) == 1
                                                            else 1), text)


def ban_repeats(logp: Tensor, history: Tensor, n: int) -> None:
    """In place: a log-prob of -inf in row r of `logp` [rows, vocab] for every token that
    would complete an n-gram that row r of `history` [rows, tokens so far] already holds
    (fairseq's and Hugging Face's `no_repeat_ngram_size`, on a tensor for all rows)."""
    length = history.size(1)
    if n < 1 or length < n:
        return
    windows = history.unfold(1, n, 1)  # [rows, length - n + 1, n]
    last = history[:, length - n + 1:]  # [rows, n - 1]: what a new token would follow
    match = (windows[:, :, :-1] == last[:, None, :]).all(dim=-1)
    rows, starts = match.nonzero(as_tuple=True)
    if rows.numel():
        logp[rows, windows[rows, starts, -1]] = float("-inf")


def retry_loops(found: list[list[Any]], best_texts: Callable[[list[list[Any]]], list[str]],
                loops: Callable[[int, str], bool],
                search: Callable[[list[int], int], Sequence[list[Any]]]) -> int:
    """Search the lines whose best translation loops (`loops(i, text)`, the texts by
    `best_texts(found)`) again with `search(lines, n)`, which blocks repeated n-grams of
    pieces: trigrams, then (where it still loops) bigrams; `found` (each line's
    hypotheses, best first; [] for none) keeps what the last search found for them.
    How many lines looped at first. The search is the caller's own (greedy search
    there, cheaper, lost BLEU on news text)."""
    retried = 0
    for no_repeat in RETRY_NGRAMS:
        best = best_texts(found)
        looping = [i for i, text in enumerate(best) if found[i] and loops(i, text)]
        if not looping:
            break
        retried = retried or len(looping)
        for i, hyps in enumerate(search(looping, no_repeat)):
            if hyps:
                found[i] = hyps
    return retried
