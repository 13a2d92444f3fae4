"""`transcli explain`: translate sentences and show where the model looked."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from transcli.cli.options import (
    CheckpointOpt,
    Device,
    ForceOpt,
    ModelOpt,
    SetOpt,
    device_option,
    with_decoding,
)


@with_decoding
def explain(
    *,
    text: list[str] = typer.Argument(..., help="English sentence(s) to translate and explain."),
    model: Path = ModelOpt,
    out: Path = typer.Option(Path("attention"), "--out", "-o",
                             help="Directory for the heatmaps and alignments (empty or new, "
                             "unless --force)."),
    force: bool = ForceOpt,
    checkpoint: str = CheckpointOpt,
    decoding: list[tuple[str, Any]],
    device: Device = device_option(),
    sets: Optional[list[str]] = SetOpt,
) -> None:
    """Translate sentences and show where the model looked (attention heatmaps).

    Writes encoder-decoder attention heatmaps (PNG: all layers averaged, and one panel
    per layer) and the alignment they imply (Pharaoh i-j) into --out; prints the pieces
    and the aligned pairs.

    Examples:

    \b
      transcli explain -m run "I like trees." "Where is the station?"
      transcli explain -m run --out pictures --greedy "The dog sleeps under the table."
    """
    explain_texts(model, checkpoint, text, out, [*decoding, ("decode.n_best", 1), *(sets or [])],
                  device or "auto", force)


def explain_texts(run_dir: Path, checkpoint: str, texts: list[str], folder: Path,
                  overrides: list[str], device: str, force: bool = False) -> None:
    """`transcli explain`: translate `texts`, write their attention files into `folder`,
    print each description and where its pictures are."""
    from transcli.inference.attention import AttentionWriter, check_folder
    from transcli.inference.translator import load_translator
    from transcli.rundir.run import open_run_dir

    run = open_run_dir(run_dir, overrides)
    check_folder(folder, force, "--out")
    translator = load_translator(run, checkpoint, device)
    with AttentionWriter(folder, translator, force, "--out") as writer:
        writer.translate(texts, 0)
    for path in writer.written:
        if path is None:
            print("(empty line: nothing to explain)\n")
            continue
        print(path.read_text(encoding="utf-8") + f"pictures: {path.with_suffix('.png')}, "
              f"{path.parent / (path.stem + '-layers.png')}\n")
    translator.warn_truncated()
