"""`transcli info RUN`: what a run is, without loading its model."""

from __future__ import annotations

import json
from pathlib import Path

import typer


def info(
    run: Path = typer.Argument(..., help="Run directory written by `train`."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """What a run is: model, training progress, checkpoints, config.

    Parameters, vocabulary, model shape, steps and tokens trained, best validation,
    checkpoints present, and the settings that differ from the defaults (--json: the
    whole config).

    Examples:

    \b
      transcli info run
      transcli info run --json | python -m json.tool
    """
    print_info(run, json_out)


def print_info(run: Path, as_json: bool) -> None:
    import sys

    from transcli.rundir.info import format_info, run_info
    from transcli.rundir.run import open_run_dir

    info = run_info(open_run_dir(run),
                    lambda line: print(f"transcli: warning: {line}", file=sys.stderr))
    print(json.dumps(info, ensure_ascii=False, indent=1) if as_json else format_info(info))
