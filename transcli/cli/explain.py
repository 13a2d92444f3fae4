"""`transcli explain`: translate sentences and show where the model looked."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from transcli.cli.options import (
    CheckpointOpt,
    DecodeSetOpt,
    Device,
    ForceOpt,
    ModelOpt,
    device_option,
    with_decoding,
)


@with_decoding
def explain(
    *,
    text: Optional[list[str]] = typer.Argument(
        None, help="English sentence(s) to translate and explain (none: read from stdin)."),
    model: Path = ModelOpt,
    out: Path = typer.Option(Path("attention"), "--out", "-o",
                             help="Directory for the heatmaps and alignments (empty or new, "
                             "unless --force)."),
    force: bool = ForceOpt,
    checkpoint: str = CheckpointOpt,
    decoding: list[tuple[str, Any]],
    device: Device = device_option(),
    sets: Optional[list[str]] = DecodeSetOpt,
) -> None:
    """Translate sentences and show where the model looked (attention heatmaps).

    Writes encoder-decoder attention heatmaps (PNG: all layers averaged, and one panel
    per layer) and the alignment they imply (Pharaoh i-j) into --out; prints the pieces
    and the aligned pairs.

    Each line is explained on its own, as translate reads lines: an argument holding
    newlines is several lines (a CR before a newline is dropped), and an empty or blank
    line gets no pictures. Lines are numbered across all arguments, from 1. Without
    sentences, the lines of stdin are explained (a pipe or a file, as translate reads).

    Examples:

    \b
      transcli explain -m run "I like trees." "Where is the station?"
      transcli explain -m run --out pictures --greedy "The dog sleeps under the table."
      echo "I like trees." | transcli explain -m run
    """
    explain_texts(model, checkpoint, text, out,
                  [*decoding, ("decode.n_best", 1), *(sets or [])], device or "auto", force)


def _stdin_text() -> list[str]:
    """The lines piped into explain, by transcli's rule for reading text."""
    import sys

    from transcli.system.errors import UserError
    from transcli.system.text import text_lines

    if sys.stdin is None or sys.stdin.isatty():
        raise UserError("explain: give the sentences to explain as arguments, or pipe them in")
    return list(text_lines(sys.stdin.buffer, "<stdin>"))


def explain_texts(run_dir: Path, checkpoint: str, texts: Optional[list[str]], folder: Path,
                  overrides: list[str], device: str, force: bool = False) -> None:
    """`transcli explain`: translate the lines of `texts` (None: of stdin, read once the
    run and the options are checked), write their attention files into `folder`, print
    each description and where its pictures are."""
    from transcli.inference.attention import AttentionWriter, check_decode, check_folder
    from transcli.inference.translator import load_translator
    from transcli.rundir.run import open_run_dir
    from transcli.system.text import lines_of

    run = open_run_dir(run_dir, overrides)
    check_decode(run.config.decode, "explain")  # before --engine ct2 exports anything
    run.check_outside(folder, "--out")
    check_folder(folder, force, "--out")
    lines = [line for text in texts or _stdin_text() for line in lines_of(text)]
    translator = load_translator(run, checkpoint, device)
    with AttentionWriter(folder, translator, force, "--out") as writer:
        writer.translate(lines, 0)
    for number, path in enumerate(writer.written, start=1):
        if path is None:
            why = "is empty" if not lines[number - 1].strip() else \
                "has no words to translate, so it is copied"
            print(f"(line {number} {why}: nothing to explain)\n")
            continue
        print(path.read_text(encoding="utf-8") + f"pictures: {path.with_suffix('.png')}, "
              f"{path.parent / (path.stem + '-layers.png')}\n")
    translator.tally.report()
