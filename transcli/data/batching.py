"""Token-budget batches over memory-mapped encoded splits.

Training cost follows padded positions, not sentences: a batch holds as many
pairs as fit `batch_tokens` *padded* positions on each side, and pairs of
similar length go together so padding stays small. Randomness comes only from a
seeded numpy Generator per epoch, so the batch sequence is a pure function of
(seed, epoch, index): a run resumed from `(epoch, index)` sees exactly the
batches it would have seen, and every DDP rank agrees on the global sequence
(rank r takes every world_size-th batch of it).
"""

from __future__ import annotations

import hashlib
import queue
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Protocol

import numpy as np
import torch

from transcli.data.encoded import EncodedAlignments, EncodedSplit
from transcli.data.shapes import FILLER, BatchShapes
from transcli.data.weights import epoch_copies, pair_copies
from transcli.model.vocab import BOS_ID, EOS_ID, PAD_ID
from transcli.system.errors import UserError

CELL_STEP = 1.1  # the ratio of one length cell to the next (`length_sorted`)
# Epochs in a row without a batch before the stream gives up: weights that leave an epoch
# empty by chance now and then pass, weights that empty every epoch never spin.
MAX_EMPTY_EPOCHS = 100

# ----------------------------------------------------------------------------- planning


def padded_length(length: int, multiple: int) -> int:
    """A row length rounded up to a multiple of `multiple`, as `collate` pads it."""
    return -(-length // multiple) * multiple


def pack_batches(order: np.ndarray, src_len: np.ndarray, tgt_len: np.ndarray,
                 batch_tokens: int, multiple: int = 1) -> list[np.ndarray]:
    """Cut `order` (pair indices, already length-sorted) into consecutive batches whose
    rows x longest row, rounded up to `multiple` as collation pads it, stays within
    `batch_tokens` on both sides: the budget counts what is allocated. Lengths are row
    lengths as fed to the model (with EOS/BOS). A pair longer than the budget alone
    still gets a batch of its own."""
    batches = []
    start, count, max_s, max_t = 0, 0, 0, 0
    for pos, (s, t) in enumerate(zip(src_len[order].tolist(), tgt_len[order].tolist())):
        new_s, new_t = max(max_s, s), max(max_t, t)
        if count and (count + 1) * padded_length(max(new_s, new_t), multiple) > batch_tokens:
            batches.append(order[start:pos])
            start, count, new_s, new_t = pos, 0, s, t
        count, max_s, max_t = count + 1, new_s, new_t
    if count:
        batches.append(order[start:])
    return batches


def length_sorted(indices: np.ndarray, src_len: np.ndarray, tgt_len: np.ndarray,
                  rng: Optional[np.random.Generator] = None) -> np.ndarray:
    """Indices in the order batches are cut from: by cells of both lengths, each side's
    cells 10% apart (log scale), the source cells running up and down in turn along the
    target cells ("snake" order); in a cell by target length, then source length. Ties
    are in random order when `rng` is given, so equal-length pairs meet different
    neighbours each epoch. A batch that crosses from one cell to the next then meets
    pairs of similar lengths on both sides (docs/GPU.md has the padding it saves)."""
    if rng is not None:
        indices = rng.permutation(indices)
    src, tgt = src_len[indices], tgt_len[indices]
    src_cell, tgt_cell = length_cell(src), length_cell(tgt)
    snake = np.where(tgt_cell % 2 == 0, src_cell, -src_cell)
    return indices[np.lexsort((src, tgt, snake, tgt_cell))]  # the last key is primary


def length_cell(lengths: np.ndarray) -> np.ndarray:
    """Lengths grouped into cells 10% apart: floor(log(length) / log(1.1))."""
    return np.floor(np.log(np.maximum(lengths, 1)) / np.log(CELL_STEP)).astype(np.int64)


class Variants(Protocol):
    """Pairs shown in another form in some epochs (e.g. cased, `data/casing.py`), whose
    lengths the plan must know to keep batches within their budget."""

    def epoch(self, epoch: int, pairs: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Which of `pairs` (positions in it) `epoch` shows as a variant; the variants'
        ids (what a batch then holds instead: each beyond the split's pair ids, naming
        the pair and the form), and their tokens per side (without EOS)."""
        ...


class BatchPlan:
    """The batches of a split: per epoch, length-bucketed then shuffled from (seed, epoch).

    Pairs whose rows exceed `max_len` positions (the model's positional table) are
    left out and counted in `skipped`. `multiple`: collation pads lengths to it, and the
    budget counts that padding. `shapes` > 0: every batch takes one of at most that many
    shapes (`BatchShapes`; `collate` pads it to its shape), for CUDA graphs. `weights`:
    how often each pair is seen per epoch (`data/weights.py`; None: once each).
    `variants`: pairs shown in another form this epoch, batched by their own lengths
    (their batches hold the variants' ids, which the caller's collation understands).
    """

    def __init__(self, src_lengths: np.ndarray, tgt_lengths: np.ndarray, batch_tokens: int,
                 seed: int, max_len: int, shuffle: bool = True, multiple: int = 1,
                 shapes: int = 0, weights: Optional[np.ndarray] = None,
                 variants: Optional[Variants] = None):
        if shapes and variants is not None:
            raise ValueError("batch shapes are fixed per pair: no variants with them")
        # Rows as the model sees them: src = ids + EOS, tgt_in/out = BOS/EOS + ids.
        self.src_len = np.asarray(src_lengths, np.int64) + 1
        self.tgt_len = np.asarray(tgt_lengths, np.int64) + 1
        self.fits = max_len // multiple * multiple  # the longest row padding keeps in max_len
        keep = (self.src_len <= self.fits) & (self.tgt_len <= self.fits)
        self.indices = np.flatnonzero(keep)
        self.skipped = int(len(keep) - len(self.indices))
        self.batch_tokens = batch_tokens
        self.seed = seed
        self.shuffle = shuffle
        self.multiple = multiple
        self.weights = None if weights is None else np.asarray(weights)[self.indices]
        self.variants = variants
        self.shapes: Optional[BatchShapes] = None
        if shapes and self.indices.size:
            kept = (self.src_len[self.indices], self.tgt_len[self.indices])
            self.shapes = BatchShapes(*kept, shapes, batch_tokens, multiple)
            self.box = np.full(len(keep), -1)
            self.box[self.indices] = self.shapes.box_of(*kept)
        self._cache: tuple[int, list[np.ndarray]] | None = None
        self._fingerprints: dict[int, dict[str, Any]] = {}

    def epoch(self, epoch: int) -> list[np.ndarray]:
        """Batches of `epoch` (the last one is cached: epochs are visited in order)."""
        cached = self._cache
        if cached is not None and cached[0] == epoch:
            return cached[1]
        rng = (np.random.default_rng([self.seed, epoch])
               if self.shuffle or self.weights is not None else None)
        pool, src_len, tgt_len, relabel = self._pool(epoch)
        copies = ([pool] if self.weights is None
                  else pair_copies(pool, epoch_copies(self.weights, rng)))
        batches = [relabel(batch) for copy in copies for batch in
                   self._pack(length_sorted(copy, src_len, tgt_len, rng), src_len, tgt_len)]
        if rng is not None:
            batches = [batches[i] for i in rng.permutation(len(batches))]
        self._fingerprints = {e: f for e, f in self._fingerprints.items() if e >= epoch - 1}
        self._fingerprints[epoch] = _fingerprint(epoch, batches)
        self._cache = (epoch, batches)  # one assignment: a reader in another thread
        return batches  # sees the old epoch or the new one, whole

    def fingerprint(self, epoch: int) -> dict[str, Any]:
        """What identifies `epoch`'s batches: their number and a hash of their pairs in
        order. A run saves it with its data position, so that a resume can tell that the
        position counts in the same plan (the loader may have planned a later epoch)."""
        return self._fingerprints.get(epoch) or _fingerprint(epoch, self.epoch(epoch))

    def _pool(self, epoch: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                         Callable[[np.ndarray], np.ndarray]]:
        """The epoch's pairs and their row lengths (by id), and what turns a packed batch
        into the one handed out. With `variants`, the pairs shown as a variant this epoch
        (where it fits `max_len`) are packed under ids past the split's, with the
        variants' lengths, and handed out as the variants' ids."""
        if self.variants is None:
            return self.indices, self.src_len, self.tgt_len, lambda batch: batch
        where, ids, src, tgt = self.variants.epoch(epoch, self.indices)
        fit = (src + 1 <= self.fits) & (tgt + 1 <= self.fits)
        where, ids = where[fit], ids[fit]
        first = len(self.src_len)
        pool = self.indices.copy()
        pool[where] = first + np.arange(len(where))
        src_len = np.concatenate([self.src_len, src[fit] + 1])
        tgt_len = np.concatenate([self.tgt_len, tgt[fit] + 1])

        def relabel(batch: np.ndarray) -> np.ndarray:
            varied = batch >= first
            if not varied.any():
                return batch
            batch = batch.copy()
            batch[varied] = ids[batch[varied] - first]
            return batch

        return pool, src_len, tgt_len, relabel

    def _pack(self, order: np.ndarray, src_len: np.ndarray, tgt_len: np.ndarray
              ) -> list[np.ndarray]:
        """Length-sorted pairs cut into batches within the budget (of the plan's shapes)."""
        if self.shapes is not None:
            return self.shapes.pack(order, self.box)
        return pack_batches(order, src_len, tgt_len, self.batch_tokens, self.multiple)

    def shape(self, batch: np.ndarray) -> tuple[int, int, int]:
        """(rows, source length, target length) that `collate` pads `batch` to."""
        pairs = batch[batch != FILLER]
        longest = int(self.src_len[pairs].max()), int(self.tgt_len[pairs].max())
        if self.shapes is not None:
            box = self.shapes.shape_of(len(batch), *longest)
            return len(batch), box.src, box.tgt
        return (len(batch), padded_length(longest[0], self.multiple),
                padded_length(longest[1], self.multiple))

    def padding(self, epoch: int = 0) -> float:
        """The share of padded positions (both sides) in `epoch`'s batches."""
        real = padded = 0
        for batch in self.epoch(epoch):
            pairs = batch[batch != FILLER]
            rows, src, tgt = self.shape(batch)
            real += int(self.src_len[pairs].sum() + self.tgt_len[pairs].sum())
            padded += rows * (src + tgt)
        return 1.0 - real / padded


def _fingerprint(epoch: int, batches: list[np.ndarray]) -> dict[str, Any]:
    digest = hashlib.sha256()
    for batch in batches:
        digest.update(np.asarray(batch, np.int64).tobytes() + b";")
    return {"epoch": epoch, "batches": len(batches), "sha256": digest.hexdigest()}


@dataclass
class StreamPosition:
    """Where the global batch sequence stands: the next batch is `epoch`'s `index`-th."""

    epoch: int = 0
    index: int = 0

    def state(self) -> dict[str, int]:
        return {"epoch": self.epoch, "index": self.index}


class BatchStream:
    """The endless global batch sequence, epoch after epoch; this rank's share of it.

    Each pull advances the global position by `world` batches, so all ranks hold the
    same position after the same number of pulls, and a single process with
    world_size-times the accumulation sees the same batches per update.
    """

    def __init__(self, plan: BatchPlan, position: StreamPosition, rank: int = 0, world: int = 1):
        if not plan.indices.size:
            raise ValueError("no pair fits the model's max_positions")
        self.plan = plan
        self.position = StreamPosition(position.epoch, position.index)
        self.rank = rank
        self.world = world

    def _advance(self) -> np.ndarray:
        batches = self.plan.epoch(self.position.epoch)
        empty = 0
        while not batches:  # weights below 1 can leave an epoch empty, by chance
            empty += 1
            if empty >= MAX_EMPTY_EPOCHS:
                raise UserError(f"no batch in {empty} epochs in a row: the pairs' weights "
                                f"(data.train's weight x train.long_weight) leave almost "
                                f"nothing to train on")
            self.position.epoch += 1
            batches = self.plan.epoch(self.position.epoch)
        batch = batches[self.position.index]
        self.position.index += 1
        if self.position.index >= len(batches):
            self.position.epoch += 1
            self.position.index = 0
        return batch

    def next(self) -> np.ndarray:
        """This rank's next batch (pair indices)."""
        mine = None
        for r in range(self.world):
            batch = self._advance()
            if r == self.rank:
                mine = batch
        assert mine is not None
        return mine


# ----------------------------------------------------------------------------- collation


@dataclass
class AlignTargets:
    """What guided alignment trains a batch's attention head toward: the alignment's
    links as flat indices into the head's weights [B, T, S] (row b, target position t,
    source position s), each with its value, 1 / the links of its (b, t) row (each
    aligned row sums to 1, as attention does); and the aligned rows, flat indices into
    [B, T], ascending. Rows without a link (a target piece no word links, a pair shown
    as a variant) are in none: they get no alignment cost."""

    index: torch.Tensor  # [links] int64
    value: torch.Tensor  # [links] float32
    rows: torch.Tensor  # [aligned rows] int64

    def to(self, device: torch.device) -> AlignTargets:
        move = dict(device=device, non_blocking=True)
        return AlignTargets(self.index.to(**move), self.value.to(**move), self.rows.to(**move))

    def pin_memory(self) -> AlignTargets:
        return AlignTargets(self.index.pin_memory(), self.value.pin_memory(),
                            self.rows.pin_memory())


@dataclass
class Batch:
    """Model-ready tensors. src = ids + EOS; teacher forcing: tgt_in = BOS + ids,
    tgt_out = ids + EOS (tgt_in shifted left by one). All padded with PAD_ID. `rows`:
    the flat indices of tgt_out's real positions, found on the host, so that the output
    layer and the loss skip padding without asking the device which rows are real.
    `align`: the alignment targets, with `train.guided_alignment`."""

    src: torch.Tensor  # [B, S]
    tgt_in: torch.Tensor  # [B, T]
    tgt_out: torch.Tensor  # [B, T]
    src_tokens: int  # real (non-pad) positions
    tgt_tokens: int
    rows: torch.Tensor  # [tgt_tokens] int64
    align: Optional[AlignTargets] = None

    @property
    def padded_positions(self) -> int:
        return self.src.numel() + self.tgt_in.numel()

    @property
    def real_positions(self) -> int:
        return self.src_tokens + self.tgt_tokens

    def to(self, device: torch.device) -> Batch:
        move = dict(device=device, non_blocking=True)
        return Batch(self.src.to(**move), self.tgt_in.to(**move), self.tgt_out.to(**move),
                     self.src_tokens, self.tgt_tokens, self.rows.to(**move),
                     None if self.align is None else self.align.to(device))

    def pin_memory(self) -> Batch:
        return Batch(self.src.pin_memory(), self.tgt_in.pin_memory(),
                     self.tgt_out.pin_memory(), self.src_tokens, self.tgt_tokens,
                     self.rows.pin_memory(),
                     None if self.align is None else self.align.pin_memory())


def with_alignment(batch: Batch, alignments: Optional[EncodedAlignments],
                   pairs: np.ndarray) -> Batch:
    """`batch` with the alignment targets of its rows (`AlignTargets`): row r holds pair
    `pairs[r]` of the split the alignments belong to, or none (-1: a variant of a pair,
    whose pieces are not the stored ones; rows past `pairs`: fillers). Unchanged
    without `alignments`."""
    if alignments is None:
        return batch
    width, length = batch.tgt_out.shape[1], batch.src.shape[1]
    held = np.flatnonzero(pairs >= 0)
    starts = alignments.offsets[pairs[held]]
    counts = alignments.offsets[pairs[held] + 1] - starts
    where = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    links = np.asarray(alignments.links[where], np.int64).reshape(-1, 2)
    flat_row = np.repeat(held, counts) * width + links[:, 1]  # ascending: links are sorted
    first = np.r_[True, flat_row[1:] != flat_row[:-1]] if len(flat_row) else flat_row > 0
    per_row = np.diff(np.r_[np.flatnonzero(first), len(flat_row)])
    value = 1.0 / np.repeat(per_row, per_row)
    batch.align = AlignTargets(torch.from_numpy(flat_row * length + links[:, 0]),
                               torch.from_numpy(value.astype(np.float32)),
                               torch.from_numpy(flat_row[first]))
    return batch


def _padded_rows(tokens: np.ndarray, offsets: np.ndarray, idx: np.ndarray, multiple: int,
                 width: Optional[int] = None) -> tuple[np.ndarray, np.ndarray]:
    """Rows idx of a concatenated token array, padded to `width` columns or else to the
    longest + 1 column (room for EOS/BOS) rounded up to `multiple`, gathered in one
    vectorised read."""
    starts = offsets[idx]
    lengths = offsets[idx + 1] - starts
    cols = np.arange(width or -(-(int(lengths.max()) + 1) // multiple) * multiple)
    real = cols[None, :] < lengths[:, None]
    where = np.where(real, starts[:, None] + cols[None, :], 0)
    if not tokens.size:  # every row empty: nothing to gather (index 0 does not exist)
        tokens = np.full(1, PAD_ID, np.int64)
    rows = np.where(real, tokens[where], PAD_ID).astype(np.int64)
    return rows, lengths


def rows_from_lists(seqs: list[list[int]], multiple: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """`_padded_rows` for sequences held as lists (e.g. freshly encoded text)."""
    lengths = np.fromiter(map(len, seqs), np.int64, len(seqs))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    flat = np.fromiter((i for seq in seqs for i in seq), np.int64, int(offsets[-1]))
    return _padded_rows(flat, offsets, np.arange(len(seqs)), multiple)


def collate(split: EncodedSplit, idx: np.ndarray, multiple: int = 1,
            shapes: Optional[BatchShapes] = None,
            alignments: Optional[EncodedAlignments] = None) -> Batch:
    """Pairs `idx` of `split` as one padded batch; lengths padded to a `multiple`, or with
    `shapes` to the batch's shape (its FILLER rows then hold no pair); with `alignments`
    (the split's), their alignment targets (`with_alignment`)."""
    if shapes is None:
        batch = assemble(_padded_rows(split.src_tokens, split.src_offsets, idx, multiple),
                         _padded_rows(split.tgt_tokens, split.tgt_offsets, idx, multiple))
        return with_alignment(batch, alignments, idx)
    pairs = idx[idx != FILLER]
    src_len = split.src_offsets[pairs + 1] - split.src_offsets[pairs]
    tgt_len = split.tgt_offsets[pairs + 1] - split.tgt_offsets[pairs]
    box = shapes.shape_of(len(idx), int(src_len.max()) + 1, int(tgt_len.max()) + 1)
    batch = assemble(_padded_rows(split.src_tokens, split.src_offsets, pairs, multiple, box.src),
                     _padded_rows(split.tgt_tokens, split.tgt_offsets, pairs, multiple, box.tgt),
                     fillers=len(idx) - len(pairs))
    return with_alignment(batch, alignments, pairs)


def assemble(source: tuple[np.ndarray, np.ndarray], target: tuple[np.ndarray, np.ndarray],
             fillers: int = 0) -> Batch:
    """A batch from padded (rows, lengths) of each side: EOS after each source, and
    teacher forcing's shift: tgt_in = BOS + ids, tgt_out = ids + EOS. `fillers` rows
    follow, holding no pair: a source of one EOS (attention needs a key), no target."""
    (src, src_lengths), (body, tgt_lengths) = source, target
    rows = np.arange(len(src))
    src[rows, src_lengths] = EOS_ID
    tgt_in = np.concatenate([np.full((len(body), 1), BOS_ID, np.int64), body[:, :-1]], axis=1)
    tgt_out = body
    tgt_out[rows, tgt_lengths] = EOS_ID
    if fillers:
        empty_src = np.full((fillers, src.shape[1]), PAD_ID, np.int64)
        empty_src[:, 0] = EOS_ID
        empty_tgt = np.full((fillers, body.shape[1]), PAD_ID, np.int64)
        src, tgt_in, tgt_out = (np.concatenate([src, empty_src]),
                                np.concatenate([tgt_in, empty_tgt]),
                                np.concatenate([tgt_out, empty_tgt]))
    real_rows = np.flatnonzero(tgt_out.reshape(-1) != PAD_ID)
    return Batch(torch.from_numpy(src), torch.from_numpy(tgt_in), torch.from_numpy(tgt_out),
                 int(src_lengths.sum()) + len(rows), int(tgt_lengths.sum()) + len(rows),
                 torch.from_numpy(real_rows))


def plain_batches(split: EncodedSplit, batch_tokens: int, max_len: int) -> Iterator[Batch]:
    """Every pair of `split` once, length-sorted, no shuffling (validation)."""
    plan = BatchPlan(split.src_lengths, split.tgt_lengths, batch_tokens, 0, max_len,
                     shuffle=False)
    for idx in plan.epoch(0):
        yield collate(split, idx)


# ----------------------------------------------------------------------------- loading


MakeBatch = Callable[[np.ndarray, StreamPosition], Batch]


class BackgroundLoader:
    """Builds the stream's batches in a thread, a few ahead of the training loop.

    Numpy gathers and torch copies release the GIL, so this overlaps with compute.
    `make_batch(pair indices, stream position before the pull)` collates one batch (the
    position identifies it, e.g. to seed subword sampling). `next()` returns (batch,
    position after it): the loop checkpoints the position of what it consumed, not of
    what was prefetched.
    """

    def __init__(self, make_batch: MakeBatch, stream: BatchStream, prefetch: int = 8,
                 pin_memory: bool = False):
        self.make_batch = make_batch
        self.stream = stream
        self.pin = pin_memory
        self.queue: queue.Queue = queue.Queue(maxsize=prefetch)
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._work, name="batch-loader", daemon=True)
        self.thread.start()

    def _work(self) -> None:
        try:
            while not self.stop_event.is_set():
                before = StreamPosition(self.stream.position.epoch, self.stream.position.index)
                batch = self.make_batch(self.stream.next(), before)
                item = (batch.pin_memory() if self.pin else batch, self.stream.position.state())
                while not self.stop_event.is_set():
                    try:
                        self.queue.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
        except BaseException as exc:  # handed to the consumer, which re-raises it
            self.queue.put((exc, None))

    def next(self, stopped: Callable[[], object] = lambda: None
             ) -> Optional[tuple[Batch, dict[str, int]]]:
        """The next batch and the position after it; None if `stopped()` says so while
        the batch is awaited (a signal must not wait for a slow epoch to be planned)."""
        while True:
            try:
                item, position = self.queue.get(timeout=0.1)
                break
            except queue.Empty:
                if stopped():
                    return None
        if isinstance(item, BaseException):
            raise item
        return item, position

    def close(self) -> None:
        self.stop_event.set()
        self.thread.join(timeout=5)
