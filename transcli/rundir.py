"""A run dir's layout (every file name, defined once here) and starting, resuming or
refusing one.

    config.yaml                        the resolved config the run was trained with
    spm.model                          the tokenizer (copied from the prepared dir)
    run.json                           what the run trains on (data hash, vocab, model)
    metrics.jsonl, curves.png          training log (one JSON object per line) and its plot
    checkpoints/step-NNNNNNN.safetensors   model weights after update N
    checkpoints/step-NNNNNNN.state.pt      optimizer, step, RNG and data position after N
    checkpoints/best.safetensors       weights of the best validation so far
    checkpoints/avg.safetensors        averaged weights (written by train)
    ct2-<checkpoint>-<weights>/        CTranslate2 export that `--engine ct2` made of
                                       checkpoints/<checkpoint>.safetensors (float32 or int8)

A run dir records what it was trained on in `run.json`. Continuing it on other
data, or with another model shape or vocabulary, would silently produce a model
that matches neither run, so those are refused with one line; so is writing a
new run over an old one unless asked to (`--force`).
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Optional

from transcli.config import Config, ModelConfig, load_config, save_config
from transcli.errors import UserError
from transcli.files import atomic_path
from transcli.tokenizer import TOKENIZER_FILE

CONFIG_FILE = "config.yaml"
RUN_FILE = "run.json"
METRICS_FILE = "metrics.jsonl"
CURVES_FILE = "curves.png"
CHECKPOINT_DIR = "checkpoints"
BEST_FILE = "best.safetensors"
AVG_FILE = "avg.safetensors"
RUN_FILES = (CONFIG_FILE, TOKENIZER_FILE, RUN_FILE, METRICS_FILE, CURVES_FILE)
STEP_PATTERN = re.compile(r"^step-(\d+)\.safetensors$")
STATE_PATTERN = re.compile(r"^step-(\d+)\.state\.pt$")
# Settings that change no weight's shape or meaning: a resumed run may alter them.
FREE_MODEL_KEYS = {"dropout", "attn_dropout", "act_dropout"}


def step_path(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / CHECKPOINT_DIR / f"step-{step:07d}.safetensors"


def state_path(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / CHECKPOINT_DIR / f"step-{step:07d}.state.pt"


def ct2_cache_dir(run_dir: Path, checkpoint: Path, weights: str) -> Path:
    """Where `translate --engine ct2` keeps its export of the weights file `checkpoint`."""
    return Path(run_dir) / f"ct2-{checkpoint.stem}-{weights}"


def step_checkpoints(run_dir: str | Path) -> list[tuple[int, Path]]:
    """The run's step checkpoints as (step, path), oldest first."""
    folder = Path(run_dir) / CHECKPOINT_DIR
    found = []
    for path in folder.glob("step-*.safetensors") if folder.is_dir() else []:
        match = STEP_PATTERN.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def complete_steps(run_dir: str | Path) -> list[int]:
    """Steps whose weights and training state are both on disk, oldest first."""
    folder = Path(run_dir) / CHECKPOINT_DIR
    states = {int(m.group(1)) for p in (folder.glob("step-*.state.pt") if folder.is_dir() else [])
              if (m := STATE_PATTERN.match(p.name))}
    return [step for step, _ in step_checkpoints(run_dir) if step in states]


