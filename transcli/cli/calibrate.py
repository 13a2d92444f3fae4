"""`transcli calibrate`: fit a run's confidence anew (`inference.confidence`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import typer

from transcli.cli.options import CheckpointOpt, Device, ModelOpt, device_option


def calibrate(
    model: Path = ModelOpt,
    checkpoint: str = CheckpointOpt,
    lines: int = typer.Option(500, "--lines", min=1, help="Valid lines to fit it on (the "
                              "first ones of the run's prepared valid split)."),
    device: Device = device_option(),
) -> None:
    """Fit how each translation's confidence is computed, for a run trained before
    training did it at its end, or for another checkpoint.

    The checkpoint translates the first lines of the run's valid split (in the prepared
    dir it was trained on) with the run's decode settings; a line's confidence is then
    an estimate of its sentence chrF, fitted on those lines, kept in the run dir as
    confidence.json. `translate --confidence`, `evaluate` and `serve` read it.

    Examples:

    \b
      transcli calibrate -m run
      transcli calibrate -m run --checkpoint avg --lines 1000
    """
    from transcli.rundir.run import open_run_dir

    started = time.perf_counter()
    run = open_run_dir(model)
    from transcli.inference.calibrate import calibrate_run  # torch loads here

    fitted = calibrate_run(run, checkpoint, device or "auto", lines)
    print(f"transcli: confidence fitted on {fitted.lines} valid lines in "
          f"{time.perf_counter() - started:.0f} s: Pearson {fitted.pearson:.2f} against "
          f"their sentence chrF; written to {model / 'confidence.json'}", file=sys.stderr)
