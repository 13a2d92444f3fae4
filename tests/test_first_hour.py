"""What a new user meets in the first hour, from the walks through the README: each
message says what is wrong and what to do, and nothing that matters happens silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import TINY_CONFIG
from helpers.cli import one_error_line, run_cli
from helpers.training import fast_config, train_dirs

from transcli.config.loading import load_config
from transcli.config.schema import SourceConfig
from transcli.data.prepare import prepare
from transcli.data.tokenizer import TOKENIZER_FILE, Tokenizer, train_tokenizer


def test_a_folder_given_as_a_run_dir_says_what_it_is(prepared: Path, run_dir: Path,
                                                     tmp_path: Path) -> None:
    assert "it is a prepared dir: give it to `transcli train --data" in one_error_line(
        run_cli("info", prepared))
    assert f"give the run dir, {run_dir}" in one_error_line(
        run_cli("translate", "-m", run_dir / "checkpoints", stdin="Hi.\n"))
    missing = one_error_line(run_cli("translate", "-m", tmp_path / "run", stdin="Hi.\n"))
    assert "run directory not found; `transcli train` makes one" in missing
    assert "--data takes the directory `transcli prepare` wrote" in one_error_line(run_cli(
        "train", "-c", TINY_CONFIG, "--data", tmp_path / "nosuch", "--out", tmp_path / "r"))


def test_typos_get_the_name_that_was_meant(run_dir: Path, tmp_path: Path) -> None:
    config = one_error_line(run_cli("train", "-c", "configs/cpu1h.yaml", "--data", tmp_path,
                                    "--out", tmp_path / "run"))
    assert "did you mean 'configs/cpu-1h.yaml'" in config
    key = one_error_line(run_cli("config", "--set", "train.max_minute=30"))
    assert "did you mean 'train.max_minutes'" in key
    empty = one_error_line(run_cli("config", "--set", "train.max_minutes="))
    assert "'train.max_minutes' has no value: give a float" in empty
    step = one_error_line(run_cli("translate", "-m", run_dir, "--checkpoint", "999",
                                  stdin="Hi.\n"))
    assert "no checkpoint of step 999" in step and "steps there: 200" in step


def test_translating_takes_decode_settings_only(run_dir: Path) -> None:
    result = run_cli("translate", "-m", run_dir, "--set", "train.max_minutes=3",
                     stdin="I like trees.\n")
    assert result.returncode == 2 and "only decode.KEY=VALUE settings apply" in result.stderr


def test_a_young_run_says_so_when_it_translates(run_dir: Path) -> None:
    result = run_cli("translate", "-m", run_dir, "--checkpoint", "last",
                     stdin="I like trees.\n")
    assert result.returncode == 0, result.stderr
    assert f"note: {run_dir} has made 200 updates: a model this young repeats" in result.stderr


def test_explain_reads_piped_lines(run_dir: Path, tmp_path: Path) -> None:
    result = run_cli("explain", "-m", run_dir, "--checkpoint", "last", "--out",
                     tmp_path / "pictures", stdin="I like trees.\nWhere is the station?\n")
    assert result.returncode == 0, result.stderr
    assert len(list((tmp_path / "pictures").glob("*.png"))) == 4  # 2 lines, 2 pictures each


@pytest.mark.slow
def test_weights_of_a_run_with_another_tokenizer_are_refused(prepared: Path,
                                                             tmp_path: Path) -> None:
    """Two runs of one shape whose tokenizers differ (the same size, other pieces): one's
    weights in the other would translate garbage, so a weights file records the
    tokenizer it was trained with, and loading it into another run is refused."""
    size = Tokenizer(prepared / TOKENIZER_FILE).vocab_size
    bpe = tmp_path / "bpe"
    bpe.mkdir()
    train_tokenizer([prepared / "train.en", prepared / "train.es"], bpe, vocab_size=size,
                    model_type="bpe", character_coverage=1.0, input_sentence_size=100000,
                    seed=1, byte_fallback=True)
    cfg = load_config(TINY_CONFIG, ["data.valid_size=4", "data.test_size=4"])
    cfg.data.tokenizer_model = str(bpe / TOKENIZER_FILE)
    cfg.data.train = [SourceConfig(src_file=str(prepared / "train.en"),
                                   tgt_file=str(prepared / "train.es"))]
    other = tmp_path / "other"
    prepare(cfg, other, force=False)
    first, second = tmp_path / "first", tmp_path / "second"
    train_dirs(fast_config("train.max_steps=2"), prepared, first)
    train_dirs(fast_config("train.max_steps=2"), other, second)
    weights = first / "checkpoints" / "step-0000002.safetensors"
    line = one_error_line(run_cli("translate", "-m", second, "--checkpoint", weights,
                                  stdin="I like trees.\n"))
    assert "these weights were trained with another tokenizer than this run's" in line
    assert run_cli("translate", "-m", first, "--checkpoint", weights,
                   stdin="I like trees.\n").returncode == 0


@pytest.mark.slow
def test_info_shows_the_decay_clock(prepared: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    train_dirs(fast_config("train.max_steps=10", "train.schedule=linear", "train.decay_minutes=30",
                      "train.warmup_steps=2"), prepared, run)
    info = run_cli("info", run)
    assert info.returncode == 0, info.stderr
    assert "min of training (" in info.stdout and "of the 30-minute decay left)" in info.stdout
    assert json.loads(run_cli("info", run, "--json").stdout)["decay_minutes"] == 30
