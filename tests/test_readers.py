"""Every reader of a file transcli wrote (metrics.jsonl, run.json, a prepared dir's
manifest, a weights file's header, an export's record) survives any value of any type
in it: a damaged metrics line is skipped with a warning naming it, anything else is one
line naming the file, never a traceback."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from helpers.cli import one_error_line, run_cli
from helpers.training import fast_config, train_dirs

from transcli.data.prepared_dir import open_prepared_dir
from transcli.data.weights import source_sizes
from transcli.rundir.checkpoints import stored_shapes
from transcli.rundir.info import format_info, run_info
from transcli.rundir.layout import EXPORT_FILE, METRICS_FILE, RUN_FILE
from transcli.rundir.metrics import read_metrics
from transcli.rundir.run import RunDir, open_run_dir
from transcli.system.errors import UserError
from transcli.training.resume import StartOptions, start_session

TRAIN = {"step": 10, "split": "train", "epoch": 1, "loss": 3.0, "nll": 2.9, "ppl": 18.2,
         "acc": 0.3, "lr": 1e-3, "grad_norm": 1.5, "tokens_per_s": 900.0, "pad_frac": 0.1,
         "tgt_tokens": 1000, "src_tokens": 900, "minutes": 0.5}
VALID = {"step": 10, "split": "valid", "loss": 3.1, "valid_loss": 3.1, "valid_nll": 3.0,
         "valid_ppl": 20.1, "valid_acc": 0.3, "valid_bleu": 1.5, "best": True}
ODD = [None, "high", [1], {"a": 1}, True]  # one of each JSON type a field does not hold
GONE = object()  # the field left out


def _damaged(line: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    damaged = {k: v for k, v in line.items() if k != key}
    return damaged if value is GONE else {**damaged, key: value}


@pytest.fixture
def run(sample_run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(sample_run, tmp_path / "run"))


@pytest.mark.parametrize("line, key, value", [
    (line, key, value) for line in (TRAIN, VALID) for key in line
    for value in [*ODD, GONE] if not (key == "best" and value is True)
    if value is not GONE or key in ("step", "split", "loss")])
def test_info_skips_a_damaged_metrics_line_naming_it(run: Path, line: dict, key: str,
                                                     value: Any) -> None:
    """Issue: `info` gave a traceback on a line with "loss": "high", no loss,
    "tgt_tokens": "many", "lr": null, or "valid_bleu": "x" on a best line."""
    damaged = _damaged(line, key, value)
    (run / METRICS_FILE).write_text("".join(json.dumps(r) + "\n" for r in (TRAIN, VALID,
                                                                             damaged)))
    warned: list[str] = []
    info = run_info(open_run_dir(run), warned.append)
    text = format_info(info)
    assert warned == [f"{run / METRICS_FILE} line 3: skipped, {warned[0].split(', ', 1)[1]}"]
    assert repr(key) in warned[0] or key == "split"
    assert "last train loss: 3.0000" in text and "BLEU 1.50" in text


def test_info_warns_on_stderr_and_exits_0(run: Path) -> None:
    (run / METRICS_FILE).write_text(json.dumps(TRAIN) + "\n"
                                    + json.dumps({**TRAIN, "loss": "high"}) + "\n")
    result = run_cli("info", run)
    assert result.returncode == 0, result.stderr
    assert f"warning: {run / METRICS_FILE} line 2: skipped, 'loss' is not a number" in \
        result.stderr and "Traceback" not in result.stderr
    assert read_metrics(run / METRICS_FILE) == [TRAIN]


@pytest.fixture(scope="module")
def trained(prepared: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("trained") / "run"
    train_dirs(fast_config("train.max_steps=5", "train.save_every=5"), prepared, run)
    return run


@pytest.mark.parametrize("key", ["data_hash", "vocab_size", "tokenizer_sha256", "model",
                                 "init_from", "data_dir", "config", "config.train",
                                 "config.train.schedule", "config.train.early_stop_metric",
                                 "config.model.d_model"])
def test_any_value_in_run_json_is_read_or_refused_in_one_line(
        trained: Path, prepared: Path, tmp_path: Path, key: str) -> None:
    run = Path(shutil.copytree(trained, tmp_path / "run"))
    good = json.loads((run / RUN_FILE).read_text())
    for value in [*ODD, 7, -1.5]:
        record = json.loads(json.dumps(good))
        *parents, last = key.split(".")
        holder = record
        for parent in parents:
            holder = holder[parent]
        holder[last] = value
        (run / RUN_FILE).write_text(json.dumps(record))
        for read in (lambda: format_info(run_info(open_run_dir(run))),
                     lambda: start_session(fast_config("train.max_steps=6"),
                                           open_prepared_dir(prepared), RunDir(run),
                                           StartOptions(resume=True))):
            try:
                read()
            except UserError as exc:
                assert "\n" not in str(exc) and str(exc).startswith(str(run))


def test_a_manifest_whose_sources_are_not_counts_is_one_line() -> None:
    assert source_sizes({}) == [] and source_sizes({"sources": "x"}) == []
    assert source_sizes({"sources": {"train": [{"pairs": 3, "weight": 2}]}}) == [(3, 2.0)]
    for pairs, weight in [("3", 1.0), (3, "2"), (None, 1.0), (3, None), (3, 0), (3, [1]),
                          (-1, 1.0), (True, 1.0), (3, 1e9)]:
        with pytest.raises(UserError, match="manifest.json: its train sources"):
            source_sizes({"sources": {"train": [{"pairs": pairs, "weight": weight}]}})


@pytest.mark.parametrize("shape", [["a"], [2.5], [None], [[1]], [-1], [True]])
def test_a_weights_header_with_odd_shapes_is_one_line(tmp_path: Path, shape: list) -> None:
    header = json.dumps({"w": {"dtype": "F32", "shape": shape, "data_offsets": [0, 4]}})
    path = tmp_path / "w.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header.encode() + b"\0" * 4)
    with pytest.raises(UserError, match="w.safetensors: unreadable checkpoint"):
        stored_shapes(path)


@pytest.mark.parametrize("record", [{"format": "ct2", "run_dir": "/runs/base"},
                                    {"format": ["x"], "run_dir": 5}, [1], "x"])
def test_an_export_given_as_a_run_says_what_it_is(tmp_path: Path, record: Any) -> None:
    """Issue: an export dir given to `translate -m` or `info` suggested training into it."""
    export = tmp_path / "export"
    export.mkdir()
    (export / EXPORT_FILE).write_text(json.dumps(record))
    with pytest.raises(UserError) as refused:
        open_run_dir(export)
    line = str(refused.value)
    assert "exported by `transcli export`" in line and "transcli train" not in line
    if isinstance(record, dict) and record["run_dir"] == "/runs/base":
        assert "a CTranslate2 model" in line and "-m /runs/base" in line
        assert line in one_error_line(run_cli("translate", "-m", export, stdin="Hi.\n"))