def load_run_config(run_dir: str | Path, overrides: list[str] | None = None) -> Config:
    """The run's resolved config, with `section.key=value` overrides applied."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: run directory not found")
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        raise UserError(f"{run_dir}: not a run directory (no {CONFIG_FILE})")
    return load_config(path, overrides)


def train_config_path(config: Optional[Path], run_dir: Path, resume: bool) -> Optional[Path]:
    """The config file `train` reads: the one given; else, when resuming, the run's own
    `config.yaml` (so `--resume` alone continues with the settings the run had); else
    none (the defaults)."""
    if config is None and resume and (Path(run_dir) / CONFIG_FILE).is_file():
        return Path(run_dir) / CONFIG_FILE
    return config


def run_identity(cfg: Config, manifest: dict[str, Any], vocab_size: int) -> dict[str, Any]:
    return {"data_hash": manifest.get("data_hash"), "vocab_size": vocab_size,
            "model": cfg.fingerprint("model")}


def start_step(run_dir: Path, cfg: Config, identity: dict[str, Any], data_dir: Path,
               resume: bool, force: bool) -> int:
    """The step training starts from (0 for a new run); refuses what cannot be done.
    Reads only: every rank may call it before rank 0 writes anything."""
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"{run_dir}: --out is a file, not a directory")
    holds_files = run_dir.is_dir() and any(run_dir.iterdir())
    if not resume:
        if holds_files and not force:
            what = "a run" if (run_dir / RUN_FILE).is_file() else "other files"
            raise UserError(f"{run_dir}: already holds {what}; use --resume to continue it "
                            f"or --force to start afresh")
        return 0
    if not (run_dir / RUN_FILE).is_file():
        if holds_files:
            raise UserError(f"{run_dir}: --resume: not a transcli run dir (no {RUN_FILE})")
        return 0
    _check_compatible(run_dir, cfg, identity, data_dir)
    steps = complete_steps(run_dir)
    return steps[-1] if steps else 0


def _check_compatible(run_dir: Path, cfg: Config, identity: dict[str, Any],
                      data_dir: Path) -> None:
    try:
        old = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{run_dir / RUN_FILE}: unreadable ({exc})") from None
    if old.get("data_hash") != identity["data_hash"]:
        raise UserError(f"{run_dir}: --resume refused: the run was trained on a different "
                        f"prepared dataset than {data_dir} (data_hash "
                        f"{str(old.get('data_hash'))[:12]} != {str(identity['data_hash'])[:12]})")
    if old.get("vocab_size") != identity["vocab_size"]:
        raise UserError(f"{run_dir}: --resume refused: the run's vocabulary has "
                        f"{old.get('vocab_size')} pieces, {data_dir} has {identity['vocab_size']}")
    changed = model_differences(load_run_config(run_dir).model, cfg.model)
    if changed:
        raise UserError(f"{run_dir}: --resume refused: the model config differs from "
                        f"{run_dir / CONFIG_FILE} ({', '.join(changed)})")


def model_differences(old: ModelConfig, new: ModelConfig) -> list[str]:
    """`model.key: old -> new` for every shape-relevant setting that differs."""
    a, b = asdict(old), asdict(new)
    return [f"model.{k}: {a[k]} -> {b[k]}" for k in a if k not in FREE_MODEL_KEYS and a[k] != b[k]]


def write_run_files(run_dir: Path, cfg: Config, identity: dict[str, Any], data_dir: Path,
                    fresh: bool) -> None:
    """Rank 0 only: clear a forced-over run (only files a run owns), then record the
    resolved config, the tokenizer and the run's identity."""
    if fresh:
        for name in RUN_FILES:
            (run_dir / name).unlink(missing_ok=True)
        shutil.rmtree(run_dir / CHECKPOINT_DIR, ignore_errors=True)
    (run_dir / CHECKPOINT_DIR).mkdir(parents=True, exist_ok=True)
    record = cfg if fresh else _kept_target(run_dir, cfg)
    with atomic_path(run_dir / CONFIG_FILE) as tmp:
        save_config(record, tmp)
    with atomic_path(run_dir / TOKENIZER_FILE) as tmp:
        tmp.write_bytes((data_dir / TOKENIZER_FILE).read_bytes())
    with atomic_path(run_dir / RUN_FILE) as tmp:
        tmp.write_text(json.dumps({**identity, "data_dir": str(data_dir.resolve())}, indent=2)
                       + "\n", encoding="utf-8")


def _kept_target(run_dir: Path, cfg: Config) -> Config:
    """A resumed run's config to record: as given, except that a smaller `max_steps`
    (stop early this time) does not replace the run's own target, which a later
    `--resume` without --config would otherwise inherit."""
    if not (run_dir / CONFIG_FILE).is_file():
        return cfg
    target = load_run_config(run_dir).train.max_steps
    if cfg.train.max_steps >= target:
        return cfg
    return replace(cfg, train=replace(cfg.train, max_steps=target))
