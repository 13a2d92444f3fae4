"""`transcli info`, `transcli config` and `transcli --version`: read from the run's files
and from the config dataclasses themselves."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import typing
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import yaml
from helpers.cli import one_error_line, run_cli
from helpers.training import fast_config, train_dirs

import transcli as package
from transcli.config.keys import SOURCE_PREFIX, config_keys, field_meanings
from transcli.config.loading import load_config
from transcli.config.schema import Config, DataConfig, SourceConfig
from transcli.model.transformer import Transformer, count_parameters
from transcli.rundir.info import run_info, stored_parameters
from transcli.rundir.layout import METRICS_FILE, RUN_FILE, step_path
from transcli.rundir.run import open_run_dir
from transcli.system.errors import UserError


@pytest.fixture(scope="module")
def trained(prepared: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("info") / "run"
    torch.set_num_threads(1)
    train_dirs(fast_config("train.max_steps=20"), prepared, run)
    return run


@pytest.mark.slow
def test_info_of_a_trained_run(trained, prepared):
    info = run_info(open_run_dir(trained))
    cfg = load_config(trained / "config.yaml")
    model = Transformer(cfg.model, info["vocab_size"])
    assert info["parameters"] == count_parameters(model)  # from the file's header alone
    records = [json.loads(line) for line in (trained / METRICS_FILE).read_text().splitlines()]
    train_lines = [r for r in records if r["split"] == "train"]
    assert info["steps"] == 20 and info["tgt_tokens"] == train_lines[-1]["tgt_tokens"]
    best = [r for r in records if r.get("best")][-1]
    assert info["best_valid"]["step"] == best["step"]
    assert info["best_valid"]["valid_bleu"] == best["valid_bleu"]
    assert info["checkpoints"] == {"steps": [10, 20], "resume_from": 20, "best": True,
                                   "avg": True, "keep_last": 2}
    folder = trained / "checkpoints"
    sizes = {path.name: path.stat().st_size for path in folder.iterdir()}
    assert info["disk"]["step weights"] == sizes["step-0000010.safetensors"] + sizes[
        "step-0000020.safetensors"]
    assert info["disk"]["training state"] == sizes["step-0000020.state.pt"]
    assert "step-0000010.state.pt" not in sizes  # one state: the one --resume reads
    assert sum(info["disk"].values()) == sum(p.stat().st_size for p in trained.rglob("*")
                                             if p.is_file())
    assert info["changed"]["model.d_model"] == 32 and "model.pre_norm" not in info["changed"]
    assert info["origin"]["data_dir"] == str(prepared.resolve())
    result = run_cli("info", trained)
    assert result.returncode == 0, result.stderr
    assert "parameters:" in result.stdout and f"{info['parameters']:,}" in result.stdout
    assert "20 updates" in result.stdout and "model.d_model: 32" in result.stdout
    assert "--resume continues from step 20" in result.stdout
    assert "training state for --resume" in result.stdout
    as_json = run_cli("info", trained, "--json")
    assert json.loads(as_json.stdout)["parameters"] == info["parameters"]


def test_info_of_a_run_with_nothing_logged_yet(run_dir, tmp_path):
    run = Path(shutil.copytree(run_dir, tmp_path / "run"))  # the shared run stays whole
    info = run_info(open_run_dir(run))
    assert info["last_train"] is None and info["best_valid"] is None
    assert info["steps"] == 200 and info["checkpoints"]["steps"] == [200]
    assert info["parameters"] == stored_parameters(step_path(run, 200))
    step_path(run, 200).unlink()
    result = run_cli("info", run)
    assert result.returncode == 0, result.stderr
    assert "no weights saved yet" in result.stdout and "none yet" in result.stdout
    assert "not a run directory" in one_error_line(run_cli("info", tmp_path))


@pytest.mark.slow
@pytest.mark.parametrize("content", ["[]", '"run"', "{}"])
def test_info_refuses_a_run_record_that_is_not_one(run_dir, tmp_path, content):
    """A run.json holding `[]` was once ignored by `info` (only train looked at it)."""
    run = Path(shutil.copytree(run_dir, tmp_path / "run"))
    (run / RUN_FILE).write_text(content + "\n")
    line = one_error_line(run_cli("info", run))
    assert line.startswith(f"transcli: error: {run / RUN_FILE}: not a transcli run record (")


@pytest.mark.slow
def test_a_run_record_that_is_a_fifo_is_refused_not_waited_on(run_dir, tmp_path):
    run = Path(shutil.copytree(run_dir, tmp_path / "run"))
    (run / RUN_FILE).unlink(missing_ok=True)
    os.mkfifo(run / RUN_FILE)
    line = one_error_line(run_cli("info", run, timeout=60))
    assert line == (f"transcli: error: {run / RUN_FILE}: not a regular file: {run} is not a "
                    f"run dir transcli can read or continue")


# ----------------------------------------------------------------------------- config


def test_every_key_has_a_meaning():
    """A new config key without a comment fails here (config --list would show it bare)."""
    assert [key.name for key in config_keys() if not key.meaning] == []


def test_the_list_covers_every_field_with_its_type_and_default():
    keys = {key.name: key for key in config_keys()}
    for section, cls in typing.get_type_hints(Config).items():
        for f in dataclasses.fields(cls):
            assert f"{section}.{f.name}" in keys
    assert {SOURCE_PREFIX + f.name for f in dataclasses.fields(SourceConfig)} <= keys.keys()
    assert (keys["train.max_steps"].type, keys["train.max_steps"].default) == ("int", "100000")
    assert keys["train.init_from"].type == "str or null"
    assert (keys["data.train"].type, keys["data.train"].default) == ("list of sources", "[]")
    assert keys["model.pre_norm"].default == "false"
    assert keys["train.schedule"].meaning.startswith("After warm-up: noam")  # comment above
    assert keys["decode.beam_size"].meaning == "hypotheses kept per step by beam search"


@dataclass
class Example:
    plain: int = 1  # said at the end of the line
    # said above,
    # over two lines
    above: str = "x"
    bare: float = 0.5


def test_meanings_come_from_trailing_or_preceding_comments():
    assert field_meanings(Example) == {"plain": "said at the end of the line",
                                       "above": "said above, over two lines", "bare": ""}
    assert field_meanings(DataConfig)["input_sentence_size"].startswith("Sentences sampled")


def test_config_command():
    listed = run_cli("config", "--list")
    assert listed.returncode == 0
    assert all(key.name in listed.stdout for key in config_keys())
    resolved = run_cli("config", "--set", "train.max_steps=7", "--set", "model.heads=2")
    assert resolved.returncode == 0, resolved.stderr
    back = yaml.safe_load(resolved.stdout)
    assert back == load_config(None, ["train.max_steps=7", "model.heads=2"]).to_dict()
    assert "takes no --config" in one_error_line(run_cli("config", "--list", "--set", "a.b=1"))


def test_version():
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout == f"transcli {package.__version__}\n"


def test_tensorboard_without_the_package_is_one_line_before_anything_is_written(
        prepared, tmp_path, monkeypatch):
    for name in ("tensorboard", "torch.utils.tensorboard"):  # as if it were not installed
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(UserError, match=r"pip install tensorboard"):
        train_dirs(fast_config("train.tensorboard=true"), prepared, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_tensorboard_logs_the_metrics(prepared, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = tmp_path / "run"
    train_dirs(fast_config("train.tensorboard=true", "train.max_steps=10"), prepared, run)
    events = EventAccumulator(str(run / "tensorboard"))
    events.Reload()
    records = [json.loads(line) for line in (run / METRICS_FILE).read_text().splitlines()]
    train_loss = [(r["step"], r["loss"]) for r in records if r["split"] == "train"]
    assert [(e.step, pytest.approx(e.value)) for e in events.Scalars("train/loss")] == train_loss
    assert [e.step for e in events.Scalars("valid/bleu")] == [10]


@pytest.mark.parametrize("command", ["score", "explain", "info", "config"])
def test_the_new_commands_have_help(command):
    result = run_cli(command, "--help")
    assert result.returncode == 0 and "Usage" in result.stdout
    assert command in run_cli("--help").stdout
