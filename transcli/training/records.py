"""What a training run keeps on disk: its record, config and tokenizer when a session
starts (`record_run`), then log lines, validations, checkpoints as it goes.

Rank 0 writes them (other ranks keep only the clock of the last save); the seconds they
take are kept apart, so that a log line's tokens/s counts training alone.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator, Optional

import torch

from transcli.config.loading import save_config
from transcli.config.schema import Config
from transcli.data.batching import BatchPlan
from transcli.data.prepared_dir import PreparedDir
from transcli.data.tokenizer import TOKENIZER_FILE
from transcli.export.ct2 import remove_stale_caches
from transcli.rundir.checkpoints import (
    average_checkpoints,
    discard_after,
    prune_checkpoints,
    save_checkpoint,
    save_weights,
)
from transcli.rundir.layout import (
    AVG_FILE,
    CHECKPOINT_DIR,
    CONFIG_FILE,
    RUN_FILE,
    RUN_FILES,
    RUN_RECORD,
    TENSORBOARD_DIR,
    TENSORBOARD_EVENTS,
    is_run_file,
    step_checkpoints,
    step_path,
)
from transcli.rundir.metrics import MetricsLog
from transcli.rundir.run import RunDir
from transcli.system.errors import UserError
from transcli.system.files import cannot_write
from transcli.system.outputs import output_file
from transcli.system.replacing import remove_leftovers
from transcli.training.distributed import Dist
from transcli.training.optimization import Optimization
from transcli.training.report import say
from transcli.training.resume import Start
from transcli.training.state import Interval, Progress, rng_state


def record_run(start: Start, data: PreparedDir, dist: Dist, log: MetricsLog) -> None:
    """Once every check has passed (rank 0): clear what a resume redoes (or a new run
    replaces), record the run, cut the metrics back to where the session starts."""
    dist.barrier()
    if dist.main:
        resume = start.options.resume
        if resume:
            discard_after(start.run.path, start.step)
        write_run_files(start.run, start.config_to_record(), start.identity, data,
                        fresh=not resume)
        remove_stale_caches(start.run.path)  # of the steps discarded, or the run replaced
        if resume:
            log.resume(start.step, lambda line: say(f"warning: {line}"))
    dist.barrier()


def write_run_files(run: RunDir, record: Config, identity: dict[str, Any], data: PreparedDir,
                    fresh: bool) -> None:
    """Rank 0 only, holding the run's lock: remove temp files killed writes left, clear
    a forced-over run (only the files a run writes) when `fresh`, then record the run's
    identity and the config `record` (run.json, config.yaml), and the tokenizer.
    `run.json` outlives the old run's files and is written before the others, so a kill
    at any moment leaves a dir that says it is a run: the next start takes it over
    (`layout.has_trained`)."""
    try:
        run.path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{exc.filename}: {exc.strerror}") from None
    remove_stale_temp(run)
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
    """Remove the files a run writes (`resume.start_session` has checked that it is a run) but
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


def remove_stale_temp(run: RunDir) -> None:
    """Temp files of writes a kill interrupted (full-size weights among them), in the run
    dir and its `checkpoints/`."""
    remove_leftovers(run.path)
    remove_leftovers(run.path / CHECKPOINT_DIR)


class RunRecords:
    """The metrics log and the checkpoints of one session of a run (`plan`: the batch
    plan its data positions count in)."""

    def __init__(self, start: Start, log: MetricsLog, dist: Dist, progress: Progress,
                 plan: BatchPlan):
        self.run_dir, self.log, self.main, self.world = start.run.path, log, dist.main, dist.world
        self.tokenizer_sha256 = start.tokenizer_sha256  # recorded in every weights file
        self.plan = plan
        self.saved = (progress.step, progress.seconds)  # the step and clock last saved
        self.paused = 0.0  # seconds of records written inside the current log interval
        self.interval_start = time.perf_counter()

    @contextlib.contextmanager
    def pause(self) -> Iterator[None]:
        """Time spent in the block (validating, saving) is not training time."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.paused += time.perf_counter() - started

    def log_line(self, p: Progress, lr: float, grad_norm: float,
                 notes: Optional[dict[str, Any]] = None, partial: bool = False
                 ) -> dict[str, Any]:
        """The interval's means as a "train" line, with `notes` (`parts.speed_notes`); a
        `partial` one (a run's last, shorter interval) is dropped again by a resume,
        which continues that interval."""
        iv = p.interval
        elapsed = max(time.perf_counter() - self.interval_start - self.paused, 1e-9)
        record = {"step": p.step, "split": "train", "epoch": p.position.epoch, **iv.means(),
                  "lr": lr, "grad_norm": grad_norm, "tokens_per_s": iv.tokens / elapsed,
                  "pad_frac": 1.0 - iv.real / iv.padded, "tgt_tokens": p.tgt_tokens,
                  "src_tokens": p.src_tokens, "minutes": p.seconds / 60, **(notes or {})}
        self.log.append({**record, "partial": True} if partial else record)
        p.interval = Interval()
        self.interval_start, self.paused = time.perf_counter(), 0.0
        return record

    def validation(self, record: dict[str, Any]) -> None:
        self.log.append(record)
        self.log.plot()

    def save(self, model: torch.nn.Module, opt: Optimization, p: Progress) -> None:
        """A checkpoint of step `p.step` (weights and training state), the older ones
        pruned to train.keep_last, and the weight average's current weights."""
        if self.main:
            state = {**p.state(), **opt.state(), "rng": rng_state(),
                     "plan": self.plan.fingerprint(p.position.epoch) if p.position.index
                     else None}  # an epoch's start is the same in every plan
            save_checkpoint(model, state, self.run_dir, p.step, self.tokenizer_sha256)
            prune_checkpoints(self.run_dir, opt.tc.keep_last)
            remove_stale_caches(self.run_dir)
            if opt.ema:
                with opt.averaged():
                    save_weights(model, self.run_dir / CHECKPOINT_DIR / AVG_FILE,
                                 self.tokenizer_sha256)
        self.saved = (p.step, p.seconds)

    def unsaved(self, p: Progress, clocked: bool) -> bool:
        """Whether the run has moved on since its last save (its clock too, when a decay
        follows it: the next session must start from this one's last second)."""
        return self.saved[0] != p.step or (clocked and self.saved[1] != p.seconds)

    def average(self, last: int) -> None:
        """`avg` as the mean of the last `last` step checkpoints (runs without a weight
        average of their own)."""
        steps = [step for step, _ in step_checkpoints(self.run_dir)][-last:]
        if steps:
            average_checkpoints([step_path(self.run_dir, step) for step in steps],
                                self.run_dir / CHECKPOINT_DIR / AVG_FILE)
