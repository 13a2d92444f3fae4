"""Run-dir bookkeeping: which config a `train` reads, and what a resume records."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import TINY_CONFIG as TINY

from transcli.config.loading import load_config, save_config
from transcli.data.tokenizer import TOKENIZER_FILE
from transcli.rundir.layout import CONFIG_FILE, load_run_config, train_config_path, write_run_files
from transcli.system.errors import UserError


def test_the_config_train_reads(tmp_path: Path) -> None:
    run, given = tmp_path / "run", tmp_path / "given.yaml"
    assert train_config_path(given, run, resume=True) == given
    with pytest.raises(UserError, match="--resume: no run to continue here"):
        train_config_path(None, run, resume=True)  # a mistyped --out: not the defaults
    assert train_config_path(None, run, resume=False) is None  # a new run: the defaults
    run.mkdir()
    save_config(load_config(TINY), run / CONFIG_FILE)
    assert train_config_path(None, run, resume=True) == run / CONFIG_FILE
    assert train_config_path(None, run, resume=False) is None
    assert train_config_path(given, run, resume=True) == given


def _write(run: Path, data: Path, fresh: bool, *sets: str) -> None:
    write_run_files(run, load_config(TINY, list(sets)), {"data_hash": "x"}, data, fresh)


def test_a_resume_that_stops_earlier_keeps_the_runs_target(tmp_path: Path) -> None:
    run, data = tmp_path / "run", tmp_path / "data"
    data.mkdir()
    (data / TOKENIZER_FILE).write_bytes(b"spm")
    _write(run, data, True, "train.max_steps=1000")
    before = (run / CONFIG_FILE).read_bytes()
    _write(run, data, False, "train.max_steps=300")
    assert (run / CONFIG_FILE).read_bytes() == before  # not rewritten
    _write(run, data, False, "train.max_steps=300", "train.valid_every=7")
    recorded = load_run_config(run)
    assert (recorded.train.max_steps, recorded.train.valid_every) == (1000, 7)
    _write(run, data, False, "train.max_steps=5000")
    assert load_run_config(run).train.max_steps == 5000  # a longer run is a new target
    _write(run, data, True, "train.max_steps=10")
    assert load_run_config(run).train.max_steps == 10  # a fresh run starts over
