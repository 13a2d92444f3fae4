"""Run-dir bookkeeping: which config a `train` reads, what a resume records and may change,
and the tokenizer a run and a prepared dir keep."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import TINY_CONFIG as TINY
from helpers.cli import one_error_line, run_cli
from helpers.training import fast_config, train_dirs

from transcli.config.loading import load_config, save_config
from transcli.config.schema import Config
from transcli.data.tokenizer import TOKENIZER_FILE, Tokenizer, train_tokenizer
from transcli.rundir.layout import CONFIG_FILE
from transcli.rundir.run import RunDir, write_run_files
from transcli.system.errors import UserError
from transcli.training.resume import recorded_config, train_config


def test_the_config_train_reads(tmp_path: Path) -> None:
    run, given = tmp_path / "run", tmp_path / "given.yaml"
    save_config(load_config(TINY, ["train.max_steps=7"]), given)
    assert train_config(given, RunDir(run), resume=True).train.max_steps == 7
    with pytest.raises(UserError, match="--resume: no run to continue here"):
        train_config(None, RunDir(run), resume=True)  # a mistyped --out: not the defaults
    assert train_config(None, RunDir(run), resume=False) == load_config(None)  # the defaults
    run.mkdir()
    save_config(load_config(TINY, ["train.max_steps=9"]), run / CONFIG_FILE)
    assert train_config(None, RunDir(run), resume=True).train.max_steps == 9  # the run's own
    assert train_config(None, RunDir(run), resume=False) == load_config(None)
    assert train_config(given, RunDir(run), resume=True).train.max_steps == 7
    assert train_config(None, RunDir(run), True, ["train.seed=3"]).train.seed == 3


def _write(run: Path, data: Path, fresh: bool, *sets: str) -> None:
    """`write_run_files` as a start (`fresh`) or a resume of the run in `run` makes it
    (recording `recorded_config` of the run's config and this one), for a prepared dir
    `data` whose tokenizer is the bytes b"spm"."""
    prepared = SimpleNamespace(dir=data, tokenizer=SimpleNamespace(model_bytes=b"spm"))
    cfg, previous = load_config(TINY, list(sets)), RunDir(run).existing_config
    record = cfg if fresh else recorded_config(previous, cfg)
    write_run_files(RunDir(run), record, {"data_hash": "x"}, prepared, fresh)


def load_run_config(run: Path) -> Config:
    return RunDir(run).recorded_config


def test_a_resume_that_stops_earlier_keeps_the_runs_target(tmp_path: Path) -> None:
    run, data = tmp_path / "run", tmp_path / "data"
    data.mkdir()
    _write(run, data, True, "train.max_steps=1000")
    before = (run / CONFIG_FILE).read_bytes()
    _write(run, data, False, "train.max_steps=300")
    assert (run / CONFIG_FILE).read_bytes() == before  # not rewritten
    _write(run, data, False, "train.max_steps=300", "train.valid_every=7")
    recorded = load_run_config(run)
    assert (recorded.train.max_steps, recorded.train.valid_every) == (1000, 7)
    _write(run, data, False, "train.max_steps=5000")
    assert load_run_config(run).train.max_steps == 5000  # a longer run is a new target
    _write(run, data, False, "train.max_steps=5000", "train.max_minutes=1")
    assert load_run_config(run).train.max_minutes == 0  # this session's limit, not the run's
    _write(run, data, True, "train.max_steps=10")
    assert load_run_config(run).train.max_steps == 10  # a fresh run starts over


@pytest.mark.slow
def test_a_resume_that_changes_the_recipe_names_each_change_and_needs_consent(
        prepared: Path, tmp_path: Path) -> None:
    """--resume continues exactly: a training setting changed by -c, --set or an edit of
    the run's config.yaml is named key by key and refused without --allow-changes;
    settings of how the run runs (logging, threads, a session's time limit) are not."""
    run, linear = tmp_path / "run", ["train.schedule=linear", "train.warmup_steps=5"]
    train_dirs(fast_config("train.max_steps=10", *linear), prepared, run)
    changed = fast_config("train.max_steps=20", "train.label_smoothing=0.2",
                          "train.log_every=2", "train.max_minutes=5", *linear)
    with pytest.raises(UserError) as refused:
        train_dirs(changed, prepared, run, resume=True)
    message = str(refused.value)
    assert "train.label_smoothing: 0.1 -> 0.2" in message
    assert "train.max_steps: 10 -> 20" in message  # a linear decay ends at max_steps
    assert "log_every" not in message and "max_minutes" not in message
    assert "--allow-changes" in message and not (run / "checkpoints" / "step-0000020.state.pt"
                                                 ).exists()
    train_dirs(changed, prepared, run, resume=True, allow_changes=True)
    record = json.loads((run / "run.json").read_text())
    assert record["config"]["train"]["label_smoothing"] == 0.2  # the recipe from here on
    # An edit of the run's own config.yaml, resumed without -c: named the same way.
    (run / CONFIG_FILE).write_text((run / CONFIG_FILE).read_text().replace(
        "label_smoothing: 0.2", "label_smoothing: 0.3"))
    result = run_cli("train", "--data", prepared, "--out", run, "--resume",
                     "--set", "train.max_steps=30")
    assert "train.label_smoothing: 0.2 -> 0.3" in one_error_line(result)


def another_tokenizer_of_the_same_size(prepared: Path, folder: Path) -> Path:
    """A BPE model trained on the prepared train text, as large as its unigram model."""
    size = Tokenizer(prepared / TOKENIZER_FILE).vocab_size
    train_tokenizer([prepared / "train.en", prepared / "train.es"], folder, vocab_size=size,
                    model_type="bpe", character_coverage=1.0, input_sentence_size=100000,
                    seed=1, byte_fallback=True)
    assert Tokenizer(folder / TOKENIZER_FILE).vocab_size == size
    return folder / TOKENIZER_FILE


@pytest.mark.slow
def test_a_swapped_tokenizer_is_refused_by_every_command_that_loads_it(
        prepared: Path, tmp_path: Path) -> None:
    """A run dir records its tokenizer's SHA-256 and a prepared dir its manifest's: one
    replaced since by another of the same size would translate garbage, or train on ids
    it did not make, without a word; it is refused in one line."""
    other = another_tokenizer_of_the_same_size(prepared, tmp_path)
    run = tmp_path / "run"
    train_dirs(fast_config("train.max_steps=2"), prepared, run)
    shutil.copyfile(other, run / TOKENIZER_FILE)
    for args in (["translate", "-m", run], ["info", run],
                 ["export", "-m", run, "--format", "hf", "--out", tmp_path / "hf"],
                 ["score", "-m", run, "--src", prepared / "test.en", "--tgt",
                  prepared / "test.es"]):
        line = one_error_line(run_cli(*args, stdin="I like trees.\n"))
        assert "spm.model: not the tokenizer this run was trained with" in line, args
    data = tmp_path / "prepared"
    shutil.copytree(prepared, data)
    shutil.copyfile(other, data / TOKENIZER_FILE)
    with pytest.raises(UserError, match="not the tokenizer this dir was prepared with"):
        train_dirs(fast_config("train.max_steps=4"), data, run, resume=True)
