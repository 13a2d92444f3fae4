"""The decoder's cache for incremental decoding: what a search keeps between steps.

A decoding step feeds one new token per row (a sentence's hypothesis) and must not
recompute earlier positions:

- self-attention keys/values of the positions fed so far, per row, in a buffer that
  grows a chunk at a time and is written in place (no copy of the past per step); it
  is laid out position-major, [positions, rows, heads, d_k], so following beams
  gathers just the positions filled so far, straight into a buffer of the same size;
- cross-attention keys (transposed) and values of the encoder output, computed once,
  per *sentence*:
  a sentence's rows (its beams) are consecutive and share them, so its queries attend
  as a group of rows to one copy, and following beams within their sentences never
  copies them. Only dropping finished sentences selects (or moves) the remaining ones.

`reorder(index)` is the one way rows change (expand to beams, follow back-pointers,
drop finished rows); it works out from the rows' sentences whether they still form
equal consecutive groups and, if a search breaks that shape, gives each row its own
copy of its sentence's keys/values. `drop(keep)` drops finished rows: with one row per
sentence (greedy search, sampling) it moves the rows past the kept ones into the dropped
rows' places (`kept_in_place`), copying just those, and leaves the buffers narrowed
views of their earlier rows; otherwise it reorders to the kept rows.

A state may also keep the memory of the output layer's [rows, vocab] results from one
step to the next (`StepBuffers`); each step's log-probs are then overwritten by the next.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor

CHUNK = 16  # positions the self-attention buffer grows by


def attend(q: Tensor, k_t: Tensor, v: Tensor, hidden: Optional[Tensor] = None) -> Tensor:
    """softmax(Q K^T / sqrt(d_k)) V for a decoding step, given K^T: q [batch, queries,
    d_k], `k_t` [batch, d_k, keys], v [batch, keys, d_k], where a batch entry is one head
    of one row (or of one sentence's rows); `hidden` [sentences, 1, 1, keys], True where
    a sentence's key is hidden from all its heads. Batched products (`torch.bmm`): for a
    handful of queries they beat the fused kernels' set-up."""
    scores = torch.bmm(q, k_t).mul_(q.size(-1) ** -0.5)
    if hidden is not None:
        scores.view(hidden.size(0), -1, *scores.shape[1:]).masked_fill_(hidden, float("-inf"))
    return torch.bmm(scores.softmax(dim=-1), v)


@dataclass
class LayerCache:
    """One decoder layer's keys/values."""

    # The encoder output's keys and values, laid out once as the steps' matmuls read
    # them, so that no step copies them: keys transposed, [sentences, heads, d_k,
    # src_len], values [sentences, heads, src_len, d_k], both contiguous.
    cross_k_t: Tensor
    cross_v: Tensor
    # [capacity, rows, heads, d_k], capacity >= positions; after a `fill`, a view whose
    # rows are the first of a buffer with more.
    self_k: Optional[Tensor] = None
    self_v: Optional[Tensor] = None

    def append(self, k: Tensor, v: Tensor, position: int) -> tuple[Tensor, Tensor]:
        """Store the newest position's k, v [rows, heads, d_k]; return all positions so far
        as K^T [rows * heads, d_k, positions] and V [rows * heads, positions, d_k], views
        of the buffers."""
        if self.self_k is None or position == self.self_k.size(0):
            self.self_k = _resized(self.self_k, k, position, position + CHUNK)
            self.self_v = _resized(self.self_v, v, position, position + CHUNK)
        self.self_k.select(0, position).copy_(k)
        self.self_v.select(0, position).copy_(v)
        return by_head(self.self_k, position + 1, True), by_head(self.self_v, position + 1)

    def fill(self, places: Tensor, sources: Tensor, kept: int, position: int) -> None:
        """Rows `places` become rows `sources` (positions already fed only), then the
        first `kept` rows are kept, as views of the same memory: only the moving rows
        are copied."""
        for name in ("cross_k_t", "cross_v"):
            memory = getattr(self, name)
            memory.index_copy_(0, places, memory.index_select(0, sources))
            setattr(self, name, memory[:kept])
        for name in ("self_k", "self_v"):
            buffer = getattr(self, name)
            if buffer is not None:
                by_row = buffer[:position].transpose(0, 1)  # see _select_rows
                by_row.index_copy_(0, places, by_row.index_select(0, sources))
                setattr(self, name, buffer[:, :kept])

    def reorder(self, index: Tensor, position: int) -> None:
        """Rows become `index`'s rows (positions already fed only)."""
        for name in ("self_k", "self_v"):
            old = getattr(self, name)
            if old is not None:
                new = old.new_empty(old.size(0), len(index), *old.shape[2:])
                _select_rows(old[:position], index, new[:position])
                setattr(self, name, new)


def by_head(buffer: Tensor, fed: int, transposed: bool = False) -> Tensor:
    """A [capacity, rows, heads, d_k] buffer's first `fed` positions as [rows * heads,
    fed, d_k] (or, `transposed`, [rows * heads, d_k, fed]): one view, made in one op."""
    positions, entries, d_k = buffer.stride(0), buffer.size(1) * buffer.size(2), buffer.size(3)
    if transposed:
        return buffer.as_strided((entries, d_k, fed), (d_k, 1, positions))
    return buffer.as_strided((entries, fed, d_k), (d_k, positions, 1))


def _select_rows(fed: Tensor, index: Tensor, out: Tensor) -> None:
    """`out` = `fed`'s rows (dim 1) `index`. A buffer an earlier `fill` narrowed is not
    contiguous, and torch would copy all of it before selecting along dim 1: it is
    selected along dim 0 of its row-major view instead."""
    if fed.is_contiguous():
        torch.index_select(fed, 1, index, out=out)
    else:
        torch.index_select(fed.transpose(0, 1), 0, index, out=out.transpose(0, 1))


def _resized(old: Optional[Tensor], new: Tensor, position: int, capacity: int) -> Tensor:
    """A [capacity, rows, heads, d_k] buffer for `new`'s rows ([rows, heads, d_k])
    holding `old`'s first `position` positions."""
    buffer = new.new_empty(capacity, *new.shape)
    if old is not None:
        buffer[:position] = old[:position]
    return buffer


class StepBuffers:
    """Tensors whose memory is reused from one decoding step to the next, by name.

    The output layer's logits and log-probs are [rows, vocab], megabytes every step: glibc
    maps blocks that large from the OS (beyond a threshold that adapts, up to 32 MiB), so
    fresh ones are page-faulted in again and again; kept ones made greedy and beam search
    faster alike (README, "Benchmarks").
    Rows only shrink while a batch decodes, so a buffer's first rows serve later steps.
    """

    def __init__(self) -> None:
        self.held: dict[str, Tensor] = {}

    def get(self, name: str, rows: int, cols: int, like: Tensor,
            dtype: Optional[torch.dtype] = None) -> Tensor:
        """An uninitialised [rows, cols] tensor on `like`'s device (of `dtype`, else
        `like`'s), in the memory `name` had at an earlier step when it has the rows (a
        name's columns, dtype and device stay the same while a batch decodes)."""
        held = self.held.get(name)
        if held is None or held.size(0) < rows:
            held = self.held[name] = like.new_empty(rows, cols, dtype=dtype or like.dtype)
        return held[:rows]


@dataclass
class DecoderState:
    """Everything a decoding step needs besides the newest token."""

    layers: list[LayerCache]
    hidden: Tensor  # [sentences, 1, 1, src_len], True where a key is padding
    group: int = 1  # rows per sentence, consecutive
    position: int = 0  # target tokens fed so far
    # Where the output layer writes, step after step; None: fresh tensors every step.
    buffers: Optional[StepBuffers] = None

    @property
    def sentences(self) -> int:
        return self.hidden.size(0)

    def reorder(self, index: Tensor, sentences: Optional[Tensor] = None) -> None:
        """Rows become `index`'s rows, e.g. a sentence's row repeated into beams, the rows
        that follow the surviving beams, or the live rows only. A caller that knows the
        new rows are `group` rows of each of `sentences` (positions among the current
        sentences, ascending), as beam search does, says so and spares the check."""
        if sentences is not None:
            if sentences.numel() != self.sentences:  # else they are all of them, in order
                self._select_sentences(sentences)
        elif not self._same_sentences(index):
            self.group = 1  # rows of a sentence no longer consecutive and equal in number
        for cache in self.layers:
            cache.reorder(index, self.position)

    def _same_sentences(self, index: Tensor) -> bool:
        """Work out the new rows' grouping from `index`: whether they come in consecutive
        runs of equal size, one per sentence (then the sentences are selected and `group`
        set); otherwise each row gets its own copy of its sentence's memory."""
        sentence = torch.div(index, self.group, rounding_mode="floor")
        group = _regular_group(sentence)
        if not group:
            self._select_sentences(sentence)
            return False
        heads = sentence[::group]
        if heads.numel() != self.sentences or not bool(
                (heads == torch.arange(self.sentences, device=heads.device)).all()):
            self._select_sentences(heads)
        self.group = group
        return True

    def drop(self, keep: Tensor) -> Tensor:
        """Keep the rows where `keep` (bool) is True; returns the kept rows' index, in
        their new order: `kept_in_place`'s with one row per sentence, copying only the
        rows that move; else their own order, so that a sentence's rows stay together."""
        if self.group != 1:
            index = keep.nonzero().squeeze(1)
            self.reorder(index)
            return index
        index = kept_in_place(keep)
        kept = index.numel()
        places = (~keep[:kept]).nonzero().squeeze(1)
        self.hidden = self.hidden.index_select(0, index)
        for cache in self.layers:
            cache.fill(places, index[places], kept, self.position)
        return index

    def _select_sentences(self, sentences: Tensor) -> None:
        self.hidden = self.hidden.index_select(0, sentences)
        for cache in self.layers:
            cache.cross_k_t = cache.cross_k_t.index_select(0, sentences)
            cache.cross_v = cache.cross_v.index_select(0, sentences)

    def grouped(self, q: Tensor, heads: int) -> Tensor:
        """Queries [rows, heads * d_k] -> [sentences * heads, group, d_k]."""
        rows, d_model = q.shape
        if self.group == 1:
            return q.view(rows * heads, 1, d_model // heads)
        return q.view(rows // self.group, self.group, heads, -1).transpose(1, 2).reshape(
            -1, self.group, d_model // heads)

    def ungrouped(self, y: Tensor, heads: int) -> Tensor:
        """[sentences * heads, group, d_k] -> [rows, heads * d_k]."""
        entries, group, d_k = y.shape
        if group == 1:
            return y.view(-1, heads * d_k)
        return y.view(-1, heads, group, d_k).transpose(1, 2).reshape(-1, heads * d_k)


def kept_in_place(keep: Tensor) -> Tensor:
    """The rows where `keep` (bool) is True, as an index: those among the first n (n kept
    in all) stay where they are, the others fill the places of the dropped ones there,
    e.g. [0, 1, 4, 3] for keep = [T, T, F, T, T]."""
    kept = int(keep.sum())
    index = torch.arange(kept, device=keep.device)
    index[~keep[:kept]] = keep[kept:].nonzero().squeeze(1) + kept
    return index


def _regular_group(sentence: Tensor) -> int:
    """G when the rows' sentences come in consecutive runs of G rows, each sentence in
    one run (e.g. 0 0 1 1 2 2); else 0."""
    if sentence.numel() == 0:
        return 1
    group = int((sentence == sentence[0]).long().cumprod(0).sum())
    if sentence.numel() % group:
        return 0
    runs = sentence.view(-1, group)
    heads = runs[:, 0]
    regular = bool((runs == heads[:, None]).all()) and heads.unique().numel() == heads.numel()
    return group if regular else 0
