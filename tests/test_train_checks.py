"""Every setting checked against the device and the data before the first update: what
the device cannot run is said and run otherwise (or refused), weights that leave nothing
to train on are refused, and a loop without batches never spins."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.training import fast_config, train_dirs
from helpers.waiting import DEADLINE

from transcli.config.loading import load_config
from transcli.config.schema import TrainConfig
from transcli.data.batching import (
    MAX_EMPTY_EPOCHS,
    BackgroundLoader,
    BatchPlan,
    BatchStream,
    StreamPosition,
)
from transcli.data.weights import pair_weights
from transcli.rundir.layout import METRICS_FILE, complete_steps
from transcli.rundir.metrics import read_metrics
from transcli.system.errors import UserError
from transcli.training import compiling
from transcli.training.loop import device_settings

CPU = torch.device("cpu")


def test_translate_precision_in_a_cpu_training_config_does_not_stop_validation(
        prepared: Path, tmp_path: Path) -> None:
    """Issue: decode.precision=bf16 (meant for translating on a GPU) killed a CPU run at
    its first validation. Validation decodes in the training's own precision."""
    run = tmp_path / "run"
    train_dirs(fast_config("decode.precision=bf16", "train.max_steps=10"), prepared, run)
    valid = read_metrics(run / METRICS_FILE, "valid")
    assert [r["step"] for r in valid] == [10] and "valid_bleu" in valid[0]


def test_compile_without_a_cpp_compiler_trains_eagerly_and_says_so(
        prepared: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Issue: train.compile on a CPU without a C++ compiler failed with inductor's
    traceback after a minute. Inductor looks for the compiler it is configured with
    ($CXX when torch is imported, else g++): here one that does not exist."""
    import torch._inductor.config as inductor

    run = tmp_path / "run"
    with inductor.patch({"cpp.cxx": (None, str(tmp_path / "no-such-g++"))}):
        assert compiling.compile_blocker(CPU) is not None
        train_dirs(fast_config("train.compile=true", "train.max_steps=2"), prepared, run)
    err = capsys.readouterr().err
    assert "train.compile: inductor needs a C++ compiler" in err and "training eagerly" in err
    assert "compiled" not in err.split("new run")[1].split("\n")[0]  # the recipe line
    assert complete_steps(run) == [2]
    assert "compiles" not in read_metrics(run / METRICS_FILE, "train")[-1]


def test_cuda_graphs_off_cuda_are_said_not_dropped() -> None:
    settings = device_settings(TrainConfig(compile=True, cuda_graphs=True, batch_shapes=4),
                               CPU)
    assert not settings.tc.cuda_graphs and settings.tc.compile == \
        (compiling.compile_blocker(CPU) is None)
    assert any("train.cuda_graphs" in line and "cpu" in line for line in settings.warnings)
    assert not device_settings(TrainConfig(), CPU).warnings


def test_weights_that_empty_every_epoch_are_refused(prepared: Path, tmp_path: Path) -> None:
    """Issue: train.long_weight=1e-300 left every epoch empty and train spun at 95% CPU
    with 0 updates, deaf to the first SIGTERM."""
    with pytest.raises(UserError, match=r"leave .* training pairs per epoch on average"):
        train_dirs(fast_config("train.long_weight=1e-300", "train.long_tokens=0"), prepared,
                   tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_a_stream_of_empty_epochs_stops_instead_of_spinning() -> None:
    lengths = np.full(8, 3)
    plan = BatchPlan(lengths, lengths, 100, 1, 64, weights=np.full(8, 1e-300))
    stream = BatchStream(plan, StreamPosition())
    with pytest.raises(UserError, match=f"no batch in {MAX_EMPTY_EPOCHS} epochs"):
        stream.next()


def test_a_loader_waiting_for_a_batch_hears_a_stop() -> None:
    """A signal while the next batch is awaited (a slow epoch being planned) stops the
    wait: the loop does not depend on the loader to see it (the batch is still being
    made when the wait ends)."""
    release, made = threading.Event(), threading.Event()

    def slow(indices: np.ndarray, position: StreamPosition) -> None:
        release.wait(DEADLINE)
        made.set()

    lengths = np.full(4, 3)
    loader = BackgroundLoader(slow, BatchStream(BatchPlan(lengths, lengths, 100, 1, 64),
                                                StreamPosition()))
    try:
        assert loader.next(lambda: "SIGTERM") is None
        assert not made.is_set(), "the wait ended when the batch was made, not at the stop"
    finally:
        release.set()
        loader.close()


def test_the_product_of_weights_is_bounded() -> None:
    """Issue: a source weight of 100 and train.long_weight 100 made 750,000 batches per
    epoch of 1,782 pairs; each is bounded by MAX_WEIGHT, and so is their product."""
    manifest = {"sources": {"train": [{"pairs": 2, "weight": 100.0}, {"pairs": 2}]}}
    lengths = np.array([5, 50, 5, 50])
    with pytest.raises(UserError, match=r"gives 10000 copies of a pair per epoch, more "
                                        r"than 100"):
        pair_weights(manifest, lengths, TrainConfig(long_weight=100.0, long_tokens=20))
    weights = pair_weights(manifest, lengths, TrainConfig(long_weight=1.0))
    assert weights is not None and list(weights) == [100, 100, 1, 1]


@pytest.mark.parametrize("split", ["valid", "test"])
def test_a_weight_on_valid_or_test_is_refused(tmp_path: Path, split: str) -> None:
    """Issue: `weight` on data.valid/data.test was silently ignored."""
    config = tmp_path / "c.yaml"
    config.write_text(f"data:\n  {split}: {{tsv: pairs.tsv, weight: 2}}\n")
    with pytest.raises(UserError, match=f"'data.{split}.weight' is for data.train's sources"):
        load_config(config)
    config.write_text(f"data:\n  {split}: {{tsv: pairs.tsv}}\n")
    assert getattr(load_config(config).data, split).weight == 1.0
