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
    .train.lock                        held by the training process (`locks.DirLock`)

A run dir records what it was trained on in `run.json`. Continuing it on other
data, or with another model shape or vocabulary, would silently produce a model
that matches neither run, so those are refused with one line; so is writing a
new run over an old one unless asked to (`--force`). Even then only the files a
run writes are removed, and only from a dir whose `run.json` says it is a run: a
dir holding other files takes a new run beside them, unless one has a run file's
name. A run that never saved a step (a start that failed or was killed) is
taken over by the next start without `--force`.
"""

from __future__ import annotations

import contextlib
import json
import re
import tempfile
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Optional

from transcli.config.loading import load_config, save_config
from transcli.config.schema import Config, ModelConfig
from transcli.data.encoded import MANIFEST_FILE
from transcli.data.prepared_dir import PreparedDir
from transcli.data.tokenizer import TOKENIZER_FILE
from transcli.system.errors import UserError
from transcli.system.files import cannot_write, read_json
from transcli.system.outputs import Record, output_file
from transcli.system.replacing import is_temp, remove_leftovers

CONFIG_FILE = "config.yaml"
RUN_FILE = "run.json"
METRICS_FILE = "metrics.jsonl"
CURVES_FILE = "curves.png"
CHECKPOINT_DIR = "checkpoints"
BEST_FILE = "best.safetensors"
AVG_FILE = "avg.safetensors"
RUN_FILES = (CONFIG_FILE, TOKENIZER_FILE, RUN_FILE, METRICS_FILE, CURVES_FILE)
LOCK_FILE = ".train.lock"
TENSORBOARD_DIR = "tensorboard"  # with train.tensorboard: true
TENSORBOARD_EVENTS = "events.out.tfevents."  # how its files begin
RUN_KEYS = ("data_hash", "vocab_size", "model")  # what every run.json holds
STEP_PATTERN = re.compile(r"^step-(\d+)\.safetensors$")
STATE_PATTERN = re.compile(r"^step-(\d+)\.state\.pt$")
# What vouches for a run's files when transcli replaces them (`system.outputs`): their
# names, for the trainer that holds the run's lock.
RUN_RECORD = Record(None, names=lambda path: path.name in RUN_FILES or is_run_file(path.name))
# Settings that change no weight's shape or meaning: a resumed run may alter them (with
# the user's consent: they are part of the recipe, `recipe_changes`).
FREE_MODEL_KEYS = {"dropout", "attn_dropout", "act_dropout"}
# Settings a resumed run may change without a word: how it runs and what it keeps or
# reports, not what it learns.
SESSION_KEYS = {f"train.{key}" for key in (
    "max_minutes", "device", "threads", "compile", "cuda_graphs", "log_every", "save_every",
    "valid_every", "keep_last", "average_last", "valid_bleu_lines", "patience",
    "early_stop_metric", "tensorboard", "init_from")}
# Of those, the ones a resume uses for its own session and does not record for the next.
THIS_SESSION_ONLY = ("max_minutes", "device", "threads")


def step_path(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / CHECKPOINT_DIR / f"step-{step:07d}.safetensors"


def state_path(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / CHECKPOINT_DIR / f"step-{step:07d}.state.pt"


def ct2_cache_dir(run_dir: Path, checkpoint: Path, weights: str) -> Path:
    """Where `translate --engine ct2` keeps its export of the weights file `checkpoint`."""
    return Path(run_dir) / f"ct2-{checkpoint.stem}-{weights}"


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


def load_run_config(run_dir: str | Path, overrides: list[str] | None = None) -> Config:
    """The run's resolved config, with `section.key=value` overrides applied."""
    run_dir = Path(run_dir)
    make = (f"`transcli train` makes one: transcli train -c configs/cpu-1h.yaml --data PREPARED "
            f"--out {run_dir}")
    if not run_dir.is_dir():
        if run_dir.exists():
            raise UserError(f"{run_dir}: is a file, not a run directory")
        raise UserError(f"{run_dir}: run directory not found; {make}")
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        raise UserError(f"{run_dir}: not a run directory (no {CONFIG_FILE}); "
                        f"{_what_it_is(run_dir) or make}")
    return load_config(path, overrides)


def _what_it_is(folder: Path) -> Optional[str]:
    """What a folder given as a run dir is instead, when it is something of transcli's."""
    if (folder / MANIFEST_FILE).is_file():
        return f"it is a prepared dir: give it to `transcli train --data {folder}`"
    if folder.name == CHECKPOINT_DIR and (folder.parent / CONFIG_FILE).is_file():
        return f"it is a run's checkpoints folder: give the run dir, {folder.parent}"
    return None


def run_identity(cfg: Config, data: PreparedDir) -> dict[str, Any]:
    """What a run.json records of the run's data and model, checked by every resume."""
    return {"data_hash": data.data_hash, "vocab_size": data.vocab_size,
            "tokenizer_sha256": data.tokenizer.sha256, "model": cfg.fingerprint("model")}


