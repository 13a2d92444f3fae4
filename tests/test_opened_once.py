"""Each file of a prepared dir or a run dir is opened once per command: a command opens
the dir once (`data.prepared_dir.open_prepared_dir`, `rundir.run.open_run_dir`) and hands
the handle on. Counted with strace on the real commands, so an open by a library (numpy,
sentencepiece, safetensors) counts as much as one of transcli's own."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import urllib.request
from pathlib import Path
from typing import Optional

import pytest
from helpers.opens import STRACE, traced, tracee, within
from helpers.training import train_cli
from helpers.waiting import running, wait_until

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(STRACE is None, reason="strace is not installed: the open "
                                                        "counts are read from its trace")]


def run_counted(args: list, *folders: Path, stdin: str | None = None) -> dict[str, int]:
    with traced(args, stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as (
            process, opened):
        error = process.stderr.read().decode()
    assert process.returncode == 0, error
    return within(opened, *folders)


@pytest.fixture(scope="module")
def trained(prepared: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of 20 updates, validated and saved at 10 and 20 (best, avg, steps)."""
    run = tmp_path_factory.mktemp("opened") / "run"
    run_counted(train_cli(prepared, run, "train.max_steps=20"), run)
    return run


def test_training_and_its_resume_open_each_file_once(prepared: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    opened = run_counted(train_cli(prepared, run, "train.max_steps=20"), prepared, run)
    assert {"prepared/manifest.json", "prepared/spm.model", "prepared/train.src.npy",
            "prepared/valid.idx.npy", "prepared/valid.en"} <= opened.keys()
    assert set(opened.values()) == {1}, opened  # the checkpoints averaged at the end too
    opened = run_counted([*train_cli(prepared, run, "train.max_steps=30"), "--resume"],
                         prepared, run)
    assert {"run/run.json", "run/config.yaml", "run/metrics.jsonl",
            "run/checkpoints/step-0000020.state.pt"} <= opened.keys()
    # The step resumed from is read again at the end, as one of the steps averaged.
    assert opened.pop("run/checkpoints/step-0000020.safetensors") == 2
    assert set(opened.values()) == {1}, opened


@pytest.mark.parametrize("command", ["translate", "translate-ct2", "evaluate", "score",
                                     "explain", "export-hf", "export-ct2", "info"])
def test_a_command_opens_each_file_of_the_run_once(command: str, trained: Path,
                                                   tmp_path: Path) -> None:
    src, ref = tmp_path / "in.en", tmp_path / "ref.es"
    src.write_text("I like trees.\nWhere is the station?\n", encoding="utf-8")
    ref.write_text("Me gustan los árboles.\n¿Dónde está la estación?\n", encoding="utf-8")
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    args = {"translate": ["translate", "-m", run, "-i", src, "-o", tmp_path / "out.es"],
            "translate-ct2": ["translate", "-m", run, "--engine", "ct2", "-i", src],
            "evaluate": ["evaluate", "-m", run, "--src", src, "--ref", ref],
            "score": ["score", "-m", run, "--src", src, "--tgt", ref],
            "explain": ["explain", "-m", run, "I like trees.", "--out", tmp_path / "pictures"],
            "export-hf": ["export", "-m", run, "--format", "hf", "--out", tmp_path / "hf"],
            "export-ct2": ["export", "-m", run, "--format", "ct2", "--out", tmp_path / "ct2"],
            "info": ["info", run]}[command]
    if command == "translate-ct2":  # the first use makes the export it caches: the second
        run_counted(args, run)
    opened = run_counted(args, run)
    # The CTranslate2 cache is checked against its record's content hashes before
    # CTranslate2 loads it: its files are read twice by design.
    opened = {name: count for name, count in opened.items()
              if not name.startswith("run/ct2-")}
    assert {"run/config.yaml", "run/run.json", "run/spm.model"} <= opened.keys()
    assert set(opened.values()) == {1}, opened


def test_serve_opens_each_file_of_the_run_once(trained: Path, tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    with open(log, "wb") as stderr, traced(["serve", "-m", trained, "--port", "0"],
                                           stderr=stderr) as (process, opened):
        try:
            address = _served_address(log, process)
            with urllib.request.urlopen(f"{address}/health", timeout=60) as answer:
                assert answer.status == 200
        finally:
            os.kill(tracee(process), signal.SIGTERM)
    opened = within(opened, trained)
    assert {"run/config.yaml", "run/run.json", "run/spm.model",
            "run/checkpoints/best.safetensors"} <= opened.keys()
    assert set(opened.values()) == {1}, opened


def _served_address(log: Path, process: subprocess.Popen) -> str:
    def text() -> str:
        return log.read_text(errors="replace")

    def listening() -> Optional[re.Match[str]]:
        found = re.search(r"serving on (http://[\d.]+:\d+)", text())
        if found is None:
            running(process, text)  # fails at once if serve has ended
        return found

    return wait_until(listening, "serve listening", seen=text).group(1)
