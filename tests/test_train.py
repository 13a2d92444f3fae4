"""Training: objective, schedule, memorisation, exact resume, signals, divergence, DDP, refusals.

End-to-end tests train the tiny config (shrunk further with --set) on 32 real
pairs from data/sample, prepared once per session by the real `prepare`.
"""

from __future__ import annotations

import json
import math
import random
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from helpers.training import (
    ENV,
    TINY,
    fast_config,
    losses,
    train_cli,
    train_dirs,
    transcli_process,
    wait_for,
)
from safetensors.torch import load_file

from transcli.config.loading import load_config
from transcli.rundir.checkpoints import load_state
from transcli.rundir.layout import (
    AVG_FILE,
    BEST_FILE,
    CHECKPOINT_DIR,
    CURVES_FILE,
    METRICS_FILE,
    complete_steps,
    step_checkpoints,
    step_path,
)
from transcli.rundir.metrics import read_metrics
from transcli.rundir.run import open_run_dir
from transcli.system.errors import UserError
from transcli.training.objective import label_smoothed_nll
from transcli.training.schedules import noam_lr

# ----------------------------------------------------------------------------- pieces


def test_noam_schedule_values() -> None:
    peak = 512 ** -0.5 * 4000 ** -0.5
    assert noam_lr(4000, 512, 4000) == pytest.approx(6.987712e-4, rel=1e-6) == pytest.approx(peak)
    assert noam_lr(1, 512, 4000) == pytest.approx(peak / 4000)
    assert noam_lr(2000, 512, 4000) == pytest.approx(peak / 2)  # linear warm-up
    assert noam_lr(16000, 512, 4000) == pytest.approx(peak / 2)  # inverse square root decay
    assert noam_lr(100, 256, 400, factor=2.0) == pytest.approx(2 * 256 ** -0.5 * 100 * 400 ** -1.5)


def test_label_smoothed_loss_matches_a_hand_computation() -> None:
    probs = torch.tensor([[0.7, 0.1, 0.1, 0.1], [0.2, 0.5, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25]])
    log_probs = probs.log()[None]  # [1, 3, V=4]
    target = torch.tensor([[0, 2, 1]])  # the last position is padding (pad id 1 here)
    loss, nll, n, correct = label_smoothed_nll(log_probs, target, eps=0.1, pad_id=1)
    # q = 0.9 * one-hot + 0.1 / 4 everywhere; loss = -sum(q * log p) over real positions
    by_hand = 0.0
    for row, gold in ((0, 0), (1, 2)):
        q = [0.1 / 4 + (0.9 if v == gold else 0.0) for v in range(4)]
        by_hand -= sum(q[v] * math.log(probs[row, v].item()) for v in range(4))
    assert loss.item() == pytest.approx(by_hand, rel=1e-6)
    assert nll.item() == pytest.approx(-math.log(0.7) - math.log(0.2), rel=1e-6)
    assert (n.item(), correct.item()) == (2, 1)  # row 0 right (0), row 1 wrong (1 != 2)
    plain, *_ = label_smoothed_nll(log_probs, target, eps=0.0, pad_id=1)
    assert plain.item() == pytest.approx(nll.item())


# ----------------------------------------------------------------------------- end to end


@pytest.mark.slow
def test_tiny_config_memorises_32_pairs(prepared: Path, tmp_path: Path) -> None:
    cfg = load_config(TINY, ["train.label_smoothing=0", "train.valid_bleu_lines=0"])
    train_dirs(cfg, prepared, tmp_path / "run")
    last = read_metrics(tmp_path / "run" / METRICS_FILE, "train")[-1]
    assert last["step"] == 200
    assert last["loss"] < 0.05 and last["acc"] > 0.99
    assert 0 < last["pad_frac"] < 0.5 and last["tokens_per_s"] > 0


