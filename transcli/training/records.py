"""What a training run keeps on disk as it goes: log lines, validations, checkpoints.

Rank 0 writes them (other ranks keep only the clock of the last save); the seconds they
take are kept apart, so that a log line's tokens/s counts training alone.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any, Iterator, Optional

import torch

from transcli.rundir.checkpoints import (
    average_checkpoints,
    prune_checkpoints,
    save_checkpoint,
    save_weights,
)
from transcli.rundir.layout import AVG_FILE, CHECKPOINT_DIR, step_checkpoints, step_path
from transcli.rundir.metrics import MetricsLog
from transcli.training.optimization import Optimization
from transcli.training.state import Interval, Progress, rng_state


class RunRecords:
    """The metrics log and the checkpoints of one session of a run."""

    def __init__(self, run_dir: Path, log: MetricsLog, main: bool, world: int,
                 progress: Progress, tokenizer_sha256: str):
        self.run_dir, self.log, self.main, self.world = run_dir, log, main, world
        self.tokenizer_sha256 = tokenizer_sha256  # recorded in every weights file
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
            state = {**p.state(), **opt.state(), "rng": rng_state(), "world_size": self.world}
            save_checkpoint(model, state, self.run_dir, p.step, self.tokenizer_sha256)
            prune_checkpoints(self.run_dir, opt.tc.keep_last)
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
