"""Training never loses work: signals through a dead pipe, SIGHUP, and training state
that loads but cannot be used."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
import torch
from helpers.training import fast_config, train_cli, train_dirs, transcli_process, wait_for
from helpers.waiting import DEADLINE, Collected

from transcli.rundir.checkpoints import load_state
from transcli.rundir.layout import METRICS_FILE, complete_steps, state_path, step_checkpoints
from transcli.system.errors import UserError
from transcli.system.signals import StoppedAtOnce, StopSignals


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
     "a parameter group that doesn.t match the size"),
    (lambda s: s.update(ema={"x": torch.zeros(1)}), "averaged weights do not match"),
])
def test_a_state_file_that_loads_but_does_not_fit_is_refused(prepared: Path, tmp_path: Path,
                                                             spoil, message: str) -> None:
    run, averaged = tmp_path / "run", "train.ema_decay=0.99"  # a state with every part
    train_dirs(fast_config("train.max_steps=10", averaged), prepared, run)
    state = load_state(run, 10)
    spoil(state)
    torch.save(state, state_path(run, 10))
    with pytest.raises(UserError, match=f"state.pt: not a usable training state .*{message}"):
        train_dirs(fast_config("train.max_steps=20", averaged), prepared, run, resume=True)


@pytest.mark.slow
def test_sigterm_during_a_long_accumulation_saves_without_waiting_for_it(
        prepared: Path, tmp_path: Path) -> None:
    """An update of 10,000 batches would take minutes: a stop signal while they are
    gathered or between two of them drops that update, saves what the run had and exits
    0, saying so at once."""
    run = tmp_path / "run"
    proc = transcli_process(*train_cli(prepared, run, "train.max_steps=3",
                                       "train.accum_steps=10000", "train.save_every=1"))
    err = Collected(proc, proc.stderr)
    err.wait_for("new run in ")  # the first update's batches are being gathered
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=DEADLINE) == 0, err.text()
    assert "SIGTERM received: stopping training after this step" in err.whole()
    assert "continue with: transcli train" in err.text()


def test_a_stop_signal_after_the_start_lines_is_a_stop_of_training(
        prepared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    """Once training has said where it starts, a stop signal ends it as training's do
    (what is on disk and how to continue said, exit 0), never as a stop at once: that
    line is what a user, or a test, sees before stopping it."""
    from transcli.training import report

    class StoppedAtOnceInstead(Exception):
        pass

    def at_once(signum: int, frame: object) -> None:  # what a command does outside training
        raise StoppedAtOnceInstead

    said = report.say

    def say_then_stop(message: str, main: bool = True, prefix: bool = True) -> None:
        said(message, main, prefix)
        if message.startswith("new run in "):
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(report, "say", say_then_stop)
    run = tmp_path / "run"
    previous = signal.signal(signal.SIGTERM, at_once)
    try:
        train_dirs(fast_config("train.max_steps=100000"), prepared, run)
    finally:
        signal.signal(signal.SIGTERM, previous)
    err = capsys.readouterr().err
    assert "SIGTERM received: stopping training after this step" in err
    assert "continue with: transcli train" in err.strip().splitlines()[-1]


@pytest.mark.slow
def test_two_sigterms_50_ms_apart_say_which_checkpoint_is_on_disk(prepared: Path,
                                                                   tmp_path: Path) -> None:
    """The first asks for a stop with a save, the second stops at once: either way the last
    line names the checkpoint a resume continues from, and that resume works. (The second
    once cut the save short and exited with a line about output files.)"""
    run = tmp_path / "run"
    proc = transcli_process(*train_cli(prepared, run, "train.max_steps=100000",
                                       "train.save_every=7"))
    wait_for(run / METRICS_FILE)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    last = err.replace("\r", "\n").strip().splitlines()[-1]
    steps = complete_steps(run)
    if proc.returncode == 0:  # the save was done before the second signal came
        assert f"checkpoint step {steps[-1]} saved" in last, err
    else:
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert last.startswith("transcli: second SIGTERM: training stopped; "), err
        assert (f"the last good checkpoint (step {steps[-1]}) is intact" if steps
                else "no checkpoint had been saved yet") in last
    assert last.endswith(f"continue with: transcli train --data {prepared} --out {run} --resume")
    newest = [step for step, _ in step_checkpoints(run)][-1:]
    assert newest == steps[-1:]  # never weights without their state
    more = f"train.max_steps={max(steps, default=0) + 2}"
    resumed = transcli_process(*train_cli(prepared, run, more), "--resume")
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err


def test_a_second_signal_waits_for_a_checkpoint_being_written() -> None:
    """Real signals to this process: inside `finishing()` the second one is held until the
    block ends, then stops the work; outside it, it stops at once."""
    with StopSignals(on_disk=lambda: "step 7 on disk") as signals:
        os.kill(os.getpid(), signal.SIGTERM)
        assert signals.received == "SIGTERM"
        with pytest.raises(StoppedAtOnce):
            with signals.finishing():
                os.kill(os.getpid(), signal.SIGTERM)
                written = True  # the block goes on to its end
        assert written
        with pytest.raises(StoppedAtOnce) as stopped:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        assert stopped.value.code == 128 + signal.SIGTERM


def test_a_second_signal_inside_a_class_being_made_still_stops_at_once(
        capsys: pytest.CaptureFixture) -> None:
    """Python wraps what a class body's `__set_name__` raises in a RuntimeError (it happened
    inside matplotlib's first import, as the curves were drawn): still a stop at once, 143."""
    class Named:
        def __set_name__(self, owner: type, name: str) -> None:
            os.kill(os.getpid(), signal.SIGTERM)

    with pytest.raises(StoppedAtOnce) as stopped:
        with StopSignals(on_disk=lambda: "step 7 on disk"):
            os.kill(os.getpid(), signal.SIGTERM)
            type("Made", (), {"field": Named()})
    assert stopped.value.code == 128 + signal.SIGTERM
    assert capsys.readouterr().err.splitlines()[-1] == (
        "transcli: second SIGTERM: training stopped; step 7 on disk")


@pytest.mark.slow
def test_resume_of_a_run_killed_before_its_first_save_starts_over(prepared: Path,
                                                                  tmp_path: Path) -> None:
    """Logged, never saved (killed, or stopped at once before the first save): once an
    IndexError, now a fresh start in the same run dir."""
    run = tmp_path / "run"
    proc = transcli_process(*train_cli(prepared, run, "train.max_steps=100000",
                                       "train.save_every=100000", "train.valid_every=100000"))
    wait_for(run / METRICS_FILE)
    proc.kill()
    proc.wait(timeout=60)
    assert not complete_steps(run)
    resumed = transcli_process(*train_cli(prepared, run, "train.max_steps=3"), "--resume")
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert complete_steps(run) == [3]
