"""`transcli train`: a prepared dir in, a run dir out; `--resume` continues it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from transcli.cli.options import Device, SetOpt, device_option, setting


def train(
    config: Optional[Path] = typer.Option(
        None, "--config", "-c", help="YAML config file. Without it (and without --resume): "
        "the paper's base model and recipe, meant for a GPU; on a laptop use "
        "configs/cpu-1h.yaml (the recipes are in configs/, listed in the README)."),
    data: Path = typer.Option(..., help="Directory written by `transcli prepare`."),
    out: Path = typer.Option(..., "--out", "-o", help="Run directory (checkpoints, logs)."),
    resume: bool = typer.Option(
        False, "--resume", help="Continue the run in --out where it stopped (with its "
        "config.yaml when --config is not given)."),
    force: bool = typer.Option(False, "--force",
                               help="Start afresh in an --out holding another run."),
    allow_changes: bool = typer.Option(
        False, "--allow-changes", help="With --resume: go on with training settings that "
        "differ from the run's (each is named); without it such a resume is refused."),
    max_steps: Optional[int] = setting("train.max_steps", "Stop after this many updates."),
    save_every: Optional[int] = setting("train.save_every", "Checkpoint every N updates."),
    valid_every: Optional[int] = setting("train.valid_every", "Validate every N updates."),
    seed: Optional[int] = setting("train.seed", "Random seed."),
    device: Device = device_option("train.device"),
    init_from: Optional[str] = setting(
        "train.init_from", "Fine-tune: start from another run's weights, RUN or "
        "RUN/CHECKPOINT (best, last, avg, a step) or a weights file; same vocabulary and "
        "model shape, new optimizer and schedule."),
    sets: Optional[list[str]] = SetOpt,
) -> None:
    """Train the Transformer on a prepared dataset, with checkpoints and validation.

    Ctrl-C, SIGTERM and SIGHUP finish the current update, save and exit 0; --resume
    continues exactly. Under `torchrun --nproc_per_node N -m transcli train ...` each
    process trains on every N-th batch (DistributedDataParallel).

    Examples:

    \b
      transcli train -c configs/cpu-1h.yaml --data prep --out run   # an hour on a laptop
      transcli train --data prep --out run --resume                 # continue it
      transcli train -c configs/cpu-1h.yaml --data prep --out run --set train.max_minutes=10
    """
    from transcli.data.prepared_dir import open_prepared_dir
    from transcli.rundir.run import RunDir
    from transcli.system.files import check_parents
    from transcli.training import loop
    from transcli.training.resume import StartOptions, train_config

    flags = {"train.max_steps": max_steps, "train.save_every": save_every,
             "train.valid_every": valid_every, "train.seed": seed, "train.device": device,
             "train.init_from": init_from}
    check_parents(out)  # a file in --out's way is named before the data is read
    run = RunDir(out)
    cfg = train_config(config, run, resume, sets, flags)
    loop.train(cfg, open_prepared_dir(data), run, StartOptions(resume, force, allow_changes))
