"""Batch shapes from a small set (`train.batch_shapes`), for CUDA graphs.

A CUDA graph replays one recorded shape; batches of free shapes would record a graph
each. Here every batch takes one of at most N shapes: a chain of N length boxes
(source length S, target length T), each with its fixed row count budget // max(S, T).
A pair goes to the first box of the chain that holds it; a box's pairs fill whole
batches, and the few left over (fewer than a batch) move on to the next box, which
holds them too, so that only the last box has a partly filled batch, completed with
filler rows (`FILLER`: a source of one EOS, no target).

The boxes are chosen per corpus to waste the fewest padded positions: a dynamic
programme over monotone chains of (S, T) lengths from a ladder (every length up to 16,
then 10% steps), boxes more than twice as long on one side as on the other left out.
Padding this costs, against free shapes: `bench.padding` at revision 7e5bbcb (docs/BENCHMARKS.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FILLER = -1  # a batch's row that holds no pair
EXACT_UP_TO = 16  # every length up to this is a candidate box side; then 10% steps
STEP = 1.1
MAX_RATIO = 2.0  # a box's sides differ at most this much (the longest box excepted)


def length_ladder(longest: int, multiple: int = 1) -> np.ndarray:
    """Candidate box sides up to `longest` (included), rounded up to `multiple`."""
    values, x = list(range(1, min(EXACT_UP_TO, longest) + 1)), float(EXACT_UP_TO)
    while values[-1] < longest:
        x *= STEP
        values.append(min(int(np.ceil(x)), longest))
    rounded = -(-np.array(values) // multiple) * multiple
    return np.unique(rounded)


@dataclass(frozen=True)
class Box:
    src: int  # source positions
    tgt: int  # target positions
    rows: int  # pairs (and filler rows) per batch


class BatchShapes:
    """The chain of boxes for one corpus and budget, and which box each pair goes to."""

    def __init__(self, src_len: np.ndarray, tgt_len: np.ndarray, count: int,
                 batch_tokens: int, multiple: int = 1):
        sides = chain_of_boxes(src_len, tgt_len, count, multiple)
        self.boxes = [Box(s, t, max(1, batch_tokens // max(s, t))) for s, t in sides]

    def box_of(self, src_len: np.ndarray, tgt_len: np.ndarray) -> np.ndarray:
        """Each pair's box: the first of the chain that holds it."""
        src = np.array([b.src for b in self.boxes])
        tgt = np.array([b.tgt for b in self.boxes])
        holds = (src_len[:, None] <= src[None, :]) & (tgt_len[:, None] <= tgt[None, :])
        return holds.argmax(axis=1)

    def pack(self, order: np.ndarray, box: np.ndarray) -> list[np.ndarray]:
        """Batches of `order` (pair indices, in the order they should fill batches),
        `box[i]` being pair i's box: whole batches per box, what is left moving on to the
        next box, the last batch completed with FILLER rows."""
        batches: list[np.ndarray] = []
        left = np.empty(0, np.int64)
        for k, b in enumerate(self.boxes):
            pairs = np.concatenate([left, order[box[order] == k]])
            whole = len(pairs) // b.rows * b.rows
            batches += [pairs[i:i + b.rows] for i in range(0, whole, b.rows)]
            left = pairs[whole:]
        if len(left):
            rows = self.boxes[-1].rows
            batches.append(np.concatenate([left, np.full(rows - len(left), FILLER)]))
        return batches

    def shape_of(self, rows: int, longest_src: int, longest_tgt: int) -> Box:
        """The box a batch of `rows` rows with these longest rows is padded to: the first
        with that row count that holds them (every batch `pack` makes has one)."""
        for b in self.boxes:
            if b.rows == rows and longest_src <= b.src and longest_tgt <= b.tgt:
                return b
        raise ValueError(f"no batch shape of {rows} rows holds lengths "
                         f"({longest_src}, {longest_tgt})")


def chain_of_boxes(src_len: np.ndarray, tgt_len: np.ndarray, count: int,
                   multiple: int = 1) -> list[tuple[int, int]]:
    """At most `count` (S, T) boxes, growing on both sides along the chain, the last one
    holding every pair, that minimise the padded positions sum(S + T) over the pairs
    (each in the first box that holds it): a dynamic programme over candidate boxes."""
    s_side = length_ladder(int(src_len.max()), multiple)
    t_side = length_ladder(int(tgt_len.max()), multiple)
    i, j = np.meshgrid(np.arange(len(s_side)), np.arange(len(t_side)), indexing="ij")
    s, t = s_side[i], t_side[j]
    last = (i == len(s_side) - 1) & (j == len(t_side) - 1)
    keep = ((s <= MAX_RATIO * t) & (t <= MAX_RATIO * s)) | last
    i, j = i[keep], j[keep]
    held = _pairs_held(src_len, tgt_len, s_side, t_side)[i, j]  # pairs each box holds
    width = (s_side[i] + t_side[j]).astype(np.float64)
    after = np.where((i[:, None] <= i[None, :]) & (j[:, None] <= j[None, :]), 0.0, np.inf)
    cost, back = width * held, []  # cost[b]: cheapest chain ending at box b
    for _ in range(count - 1):
        options = cost[:, None] + width[None, :] * (held[None, :] - held[:, None]) + after
        back.append(options.argmin(axis=0))
        cost = options[back[-1], np.arange(len(cost))]
    chain = [int(np.flatnonzero(last[keep])[0])]
    for step in reversed(back):
        if step[chain[-1]] != chain[-1]:
            chain.append(int(step[chain[-1]]))
    return [(int(s_side[i[b]]), int(t_side[j[b]])) for b in reversed(chain)]


def _pairs_held(src_len: np.ndarray, tgt_len: np.ndarray, s_side: np.ndarray,
                t_side: np.ndarray) -> np.ndarray:
    """[len(s_side), len(t_side)]: how many pairs fit each (S, T) box."""
    counts = np.zeros((len(s_side), len(t_side)))
    np.add.at(counts, (np.searchsorted(s_side, src_len), np.searchsorted(t_side, tgt_len)), 1)
    return counts.cumsum(axis=0).cumsum(axis=1)
