"""What a resume may change (`training/resume.py`): every config key and the batch plan
must match, is named and needs --allow-changes, or is free this session; and each rule
as a user meets it: the decay's end, the early-stopping metric, the data position, the
decode settings a run records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers.training import fast_config, train_dirs

from transcli.config.keys import config_keys
from transcli.rundir.checkpoints import load_state
from transcli.rundir.layout import (
    BEST_FILE,
    CHECKPOINT_DIR,
    CONFIG_FILE,
    METRICS_FILE,
    RUN_FILE,
    complete_steps,
    state_path,
)
from transcli.rundir.metrics import read_metrics
from transcli.rundir.run import RunDir
from transcli.system.errors import UserError
from transcli.training.resume import (
    PLAN,
    RULES,
    Rule,
    Start,
    StartOptions,
    config_changes,
    rule_of,
)
from transcli.training.state import Best


def test_every_key_of_config_list_has_one_resume_rule() -> None:
    """A key added to the config must be placed in the table: one that is not would only
    be named (never silently changed), but its place is a decision, not a default."""
    placed = [key for keys in RULES.values() for key in keys]
    assert len(placed) == len(set(placed)), "a key in two rules"
    listed = {key.name.split("[]", 1)[0] for key in config_keys()}
    assert listed - set(placed) == set(), "keys of `config --list` without a rule"
    assert set(placed) - listed == {PLAN}, "rules for keys `config --list` does not have"
    for key in config_keys():
        assert rule_of(key.name) in Rule


def test_the_rules_as_a_user_expects_them() -> None:
    assert rule_of("model.d_model") is Rule.MATCH  # the weights' shapes
    assert rule_of("model.dropout") is Rule.CONSENT  # the recipe
    assert rule_of("decode.beam_size") is Rule.CONSENT  # what `translate -m RUN` does
    assert rule_of("data.train[].weight") is Rule.CONSENT  # what the run says of its data
    assert rule_of(PLAN) is Rule.CONSENT
    assert rule_of("train.log_every") is Rule.FREE and rule_of("train.device") is Rule.FREE
    assert rule_of("train.max_steps") is Rule.CONSENT  # a decay ends there
    assert rule_of("train.max_steps", decaying=False) is Rule.FREE  # noam: a stop
    assert rule_of("train.a_key_added_later") is Rule.CONSENT


@pytest.mark.parametrize("sets, key", [
    (["train.max_steps=20"], "train.max_steps"),  # decay_minutes set: max_steps still ends it
    (["train.max_steps=5"], "train.max_steps"),  # a smaller one squeezes the decay
    (["decode.beam_size=1", "decode.max_len_b=3"], "decode.beam_size"),
])
def test_a_change_a_resume_must_name(sets: list[str], key: str) -> None:
    linear = ["train.schedule=linear", "train.decay_minutes=600", "train.max_steps=10"]
    changes = config_changes(fast_config(*linear).to_dict(), fast_config(*linear, *sets))
    assert [c.rule for c in changes if c.key == key] == [Rule.CONSENT]


# ----------------------------------------------------------------------------- as met


LINEAR = ["train.schedule=linear", "train.warmup_steps=2", "train.decay_minutes=600",
          "train.max_steps=10", "train.save_every=10"]


@pytest.fixture(scope="module")
def linear_run(prepared: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of 10 updates whose linear decay ends at max_steps or after 600 minutes."""
    run = tmp_path_factory.mktemp("linear") / "run"
    train_dirs(fast_config(*LINEAR), prepared, run)
    return run


def _copy(run: Path, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(run, tmp_path / "run"))


def test_a_resume_that_moves_a_decays_end_is_refused_then_named(
        linear_run: Path, prepared: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture) -> None:
    """Issue: with train.decay_minutes set, a resume with another --max-steps went on
    silently, its learning rate jumping back up from 0."""
    run = _copy(linear_run, tmp_path)
    longer = fast_config(*LINEAR, "train.max_steps=15")
    with pytest.raises(UserError, match=r"train\.max_steps: 10 -> 15.*--allow-changes"):
        train_dirs(longer, prepared, run, resume=True)
    assert complete_steps(run) == [10]
    train_dirs(longer, prepared, run, resume=True, allow_changes=True)
    assert "--allow-changes: from here on train.max_steps: 10 -> 15" in capsys.readouterr().err
    assert complete_steps(run)[-1] == 15


