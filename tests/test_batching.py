"""Token-budget batching: budgets, coverage, determinism, resumable positions, collation."""

from __future__ import annotations

import numpy as np
import pytest

from transcli.data.batching import (
    BackgroundLoader,
    BatchPlan,
    BatchStream,
    StreamPosition,
    collate,
    plain_batches,
)
from transcli.data.encoded import EncodedSplit, EncodedWriter
from transcli.data.shapes import FILLER
from transcli.model.vocab import BOS_ID, EOS_ID, PAD_ID


def _random_pairs(n: int, seed: int = 0) -> tuple[list[list[int]], list[list[int]]]:
    rng = np.random.default_rng(seed)
    src = [rng.integers(4, 100, rng.integers(1, 40)).tolist() for _ in range(n)]
    tgt = [rng.integers(4, 100, rng.integers(1, 40)).tolist() for _ in range(n)]
    return src, tgt


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> EncodedSplit:
    folder = tmp_path_factory.mktemp("encoded")
    writer = EncodedWriter(folder, "train", vocab_size=100)
    src, tgt = _random_pairs(500)
    writer.add(src, tgt)
    writer.close()
    return EncodedSplit(folder, "train")


def _plan(split: EncodedSplit, budget: int = 300, seed: int = 1, max_len: int = 1000) -> BatchPlan:
    return BatchPlan(split.src_lengths, split.tgt_lengths, budget, seed, max_len)


def test_batches_respect_the_padded_token_budget_and_cover_each_pair_once(
        split: EncodedSplit) -> None:
    plan = _plan(split)
    batches = plan.epoch(0)
    for idx in batches:
        rows = len(idx) * max(plan.src_len[idx].max(), plan.tgt_len[idx].max())
        assert rows <= 300
    assert sorted(np.concatenate(batches).tolist()) == list(range(len(split)))


def test_a_pair_longer_than_the_budget_gets_a_batch_of_its_own(split: EncodedSplit) -> None:
    batches = _plan(split, budget=20).epoch(0)
    assert sorted(np.concatenate(batches).tolist()) == list(range(len(split)))
    assert any(len(idx) == 1 for idx in batches)


def test_pairs_over_max_len_are_left_out_and_counted(split: EncodedSplit) -> None:
    plan = _plan(split, max_len=21)  # rows are lengths + 1 (EOS / BOS)
    too_long = (split.src_lengths + 1 > 21) | (split.tgt_lengths + 1 > 21)
    assert plan.skipped == int(too_long.sum()) > 0
    kept = np.concatenate(plan.epoch(0))
    assert not too_long[kept].any() and len(kept) == len(split) - plan.skipped


def test_bucketing_keeps_padding_far_below_random_batches(split: EncodedSplit) -> None:
    plan = _plan(split)
    def pad_fraction(batches: list[np.ndarray]) -> float:
        real = sum(plan.src_len[b].sum() + plan.tgt_len[b].sum() for b in batches)
        padded = sum(len(b) * (plan.src_len[b].max() + plan.tgt_len[b].max()) for b in batches)
        return 1 - real / padded
    bucketed = pad_fraction(plan.epoch(0))
    random_order = np.random.default_rng(0).permutation(len(split))
    naive = pad_fraction(np.array_split(random_order, len(plan.epoch(0))))
    assert bucketed < 0.25 and naive > 0.4


def test_epochs_are_reshuffled_and_reproducible_from_the_seed(split: EncodedSplit) -> None:
    first = [b.tolist() for b in _plan(split).epoch(0)]
    assert first == [b.tolist() for b in _plan(split).epoch(0)]
    assert first != [b.tolist() for b in _plan(split).epoch(1)]
    assert first != [b.tolist() for b in _plan(split, seed=2).epoch(0)]


def _take(stream: BatchStream, n: int) -> list[list[int]]:
    return [stream.next().tolist() for _ in range(n)]


def test_a_stream_restarted_from_its_position_continues_exactly(split: EncodedSplit) -> None:
    plan = _plan(split)
    per_epoch = len(plan.epoch(0))
    straight = _take(BatchStream(plan, StreamPosition()), per_epoch + 7)
    stream = BatchStream(plan, StreamPosition())
    head = _take(stream, per_epoch - 3)  # the restart point crosses an epoch boundary
    resumed = BatchStream(_plan(split), StreamPosition(**stream.position.state()))
    assert head + _take(resumed, 10) == straight


def test_ranks_interleave_the_single_process_sequence(split: EncodedSplit) -> None:
    plan = _plan(split)
    single = _take(BatchStream(plan, StreamPosition()), 12)
    rank0, rank1 = (BatchStream(plan, StreamPosition(), rank=r, world=2) for r in (0, 1))
    assert _take(rank0, 6) == single[0::2] and _take(rank1, 6) == single[1::2]
    assert rank0.position == rank1.position == BatchStream(plan, StreamPosition(0, 12)).position


def test_collate_adds_eos_and_shifts_the_target_right(split: EncodedSplit) -> None:
    idx = np.array([3, 10, 42])
    batch = collate(split, idx)
    for row, i in enumerate(idx):
        x, y = split.src(i).tolist(), split.tgt(i).tolist()
        src, tgt_in, tgt_out = (t[row].tolist() for t in (batch.src, batch.tgt_in, batch.tgt_out))
        assert src == x + [EOS_ID] + [PAD_ID] * (len(src) - len(x) - 1)
        assert tgt_in == [BOS_ID] + y + [PAD_ID] * (len(tgt_in) - len(y) - 1)
        assert tgt_out == y + [EOS_ID] + [PAD_ID] * (len(tgt_out) - len(y) - 1)
    assert batch.src.shape[1] == split.src_lengths[idx].max() + 1
    assert batch.tgt_tokens == int((batch.tgt_out != PAD_ID).sum())
    assert batch.src_tokens == int((batch.src != PAD_ID).sum())


