"""The regularisation and averaging recipe: subword sampling, the weight average, the
decaying schedules, and exact resume with all of them on; logs of short runs."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.training import fast_config, losses, train_dirs
from safetensors.torch import load_file

from transcli.data.batching import StreamPosition, collate
from transcli.data.encoded import EncodedSplit
from transcli.data.prepared_dir import open_prepared_dir
from transcli.data.resegment import Resegmenter
from transcli.data.tokenizer import Tokenizer
from transcli.rundir.checkpoints import load_state
from transcli.rundir.layout import AVG_FILE, CHECKPOINT_DIR, CURVES_FILE, METRICS_FILE, step_path
from transcli.rundir.metrics import read_metrics
from transcli.training.ema import WeightAverage

RECIPE = ["model.dropout=0.1", "model.act_dropout=0.1", "train.ema_decay=0.9",
          "train.sample_alpha=0.1", "train.schedule=linear", "train.warmup_steps=10",
          "train.max_steps=40", "train.weight_decay=0.01"]




def resegmenter(prepared: Path, max_len: int = 256) -> Resegmenter:
    return Resegmenter(open_prepared_dir(prepared), alpha=0.1, nbest=-1, seed=1, rank=0,
                       max_len=max_len)


def test_sampled_segmentations_are_new_per_batch_reproducible_and_the_same_text(
        prepared: Path) -> None:
    make = resegmenter(prepared)
    tokenizer = Tokenizer(prepared / "spm.model")
    idx = np.arange(16)
    first = make(idx, StreamPosition(0, 3))
    assert torch.equal(make(idx, StreamPosition(0, 3)).src, first.src)  # same place, same draw
    other = make(idx, StreamPosition(1, 3))
    assert not torch.equal(other.tgt_out, first.tgt_out) or other.src.shape != first.src.shape
    fixed = collate(EncodedSplit(prepared, "train"), idx)
    assert first.tgt_tokens > fixed.tgt_tokens  # smaller pieces on average
    decode = lambda rows: tokenizer.decode(rows.tolist())  # noqa: E731
    assert decode(first.src) == decode(fixed.src)  # the same sentences, other pieces
    assert decode(first.tgt_out) == decode(fixed.tgt_out)
    assert (first.tgt_in[:, 1:] == first.tgt_out[:, :-1]).logical_or(first.tgt_out[:, :-1] == 3)\
        .all()  # shifted right: BOS + y, y + EOS


def test_a_segmentation_too_long_for_the_model_falls_back_to_the_fixed_one(
        prepared: Path) -> None:
    split = EncodedSplit(prepared, "train")
    longest = int(np.argmax(split.tgt_lengths))
    limit = int(split.tgt_lengths[longest]) + 1  # the fixed one just fits
    batch = resegmenter(prepared, max_len=limit)(np.array([longest]), StreamPosition(0, 0))
    assert batch.tgt_out.shape[1] <= limit
    assert batch.tgt_out[0, :-1].tolist() == split.tgt(longest).tolist()


def test_weight_average_follows_the_formula() -> None:
    model = torch.nn.Linear(2, 1, bias=False)
    average = WeightAverage(model, decay=0.9)
    start = model.weight.detach().clone()
    with torch.no_grad():
        model.weight.add_(1.0)
    average.update(step=0)  # decay min(0.9, 1/10) = 0.1: avg = 0.1 * w0 + 0.9 * w1
    assert torch.allclose(average.average[0], 0.1 * start + 0.9 * (start + 1))
    with torch.no_grad():
        model.weight.add_(1.0)
    average.update(step=100)  # decay 0.9
    expected = 0.9 * (0.1 * start + 0.9 * (start + 1)) + 0.1 * (start + 2)
    assert torch.allclose(average.average[0], expected)
    with average.swapped_in():
        assert torch.allclose(model.weight, expected)
    assert torch.allclose(model.weight, start + 2)


def _average_of_a_counting_weight(decay: float, updates: int) -> float:
    """The average after `updates` updates of a weight that equals the update's number:
    the average is then `updates` minus the mean age of the weights it holds."""
    model = torch.nn.Linear(1, 1, bias=False)
    average = WeightAverage(model, decay)
    with torch.no_grad():
        model.weight.zero_()
        average.average[0].zero_()
        for step in range(1, updates + 1):
            model.weight.fill_(step)
            average.update(step)
    return average.average[0].item()


def test_the_average_is_the_last_tenth_of_a_short_run_then_one_over_one_minus_decay() -> None:
    """docs/TRAINING.md: below update 8,990 the warm-up caps a decay of 0.999, so any
    decay from 0.999 up gives the same average, whose weights are about n / 10 updates
    old; past the warm-up they are about 1 / (1 - decay) updates old."""
    short = [_average_of_a_counting_weight(decay, 3000) for decay in (0.999, 0.9995)]
    assert short[0] == short[1]
    assert 3000 - short[0] == pytest.approx(300, rel=0.02)
    assert 30000 - _average_of_a_counting_weight(0.999, 30000) == pytest.approx(1000, rel=0.02)


@pytest.mark.slow
def test_resume_is_exact_with_sampling_averaging_and_a_decaying_schedule(
        prepared: Path, tmp_path: Path) -> None:
    """Stopped by its time limit (as a user's sessions are), at whatever step that falls
    on: the schedule depends on max_steps, so that must stay the run's own."""
    straight, split = tmp_path / "straight", tmp_path / "split"
    train_dirs(fast_config(*RECIPE), prepared, straight)
    train_dirs(fast_config(*RECIPE, "train.max_minutes=0.003"), prepared, split)
    stopped = read_metrics(split / METRICS_FILE, "train")[-1]["step"]
    assert 0 < stopped < 40
    train_dirs(fast_config(*RECIPE), prepared, split, resume=True)
    for name in (step_path(straight, 40).name, AVG_FILE):
        a = load_file(straight / CHECKPOINT_DIR / name)
        b = load_file(split / CHECKPOINT_DIR / name)
        assert max((a[k] - b[k]).abs().max().item() for k in a) <= 1e-6, name
    assert losses(split) == losses(straight) and len(losses(straight)) == 8
    lrs = [r["lr"] for r in read_metrics(straight / METRICS_FILE, "train")]
    assert lrs[-1] < lrs[len(lrs) // 2] < max(lrs)  # warm-up, then linear decay to the end


def test_avg_holds_the_weight_average_not_the_last_weights(prepared: Path,
                                                           tmp_path: Path) -> None:
    run = tmp_path / "run"
    train_dirs(fast_config("train.ema_decay=0.5", "train.max_steps=10"), prepared, run)
    avg, last = load_file(run / CHECKPOINT_DIR / AVG_FILE), load_file(step_path(run, 10))
    assert any(not torch.equal(avg[k], last[k]) for k in avg)
    assert max((avg[k] - last[k]).abs().max().item() for k in avg) < 0.5


def test_a_run_stopped_early_still_logs_its_last_steps_and_draws_curves(
        prepared: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run = tmp_path / "run"
    train_dirs(fast_config("train.max_steps=1000", "train.max_minutes=0.0001",
                      "train.log_every=100"), prepared, run)
    records = read_metrics(run / METRICS_FILE, "train")
    assert len(records) == 1 and records[0]["partial"] and records[0]["step"] < 100
    assert (run / CURVES_FILE).stat().st_size > 0
    err = capsys.readouterr().err
    assert "time limit" in err and "undertrained" in err and "of the 1000 planned" in err


@pytest.mark.slow
def test_a_decay_in_minutes_ends_the_run_at_rate_zero_and_its_clock_survives_sessions(
        prepared: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """train.decay_minutes: the linear decay follows the training clock (over sessions:
    a resumed run's rate goes on down, it does not climb back) and the run stops when
    the clock reaches zero rate, long before its max_steps."""
    run = tmp_path / "run"
    # The first session's clock passes its limit during the validation after update 10,
    # and reached 1.4-2.4 s there on a slow machine: the decay must outlast that.
    decay = 0.08
    sets = ["train.schedule=linear", "train.warmup_steps=5", "train.max_steps=100000",
            f"train.decay_minutes={decay}", "train.log_every=1"]
    train_dirs(fast_config(*sets, "train.max_minutes=0.01"), prepared, run)  # a first session
    first = read_metrics(run / METRICS_FILE, "train")[-1]["step"]
    train_dirs(fast_config(*sets), prepared, run, resume=True)
    records = read_metrics(run / METRICS_FILE, "train")
    lrs = [r["lr"] for r in records]
    assert 5 < first < records[-1]["step"] < 100000
    assert 0.0 < lrs[-1] < 0.2 * max(lrs)  # near the end; no update at rate zero
    assert all(a >= b for a, b in zip(lrs[5:], lrs[6:]))  # down all the way, both sessions
    state = load_state(run, records[-1]["step"])  # with the session's tail: the decay is over
    assert 0 < state["warmup_seconds"] < decay * 60 <= state["seconds"]
    assert f"end of the {decay}-minute decay" in capsys.readouterr().err
    train_dirs(fast_config(*sets), prepared, run, resume=True)
    assert "nothing to do" in capsys.readouterr().err


def test_a_clock_ended_run_counts_minutes_left_not_a_moving_step_total() -> None:
    """A run with a 60-minute decay resumed after 30 minutes: its bar's total is the 30
    minutes left, fixed from the start (not a step estimate that moves as the pace does);
    a run ended by max_steps alone counts updates; a session limit that comes first wins."""
    from transcli.config.schema import TrainConfig
    from transcli.training.report import ProgressBar
    from transcli.training.state import Progress

    decay = TrainConfig(max_steps=100_000, schedule="linear", decay_minutes=60)
    ten_minutes_ago = time.perf_counter() - 600
    bar = ProgressBar(decay, Progress(step=3000, seconds=1800.0), ten_minutes_ago, True)
    assert (bar.minutes, bar.bar.total, bar.bar.unit) == (30.0, 30.0, "min")
    bar.update(3001)
    assert bar.bar.total == 30.0 and bar.bar.n == 10.0
    session = TrainConfig(max_steps=100_000, schedule="linear", decay_minutes=60, max_minutes=10)
    assert ProgressBar(session, Progress(step=3000, seconds=1800.0), 0.0, False).minutes == 10
    capped = TrainConfig(max_steps=1000, max_minutes=30)  # a cap: max_steps is the end
    assert ProgressBar(capped, Progress(), 0.0, False).minutes is None
    said: list[str] = []
    paced = ProgressBar(decay, Progress(step=3000, seconds=1800.0), ten_minutes_ago, True,
                        said.append)
    paced.update(3100)  # no log line yet: no pace
    paced.update(3200, loss="3.0")  # 200 updates in 10 minutes, 20 minutes left
    assert said and "20 updates/min" in said[0] and "near update 3,600" in said[0]
    paced.update(3300, loss="2.9")
    assert len(said) == 1  # said once
    steps = ProgressBar(TrainConfig(max_steps=500), Progress(step=40), 0.0, enabled=True)
    assert (steps.minutes, steps.bar.total, steps.bar.n, steps.bar.unit) == (None, 500, 40,
                                                                              "step")
    steps.update(41)
    assert steps.bar.n == 41


def test_a_stop_says_the_command_that_continues_the_run(tmp_path: Path) -> None:
    from transcli.config.schema import TrainConfig
    from transcli.training.report import ending

    tc = TrainConfig(max_steps=1000)
    resume = "transcli train --data 'my data' --out run --resume"
    for reason in ("SIGINT", "time limit of 5 min"):
        line = ending(reason, 40, tc, tmp_path, resume)
        assert line.endswith(f"continue with: {resume}") or f"continue with: {resume}." in line
    assert "continue" not in ending("finished", 1000, tc, tmp_path, resume)
    early = ending("early stop: no better valid BLEU in 2 validations", 80, tc, tmp_path, resume)
    assert early.startswith("early stop") and "continue" not in early
    assert "undertrained" in ending("time limit of 5 min", 40, tc, tmp_path, resume)
