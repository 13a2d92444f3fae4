"""`transcli export`: a checkpoint for another inference library."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from transcli.cli.options import CheckpointOpt, ModelOpt


def export(
    model: Path = ModelOpt,
    format: str = typer.Option(
        ..., "--format", "-f", help="ct2 (CTranslate2) or hf (Hugging Face MarianMTModel)."),
    out: Path = typer.Option(..., "--out", "-o", help="Directory to write."),
    checkpoint: str = CheckpointOpt,
    quantize: Optional[str] = typer.Option(
        None, help="ct2 weights: int8, int16 or float16 (default: float32)."),
    force: bool = typer.Option(
        False, "--force", help="Write into a non-empty --out: replaces the files an export writes, "
        "never deletes others."),
) -> None:
    """Export a checkpoint for another inference library: CTranslate2 or transformers.

    The exported model gives transcli's greedy translations; what a format cannot
    represent exactly is refused. Needs the package's ct2 or hf extra (see the README).

    Examples:

    \b
      transcli export -m run --format ct2 --out run-ct2 --checkpoint avg --quantize int8
      transcli export -m run --format hf --out run-hf
    """
    from transcli.export import export_run
    from transcli.rundir.run import open_run_dir

    export_run(open_run_dir(model), format, out, checkpoint, quantize, force)
    print(f"transcli: exported {format} model to {out}", file=sys.stderr)
