"""`transcli export` as a command: where it writes, what it refuses, and that a failed
or refused export leaves nothing behind and never deletes files it did not write.
(The formats' exactness: test_export_ct2.py and test_export_hf.py.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

from transcli.export import EXPORT_FILE, export_run
from transcli.export import ct2 as ct2_format
from transcli.rundir.run import open_run_dir
from transcli.system.errors import UserError

ONE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}


def transcli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "transcli", "export", *args],
                          capture_output=True, text=True, cwd=ROOT, env=ONE_THREAD, timeout=120)


@pytest.fixture
def run(sample_run: Path, tmp_path: Path) -> Path:
    """A copy of the sample run that a test may change."""
    return Path(shutil.copytree(sample_run, tmp_path / "run"))


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.mark.slow
def test_cli_writes_a_ct2_model(run, tmp_path):
    result = transcli("--model", str(run), "--format", "ct2", "--out", str(tmp_path / "out"),
                      "--checkpoint", "200")
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == f"transcli: exported ct2 model to {tmp_path / 'out'}"
    assert (tmp_path / "out" / "model.bin").is_file()
    record = json.loads((tmp_path / "out" / EXPORT_FILE).read_text())
    assert record["checkpoint"] == "200" and record["quantize"] is None
    assert set(record["files"]) == {"config.json", "model.bin", "shared_vocabulary.json"}
    assert leftovers(tmp_path) == []


@pytest.mark.slow
def test_cli_refusal_is_one_line(run, tmp_path):
    result = transcli("--model", str(run), "--format", "ct2", "--out", str(tmp_path / "out"),
                      "--checkpoint", "1234")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"transcli: error: {run}: no checkpoint of step 1234 in checkpoints/"
        " (steps there: 200; or best, last, avg)"]
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("options, message", [
    (dict(checkpoint="avg"), "no averaged checkpoint in this run"),
    (dict(fmt="onnx"), "--format onnx: must be one of ct2, hf"),
    (dict(quantize="int4"), "--quantize int4: must be one of int8, int16, float16"),
    (dict(fmt="hf", quantize="int8"), "the hf format is exported in float32"),
])
def test_refusals(run, tmp_path, options, message):
    with pytest.raises(UserError, match=message.replace("-", r"\-")):
        export_run(open_run_dir(run), options.get("fmt", "ct2"), tmp_path / "out",
                   options.get("checkpoint", "last"), options.get("quantize"))
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("inside", [".", "checkpoints", "exports/ct2"])
def test_an_out_inside_the_run_dir_is_refused(run, inside):
    """The run dir, its checkpoints/ or a folder below them: the export's files would
    land among the run's own (--force or not)."""
    out = run / inside
    before = sorted(p.name for p in run.rglob("*"))
    with pytest.raises(UserError, match=f"is inside the run dir {run}; give --out a folder"):
        export_run(open_run_dir(run), "hf", out, "last", force=True)
    assert sorted(p.name for p in run.rglob("*")) == before


def test_an_out_folder_named_near_the_systems_limit(run, tmp_path):
    out = tmp_path / ("d" * 250)  # its temp folders' names are cut, not refused
    export_run(open_run_dir(run), "ct2", out, "last")
    assert (out / "model.bin").is_file() and leftovers(tmp_path) == []


def test_non_empty_out_needs_force_and_keeps_other_files(run, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="--out is not empty; use --force"):
        export_run(open_run_dir(run), "ct2", out, "last")
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    export_run(open_run_dir(run), "ct2", out, "last", force=True)
    # over the ct2 export: its files go
    export_run(open_run_dir(run), "hf", out, "last", force=True)
    names = {p.name for p in out.iterdir()}
    assert "notes.txt" in names and "model.safetensors" in names
    assert not names & {"model.bin", "shared_vocabulary.json"}
    assert (out / "notes.txt").read_text() == "mine" and leftovers(tmp_path) == []


def test_an_empty_out_directory_is_used(run, tmp_path):
    (tmp_path / "out").mkdir()
    export_run(open_run_dir(run), "ct2", tmp_path / "out", "last")
    assert (tmp_path / "out" / "model.bin").is_file()


def test_unwritable_out_is_one_line(run, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(UserError, match="file: is a file, so .*file/out cannot be created"):
        export_run(open_run_dir(run), "ct2", blocker / "out", "last")
    with pytest.raises(UserError, match="--out is a file"):
        export_run(open_run_dir(run), "ct2", blocker, "last")
    assert blocker.read_text() == "not a directory"


def test_failure_while_writing_leaves_nothing(run, tmp_path, monkeypatch):
    def half_then_fail(model, tokenizer, cfg, directory, quantize):
        (directory / "model.bin").write_bytes(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ct2_format, "write", half_then_fail)
    with pytest.raises(UserError, match="out: cannot write the export .No space left on device."):
        export_run(open_run_dir(run), "ct2", tmp_path / "out", "last")
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("fmt, module, extra", [("ct2", "ctranslate2", "ct2"),
                                                ("hf", "transformers", "hf")])
def test_missing_optional_package_names_the_extra(run, tmp_path, monkeypatch, fmt, module, extra):
    monkeypatch.setitem(sys.modules, module, None)  # what `import` sees when it is absent
    monkeypatch.setitem(sys.modules, f"{module}.converters", None)
    monkeypatch.setitem(sys.modules, f"{module}.specs", None)
    with pytest.raises(UserError, match=rf"pip install transcli\[{extra}\]"):
        export_run(open_run_dir(run), fmt, tmp_path / "out", "last")
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []


def test_missing_run_dir(tmp_path):
    with pytest.raises(UserError, match="nowhere: run directory not found"):
        export_run(open_run_dir(tmp_path / "nowhere"), "ct2", tmp_path / "out")
    assert not (tmp_path / "out").exists()