def start_step(run_dir: Path, record: Optional[dict[str, Any]], previous: Optional[Config],
               cfg: Config, identity: dict[str, Any], data_dir: Path, resume: bool,
               force: bool) -> int:
    """The step training starts from (0 for a new run); refuses what cannot be done.
    `record` and `previous` are the dir's run.json and config.yaml (None where missing).
    Reads only: every rank may call it before rank 0 writes anything."""
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"{run_dir}: --out is a file, not a directory")
    entries = dir_entries(run_dir)
    if not resume:
        if record is None:
            _check_no_clash(run_dir, entries, force)
        elif has_trained(run_dir) and not force:
            raise UserError(f"{run_dir}: already holds a run; use --resume to continue it "
                            f"or --force to start afresh (which deletes its checkpoints)")
        return 0
    if record is None:
        if entries:
            raise UserError(f"{run_dir}: --resume: not a transcli run dir (no {RUN_FILE})")
        return 0
    if not has_trained(run_dir):  # nothing saved that other data or shapes could spoil
        return 0
    _check_compatible(run_dir, record, previous, cfg, identity, data_dir)
    steps = complete_steps(run_dir)
    weights = step_checkpoints(run_dir) or any(
        (run_dir / CHECKPOINT_DIR / name).is_file() for name in (BEST_FILE, AVG_FILE))
    if not steps and weights:  # weights without the state to go on from: never start over
        raise UserError(f"{run_dir}: --resume: no step has both its weights and its training "
                        f"state (step-N.state.pt) in {CHECKPOINT_DIR}/, so there is nothing to "
                        f"continue from; the weights there still translate. Start afresh with "
                        f"--force (it deletes them) or in another --out")
    return steps[-1] if steps else 0  # logged, stopped before its first save: start over


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


def _check_no_clash(run_dir: Path, entries: list[str], force: bool) -> None:
    """A dir that is not a run: refuse it when it holds files, unless `force`; even then
    refuse it when one of them has the name of a file a run writes."""
    if entries and not force:
        raise UserError(f"{run_dir}: is not empty and holds files train did not write (e.g. "
                        f"'{entries[0]}'); choose another --out, or pass --force to write beside "
                        f"them (train never deletes files it did not write)")
    folder = run_dir / CHECKPOINT_DIR
    clash = [name for name in RUN_FILES if name in entries]
    if folder.is_dir() and any(folder.iterdir()):
        clash.append(CHECKPOINT_DIR)
    if clash:
        raise UserError(f"{run_dir / clash[0]}: exists and was not written by transcli train "
                        f"(no {RUN_FILE} beside it); refusing to overwrite it, even with --force")


def read_run_record(run_dir: Path) -> Optional[dict[str, Any]]:
    """The run's `run.json`, or None when there is none; one that is not a run record
    is refused with one line (it is neither safe to continue nor to delete)."""
    path = run_dir / RUN_FILE
    if not path.exists():
        return None
    if not path.is_file():  # a FIFO would block the command for ever, a folder fail later
        raise UserError(f"{path}: not a regular file: {run_dir} is not a run dir transcli "
                        f"can read or continue")
    try:
        record = read_json(path)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc).splitlines()[0]
        raise UserError(f"{path}: unreadable ({reason})") from None
    missing = [key for key in RUN_KEYS if key not in record] if isinstance(record, dict) else 0
    if not isinstance(record, dict) or missing:
        what = f"no '{missing[0]}'" if missing else "not a JSON object"
        raise UserError(f"{path}: not a transcli run record ({what}): {run_dir} is not a run "
                        f"dir transcli can read or continue; move the file away (or give "
                        f"train another --out)")
    return record


def _check_compatible(run_dir: Path, old: dict[str, Any], previous: Optional[Config],
                      cfg: Config, identity: dict[str, Any], data_dir: Path) -> None:
    if old.get("data_hash") != identity["data_hash"]:
        raise UserError(f"{run_dir}: --resume refused: the run was trained on a different "
                        f"prepared dataset than {data_dir} (data_hash "
                        f"{str(old.get('data_hash'))[:12]} != {str(identity['data_hash'])[:12]})")
    if old.get("vocab_size") != identity["vocab_size"]:
        raise UserError(f"{run_dir}: --resume refused: the run's vocabulary has "
                        f"{old.get('vocab_size')} pieces, {data_dir} has {identity['vocab_size']}")
    if old.get("tokenizer_sha256", identity["tokenizer_sha256"]) != identity["tokenizer_sha256"]:
        raise UserError(f"{run_dir}: --resume refused: {data_dir / TOKENIZER_FILE} is not the "
                        f"tokenizer the run was trained with (its SHA-256 differs from "
                        f"{RUN_FILE}'s record)")
    if previous is None:
        raise UserError(f"{run_dir}: --resume: no {CONFIG_FILE} to compare the model with")
    changed = model_differences(previous.model, cfg.model)
    if changed:
        raise UserError(f"{run_dir}: --resume refused: the model config differs from "
                        f"{run_dir / CONFIG_FILE} ({', '.join(changed)})")


