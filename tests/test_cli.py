"""The command line itself: help, and user errors as one line without a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.cli import one_error_line
from helpers.cli import run_cli as transcli


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


@pytest.mark.slow
def test_bad_config_is_one_line_without_traceback(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("model:\n  hedas: 4\n", encoding="utf-8")
    result = transcli("train", "--config", str(config), "--data", str(tmp_path),
                      "--out", str(tmp_path / "run"))
    line = one_error_line(result)
    assert "bad.yaml" in line and "model.hedas" in line and "heads" in line


def _help(command: str) -> str:
    """`transcli COMMAND --help`, wide enough for one line per option."""
    result = transcli(command, "--help", env={"COLUMNS": "250"})
    assert result.returncode == 0, result.stderr
    return result.stdout


def _option_line(text: str, option: str) -> str:
    """The help entry of `option`: its names and its help, continuation lines joined."""
    entries: list[list[str]] = []
    for line in text.split("Options:", 1)[1].splitlines():
        if line.startswith("  -"):
            entries.append([line.strip()])
        elif entries and line.strip():
            entries[-1].append(line.strip())
    for entry in entries:
        names = entry[0].split("  ")[0].split()
        if option in (name.strip(",") for name in names):
            return " ".join(entry)
    raise AssertionError(f"{option} not in the help")


@pytest.mark.parametrize("command, option, default", [
    ("train", "--max-steps", "(train.max_steps)"), ("train", "--seed", "(train.seed)"),
    ("train", "--device", "(train.device)"), ("prepare", "--out", "(data.out)"),
    ("prepare", "--split", "(train)"), ("translate", "--beam-size", "(decode.beam_size)"),
    ("translate", "--checkpoint", "best"), ("translate", "--device", "(auto)"),
    ("evaluate", "--device", "(auto)"), ("evaluate", "--checkpoint", "best"),
])
def test_help_shows_every_default(command: str, option: str, default: str) -> None:
    assert f"[default: {default}]" in _option_line(_help(command), option)


@pytest.mark.slow
def test_device_has_the_same_help_and_choices_everywhere() -> None:
    lines = {command: _option_line(_help(command), "--device").split("[default:")[0].split()
             for command in ("train", "translate", "evaluate")}
    assert lines["train"] == lines["translate"] == lines["evaluate"]
    assert "<auto|cpu|cuda>" in lines["train"]
    result = transcli("evaluate", "--ref", "r", "--hyp", "h", "--device", "gpu")
    assert result.returncode == 2 and "'gpu' is not one of 'auto', 'cpu', 'cuda'" in " ".join(
        result.stderr.replace("│", " ").split())


def test_short_options_survive() -> None:
    assert "-o" in _option_line(_help("prepare"), "--out")
    assert "-o" in _option_line(_help("train"), "--out")
    assert "-m" in _option_line(_help("translate"), "--model")


def test_evaluate_help_names_its_three_metrics() -> None:
    assert all(name in _help("evaluate") for name in ("BLEU", "chrF", "TER"))


COMMANDS = ["prepare", "train", "translate", "evaluate", "score", "explain", "export", "info",
            "config", "serve"]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_teaches_with_examples_and_plain_placeholders(command: str) -> None:
    """Every command's help shows examples of itself, plain flags take no value, and no
    value is shown as a Python type."""
    from typer.testing import CliRunner

    from transcli.cli.app import app

    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    examples = result.output.split("Examples:", 1)[1].split("Options:", 1)[0]
    assert f"transcli {command} " in examples
    options = result.output.split("Options:", 1)[1]
    for placeholder in ("<bool>", "<list[", "<int range>"):
        assert placeholder not in options, placeholder


@pytest.mark.parametrize("target, variable", [("train", "RUN"), ("train", "DATA"),
                                              ("train", "CONFIG"), ("translate", "OUTPUT"),
                                              ("prepare", "DATA"), ("evaluate", "REF")])
def test_make_refuses_a_variable_given_empty(target: str, variable: str) -> None:
    """Issue: `make train RUN= ARGS=--resume` started a new base-model run in a folder
    named `--resume`. (-n: make only prints what it would run.)"""
    import subprocess

    from helpers import ROOT

    # --no-print-directory: under `make test-all` this make is nested, and would print the
    # checkout's folder, whose name may hold "transcli".
    make = ["make", "--no-print-directory", "-n", target]
    result = subprocess.run([*make, f"{variable}=", "ARGS=--resume"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert f"*** {variable}= is empty: give it a value" in result.stderr
    assert "-m transcli" not in result.stdout
    given = subprocess.run(make, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert given.returncode == 0 and "-m transcli" in given.stdout