def test_run_dir_holds_everything_a_run_needs(prepared: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    train_dirs(fast_config("train.max_steps=30", "train.keep_last=2", "train.average_last=2"),
          prepared, run)
    # keep_last step weights; one training state, the newest: all --resume reads
    assert [s for s, _ in step_checkpoints(run)] == [20, 30] and complete_steps(run) == [30]
    weights = [load_file(step_path(run, s)) for s in (20, 30)]
    avg = load_file(run / CHECKPOINT_DIR / AVG_FILE)
    assert all(torch.allclose(avg[k], (weights[0][k] + weights[1][k]) / 2) for k in avg)
    assert (run / CHECKPOINT_DIR / BEST_FILE).is_file() and (run / CURVES_FILE).stat().st_size
    records = read_metrics(run / METRICS_FILE)
    assert all({"step", "split", "loss"} <= r.keys() for r in records)
    assert [r["step"] for r in records if r["split"] == "train"] == [5, 10, 15, 20, 25, 30]
    valid = [r for r in records if r["split"] == "valid"]
    assert [r["step"] for r in valid] == [10, 20, 30]
    assert all({"valid_loss", "valid_ppl", "valid_bleu"} <= r.keys() for r in valid)
    assert all(r["loss"] == r["valid_loss"] for r in valid)
    state = load_state(run, 30)  # weights_only: no arbitrary unpickling
    assert state["step"] == 30 and set(state["position"]) == {"epoch", "index"}
    opened = open_run_dir(run)
    model = opened.model(opened.checkpoint("best"))
    assert opened.config.model.d_model == 32
    assert opened.tokenizer.vocab_size == model.vocab_size


@pytest.mark.slow
def test_resume_continues_exactly(prepared: Path, tmp_path: Path) -> None:
    """17 steps, resume to 40, equals 40 straight: mid-epoch, mid-log-interval, dropout on."""
    sets = ["model.dropout=0.1", "train.save_every=17"]
    straight, split = tmp_path / "straight", tmp_path / "split"
    train_dirs(fast_config(*sets, "train.max_steps=40"), prepared, straight)
    train_dirs(fast_config(*sets, "train.max_steps=17"), prepared, split)
    train_dirs(fast_config(*sets, "train.max_steps=40"), prepared, split, resume=True)
    a, b = load_file(step_path(straight, 40)), load_file(step_path(split, 40))
    assert max((a[k] - b[k]).abs().max().item() for k in a) <= 1e-6
    assert losses(split) == losses(straight) and len(losses(straight)) == 8


def test_early_stopping_after_patience_validations_without_progress(
        prepared: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run = tmp_path / "run"  # a learning rate this small leaves valid BLEU where it was
    train_dirs(fast_config("train.lr_factor=1e-9", "train.patience=2", "train.valid_every=5",
               "train.max_steps=100"), prepared, run)
    assert "early stop: no better valid BLEU in 2 validations" in capsys.readouterr().err
    assert complete_steps(run)[-1] == 15
    best = [(r["step"], r["best"]) for r in read_metrics(run / METRICS_FILE, "valid")]
    assert best == [(5, True), (10, False), (15, False)]


def test_bf16_autocast_on_cpu_trains_like_fp32(prepared: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # bf16 even where the CPU lacks bf16 kernels (slow there, but this run is tiny).
    monkeypatch.setattr("transcli.system.runtime.cpu_has_bf16", lambda: True)
    sets = ["train.max_steps=20", "train.valid_every=1000"]
    train_dirs(fast_config(*sets), prepared, tmp_path / "fp32")
    train_dirs(fast_config(*sets, "train.cpu_precision=bf16"), prepared, tmp_path / "bf16")
    (_, fp32), (_, bf16) = losses(tmp_path / "fp32")[-1], losses(tmp_path / "bf16")[-1]
    assert bf16 != fp32 and bf16 == pytest.approx(fp32, rel=0.05)


def test_bf16_on_a_cpu_without_bf16_kernels_trains_in_fp32(
        prepared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("transcli.system.runtime.cpu_has_bf16", lambda: False)
    sets = ["train.max_steps=10", "train.valid_every=1000"]
    train_dirs(fast_config(*sets), prepared, tmp_path / "fp32")
    train_dirs(fast_config(*sets, "train.cpu_precision=bf16"), prepared, tmp_path / "asked-bf16")
    err = capsys.readouterr().err
    assert "no bf16 kernels" in err and "training in fp32" in err and "(fp32" in err
    assert losses(tmp_path / "asked-bf16") == losses(tmp_path / "fp32")


def test_nan_loss_stops_with_the_last_good_checkpoint_intact(prepared: Path,
                                                             tmp_path: Path) -> None:
    run = tmp_path / "run"
    with pytest.raises(UserError, match=r"step \d+: .*(nan|inf).*diverged.*last good checkpoint"):
        train_dirs(fast_config("train.lr_factor=1e6", "train.save_every=1"), prepared, run)
    steps = complete_steps(run)
    assert steps  # saved before diverging, and nothing after
    weights = load_file(step_path(run, steps[-1]))
    assert all(torch.isfinite(t).all() for t in weights.values())


def test_incompatible_or_foreign_runs_are_refused(prepared: Path, other_prepared: Path,
                                                  tmp_path: Path) -> None:
    run = tmp_path / "run"
    train_dirs(fast_config("train.max_steps=10"), prepared, run)
    before = sorted(p.name for p in (run / CHECKPOINT_DIR).iterdir())
    cases = [
        (dict(cfg=fast_config("model.d_model=64"), data=prepared, resume=True),
         "model.d_model: 32 -> 64"),
        (dict(cfg=fast_config(), data=other_prepared, resume=True), "different prepared dataset"),
        (dict(cfg=fast_config(), data=prepared, resume=False), "--resume .* or --force"),
    ]
    for kwargs, message in cases:
        with pytest.raises(UserError, match=message):
            train_dirs(kwargs["cfg"], kwargs["data"], run, resume=kwargs["resume"])
    assert sorted(p.name for p in (run / CHECKPOINT_DIR).iterdir()) == before
    train_dirs(fast_config("train.max_steps=5"), other_prepared, run, force=True)
    assert complete_steps(run) == [5]


def test_a_changed_vocabulary_is_refused(prepared: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    train_dirs(fast_config("train.max_steps=5"), prepared, run)
    identity = json.loads((run / "run.json").read_text())
    identity["vocab_size"] += 1
    (run / "run.json").write_text(json.dumps(identity))
    with pytest.raises(UserError, match="vocabulary"):
        train_dirs(fast_config("train.max_steps=10"), prepared, run, resume=True)


@pytest.mark.slow
def test_sigterm_finishes_the_step_saves_and_exits_0(prepared: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    proc = transcli_process(*train_cli(prepared, run, "train.max_steps=100000",
                                 "train.save_every=100000"))
    wait_for(run / METRICS_FILE)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "SIGTERM received" in err
    step = complete_steps(run)[-1]
    assert step >= 5 and json.loads((run / METRICS_FILE).read_text().splitlines()[-1])
    # The command the last line gives, as the user would paste it. Without --config,
    # --resume takes the run's own config.yaml (FAST's small model).
    command = shlex.split(err.strip().splitlines()[-1].split("continue with: ", 1)[1])
    assert command[:2] == ["transcli", "train"] and "--resume" in command
    proc = transcli_process(*command[1:], "--max-steps", str(step + 5))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert f"resuming at step {step}" in err and complete_steps(run)[-1] == step + 5


@pytest.mark.slow
def test_sigkill_at_a_random_moment_leaves_a_resumable_run(prepared: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    proc = transcli_process(*train_cli(prepared, run, "train.max_steps=100000",
                                       "train.save_every=1"))
    wait_for(run / METRICS_FILE)
    time.sleep(random.Random(7).uniform(0.0, 0.5))  # seeded: a failure can be rerun
    proc.kill()
    proc.communicate(timeout=30)
    last = complete_steps(run)[-1]
    proc = transcli_process(*train_cli(prepared, run, f"train.max_steps={last + 3}"), "--resume")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert complete_steps(run)[-1] == last + 3
    steps = [r["step"] for r in read_metrics(run / METRICS_FILE, "train")]
    assert steps == sorted(set(steps))  # no step logged twice across the kill


@pytest.mark.slow
def test_two_ddp_processes_match_one_with_twice_the_accumulation(prepared: Path,
                                                                 tmp_path: Path) -> None:
    """torchrun + gloo on CPU: each rank takes every other batch of the same order."""
    sets = ["train.max_steps=6", "train.log_every=1", "train.valid_every=1000",
            "train.batch_tokens=128"]  # 5 batches an epoch: ranks straddle epoch ends
    single = tmp_path / "single"
    train_dirs(fast_config(*sets, "train.accum_steps=2"), prepared, single)
    ddp = tmp_path / "ddp"
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node",
                           "2", "--master_port", str(random.randint(20000, 40000)),
                           "-m", "transcli", *train_cli(prepared, ddp, *sets)],
                          env=ENV, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "x 2 process(es)" in proc.stderr
    a, b = load_file(step_path(single, 6)), load_file(step_path(ddp, 6))
    assert max((a[k] - b[k]).abs().max().item() for k in a) < 1e-4
    (steps, single_losses), (ddp_steps, ddp_losses) = (zip(*losses(r)) for r in (single, ddp))
    assert ddp_steps == steps == tuple(range(1, 7))
    assert ddp_losses == pytest.approx(single_losses, rel=1e-5)