def model_differences(old: ModelConfig, new: ModelConfig) -> list[str]:
    """`model.key: old -> new` for every shape-relevant setting that differs."""
    a, b = asdict(old), asdict(new)
    return [f"model.{k}: {a[k]} -> {b[k]}" for k in a if k not in FREE_MODEL_KEYS and a[k] != b[k]]


def recipe_changes(recorded: dict[str, Any], cfg: Config) -> list[str]:
    """`section.key: old -> new` for every setting of the recipe (what the model learns:
    every `model` and `train` key but `SESSION_KEYS`) that `cfg` changes from the
    `recorded` config (a `Config.to_dict()`, as run.json keeps it). `train.max_steps` is
    the recipe only where a decay ends at it (not noam, not a decay ended by a clock)."""
    new = json.loads(json.dumps(cfg.to_dict()))  # the values as JSON records them
    found = []
    for section in ("model", "train"):
        old_values = recorded.get(section) if isinstance(recorded.get(section), dict) else {}
        for key, value in new[section].items():
            dotted = f"{section}.{key}"
            if dotted in SESSION_KEYS or old_values.get(key, value) == value:
                continue
            if dotted == "train.max_steps" and not _decays_by_steps(old_values, new["train"]):
                continue
            found.append(f"{dotted}: {_shown(old_values.get(key))} -> {_shown(value)}")
    return found


def _decays_by_steps(*trains: dict[str, Any]) -> bool:
    return any(t.get("schedule") != "noam" and not t.get("decay_minutes") for t in trains)


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value


def write_run_files(run_dir: Path, cfg: Config, identity: dict[str, Any], data: PreparedDir,
                    fresh: bool, previous: Optional[Config] = None) -> None:
    """Rank 0 only, holding the run's lock: remove temp files killed writes left, clear
    a forced-over run (only the files a run writes) when `fresh`, then record the run's
    identity and recipe, the resolved config (a resume keeps the target of `previous`,
    the config it had: `kept_target`) and the tokenizer. `run.json` outlives the old
    run's files and is written before the others, so a kill at any moment leaves a dir
    that says it is a run: the next start takes it over (`has_trained`)."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{exc.filename}: {exc.strerror}") from None
    remove_stale_temp(run_dir)
    record = cfg if fresh or previous is None else kept_target(previous, cfg)
    if fresh:
        clear_run(run_dir)
    with output_file(run_dir / RUN_FILE, "run record", record=RUN_RECORD) as out:
        out.write((json.dumps({**identity, "data_dir": str(data.dir.resolve()),
                               "config": record.to_dict()}, indent=2) + "\n").encode())
    folder = run_dir / CHECKPOINT_DIR
    try:
        folder.mkdir(exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()  # unwritable: say so now, not at the save
    except OSError as exc:
        raise cannot_write(folder, "checkpoints", exc) from None
    with output_file(run_dir / CONFIG_FILE, "config", record=RUN_RECORD) as out:
        save_config(record, Path(out.name))
    with output_file(run_dir / TOKENIZER_FILE, "tokenizer", record=RUN_RECORD) as out:
        out.write(data.tokenizer.model_bytes)


def is_run_file(name: str) -> bool:
    """Whether a file in `checkpoints/` is one a run writes."""
    return bool(STEP_PATTERN.match(name) or STATE_PATTERN.match(name)
                or name in (BEST_FILE, AVG_FILE) or is_temp(name))


def clear_run(run_dir: Path) -> None:
    """Remove the files a run writes (`start_step` has checked that it is a run) but its
    `run.json`, which the new run's replaces."""
    folder = run_dir / CHECKPOINT_DIR
    doomed = [run_dir / name for name in RUN_FILES if name != RUN_FILE]
    if folder.is_dir():
        doomed += [path for path in folder.iterdir() if is_run_file(path.name)]
    board = run_dir / TENSORBOARD_DIR
    if board.is_dir():
        doomed += [path for path in board.iterdir() if path.name.startswith(TENSORBOARD_EVENTS)]
    for path in doomed:
        try:
            if path.is_file() or path.is_symlink():
                path.unlink()
        except OSError as exc:
            raise UserError(f"{path}: cannot remove the old run's file ({exc.strerror})") from None


def remove_stale_temp(run_dir: Path) -> None:
    """Temp files of writes a kill interrupted (full-size weights among them), in the run
    dir and its `checkpoints/`."""
    remove_leftovers(run_dir)
    remove_leftovers(run_dir / CHECKPOINT_DIR)


def kept_target(previous: Config, cfg: Config) -> Config:
    """A resumed run's config to record: as given, except what was for this session
    alone, which a later `--resume` without --config would otherwise inherit: a smaller
    `max_steps` (stop early this time) keeps the run's own target, and a time limit,
    device or thread count given for this session (`THIS_SESSION_ONLY`) keeps the run's
    own."""
    kept = {key: getattr(previous.train, key) for key in THIS_SESSION_ONLY}
    kept["max_steps"] = max(previous.train.max_steps, cfg.train.max_steps)
    return replace(cfg, train=replace(cfg.train, **kept))
