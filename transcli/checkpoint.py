"""Run-dir checkpoints: atomic writes, safetensors weights, loading a trained model.

A run dir holds:
  config.yaml                       the resolved config the run was trained with
  spm.model                         the tokenizer (copied from the prepared dir)
  run.json                          what the run trains on (data hash, vocab, model fingerprint)
  metrics.jsonl, curves.png         training log (one JSON object per line) and its plot
  checkpoints/step-NNNNNNN.safetensors   model weights after update N
  checkpoints/step-NNNNNNN.state.pt      optimizer, step, RNG and data position after update N
  checkpoints/best.safetensors      weights of the best validation so far
  checkpoints/avg.safetensors       average of the last checkpoints (written by train)

Weights are safetensors files and training state is loaded with
`torch.load(weights_only=True)` (tensors and plain containers only): loading
never unpickles arbitrary objects. Weights are written before state, each
atomically, so "the latest checkpoint" is the newest step that has both.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path
from typing import Iterator

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file as st_load_file
from safetensors.torch import load_model as st_load_model
from safetensors.torch import save_file as st_save_file
from safetensors.torch import save_model as st_save_model

from transcli.config import Config, load_config
from transcli.errors import UserError
from transcli.model import Transformer
from transcli.tokenizer import TOKENIZER_FILE, Tokenizer

CONFIG_FILE = "config.yaml"
CHECKPOINT_DIR = "checkpoints"
BEST_FILE = "best.safetensors"
AVG_FILE = "avg.safetensors"
STEP_PATTERN = re.compile(r"^step-(\d+)\.safetensors$")
STATE_PATTERN = re.compile(r"^step-(\d+)\.state\.pt$")


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temp path beside `path`; on success fsync it and rename it over `path`.

    A kill at any instant leaves either the old file or the new one, never half of one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp_path, path)
    finally:
        tmp_path.unlink(missing_ok=True)


def step_path(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / CHECKPOINT_DIR / f"step-{step:07d}.safetensors"


def state_path(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / CHECKPOINT_DIR / f"step-{step:07d}.state.pt"


def save_weights(model: torch.nn.Module, path: str | Path) -> None:
    """Atomically write the model's weights (tied tensors stored once)."""
    with atomic_path(path) as tmp:
        st_save_model(_unwrap(model), str(tmp))


def load_weights(model: torch.nn.Module, path: str | Path) -> None:
    """Load weights into `model`; a file of another shape or vocabulary is a UserError."""
    try:
        st_load_model(_unwrap(model), str(path), strict=True)
    except (SafetensorError, OSError) as exc:
        raise UserError(f"{path}: unreadable checkpoint ({exc})") from None
    except RuntimeError as exc:  # missing/unexpected keys or shape mismatch
        first = str(exc).strip().splitlines()
        detail = next((line.strip() for line in first[1:] if line.strip()), first[0])
        raise UserError(f"{path}: checkpoint does not match the model config/vocabulary "
                        f"({detail})") from None


def step_checkpoints(run_dir: str | Path) -> list[tuple[int, Path]]:
    """The run's step checkpoints as (step, path), oldest first."""
    folder = Path(run_dir) / CHECKPOINT_DIR
    found = []
    for path in folder.glob("step-*.safetensors") if folder.is_dir() else []:
        match = STEP_PATTERN.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def save_checkpoint(model: torch.nn.Module, state: dict, run_dir: str | Path, step: int) -> None:
    """Weights, then training state: a kill between the two leaves the previous
    checkpoint as the latest complete one."""
    save_weights(model, step_path(Path(run_dir), step))
    with atomic_path(state_path(Path(run_dir), step)) as tmp:
        torch.save(state, tmp)


def complete_steps(run_dir: str | Path) -> list[int]:
    """Steps whose weights and training state are both on disk, oldest first."""
    folder = Path(run_dir) / CHECKPOINT_DIR
    states = {int(m.group(1)) for p in (folder.glob("step-*.state.pt") if folder.is_dir() else [])
              if (m := STATE_PATTERN.match(p.name))}
    return [step for step, _ in step_checkpoints(run_dir) if step in states]


def load_state(run_dir: str | Path, step: int) -> dict:
    """Training state of `step`, read without unpickling arbitrary objects."""
    path = state_path(Path(run_dir), step)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises assorted types for corrupt or unsafe files
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"{path}: unreadable training state ({reason})") from None


