"""A run dir's layout: every file name, defined once here, and finding the files.

    config.yaml                        the resolved config the run was trained with
    spm.model                          the tokenizer (copied from the prepared dir)
    run.json                           what the run trains on (data hash, vocab, model)
    metrics.jsonl, curves.png          training log (one JSON object per line) and its plot
    checkpoints/step-NNNNNNN.safetensors   model weights after update N
    checkpoints/step-NNNNNNN.state.pt      optimizer, step, RNG and data position after N
    checkpoints/best.safetensors       weights of the best validation so far
    checkpoints/avg.safetensors        averaged weights (written by train)
    confidence.json                    the confidence calibration (train's end, `calibrate`)
    ct2-<checkpoint>-<weights>/        CTranslate2 export that `--engine ct2` made of
                                       checkpoints/<checkpoint>.safetensors (float32 or int8)
    .train.lock                        held by the training process (`locks.DirLock`)
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from transcli.data.tokenizer import TOKENIZER_FILE
from transcli.system.errors import UserError
from transcli.system.outputs import Record
from transcli.system.replacing import is_temp

CONFIG_FILE = "config.yaml"
RUN_FILE = "run.json"
METRICS_FILE = "metrics.jsonl"
CURVES_FILE = "curves.png"
CALIBRATION_FILE = "confidence.json"
CHECKPOINT_DIR = "checkpoints"
BEST_FILE = "best.safetensors"
AVG_FILE = "avg.safetensors"
RUN_FILES = (CONFIG_FILE, TOKENIZER_FILE, RUN_FILE, METRICS_FILE, CURVES_FILE, CALIBRATION_FILE)
LOCK_FILE = ".train.lock"
TENSORBOARD_DIR = "tensorboard"  # with train.tensorboard: true
TENSORBOARD_EVENTS = "events.out.tfevents."  # how its files begin
RUN_KEYS = ("data_hash", "vocab_size", "model")  # what every run.json holds
# In a folder `transcli export` wrote (a model another library runs, not a run dir): what
# was exported from where, and the files written (`transcli.export`).
EXPORT_FILE = "transcli-export.json"
STEP_PATTERN = re.compile(r"^step-(\d+)\.safetensors$")
STATE_PATTERN = re.compile(r"^step-(\d+)\.state\.pt$")
# What vouches for a run's files when transcli replaces them (`system.outputs`): their
# names, for the trainer that holds the run's lock.
RUN_RECORD = Record(None, names=lambda path: path.name in RUN_FILES or is_run_file(path.name))


def step_path(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / CHECKPOINT_DIR / f"step-{step:07d}.safetensors"


def state_path(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / CHECKPOINT_DIR / f"step-{step:07d}.state.pt"


def ct2_cache_dir(run_dir: Path, checkpoint: Path, weights: str) -> Path:
    """Where `translate --engine ct2` keeps its export of the weights file `checkpoint`."""
    return Path(run_dir) / f"ct2-{checkpoint.stem}-{weights}"


def stale_ct2_caches(run_dir: Path) -> list[Path]:
    """The CTranslate2 caches (`ct2_cache_dir`) of run checkpoints that are gone: a pruned
    step, the best or averaged weights of a run started over."""
    folder = Path(run_dir) / CHECKPOINT_DIR
    stale = []
    for cache in sorted(Path(run_dir).glob("ct2-*-*")):
        stem = cache.name[len("ct2-"):].rpartition("-")[0]
        weights = f"{stem}.safetensors"
        ours = STEP_PATTERN.match(weights) or weights in (BEST_FILE, AVG_FILE)
        if ours and cache.is_dir() and not cache.is_symlink() and not (folder / weights).exists():
            stale.append(cache)
    return stale


def is_step(name: str) -> bool:
    """Whether a --checkpoint names a step (`1000`), as a step file could be named."""
    return name.isascii() and name.isdigit() and len(name) <= 18


def run_inputs(run_dir: str | Path, checkpoint: str = "best") -> list[Path]:
    """The files a command reading a run may use (its run files, the checkpoints folder
    and all in it, and `checkpoint` when it is a path): its output may be none of them,
    nor be written into the checkpoints folder, where it would pass for a checkpoint."""
    run_dir = Path(run_dir)
    folder = run_dir / CHECKPOINT_DIR
    found = [run_dir / name for name in RUN_FILES] + [folder]
    with contextlib.suppress(OSError):
        found += sorted(folder.iterdir())
    if not (checkpoint in ("best", "last", "avg") or is_step(checkpoint)):
        found.append(Path(checkpoint))
    return found


def step_checkpoints(run_dir: str | Path) -> list[tuple[int, Path]]:
    """The run's step checkpoints as (step, path), oldest first: regular files only (a
    FIFO of that name would block whoever opened it)."""
    folder = Path(run_dir) / CHECKPOINT_DIR
    found = []
    for path in folder.glob("step-*.safetensors") if folder.is_dir() else []:
        match = STEP_PATTERN.match(path.name)
        if match and path.is_file():
            found.append((int(match.group(1)), path))
    return sorted(found)


def complete_steps(run_dir: str | Path) -> list[int]:
    """Steps whose weights and training state are both on disk, oldest first."""
    folder = Path(run_dir) / CHECKPOINT_DIR
    states = {int(m.group(1)) for p in (folder.glob("step-*.state.pt") if folder.is_dir() else [])
              if (m := STATE_PATTERN.match(p.name))}
    return [step for step, _ in step_checkpoints(run_dir) if step in states]


def dir_entries(run_dir: Path) -> list[str]:
    """What a dir holds, less the training lock and the temp files of killed writes."""
    try:
        names = sorted(entry.name for entry in run_dir.iterdir()) if run_dir.is_dir() else []
    except OSError as exc:
        raise UserError(f"{run_dir}: cannot list the run dir ({exc.strerror})") from None
    return [name for name in names if name != LOCK_FILE and not is_temp(name)]


def has_trained(run_dir: Path) -> bool:
    """Whether a run saved a step or logged one: a run that never did (its start failed
    or was killed) holds nothing to lose."""
    folder = run_dir / CHECKPOINT_DIR
    saved = folder.is_dir() and any(not is_temp(p.name) for p in folder.iterdir())
    metrics = run_dir / METRICS_FILE
    return saved or (metrics.exists() and (not metrics.is_file() or metrics.stat().st_size > 0))


def is_run_file(name: str) -> bool:
    """Whether a file in `checkpoints/` is one a run writes."""
    return bool(STEP_PATTERN.match(name) or STATE_PATTERN.match(name)
                or name in (BEST_FILE, AVG_FILE) or is_temp(name))


