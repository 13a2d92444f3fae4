"""Subword regularisation (Kudo 2018): training pairs segmented anew each time they are
batched, by sampling from sentencepiece's segmentation lattice.

The model then sees "trees" as "▁trees", "▁tree s", "▁t ree s"... and learns to
translate from pieces it will meet in unfamiliar words. The prepared dir keeps the
cleaned train text (`train.en`, `train.es`, line i = pair i of the encoded split);
batches are planned from the deterministic lengths and only their pairs re-encoded.
Sampling is seeded by the batch's place in the stream (seed, epoch, index, rank), so
a resumed run draws the same segmentations.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import sentencepiece as spm

from transcli.data.batching import Batch, StreamPosition, assemble, rows_from_lists
from transcli.data.prepared_dir import PreparedDir
from transcli.system.errors import UserError


class LineFile:
    """A UTF-8 text file's lines by index, memory-mapped (no copy of the corpus in RAM)."""

    def __init__(self, path: Path, needed_by: str = "subword sampling (train.sample_alpha)"):
        if not path.is_file():
            raise UserError(f"{path}: train text not found; {needed_by} needs a prepared "
                            f"dir written by this version of `transcli prepare`")
        self.data = np.memmap(path, dtype=np.uint8, mode="r") if path.stat().st_size \
            else np.zeros(0, np.uint8)
        ends = np.flatnonzero(self.data == ord("\n"))
        self.starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)
        self.ends = ends

    def __len__(self) -> int:
        return len(self.ends)

    def lines(self, idx: np.ndarray) -> list[str]:
        return [bytes(self.data[s:e]).decode("utf-8")
                for s, e in zip(self.starts[idx].tolist(), self.ends[idx].tolist())]


def train_text(data: PreparedDir, what: str) -> list[LineFile]:
    """The train split's text, source and target side, for `what` (named in errors),
    checked to hold a line per encoded pair."""
    size = len(data.split("train"))
    texts = [LineFile(path, what) for path in data.text_paths("train")]
    if any(len(text) != size for text in texts):
        raise UserError(f"{data.dir}: the train text and the encoded train split differ "
                        f"in length; run `transcli prepare` again")
    return texts


class Resegmenter:
    """Collates batches of the train split with freshly sampled segmentations."""

    def __init__(self, data: PreparedDir, alpha: float, nbest: int, seed: int, rank: int,
                 max_len: int, multiple: int = 1):
        self.split = data.split("train")
        self.texts = [LineFile(path) for path in data.text_paths("train")]
        if any(len(text) != len(self.split) for text in self.texts):
            raise UserError(f"{data.dir}: the train text and the encoded train split differ "
                            f"in length; run `transcli prepare` again")
        self.sp = data.tokenizer.sp
        self.alpha, self.nbest, self.seed, self.rank = alpha, nbest, seed, rank
        self.max_tokens = max_len - 1  # room for EOS / BOS
        self.multiple = multiple

    def __call__(self, idx: np.ndarray, position: StreamPosition) -> Batch:
        seeds = np.random.SeedSequence([self.seed, position.epoch, position.index, self.rank])
        sides = []
        for text, fixed, seed in zip(self.texts, (self.split.src, self.split.tgt),
                                     seeds.generate_state(2)):
            # One sentencepiece call per side; its sampling RNG is seeded per call.
            spm.set_random_generator_seed(int(seed))
            sampled = self.sp.Encode(text.lines(idx), enable_sampling=True, alpha=self.alpha,
                                     nbest_size=self.nbest, num_threads=1)
            # A segmentation too long for the positional table falls back to the fixed one.
            ids = [s if len(s) <= self.max_tokens else fixed(i).tolist()
                   for s, i in zip(sampled, idx.tolist())]
            sides.append(rows_from_lists(ids, self.multiple))
        return assemble(*sides)
