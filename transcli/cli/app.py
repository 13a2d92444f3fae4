"""The Typer app: every command, registered from its own module.

Precedence: YAML file < command-line flags < `--set section.key=value`.
Any `UserError` becomes one line on stderr and exit status 1 (`exits.py`).
Command modules import the library inside their functions, so `--help` and a bad
flag answer at once, and torch loads after `main` has chosen OpenMP's wait policy.
"""

from __future__ import annotations

import os
import sys

import typer

from transcli.cli import (
    calibrate,
    config,
    evaluate,
    explain,
    export,
    info,
    prepare,
    score,
    train,
    translate,
)
from transcli.cli.serve import serve

app = typer.Typer(
    help="Train and run an English-to-Spanish Transformer.\n\nAn option whose default is a "
    "config key, e.g. (train.max_steps), sets that key; left out, the config's value holds.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: examples keep their line breaks, flags show no type
)

for command in (prepare.prepare, train.train, translate.translate, evaluate.evaluate,
                score.score, explain.explain, calibrate.calibrate, info.info, config.config,
                export.export, serve):
    app.command(command.__name__)(command)


def _version(value: bool) -> None:
    if value:
        from transcli import __version__

        print(f"transcli {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Train and run an English-to-Spanish Transformer."""


def main() -> None:
    from transcli.cli.boundary import empty_option, outside_problem, text_streams
    from transcli.cli.exits import run_command
    from transcli.system import waitpolicy

    text_streams()
    problem = outside_problem(sys.argv) or empty_option(sys.argv, app)
    if problem:
        print(f"transcli: error: {problem}", file=sys.stderr)
        sys.exit(1)
    # Before any command imports torch: OpenMP threads spin between parallel regions
    # on idle cores and sleep where other processes need them, and always sleep in a
    # server, whose HTTP side needs the CPU between batches; on a GPU, memory is
    # reserved in segments that grow, so batches of changing shapes do not fragment it.
    if sys.argv[1:2] == ["serve"]:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    waitpolicy.choose()
    os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    sys.exit(run_command(app))