def test_decode_settings_given_to_a_resume_are_named_and_recorded_only_with_consent(
        linear_run: Path, prepared: Path, tmp_path: Path) -> None:
    """Issue: `train --resume --set decode.beam_size=1` rewrote the run's decode section
    (what every later `translate -m RUN` does) without a word."""
    run = _copy(linear_run, tmp_path)
    before = (run / CONFIG_FILE).read_bytes()
    decode = fast_config(*LINEAR, "train.max_steps=10", "decode.beam_size=1",
                         "decode.max_len_b=3")
    with pytest.raises(UserError) as refused:
        train_dirs(decode, prepared, run, resume=True)
    assert "decode.beam_size: 2 -> 1" in str(refused.value)
    assert "decode.max_len_b: 20 -> 3" in str(refused.value)
    assert (run / CONFIG_FILE).read_bytes() == before
    train_dirs(decode, prepared, run, resume=True, allow_changes=True)
    assert RunDir(run).recorded_config.decode.beam_size == 1


def _edit_state(run: Path, step: int, **changes: object) -> None:
    state = load_state(run, step)
    state.update(changes)
    torch.save(state, state_path(run, step))


def test_a_data_position_from_another_batch_plan_is_refused_then_moved(
        prepared: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Issue: a state saved under another batch plan (another transcli's batching, or
    --allow-changes with another train.batch_tokens) resumed at an index past the new
    plan's end (IndexError) or on other batches without a word."""
    run = tmp_path / "run"
    sets = ["train.batch_tokens=200", "train.save_every=1", "train.valid_every=1000"]
    train_dirs(fast_config(*sets, "train.max_steps=2"), prepared, run)
    state = load_state(run, 2)
    epoch, index = state["position"]["epoch"], state["position"]["index"]
    saved = state["plan"]
    assert index > 0 and saved["epoch"] == epoch and saved["batches"] > index
    _edit_state(run, 2, plan={**saved, "batches": 2 * saved["batches"], "sha256": "0" * 64})
    longer = fast_config(*sets, "train.max_steps=3")
    with pytest.raises(UserError, match=f"batch plan of epoch {epoch} differs.*"
                                        f"{2 * saved['batches']} batches then"):
        train_dirs(longer, prepared, run, resume=True)
    train_dirs(longer, prepared, run, resume=True, allow_changes=True)
    moved = index * saved["batches"] // (2 * saved["batches"])
    assert f"it goes on at batch {moved} (the same share of the epoch)" in \
        capsys.readouterr().err
    # A state from before plans were saved, its index past today's plan: the epoch over.
    _edit_state(run, 3, plan=None, position={"epoch": epoch, "index": 10_000})
    with pytest.raises(UserError, match="unknown batches then"):
        train_dirs(fast_config(*sets, "train.max_steps=4"), prepared, run, resume=True)
    train_dirs(fast_config(*sets, "train.max_steps=4"), prepared, run, resume=True,
               allow_changes=True)
    assert "it goes on at batch 0 (the epoch starts over)" in capsys.readouterr().err
    assert complete_steps(run)[-1] == 4


def test_a_new_early_stop_metric_starts_the_best_record_over(
        prepared: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Issue: --set train.early_stop_metric=loss on resume compared valid NLLs with the
    best BLEU (0.76 'beats' any NLL), so no validation was ever best again and the run
    stopped early against a BLEU, best.safetensors stale."""
    run = tmp_path / "run"
    sets = ["train.valid_every=5", "train.save_every=5"]
    train_dirs(fast_config(*sets, "train.max_steps=10"), prepared, run)
    best_before = (run / CHECKPOINT_DIR / BEST_FILE).read_bytes()
    loss = fast_config(*sets, "train.max_steps=15", "train.early_stop_metric=loss",
                       "train.patience=1")
    train_dirs(loss, prepared, run, resume=True)
    assert "now follows valid NLL, not BLEU" in capsys.readouterr().err
    after = [r for r in read_metrics(run / METRICS_FILE, "valid") if r["step"] > 10]
    assert after[0]["best"] is True  # the first of the new metric is its best so far
    assert (run / CHECKPOINT_DIR / BEST_FILE).read_bytes() != best_before
    assert load_state(run, 15)["best"]["metric"] == "nll"


def test_a_best_record_saved_without_its_metric_follows_the_recorded_config(
        tmp_path: Path) -> None:
    """States saved before the record named its metric: the run's recorded config says
    what it followed; an unchanged metric keeps the record, another starts it over."""
    bleu = fast_config()
    start = Start(RunDir(tmp_path), bleu, StartOptions(resume=True), 10, None, {},
                  bleu.to_dict())
    assert start._best(Best(21.5, 5, 1)) == Best(21.5, 5, 1, "bleu") and not start.notes
    was_loss = fast_config("train.early_stop_metric=loss").to_dict()
    start = Start(RunDir(tmp_path), bleu, StartOptions(resume=True), 10, None, {}, was_loss)
    assert start._best(Best(3.2, 5, 1)) == Best(metric="bleu")
    assert "now follows valid BLEU, not NLL" in start.notes[0]
    no_bleu = fast_config("train.valid_bleu_lines=0")  # the same as loss
    start = Start(RunDir(tmp_path), no_bleu, StartOptions(resume=True), 10, None, {}, was_loss)
    assert start._best(Best(3.2, 5, 1)) == Best(3.2, 5, 1, "nll") and not start.notes


# ----------------------------------------------------------------------------- round six


def test_a_key_the_runs_record_lacks_is_compared_with_its_default(
        linear_run: Path, prepared: Path, tmp_path: Path) -> None:
    """Issue: a run recorded before train.case_augment existed (as 7e5bbcb wrote run.json)
    resumed with --set train.case_augment=0.5 went on with cased pairs, and a batch plan
    it never had, without a word: the key missing from the record took the new value."""
    recorded = fast_config().to_dict()
    del recorded["train"]["case_augment"]
    changes = config_changes(recorded, fast_config("train.case_augment=0.5"))
    assert [(c.key, c.old, c.new, c.rule) for c in changes] == \
        [("train.case_augment", 0.0, 0.5, Rule.CONSENT)]
    assert config_changes(recorded, fast_config()) == []  # the default: no change
    run = _copy(linear_run, tmp_path)
    record = json.loads((run / RUN_FILE).read_text())
    del record["config"]["train"]["case_augment"]
    (run / RUN_FILE).write_text(json.dumps(record))
    with pytest.raises(UserError, match=r"train\.case_augment: 0\.0 -> 0\.5"):
        train_dirs(fast_config(*LINEAR, "train.case_augment=0.5"), prepared, run, resume=True)


def test_init_from_given_to_a_resume_is_said_unused_and_not_recorded(
        linear_run: Path, prepared: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture) -> None:
    """Issue: `train --resume --init-from OTHER` on a run with checkpoints resumed from its
    own step without a word, and its config.yaml then said it was fine-tuned from OTHER."""
    run = _copy(linear_run, tmp_path)
    other = str(tmp_path / "other-run")
    again = fast_config(*LINEAR, "train.max_steps=11", f"train.init_from={other}")
    train_dirs(again, prepared, run, resume=True, allow_changes=True)
    assert f"--init-from {other} is not used: the run goes on from its own step 10" in \
        capsys.readouterr().err
    assert RunDir(run).recorded_config.train.init_from is None
    assert complete_steps(run)[-1] == 11


@pytest.mark.parametrize("clock", [float("nan"), float("inf"), -60.0])
def test_a_training_clock_no_run_can_have_is_refused(
        linear_run: Path, prepared: Path, tmp_path: Path, clock: float) -> None:
    """Issue: a state whose training clock was NaN resumed, and the decay by minutes set
    the learning rate to 0 for the rest of the run without a word."""
    run = _copy(linear_run, tmp_path)
    _edit_state(run, 10, seconds=clock)
    longer = fast_config(*LINEAR, "train.max_steps=12")
    with pytest.raises(UserError, match="not a usable training state .a count or the training "
                                        "clock is negative"):
        train_dirs(longer, prepared, run, resume=True, allow_changes=True)
    assert complete_steps(run) == [10]
