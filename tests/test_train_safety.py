"""Training never loses work: signals through a dead pipe, SIGHUP, and training state
that loads but cannot be used."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
import torch
from helpers.training import fast_config, train_cli, transcli_process, wait_for

from transcli.rundir.checkpoints import load_state
from transcli.rundir.layout import METRICS_FILE, complete_steps, state_path
from transcli.system.errors import UserError
from transcli.training.loop import train


@pytest.mark.slow
def test_ctrl_c_after_the_log_reader_died_still_saves_and_exits_0(prepared: Path,
                                                                   tmp_path: Path) -> None:
    """`transcli train ... 2>&1 | tee log` and Ctrl-C: tee dies first, then every write
    to stderr fails; the step must still finish and be saved."""
    run = tmp_path / "run"
    proc = transcli_process(*train_cli(prepared, run, "train.max_steps=100000",
                                       "train.save_every=100000"))
    wait_for(run / METRICS_FILE)
    proc.stderr.close()  # the reader of stderr is gone
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 0
    assert complete_steps(run) and complete_steps(run)[-1] >= 5


@pytest.mark.slow
def test_sighup_finishes_the_step_and_saves(prepared: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    proc = transcli_process(*train_cli(prepared, run, "train.max_steps=100000",
                                       "train.save_every=100000"))
    wait_for(run / METRICS_FILE)
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "SIGHUP received" in err and "--resume" in err
    assert complete_steps(run)[-1] >= 5


@pytest.mark.parametrize("spoil, message", [
    (lambda s: s["optimizer"]["state"][0].update(exp_avg=torch.zeros(3)),
     "optimizer exp_avg of parameter 0 is not a float tensor of shape"),
    (lambda s: s["optimizer"]["state"][1].update(exp_avg_sq=torch.full_like(
        s["optimizer"]["state"][1]["exp_avg_sq"], float("nan"))), "exp_avg_sq of parameter 1"),
    (lambda s: s.pop("position"), "no 'position'"),
    (lambda s: s.update(step=3), "it says step 3, its file name step 10"),
    (lambda s: s["optimizer"]["param_groups"][0].update(params=[0, 1]),
     "optimizer state for 2 parameters"),
    (lambda s: s.update(ema={"x": torch.zeros(1)}), "averaged weights do not match"),
])
def test_a_state_file_that_loads_but_does_not_fit_is_refused(prepared: Path, tmp_path: Path,
                                                             spoil, message: str) -> None:
    run = tmp_path / "run"
    train(fast_config("train.max_steps=10"), prepared, run)
    state = load_state(run, 10)
    spoil(state)
    torch.save(state, state_path(run, 10))
    with pytest.raises(UserError, match=f"state.pt: not a usable training state .*{message}"):
        train(fast_config("train.max_steps=20"), prepared, run, resume=True)


@pytest.mark.slow
def test_sigterm_during_a_long_accumulation_saves_without_waiting_for_it(
        prepared: Path, tmp_path: Path) -> None:
    """An update of 10,000 batches would take minutes: a stop signal between two of its
    batches drops that update, saves what the run had and exits 0, saying so at once."""
    run = tmp_path / "run"
    proc = transcli_process(*train_cli(prepared, run, "train.max_steps=3",
                                       "train.accum_steps=10000", "train.save_every=1"))
    wait_for(run / "run.json", timeout=120)  # every check passed: the run starts now
    time.sleep(3)  # deep inside the first update
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "SIGTERM received: stopping training after this step" in err
    assert "continue with: transcli train" in err
