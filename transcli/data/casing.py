"""Case augmentation: a share of the training pairs shown in ALL CAPS or in Title Case,
on both sides, each epoch (`train.case_augment`).

The training text is almost all in sentence case, so a model takes "I LIKE TREES." for
noise. Marian's `--all-caps-every` and `--english-title-case-every` (used by the Firefox
Translations pipeline) fix that at training time; here each epoch draws, from its own
seeded generator, which pairs it shows upper-cased and which title-cased, half of the
share each. Title Case capitalises every word's first letter on both sides, English
and Spanish alike ("¿Dónde Está La Estación?"): what an English title becomes when each
word of its translation is capitalised, as translating Title Case input does.

Pairs are stored encoded, and a cased sentence encodes into other pieces (about 3 times
as many in ALL CAPS with an 8K vocabulary), so the cased pairs are encoded from the
prepared dir's train text when an epoch is planned, and the batch plan packs them by
those lengths (`batching.Variants`): batches stay within their token budget. A batch
then holds ids past the split's pair ids (pair + size x form), and `collate` encodes
its cased pairs again (the same text gives the same ids). The draw depends only on
(seed, epoch), so a resumed run sees the same batches.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import regex

from transcli.data.batching import Batch, assemble, rows_from_lists, with_alignment
from transcli.data.encoded import EncodedAlignments
from transcli.data.prepared_dir import PreparedDir
from transcli.data.resegment import train_text

AS_WRITTEN, UPPER, TITLE = 0, 1, 2  # a pair's form in an epoch
CASE_STREAM = 0xCA5E  # keys the epoch's case draws apart from its batch order
# A word: letters and marks, with inner apostrophes ("don't" is one word).
WORD = regex.compile(r"[\p{L}\p{M}]+(?:['’][\p{L}\p{M}]+)*")


def upper_cased(text: str) -> str:
    return text.upper()


def title_cased(text: str) -> str:
    """Every word's first letter a capital, the rest as written ("iPhone" -> "IPhone")."""
    return WORD.sub(lambda word: word.group()[:1].upper() + word.group()[1:], text)


CASINGS = {UPPER: upper_cased, TITLE: title_cased}


class CaseAugment:
    """Which pairs an epoch shows cased (`epoch`, for the batch plan), and batches of
    them (`collate`)."""

    def __init__(self, data: PreparedDir, share: float, seed: int):
        self.split = data.split("train")
        self.size = len(self.split)
        self.texts = train_text(data, "case augmentation (train.case_augment)")
        self.sp = data.tokenizer.sp
        self.share, self.seed = share, seed

    def epoch(self, epoch: int, pairs: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """`batching.Variants.epoch`: a `share` of `pairs`, half upper-cased, half
        title-cased; their ids (pair + size x form) and their tokens per side."""
        draw = np.random.default_rng([self.seed, epoch, CASE_STREAM]).random(len(pairs))
        where = np.flatnonzero(draw < self.share)
        forms = np.where(draw[where] < self.share / 2, UPPER, TITLE)
        ids = pairs[where] + self.size * forms
        src, tgt = (np.fromiter(map(len, self._encode(side, ids)), np.int64, len(ids))
                    for side in (0, 1))
        return where, ids, src, tgt

    def collate(self, ids: np.ndarray, multiple: int = 1,
                alignments: Optional[EncodedAlignments] = None) -> Batch:
        """The batch of pair ids and cased-pair ids `ids`: the stored encoding of the
        pairs as written, the cased ones encoded from their text; with `alignments`, the
        alignment targets of the pairs as written (a cased pair's pieces are others:
        it gets none, so no alignment cost)."""
        cased = np.flatnonzero(ids >= self.size)
        sides = []
        for side, stored in enumerate((self.split.src, self.split.tgt)):
            rows = [stored(i).tolist() for i in (ids % self.size).tolist()]
            for row, encoded in zip(cased.tolist(), self._encode(side, ids[cased])):
                rows[row] = encoded
            sides.append(rows_from_lists(rows, multiple))
        return with_alignment(assemble(*sides), alignments, np.where(ids < self.size, ids, -1))

    def _encode(self, side: int, ids: np.ndarray) -> list[list[int]]:
        """Side `side` of the cased pairs `ids`, cased and encoded."""
        lines = self.texts[side].lines(ids % self.size)
        forms = (ids // self.size).tolist()
        return self.sp.Encode([CASINGS[form](line) for line, form in zip(lines, forms)],
                              num_threads=1)