def test_plain_batches_visit_every_pair_once_in_length_order(split: EncodedSplit) -> None:
    batches = list(plain_batches(split, 300, 1000))
    assert sum(len(b.src) for b in batches) == len(split)
    assert sum(b.tgt_tokens for b in batches) == int(split.tgt_lengths.sum()) + len(split)


def test_background_loader_yields_the_stream_in_order_with_positions(split: EncodedSplit) -> None:
    plan = _plan(split)
    expected = _take(BatchStream(plan, StreamPosition()), 5)
    loader = BackgroundLoader(lambda idx, _: collate(split, idx),
                              BatchStream(plan, StreamPosition()),
                              prefetch=2)
    try:
        for n, idx in enumerate(expected, start=1):
            batch, position = loader.next()
            assert batch.src.tolist() == collate(split, np.array(idx)).src.tolist()
            assert position == {"epoch": 0, "index": n}
    finally:
        loader.close()
    assert not loader.thread.is_alive()


@pytest.mark.parametrize("multiple", [1, 8])
def test_collated_batches_keep_the_budget_after_rounding_to_a_multiple(
        split: EncodedSplit, multiple: int) -> None:
    """The padded tensors collation builds, lengths rounded up to `multiple`, stay within
    the budget on each side: the plan counts the rounding (CUDA pads to 8)."""
    plan = BatchPlan(split.src_lengths, split.tgt_lengths, 300, 1, 1000, multiple=multiple)
    batches = plan.epoch(0)
    for idx in batches:
        batch = collate(split, idx, multiple)
        assert batch.src.shape[1] % multiple == 0 and batch.tgt_in.shape[1] % multiple == 0
        assert len(idx) == 1 or max(batch.src.numel(), batch.tgt_in.numel()) <= 300
    unaware = BatchPlan(split.src_lengths, split.tgt_lengths, 300, 1, 1000)
    if multiple > 1:  # budgeting unrounded lengths overshoots once rounded
        assert any(collate(split, idx, multiple).tgt_in.numel() > 300
                   for idx in unaware.epoch(0))


def test_a_batch_lists_its_real_target_rows(split: EncodedSplit) -> None:
    batch = collate(split, np.arange(7), 8)
    flat = batch.tgt_out.reshape(-1)
    assert batch.rows.tolist() == (flat != PAD_ID).nonzero().flatten().tolist()
    assert len(batch.rows) == batch.tgt_tokens


@pytest.mark.parametrize("shapes", [0, 4])
def test_the_plan_knows_the_shape_collate_pads_each_batch_to(split: EncodedSplit,
                                                              shapes: int) -> None:
    plan = BatchPlan(split.src_lengths, split.tgt_lengths, 300, 1, 1000, shapes=shapes)
    for idx in plan.epoch(0):
        batch = collate(split, idx, 1, plan.shapes)
        assert (len(idx), batch.src.shape[1], batch.tgt_in.shape[1]) == plan.shape(idx)
        assert batch.tgt_out.shape == batch.tgt_in.shape


def test_batch_shapes_bound_the_shapes_cover_each_pair_once_and_keep_the_budget(
        split: EncodedSplit) -> None:
    """500 pairs of 2-41 positions a side in free batches take dozens of shapes; with
    batch_shapes=6, six at most, every pair in exactly one batch, the budget kept."""
    free = BatchPlan(split.src_lengths, split.tgt_lengths, 300, 1, 1000)
    assert len({free.shape(idx) for idx in free.epoch(0)}) > 20
    plan = BatchPlan(split.src_lengths, split.tgt_lengths, 300, 1, 1000, shapes=6)
    for epoch in (0, 1):
        batches = plan.epoch(epoch)
        shapes = [plan.shape(idx) for idx in batches]
        assert len(set(shapes)) <= 6
        assert all(rows * max(s, t) <= 300 for rows, s, t in shapes)
        pairs = np.concatenate(batches)
        assert sorted(pairs[pairs != FILLER].tolist()) == list(range(len(split)))
        assert sum((idx == FILLER).any() for idx in batches) <= 1  # the last box's last batch
    assert plan.padding(0) < 0.5


def test_filler_rows_hold_no_pair_and_count_no_tokens(split: EncodedSplit) -> None:
    plan = BatchPlan(split.src_lengths, split.tgt_lengths, 300, 1, 1000, shapes=3)
    idx = next(b for b in plan.epoch(0) if (b == FILLER).any())
    pairs = idx[idx != FILLER]
    batch, alone = collate(split, idx, 1, plan.shapes), collate(split, pairs)
    fillers = slice(len(pairs), None)
    assert batch.src[fillers, 0].eq(EOS_ID).all() and batch.src[fillers, 1:].eq(PAD_ID).all()
    assert batch.tgt_in[fillers].eq(PAD_ID).all() and batch.tgt_out[fillers].eq(PAD_ID).all()
    assert (batch.src_tokens, batch.tgt_tokens) == (alone.src_tokens, alone.tgt_tokens)
    assert batch.rows.tolist() == (batch.tgt_out.reshape(-1) != PAD_ID).nonzero().flatten().tolist()
