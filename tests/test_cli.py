"""The command line itself: help, and user errors as one line without a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import one_error_line
from conftest import run_cli as transcli


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
    line = one_error_line(result)
    assert "bad.yaml" in line and "model.hedas" in line and "heads" in line
