"""ALL-CAPS and Title Case input: translated from the case the model knows, returned in
the input's case.

The training text is almost all in sentence case, so a model reads "I LIKE TREES." as
noise. A sentence in ALL CAPS or Title Case (`case_of`) is given to the model with each
word in its most likely casing (`Truecaser`: the casing whose pieces the tokenizer's
unigram model finds most likely, so "IS" becomes "is" and "TOM" stays "Tom"), its first
word capitalised; the translation is then upper-cased or title-cased (`recased`).
"""

from __future__ import annotations

import functools
from typing import Any, Optional

import regex

UPPER = "upper"
TITLE = "title"
_WORD = regex.compile(r"[\p{L}\p{M}]+(?:['’][\p{L}\p{M}]+)*")
MIN_UPPER_LETTERS = 3  # "OK." or "I." alone is not a sentence in capitals
UNKNOWN_SCORE = -100.0  # a piece the vocabulary lacks: never the likely casing


def case_of(text: str) -> Optional[str]:
    """UPPER when `text` has `MIN_UPPER_LETTERS` cased letters and none in lower case;
    TITLE when it has two or more words and each starts with a capital (and some word
    has a lower-case letter); None otherwise."""
    words = _WORD.findall(text)
    letters = [c for word in words for c in word if c.isupper() or c.islower()]
    if len(letters) >= MIN_UPPER_LETTERS and not any(c.islower() for c in letters):
        return UPPER
    cased = [word for word in words if word[0].isupper() or word[0].islower()]
    if len(cased) >= 2 and all(word[0].isupper() for word in cased):
        return TITLE
    return None


class Truecaser:
    """Each word in the casing the tokenizer finds most likely."""

    def __init__(self, sp: Any):
        """`sp`: a sentencepiece processor (`Tokenizer.sp`)."""
        self.sp = sp
        self.score = functools.lru_cache(maxsize=1 << 16)(self._score)

    def _score(self, word: str) -> float:
        """The log-probability of the pieces of `word` as a word of its own (unigram
        pieces' scores; a piece the vocabulary lacks, or a byte, counts as very unlikely)."""
        total = 0.0
        for i in self.sp.Encode(word):
            unusable = self.sp.IsUnknown(i) or self.sp.IsByte(i)
            total += UNKNOWN_SCORE if unusable else self.sp.GetScore(i)
        return total

    def word(self, word: str) -> str:
        """The likeliest of the word lower-cased, capitalised or as written."""
        candidates = dict.fromkeys([word.lower(), word[:1].upper() + word[1:].lower(), word])
        return max(candidates, key=self.score)

    def __call__(self, text: str, case: Optional[str]) -> str:
        """`text` (in `case`) with each word in its likeliest casing, the first word
        capitalised. In Title Case a word in capitals is an acronym ("IBM"): kept."""
        def word(match: regex.Match[str]) -> str:
            written = match.group()
            return written if case == TITLE and _acronym(written) else self.word(written)

        text = _WORD.sub(word, text)
        first = _WORD.search(text)
        if first is None:
            return text
        return text[:first.start()] + _capitalised(first.group()) + text[first.end():]


def _acronym(word: str) -> bool:
    return len(word) > 1 and word.isupper()


def _capitalised(word: str) -> str:
    return word[:1].upper() + word[1:]


def recased(text: str, case: Optional[str]) -> str:
    """A translation in the case of its source: upper-cased for UPPER, each word's first
    letter a capital for TITLE, as it is for None."""
    if case == UPPER:
        return text.upper()
    if case == TITLE:
        return _WORD.sub(lambda m: _capitalised(m.group()), text)
    return text
