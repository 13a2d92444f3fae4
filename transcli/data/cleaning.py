"""Raw parallel text in, clean pairs out: the rules every input format shares.

`normalise` puts each side in one canonical form; `Cleaner` names the first rule
a pair breaks (its drop reason, counted in the manifest). Reading the lines is
`transcli.system.text`'s rule, shared by every command.
"""

from __future__ import annotations

import math
import re
import sys
import unicodedata
from dataclasses import dataclass
from typing import Optional

from transcli.config.schema import DataConfig

Pair = tuple[str, str]

# Drop reasons, in the order the manifest lists them.
INVALID_UTF8 = "invalid_utf8"
NO_TAB = "no_tab"
MALFORMED = "malformed"  # a record that is not a pair: bad JSON, a side missing
EMPTY = "empty"
TOO_LONG_CHARS = "too_long_chars"
TOO_LONG_TOKENS = "too_long_tokens"
RATIO = "ratio"
DUPLICATE = "duplicate"
DECONTAMINATED = "decontaminated"
DROP_REASONS = (INVALID_UTF8, NO_TAB, MALFORMED, EMPTY, TOO_LONG_CHARS, TOO_LONG_TOKENS, RATIO,
                DUPLICATE, DECONTAMINATED)
# How prepare's summary says each reason, after the count.
DROP_WORDS = {
    INVALID_UTF8: "not UTF-8", NO_TAB: "without a tab", MALFORMED: "malformed",
    EMPTY: "with an empty side", TOO_LONG_CHARS: "over data.max_chars",
    TOO_LONG_TOKENS: "over data.max_tokens", RATIO: "with a length ratio over data.max_ratio",
    DUPLICATE: "duplicates",
    DECONTAMINATED: "whose source is also in valid or test (left out of train so that "
                    "those scores stay honest)",
}

# C0/C1 controls and byte-order marks (also mid-file, from concatenated files): spaces.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ufeff]")


# ----------------------------------------------------------------------------- cleaning


def normalise(text: str) -> str:
    """NFC, control characters and BOMs as spaces, whitespace runs collapsed to one space,
    trimmed.

    Dedup, decontamination and the tokenizer all see this form, so two spellings
    of one sentence (composed/decomposed accents, stray spaces) count as one.
    """
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    if not text.isprintable():
        text = _CONTROL.sub(" ", text)
    return " ".join(text.split())


@dataclass(frozen=True)
class Cleaner:
    """The per-pair rules: empty sides, length limits, length ratio."""

    max_chars: int
    max_tokens: int
    max_ratio: float

    @classmethod
    def from_config(cls, data: DataConfig) -> Cleaner:
        return cls(data.max_chars, data.max_tokens, data.max_ratio)

    @classmethod
    def held_out(cls) -> Cleaner:
        """For given valid/test sets: kept whole (a test set's scores are comparable only
        if every line is scored), except pairs with an empty side, which are no pair."""
        return cls(sys.maxsize, sys.maxsize, math.inf)

    def reason(self, src: str, tgt: str) -> Optional[str]:
        """The drop reason of a normalised pair, or None to keep it."""
        if not src or not tgt:
            return EMPTY
        if len(src) > self.max_chars or len(tgt) > self.max_chars:
            return TOO_LONG_CHARS
        src_words = src.count(" ") + 1  # normalised: exactly one space between words
        tgt_words = tgt.count(" ") + 1
        if src_words > self.max_tokens or tgt_words > self.max_tokens:
            return TOO_LONG_TOKENS
        if max(src_words, tgt_words) > self.max_ratio * min(src_words, tgt_words):
            return RATIO
        return None
