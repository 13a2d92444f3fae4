"""Word alignments of the training pairs, made at prepare time (`data.alignments`) and
mapped to sentencepiece pieces: what `train.guided_alignment` trains a cross-attention
head toward.

Words are read off the encoded pieces, so they are exactly the pieces' groups: a word
starts at a piece that begins with "▁" (sentencepiece's space), and a run of punctuation
is a word of its own ("¿", "sesión", "."), so "sesión." and "sesión" are one word type.
A word's type is its lower-cased text. The words are aligned in both directions and
symmetrised (`aligner.py`; `symmetrise.py`: their intersection), and each piece takes the
links of the word it is part of: a link between a word of 2 pieces and a word of 3 is 6 piece links.
The links are stored beside the encoded split (`encoded.AlignmentWriter`), a pair's links
sorted by target piece then source piece.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import NamedTuple

import numpy as np

from transcli.data.aligner import ITERATIONS, Side, WordAlignments, align
from transcli.data.encoded import AlignmentWriter, EncodedSplit
from transcli.data.tokenizer import Tokenizer

SPACE = "\u2581"  # sentencepiece's word-initial space
WRITE_PAIRS = 20_000  # pairs symmetrised and written at a time
METHOD = ("words from the pieces; fast_align's IBM Model 2 (diagonal, variational Bayes) "
          "both directions, 5 EM iterations; their intersection (why: symmetrise.py); each "
          "piece takes its word's links")


class PieceTable(NamedTuple):
    """What the word split needs to know of each piece of the vocabulary."""

    space: np.ndarray  # begins with "▁"
    bare: np.ndarray  # is "▁" alone: it joins the piece after it
    punct: np.ndarray  # its text is punctuation or symbols only (a word of its own)
    text: np.ndarray  # its text in lower case, without "▁" (object array of str)

    @staticmethod
    def of(tokenizer: Tokenizer) -> PieceTable:
        sp = tokenizer.sp
        pieces = [sp.IdToPiece(i) for i in range(tokenizer.vocab_size)]
        texts = [_piece_text(sp, i, piece) for i, piece in enumerate(pieces)]
        punct = [bool(text) and not sp.IsControl(i) and not sp.IsUnknown(i)
                 and all(unicodedata.category(c)[0] in "PS" for c in text)
                 for i, text in enumerate(texts)]
        return PieceTable(np.array([p.startswith(SPACE) for p in pieces]),
                          np.array([p == SPACE for p in pieces]), np.array(punct),
                          np.array(texts, dtype=object))


def _piece_text(sp, i: int, piece: str) -> str:
    """A piece's text in lower case without "▁"; a byte piece's is its character when
    it is one alone (ASCII: "<0x28>" is "("), else the piece's name."""
    if sp.IsByte(i):
        value = int(piece[3:-1], 16)
        return chr(value).lower() if value < 0x80 else piece
    return piece.replace(SPACE, "").lower()


class Words(NamedTuple):
    """One side of a split as words: their types (`side`), and for the pieces, where
    each word starts (a piece index into the split's token array, + the end)."""

    side: Side
    piece_starts: np.ndarray  # int64, words + 1


def split_words(tokens: np.ndarray, offsets: np.ndarray, table: PieceTable) -> Words:
    """The words of every sentence of one side of a split (`EncodedSplit`'s tokens and
    offsets), vectorised over the whole side; a word's type is its lower-cased text,
    numbered in the order first met."""
    ids = np.asarray(tokens, np.int64)
    lengths = np.diff(offsets)
    opens = np.zeros(len(ids), bool)
    opens[offsets[:-1][lengths > 0]] = True  # a sentence's first piece
    after_punct = np.r_[False, table.punct[ids[:-1]]]
    after_bare = np.r_[False, table.bare[ids[:-1]]]
    opens |= (table.space[ids] | table.punct[ids] | after_punct) & ~after_bare
    piece_starts = np.r_[np.flatnonzero(opens), len(ids)].astype(np.int64)
    word_starts = np.searchsorted(piece_starts[:-1], offsets).astype(np.int64)
    texts = np.add.reduceat(table.text[ids], piece_starts[:-1]) if len(ids) else []
    numbers: dict[str, int] = {}
    types = np.fromiter((numbers.setdefault(text, len(numbers)) for text in texts), np.int64,
                        len(texts))
    return Words(Side(types, word_starts), piece_starts)


class AlignmentStats(NamedTuple):
    pairs: int
    aligned_pairs: int  # pairs with at least one link
    word_links: int
    piece_links: int


def align_split(split: EncodedSplit, tokenizer: Tokenizer, scratch: Path,
                writer: AlignmentWriter, iterations: int = ITERATIONS,
                parallel: bool = True) -> AlignmentStats:
    """Align the words of every pair of `split`, symmetrise, map the links to pieces and
    write them with `writer`, pair after pair."""
    table = PieceTable.of(tokenizer)
    src = split_words(split.src_tokens, split.src_offsets, table)
    tgt = split_words(split.tgt_tokens, split.tgt_offsets, table)
    found = align(src.side, tgt.side, scratch, iterations, parallel)
    aligned = word_links = piece_links = 0
    for first in range(0, len(split), WRITE_PAIRS):
        last = min(first + WRITE_PAIRS, len(split))
        pairs, i, j = agreed(found, src.side, tgt.side, first, last)
        s, t, counts = to_pieces(pairs - first, i, j, src, tgt, split, first, last)
        writer.add(s, t, counts)
        aligned += int((counts > 0).sum())
        word_links += len(pairs)
        piece_links += len(s)
    return AlignmentStats(len(split), aligned, word_links, piece_links)


def agreed(found: WordAlignments, src: Side, tgt: Side, first: int, last: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs [first, last)'s links both directions make (`symmetrise`'s intersection,
    vectorised): (pair, source word, target word), by pair then target word."""
    words = np.arange(tgt.starts[first], tgt.starts[last])
    pair = np.repeat(np.arange(first, last), tgt.lengths[first:last])
    source = found.forward[words]
    linked = source >= 0
    pair, source, target = pair[linked], source[linked], (words - tgt.starts[pair])[linked]
    both = found.reverse[src.starts[pair] + source] == target
    return pair[both], source[both], target[both]


def to_pieces(pair: np.ndarray, i: np.ndarray, j: np.ndarray, src: Words, tgt: Words,
              split: EncodedSplit, first: int, last: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Word links (pair counted from `first`, source word, target word) as piece links:
    every piece of the source word with every piece of the target word. Returns source
    pieces, target pieces (positions in their sentence), and the links per pair, sorted
    by pair, target piece, source piece."""
    s_word = src.side.starts[first + pair] + i
    t_word = tgt.side.starts[first + pair] + j
    s_first = src.piece_starts[s_word] - split.src_offsets[first + pair]
    t_first = tgt.piece_starts[t_word] - split.tgt_offsets[first + pair]
    s_count = src.piece_starts[s_word + 1] - src.piece_starts[s_word]
    t_count = tgt.piece_starts[t_word + 1] - tgt.piece_starts[t_word]
    per_link = s_count * t_count
    k = np.arange(int(per_link.sum())) - np.repeat(np.cumsum(per_link) - per_link, per_link)
    t_off, s_off = np.divmod(k, np.repeat(s_count, per_link))
    s = np.repeat(s_first, per_link) + s_off
    t = np.repeat(t_first, per_link) + t_off
    owner = np.repeat(pair, per_link)
    order = np.lexsort((s, t, owner))
    counts = np.bincount(owner, minlength=last - first)
    return s[order], t[order], counts
