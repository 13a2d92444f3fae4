"""A run dir, opened once and handed on: what the commands after `train` read, and what
`train` writes of it before its first update (`write_run_files`).

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
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from transcli.config.loading import Override, load_config, save_config, with_overrides
from transcli.config.schema import Config
from transcli.data.encoded import MANIFEST_FILE
from transcli.data.prepared_dir import PreparedDir
from transcli.data.tokenizer import TOKENIZER_FILE, Tokenizer
from transcli.rundir.checkpoints import load_weights, resolve_checkpoint
from transcli.rundir.layout import (
    CHECKPOINT_DIR,
    CONFIG_FILE,
    EXPORT_FILE,
    RUN_FILE,
    RUN_FILES,
    RUN_KEYS,
    RUN_RECORD,
    TENSORBOARD_DIR,
    TENSORBOARD_EVENTS,
    is_run_file,
    run_inputs,
    step_checkpoints,
)
from transcli.system.errors import UserError, first_line
from transcli.system.files import cannot_write, read_json
from transcli.system.outputs import output_file
from transcli.system.replacing import remove_leftovers

if TYPE_CHECKING:  # (torch loads with the model, not with the run dir: `model`)
    import torch

    from transcli.model.transformer import Transformer

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
        """`config.yaml` as the run wrote it (a dir that is no run is refused here, saying
        what it is when it is something else of transcli's)."""
        make = (f"`transcli train` makes one: transcli train -c configs/cpu-1h.yaml --data "
                f"PREPARED --out {self.path}")
        if not self.path.is_dir():
            if self.path.exists():
                raise UserError(f"{self.path}: is a file, not a run directory")
            raise UserError(f"{self.path}: run directory not found; {make}")
        if not (self.path / CONFIG_FILE).is_file():
            raise UserError(f"{self.path}: not a run directory (no {CONFIG_FILE}); "
                            f"{what_it_is(self.path) or make}")
        return load_config(self.path / CONFIG_FILE)

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
        """`run.json` (None in a dir that has none); one that is not a run record is
        refused with one line (it is neither safe to continue nor to delete)."""
        path = self.path / RUN_FILE
        if not path.exists():
            return None
        if not path.is_file():  # a FIFO would block the command for ever, a folder fail later
            raise UserError(f"{path}: not a regular file: {self.path} is not a run dir "
                            f"transcli can read or continue")
        try:
            record = read_json(path)
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or first_line(exc)
            raise UserError(f"{path}: unreadable ({reason})") from None
        missing = [key for key in RUN_KEYS if key not in record] if isinstance(record, dict) else 0
        if not isinstance(record, dict) or missing:
            what = f"no '{missing[0]}'" if missing else "not a JSON object"
            raise UserError(f"{path}: not a transcli run record ({what}): {self.path} is not "
                            f"a run dir transcli can read or continue; move the file away "
                            f"(or give train another --out)")
        return record

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

    def young_note(self, updates: Optional[int] = None) -> Optional[str]:
        """A line for a run too young to translate after `updates` (the newest step
        checkpoint's by default; `YOUNG_MODEL`), else None."""
        updates = self.updates() if updates is None else updates
        if not 0 < updates < YOUNG_MODEL:
            return None
        return (f"note: {self.path} has made {updates} updates: a model this young repeats "
                f"frequent words instead of translating; it needs a few thousand "
                f"(docs/TRAINING.md, \"What a short run gives\")")

    def check_outside(self, folder: Path, option: str) -> None:
        """Refuse an output folder (`option` names it) that is this run dir or inside it:
        its files would land among the run's own."""
        inside = Path(os.path.realpath(folder)).is_relative_to(os.path.realpath(self.path))
        if inside:
            raise UserError(f"{folder}: is inside the run dir {self.path}; give {option} "
                            f"a folder of its own")

    def inputs(self, checkpoint: str) -> list[Path]:
        """The files a command reading this run may use, its `decode.glossary` among
        them: none may be its output."""
        glossary = self.config.decode.glossary
        return run_inputs(self.path, checkpoint) + ([Path(glossary)] if glossary else [])

    def model(self, weights: Path, device: str | torch.device = "cpu") -> Transformer:
        """The model of this run's config with the weights of `weights`, in eval mode."""
        from transcli.model.transformer import Transformer

        model = Transformer(self.config.model, self.tokenizer.vocab_size)
        load_weights(model, weights, self.tokenizer.sha256)
        return model.to(device).eval()


def what_it_is(folder: Path) -> Optional[str]:
    """What a folder given as a run dir is instead, when it is something of transcli's."""
    if (folder / MANIFEST_FILE).is_file():
        return f"it is a prepared dir: give it to `transcli train --data {folder}`"
    if folder.name == CHECKPOINT_DIR and (folder.parent / CONFIG_FILE).is_file():
        return f"it is a run's checkpoints folder: give the run dir, {folder.parent}"
    if (folder / EXPORT_FILE).is_file():
        try:
            record = read_json(folder / EXPORT_FILE)
        except (OSError, ValueError):
            record = None
        record = record if isinstance(record, dict) else {}
        kinds = {"ct2": "a CTranslate2", "hf": "a Hugging Face"}
        kind = kinds.get(str(record.get("format")), "an")
        origin = record.get("run_dir")
        origin = (f"-m {origin}, the run it was exported from" if isinstance(origin, str)
                  else "-m with the run it was exported from")
        return (f"it is {kind} model exported by `transcli export`, which transcli does not "
                f"load: give {origin}")
    return None


def open_run_dir(path: str | Path, overrides: Optional[list[Override]] = None) -> RunDir:
    """The run dir at `path`, its config (with `section.key=value` `overrides`) and its
    tokenizer read and checked now."""
    run = RunDir(Path(path), overrides)
    run.config  # noqa: B018 -- a bad run dir or override is refused before any work
    if (run.path / TOKENIZER_FILE).exists():
        run.tokenizer  # noqa: B018 -- and so is a tokenizer swapped since training
    return run


def check_tokenizer(tokenizer: Tokenizer, record: Optional[dict[str, Any]],
                    record_path: Path) -> None:
    """Refuse a tokenizer other than the one `record` (a run.json) says the run used."""
    recorded = (record or {}).get("tokenizer_sha256")
    if recorded is not None and recorded != tokenizer.sha256:
        raise UserError(f"{tokenizer.path}: not the tokenizer this run was trained with "
                        f"({record_path.name} records SHA-256 {str(recorded)[:12]}, the file "
                        f"has {tokenizer.sha256[:12]}); put back the run's own {TOKENIZER_FILE} "
                        f"(the one in its prepared dir)")


def write_run_files(run: RunDir, record: Config, identity: dict[str, Any], data: PreparedDir,
                    fresh: bool) -> None:
    """What a run dir holds before its first update. Rank 0 only, holding the run's lock:
    remove temp files killed writes left, clear
    a forced-over run (only the files a run writes) when `fresh`, then record the run's
    identity and the config `record` (run.json, config.yaml), and the tokenizer.
    `run.json` outlives the old run's files and is written before the others, so a kill
    at any moment leaves a dir that says it is a run: the next start takes it over
    (`layout.has_trained`)."""
    try:
        run.path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{exc.filename}: {exc.strerror}") from None
    remove_leftovers(run.path)  # temp files of writes a kill interrupted
    remove_leftovers(run.path / CHECKPOINT_DIR)
    if fresh:
        clear_run(run)
    with output_file(run.path / RUN_FILE, "run record", record=RUN_RECORD) as out:
        out.write((json.dumps({**identity, "data_dir": str(data.dir.resolve()),
                               "config": record.to_dict()}, indent=2) + "\n").encode())
    folder = run.path / CHECKPOINT_DIR
    try:
        folder.mkdir(exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()  # unwritable: say so now, not at the save
    except OSError as exc:
        raise cannot_write(folder, "checkpoints", exc) from None
    with output_file(run.path / CONFIG_FILE, "config", record=RUN_RECORD) as out:
        save_config(record, Path(out.name))
    with output_file(run.path / TOKENIZER_FILE, "tokenizer", record=RUN_RECORD) as out:
        out.write(data.tokenizer.model_bytes)


def clear_run(run: RunDir) -> None:
    """Remove the files a run writes (`train` has checked that it is a run) but
    its `run.json`, which the new run's replaces."""
    folder = run.path / CHECKPOINT_DIR
    doomed = [run.path / name for name in RUN_FILES if name != RUN_FILE]
    if folder.is_dir():
        doomed += [path for path in folder.iterdir() if is_run_file(path.name)]
    board = run.path / TENSORBOARD_DIR
    if board.is_dir():
        doomed += [path for path in board.iterdir() if path.name.startswith(TENSORBOARD_EVENTS)]
    for path in doomed:
        try:
            if path.is_file() or path.is_symlink():
                path.unlink()
        except OSError as exc:
            raise UserError(f"{path}: cannot remove the old run's file ({exc.strerror})") from None
