"""A trained run dir, opened once and handed on: what the commands after `train` read.

`open_run_dir` parses the run's `config.yaml` (with a command's overrides); `run.json`
and the tokenizer are read when first asked for and kept; `model` loads one checkpoint.
`translate`, `evaluate`, `score`, `explain`, `serve`, `export` and `info` each open the
run once and pass this handle on, so every file of the run is read once per command.

The tokenizer must be the one the run was trained with: `run.json` records its SHA-256,
and a run dir whose `spm.model` was replaced since (even by one of the same size, which
would translate to garbage) is refused with one line.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Optional

import torch

from transcli.config.loading import Override, load_config, with_overrides
from transcli.config.schema import Config
from transcli.data.tokenizer import TOKENIZER_FILE, Tokenizer
from transcli.model.transformer import Transformer
from transcli.rundir.checkpoints import load_weights, resolve_checkpoint
from transcli.rundir.layout import (
    CONFIG_FILE,
    RUN_FILE,
    load_run_config,
    read_run_record,
    recipe_changes,
    run_inputs,
    step_checkpoints,
)
from transcli.system.errors import UserError

# Below this many updates the shipped recipes' models still translate poorly
# (docs/TRAINING.md, "What a short run gives", has their BLEU by update).
YOUNG_MODEL = 1000


class RunDir:
    """One run dir: its config, its record, its tokenizer, its checkpoints. Each is read
    when first asked for, then kept."""

    def __init__(self, path: Path, overrides: Optional[list[Override]] = None):
        self.path = path
        self.overrides = list(overrides or [])

    @functools.cached_property
    def recorded_config(self) -> Config:
        """`config.yaml` as the run wrote it (a not-run dir is refused here)."""
        return load_run_config(self.path)

    @functools.cached_property
    def config(self) -> Config:
        """The run's config with the command's overrides."""
        if not self.overrides:
            return self.recorded_config
        return with_overrides(self.recorded_config, self.overrides,
                              origin=str(self.path / CONFIG_FILE))

    @functools.cached_property
    def existing_config(self) -> Optional[Config]:
        """`config.yaml` when the dir has one (a run started there), else None."""
        return self.recorded_config if (self.path / CONFIG_FILE).is_file() else None

    @functools.cached_property
    def record(self) -> Optional[dict[str, Any]]:
        """`run.json` (None in a dir that has none)."""
        return read_run_record(self.path)

    @functools.cached_property
    def tokenizer(self) -> Tokenizer:
        tokenizer = Tokenizer(self.path / TOKENIZER_FILE)
        check_tokenizer(tokenizer, self.record, self.path / RUN_FILE)
        return tokenizer

    def checkpoint(self, name: str) -> Path:
        """The weights file `name` names: best, last, avg, a step number or a path."""
        return resolve_checkpoint(self.path, name)

    def updates(self) -> int:
        """The updates the run has made, by its newest step checkpoint (0: none saved)."""
        steps = step_checkpoints(self.path)
        return steps[-1][0] if steps else 0

    def young_note(self) -> Optional[str]:
        """A line for a run too young to translate (`YOUNG_MODEL`), else None."""
        updates = self.updates()
        if not 0 < updates < YOUNG_MODEL:
            return None
        return (f"note: {self.path} has made {updates} updates: a model this young repeats "
                f"frequent words instead of translating (docs/TRAINING.md, \"What a short run "
                f"gives\")")

    def check_outside(self, folder: Path, option: str) -> None:
        """Refuse an output folder (`option` names it) that is this run dir or inside it:
        its files would land among the run's own."""
        inside = Path(os.path.realpath(folder)).is_relative_to(os.path.realpath(self.path))
        if inside:
            raise UserError(f"{folder}: is inside the run dir {self.path}; give {option} "
                            f"a folder of its own")

    def inputs(self, checkpoint: str) -> list[Path]:
        """The files a command reading this run may use: none may be its output."""
        return run_inputs(self.path, checkpoint)

    def model(self, weights: Path, device: str | torch.device = "cpu") -> Transformer:
        """The model of this run's config with the weights of `weights`, in eval mode."""
        model = Transformer(self.config.model, self.tokenizer.vocab_size)
        load_weights(model, weights, self.tokenizer.sha256)
        return model.to(device).eval()


def open_run_dir(path: str | Path, overrides: Optional[list[Override]] = None) -> RunDir:
    """The run dir at `path`, its config (with `section.key=value` `overrides`) and its
    tokenizer read and checked now."""
    run = RunDir(Path(path), overrides)
    run.config  # noqa: B018 -- a bad run dir or override is refused before any work
    if (run.path / TOKENIZER_FILE).exists():
        run.tokenizer  # noqa: B018 -- and so is a tokenizer swapped since training
    return run


def train_config(config: Optional[Path], run: RunDir, resume: bool,
                 overrides: Optional[list[Override]] = None,
                 flags: Optional[dict[str, Any]] = None) -> Config:
    """The config `train` runs: the file given; else, when resuming, the run's own
    `config.yaml` (so `--resume` alone continues with the settings the run had); else the
    defaults; with the command line's `flags` and `overrides`. `--resume` alone where no
    run is (a mistyped --out) is refused rather than starting the paper's base model;
    with --config it starts the run (the start-or-continue line of a job script)."""
    if config is not None or not resume:
        return load_config(config, overrides, flags)
    if run.existing_config is None:
        raise UserError(f"{run.path}: --resume: no run to continue here (no {CONFIG_FILE}); "
                        f"check --out, or start a run with --config")
    return with_overrides(run.existing_config, overrides, flags, str(run.path / CONFIG_FILE))


def resume_changes(run: RunDir, cfg: Config, allowed: bool) -> list[str]:
    """What a resume of `run` with `cfg` changes in the recipe the run recorded
    (`layout.recipe_changes`): refused, naming each key, unless `allowed`."""
    recorded = (run.record or {}).get("config")
    if not isinstance(recorded, dict):  # a run from before run.json kept its recipe
        recorded = run.recorded_config.to_dict()
    changes = recipe_changes(recorded, cfg)
    if changes and not allowed:
        raise UserError(f"{run.path}: --resume continues a run exactly, but these settings "
                        f"differ from the run's recipe (from -c, --set or an edit of its "
                        f"{CONFIG_FILE}): {'; '.join(changes)}. Leave them out to continue "
                        f"as the run was, or add --allow-changes to go on with them")
    return changes


def check_tokenizer(tokenizer: Tokenizer, record: Optional[dict[str, Any]],
                    record_path: Path) -> None:
    """Refuse a tokenizer other than the one `record` (a run.json) says the run used."""
    recorded = (record or {}).get("tokenizer_sha256")
    if recorded is not None and recorded != tokenizer.sha256:
        raise UserError(f"{tokenizer.path}: not the tokenizer this run was trained with "
                        f"({record_path.name} records SHA-256 {str(recorded)[:12]}, the file "
                        f"has {tokenizer.sha256[:12]}); put back the run's own {TOKENIZER_FILE} "
                        f"(the one in its prepared dir)")