def discard_after(run_dir: str | Path, step: int) -> None:
    """Remove step files newer than `step` and temp files left by a kill: a resumed
    run recreates them, and stale ones would pass for its progress."""
    folder = Path(run_dir) / CHECKPOINT_DIR
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        match = STEP_PATTERN.match(path.name) or STATE_PATTERN.match(path.name)
        stale = match is not None and int(match.group(1)) > step
        if stale or (path.name.startswith(".") and path.name.endswith(".tmp")):
            path.unlink(missing_ok=True)


def prune_checkpoints(run_dir: str | Path, keep_last: int) -> None:
    """Keep the newest `keep_last` complete steps (best/avg are separate files) and
    drop every other step file older than the newest one."""
    kept = set(complete_steps(run_dir)[-keep_last:])
    if not kept:
        return
    folder = Path(run_dir) / CHECKPOINT_DIR
    for path in folder.glob("step-*"):
        match = STEP_PATTERN.match(path.name) or STATE_PATTERN.match(path.name)
        if match and int(match.group(1)) not in kept and int(match.group(1)) < max(kept):
            path.unlink(missing_ok=True)


def average_checkpoints(paths: list[Path], out: Path) -> None:
    """Element-wise mean of weight files (Vaswani et al. average the last 5 or 20),
    accumulated in float64 and stored in the files' own dtypes."""
    total: dict[str, torch.Tensor] = {}
    for path in paths:
        weights = st_load_file(str(path))
        for name, tensor in weights.items():
            total[name] = total[name] + tensor.double() if name in total else tensor.double()
    averaged = {name: (value / len(paths)).to(weights[name].dtype)
                for name, value in total.items()}
    with safe_open(str(paths[-1]), framework="pt") as handle:
        metadata = handle.metadata()  # names of tied tensors stored once
    with atomic_path(out) as tmp:
        st_save_file(averaged, str(tmp), metadata=metadata)


def resolve_checkpoint(run_dir: str | Path, name: str) -> Path:
    """`best`, `last`, `avg`, or a path -> an existing weights file.

    `best` falls back to `last` for runs that never validated.
    """
    run_dir = Path(run_dir)
    if name in ("best", "avg"):
        path = run_dir / CHECKPOINT_DIR / f"{name}.safetensors"
        if path.is_file():
            return path
        if name == "avg":
            raise UserError(f"{path}: no averaged checkpoint in this run")
        name = "last"
    if name == "last":
        steps = step_checkpoints(run_dir)
        if not steps:
            raise UserError(f"{run_dir}: no checkpoints found in {CHECKPOINT_DIR}/")
        return steps[-1][1]
    path = Path(name)
    if not path.is_file():
        raise UserError(f"{path}: checkpoint not found (use best, last, avg or a file path)")
    return path


def load_run_config(run_dir: str | Path) -> Config:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: run directory not found")
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        raise UserError(f"{run_dir}: not a run directory (no {CONFIG_FILE})")
    return load_config(path)


def load_trained(run_dir: str | Path, checkpoint: str = "best",
                 device: str | torch.device = "cpu",
                 overrides: list[str] | None = None) -> tuple[Transformer, Tokenizer, Config]:
    """Everything `translate` needs from a run dir: the model in eval mode, the
    tokenizer it was trained with, and the run's config (with `overrides` applied)."""
    run_dir = Path(run_dir)
    cfg = load_run_config(run_dir)
    if overrides:
        cfg = load_config(run_dir / CONFIG_FILE, overrides)
    tokenizer = Tokenizer(run_dir / TOKENIZER_FILE)
    model = Transformer(cfg.model, tokenizer.vocab_size)
    load_weights(model, resolve_checkpoint(run_dir, checkpoint))
    return model.to(device).eval(), tokenizer, cfg


def pick_device(name: str) -> torch.device:
    """`auto` is CUDA when present, else CPU; asking for a missing CUDA is a UserError."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda: no CUDA device is available")
    if name not in ("cpu", "cuda"):
        raise UserError(f"--device {name}: must be auto, cpu or cuda")
    return torch.device(name)


def _unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The plain module inside DistributedDataParallel / torch.compile wrappers."""
    model = getattr(model, "module", model)
    return getattr(model, "_orig_mod", model)
