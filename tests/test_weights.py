"""Weighted sampling of training pairs: a source's `weight` (recorded by prepare) and the
long-pair weight, applied by the batch plan: copies per epoch, never two of a pair in one
batch, reproducible from the seed, and exact across a restart."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from helpers.training import fast_config, losses, train_dirs
from safetensors.torch import load_file

from transcli.config.loading import load_config
from transcli.config.schema import SourceConfig, TrainConfig
from transcli.data.batching import BatchPlan, BatchStream, StreamPosition
from transcli.data.encoded import SPLITS, data_hash, load_manifest, split_files
from transcli.data.prepare import prepare
from transcli.data.prepared_dir import open_prepared_dir
from transcli.data.shapes import FILLER
from transcli.data.weights import pair_weights
from transcli.rundir.layout import CHECKPOINT_DIR, step_path
from transcli.system.errors import UserError

LENGTHS = np.random.default_rng(0).integers(1, 40, size=(2, 300))


def plan(weights: np.ndarray | None, seed: int = 1, budget: int = 200) -> BatchPlan:
    return BatchPlan(LENGTHS[0], LENGTHS[1], budget, seed, 1000, weights=weights)


def seen(batches: list[np.ndarray]) -> Counter:
    return Counter(np.concatenate(batches).tolist())


def test_a_weight_of_two_sees_each_pair_in_two_batches_never_twice_in_one() -> None:
    weighted = plan(np.full(300, 2.0))
    batches = weighted.epoch(0)
    assert seen(batches) == Counter({i: 2 for i in range(300)})
    assert all(len(set(idx.tolist())) == len(idx) for idx in batches)
    for idx in batches:  # the budget holds as without weights
        assert len(idx) * max(weighted.src_len[idx].max(), weighted.tgt_len[idx].max()) <= 200


def test_weighted_copies_keep_the_plans_batch_shapes() -> None:
    """With `train.batch_shapes` too (CUDA graphs), each copy layer is packed into the same
    few shapes: every pair twice, filler rows apart, and no more shapes than asked."""
    weighted = BatchPlan(LENGTHS[0], LENGTHS[1], 200, 1, 1000, shapes=4,
                         weights=np.full(300, 2.0))
    batches = weighted.epoch(0)
    real = [idx[idx != FILLER] for idx in batches]
    assert seen(real) == Counter({i: 2 for i in range(300)})
    assert len({weighted.shape(idx)[1:] for idx in batches}) <= 4


def test_fractions_are_chances_drawn_anew_each_epoch_from_the_seed() -> None:
    weights = np.where(np.arange(300) < 100, 1.5, 0.5)
    epochs = [seen(plan(weights).epoch(e)) for e in range(40)]
    first = np.mean([sum(e[i] for i in range(100)) / 100 for e in epochs])
    rest = np.mean([sum(e[i] for i in range(100, 300)) / 200 for e in epochs])
    assert abs(first - 1.5) < 0.05 and abs(rest - 0.5) < 0.05
    assert all(set(e[i] for i in range(100)) <= {1, 2} for e in epochs)
    assert epochs[0] != epochs[1]
    again = [b.tolist() for b in plan(weights).epoch(3)]
    assert again == [b.tolist() for b in plan(weights).epoch(3)]
    assert again != [b.tolist() for b in plan(weights, seed=2).epoch(3)]


def take(stream: BatchStream, n: int) -> list[list[int]]:
    return [stream.next().tolist() for _ in range(n)]


def test_a_stream_restarted_from_its_position_continues_exactly_with_weights() -> None:
    weights = np.where(LENGTHS[0] > 20, 2.5, 1.0)
    per_epoch = len(plan(weights).epoch(0))
    straight = take(BatchStream(plan(weights), StreamPosition()), per_epoch + 9)
    first = BatchStream(plan(weights), StreamPosition())
    head = take(first, per_epoch - 4)  # the restart point crosses an epoch boundary
    resumed = BatchStream(plan(weights), StreamPosition(**first.position.state()))
    assert head + take(resumed, 13) == straight


def test_epochs_left_empty_by_small_weights_are_passed_over() -> None:
    stream = BatchStream(plan(np.full(300, 0.001)), StreamPosition())
    assert len(stream.next()) >= 1 and stream.position.epoch > 0


def test_long_pairs_are_weighted_by_their_source_length() -> None:
    tc = TrainConfig(long_weight=3.0, long_tokens=20)
    weights = pair_weights({}, LENGTHS[0], tc)
    assert weights is not None
    assert weights.tolist() == [3.0 if n > 20 else 1.0 for n in LENGTHS[0].tolist()]
    assert pair_weights({}, LENGTHS[0], TrainConfig()) is None  # every weight 1: the old plan


def test_source_weights_multiply_the_long_weight() -> None:
    manifest = {"sources": {"train": [{"pairs": 2, "weight": 0.5}, {"pairs": 3, "weight": 2}]}}
    weights = pair_weights(manifest, np.array([5, 30, 5, 30, 5]), TrainConfig(long_weight=2))
    assert weights is not None and weights.tolist() == [0.5, 1.0, 2.0, 4.0, 2.0]
    with pytest.raises(UserError, match="train sources hold 5 pairs, the train split 4"):
        pair_weights(manifest, np.array([5, 30, 5, 30]), TrainConfig())


def test_prepare_records_each_sources_pairs_and_weight(tmp_path: Path) -> None:
    """Pairs that are duplicates, held out or carved leave their source's count; a
    weight changes the data hash (other epochs), weight 1 leaves it as it was."""
    first = [(f"First sentence number {i}.", f"Primera frase número {i}.") for i in range(30)]
    second = [(f"Another sentence, {i}.", f"Otra frase, {i}.") for i in range(20)]
    files = {}
    for name, pairs in (("a", first), ("b", first[:5] + second)):
        for lang, side in (("en", 0), ("es", 1)):
            path = files[name, lang] = tmp_path / f"{name}.{lang}"
            path.write_text("".join(pair[side] + "\n" for pair in pairs), encoding="utf-8")
    hashes = []
    for weight in (1.0, 3.0):
        cfg = load_config(None, ["data.vocab_size=316", "data.valid_size=4",
                                 "data.test_size=4"])
        cfg.data.train = [SourceConfig(src_file=str(files["a", "en"]),
                                       tgt_file=str(files["a", "es"])),
                          SourceConfig(src_file=str(files["b", "en"]),
                                       tgt_file=str(files["b", "es"]), weight=weight)]
        out = tmp_path / f"prep{weight:g}"
        prepare(cfg, out, force=False)
        manifest = load_manifest(out)
        sources = manifest["sources"]["train"]
        assert [s["weight"] for s in sources] == [1.0, weight]
        assert sum(s["pairs"] for s in sources) == manifest["splits"]["train"]["pairs"] == 42
        train_en = (out / "train.en").read_text(encoding="utf-8").splitlines()
        assert all(line.startswith("First") for line in train_en[:sources[0]["pairs"]])
        assert all(line.startswith("Another") for line in train_en[sources[0]["pairs"]:])
        hashes.append(manifest["data_hash"])
    encoded = ["spm.model"] + [name for split in SPLITS for name in split_files(split)]
    assert hashes[0] == data_hash(tmp_path / "prep1", encoded) != hashes[1]
    lengths = open_prepared_dir(out).split("train").src_lengths
    weights = pair_weights(manifest, lengths, TrainConfig())
    assert weights is not None and sorted(Counter(weights.tolist()).items()) == [
        (1.0, sources[0]["pairs"]), (3.0, sources[1]["pairs"])]


def test_a_weight_out_of_bounds_names_its_key() -> None:
    cfg = load_config(None, [])
    cfg.data.train = [SourceConfig(tsv="x.tsv", weight=0)]
    with pytest.raises(UserError, match=r"'data.train\[0\].weight' must be in \(0, 100\]"):
        cfg.validate()
    with pytest.raises(UserError, match="'train.long_weight' must be in"):
        load_config(None, ["train.long_weight=0"])


@pytest.mark.slow
def test_resume_is_exact_with_long_pairs_weighted(prepared: Path, tmp_path: Path) -> None:
    recipe = ["train.long_weight=1.5", "train.long_tokens=12", "train.max_steps=30"]
    straight, split = tmp_path / "straight", tmp_path / "split"
    train_dirs(fast_config(*recipe), prepared, straight)
    train_dirs(fast_config(*recipe, "train.max_minutes=0.002"), prepared, split)
    assert 0 < losses(split)[-1][0] < 30  # stopped by its time limit, mid-run
    train_dirs(fast_config(*recipe), prepared, split, resume=True)
    name = step_path(straight, 30).name
    a, b = (load_file(run / CHECKPOINT_DIR / name) for run in (straight, split))
    assert max((a[k] - b[k]).abs().max().item() for k in a) <= 1e-6
    assert losses(split) == losses(straight)
    plain = tmp_path / "plain"
    train_dirs(fast_config("train.max_steps=30"), prepared, plain)
    assert losses(plain) != losses(straight)  # the weights changed what was seen
