"""The command line itself: help, and user errors as one line without a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def transcli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "transcli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


def test_help_lists_the_four_subcommands() -> None:
    result = transcli("--help")
    assert result.returncode == 0
    for command in ("prepare", "train", "translate", "evaluate"):
        assert command in result.stdout


@pytest.mark.parametrize("command", ["prepare", "train", "translate", "evaluate"])
def test_each_subcommand_has_help(command: str) -> None:
    result = transcli(command, "--help")
    assert result.returncode == 0
    assert "Usage" in result.stdout and "--" in result.stdout


def test_bad_config_is_one_line_without_traceback(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("model:\n  hedas: 4\n", encoding="utf-8")
    result = transcli("train", "--config", str(config), "--data", str(tmp_path),
                      "--out", str(tmp_path / "run"))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "bad.yaml" in lines[0] and "model.hedas" in lines[0] and "heads" in lines[0]
