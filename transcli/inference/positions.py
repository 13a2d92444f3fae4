"""What fits the model's positions: a line's source ids cut to its positional table, and
the characters past which no line can fit (so a huge line is cut before it is tokenized).
"""

from __future__ import annotations

from transcli.data.tokenizer import Tokenizer
from transcli.model.vocab import EOS_ID


def source_ids(tokenizer: Tokenizer, lines: list[str], positions: int
               ) -> tuple[list[list[int]], list[bool]]:
    """Source ids + EOS per line ([] for a blank line), cut to the positional table, and
    per line whether it was cut. A line too long to fit however it is split is cut before
    sentencepiece sees it, so a huge line costs no more than one that just fills the table."""
    room = positions - 1  # one position is EOS's
    chars = fitting_chars(positions)
    sources, cut = [], []
    for ids, line in zip(tokenizer.encode([line[:chars] for line in lines]), lines):
        if not line.strip() or not ids:
            sources.append([])
            cut.append(False)
            continue
        cut.append(len(ids) > room or len(line) > chars)
        sources.append(ids[:room] + [EOS_ID])
    return sources, cut


def fitting_chars(positions: int) -> int:
    """Characters past which a line cannot fit in `positions` tokens: the pieces of the
    tokenizers transcli trains are at most 16 characters long (sentencepiece's default),
    so the first `positions` pieces never reach beyond; 64 leaves room for others."""
    return 64 * positions
