"""Helpers for the user-side command tests (score, explain, info, config, interactive):
a run dir holding the memorised tiny model, and the `transcli` command in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import PAIRS, ROOT
from memorised import TINY_CONFIG, memorised_model

from transcli.checkpoint import save_weights
from transcli.config import load_config, save_config
from transcli.rundir import CONFIG_FILE, step_path
from transcli.tokenizer import TOKENIZER_FILE

ENGLISH = [en for en, _ in PAIRS]
SPANISH = [es for _, es in PAIRS]
ONE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1"}  # see memorised.one_torch_thread


def memorised_run(folder: Path, spm: Path, *sets: str) -> Path:
    """`folder`/run: the tiny config (with `sets`), the tokenizer, and the memorised model
    as its only checkpoint (step 200)."""
    run = folder / "run"
    run.mkdir(parents=True)
    save_config(load_config(TINY_CONFIG, list(sets)), run / CONFIG_FILE)
    (run / TOKENIZER_FILE).write_bytes(spm.read_bytes())
    save_weights(memorised_model(spm, tuple(PAIRS)), step_path(run, 200))
    return run


def transcli(*args: str | Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    """`python -m transcli ARGS` from the repository root, text in and out."""
    return subprocess.run([sys.executable, "-m", "transcli", *map(str, args)], input=stdin,
                          capture_output=True, text=True, cwd=ROOT, env=ONE_THREAD, timeout=180)


def one_error_line(result: subprocess.CompletedProcess) -> str:
    """The single `transcli: error: ...` line of a failed command (no traceback)."""
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("transcli: error: "), result.stderr
    return lines[0]
