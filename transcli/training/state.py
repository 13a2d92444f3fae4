"""What a resumed run needs besides the weights: the training's progress.

Saved beside each checkpoint (`step-N.state.pt`, tensors and plain containers only,
loaded with `weights_only=True`): the step, the data position (and the batch plan it
counts in), token counters, the open log interval, the early-stopping record, the
optimizer (and fp16 scaler) state, the averaged weights, and every random generator.
`save_step` writes a step; `resume.py` restores one.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, astuple, dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch

from transcli.config.schema import TrainConfig
from transcli.data.batching import BatchPlan, StreamPosition
from transcli.export.ct2 import remove_stale_caches
from transcli.rundir.checkpoints import save_checkpoint, save_weights
from transcli.rundir.layout import AVG_FILE, CHECKPOINT_DIR
from transcli.training.objective import LossSums
from transcli.training.optimization import Optimization
from transcli.training.schedules import decay_clock


@dataclass
class Interval(LossSums):
    """Sums since the last log line (saved, so a resumed run logs the same numbers)."""

    padded: float = 0.0  # positions fed, padding included (both sides)
    real: float = 0.0


@dataclass
class AlignSums:
    """Guided alignment's cost (`objective.alignment_cost`) summed since the last log
    line, and the aligned target rows it was summed over (saved, as `Interval` is)."""

    cost: float = 0.0
    rows: float = 0.0

    def add(self, other: AlignSums) -> None:
        self.cost += other.cost
        self.rows += other.rows

    def means(self) -> dict[str, float]:
        """What a log line says of it: the mean cost per aligned row (nothing without)."""
        return {"align_loss": self.cost / self.rows} if self.rows else {}


SUMS = 6  # an update's sums: [loss, nll, tokens, correct] and AlignSums' two


class DeviceSums:
    """What updates add up on the device between two reads, so that an update never
    waits for the device: the `SUMS` sums, the latest gradient norm, and the first
    update whose loss or gradient was not finite (0: none)."""

    def __init__(self, device: torch.device):
        self.values = torch.zeros(SUMS + 2, dtype=torch.float64, device=device)

    def add(self, sums: torch.Tensor, grad_norm: torch.Tensor, bad: torch.Tensor,
            step: int) -> None:
        v = self.values
        v[:len(sums)] += sums.double()  # without guided alignment: the first 4
        v[SUMS] = grad_norm.double()
        v[SUMS + 1] = torch.where((v[SUMS + 1] == 0) & bad, float(step), v[SUMS + 1])

    def read(self) -> tuple[LossSums, AlignSums, float, int]:
        """(sums since the last read, alignment sums, latest gradient norm, first
        non-finite update or 0)."""
        values = self.values.tolist()
        self.values[:SUMS].zero_()
        self.values[SUMS + 1] = 0
        return (LossSums.of(values), AlignSums(*values[4:SUMS]), values[SUMS],
                int(values[SUMS + 1]))


@dataclass
class Best:
    """The early-stopping record: best validation so far and validations since, of the
    metric it follows (`validation.best_metric`: "bleu" or "nll"; "" in states saved
    before it was recorded)."""

    value: Optional[float] = None
    step: int = 0
    stale: int = 0
    metric: str = ""


@dataclass
class Progress:
    step: int = 0
    position: StreamPosition = field(default_factory=StreamPosition)
    src_tokens: int = 0  # real tokens trained on, all processes
    tgt_tokens: int = 0
    interval: Interval = field(default_factory=Interval)
    best: Best = field(default_factory=Best)
    seconds: float = 0.0  # training wall time over all sessions, at the last update's start
    warmup_seconds: float = 0.0  # `seconds` when warm-up ended (train.decay_minutes)
    aligned: AlignSums = field(default_factory=AlignSums)  # the open log interval's

    def decay_spent(self, decay_minutes: float, seconds: Optional[float] = None) -> float:
        """The share of train.decay_minutes spent after warm-up at `seconds` of training
        (the last update's by default): `schedules.decay_clock`."""
        return decay_clock(self.seconds if seconds is None else seconds, self.warmup_seconds,
                           decay_minutes)

    def decay_over(self, tc: TrainConfig, seconds: float) -> bool:
        """train.decay_minutes of training (`seconds`) are behind this run, after warm-up:
        the next update would run at rate zero."""
        return self.step >= tc.warmup_steps and self.decay_spent(tc.decay_minutes, seconds) >= 1

    def end_warmup(self, tc: TrainConfig) -> Optional[str]:
        """Start the decay's clock when warm-up ends; a warning when warm-up outlasted it."""
        self.warmup_seconds = self.seconds
        if tc.decay_minutes and self.seconds >= tc.decay_minutes * 60:
            return (f"warning: the warm-up took {self.seconds / 60:.1f} min, longer than "
                    f"train.decay_minutes={tc.decay_minutes:g}; the run stops here")
        return None

    def count(self, tgt_tokens: float, padded: float, real: float) -> None:
        """Add an update's sizes (all processes, counted on the host from the batches):
        target tokens, positions fed (padding included) and real positions, both sides."""
        self.tgt_tokens += int(tgt_tokens)
        self.src_tokens += int(real - tgt_tokens)
        self.interval.padded += padded
        self.interval.real += real

    def state(self) -> dict[str, Any]:
        return {"step": self.step, "position": self.position.state(),
                "src_tokens": self.src_tokens, "tgt_tokens": self.tgt_tokens,
                "interval": asdict(self.interval), "best": asdict(self.best),
                "seconds": self.seconds, "warmup_seconds": self.warmup_seconds,
                "aligned": asdict(self.aligned)}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Progress:
        """The progress `state()` saved; raises (KeyError, TypeError, ValueError) on a
        state of another shape, and on one no run can have (`usable`)."""
        # States written before the clock (or guided alignment) was kept have no seconds
        # (no alignment sums): they count from 0.
        aligned = state.get("aligned", {})
        progress = cls(state["step"], StreamPosition(**state["position"]), state["src_tokens"],
                       state["tgt_tokens"], Interval(**state["interval"]),
                       Best(**state["best"]), float(state.get("seconds", 0.0)),
                       float(state.get("warmup_seconds", 0.0)),
                       AlignSums(float(aligned.get("cost", 0.0)), float(aligned.get("rows", 0.0))))
        if not progress.usable():
            raise ValueError("a count or the training clock is negative, not finite or not "
                             "a number")
        return progress

    def usable(self) -> bool:
        """Whole counts, finite numbers, none negative: a NaN clock would set the learning
        rate to 0 for the rest of the run, a NaN best would never be beaten."""
        counts = (self.step, self.position.epoch, self.position.index, self.src_tokens,
                  self.tgt_tokens, self.best.step, self.best.stale)
        numbers = (*counts, *astuple(self.interval), *astuple(self.aligned), self.seconds,
                   self.warmup_seconds,
                   *(() if self.best.value is None else (self.best.value,)))
        return (all(type(n) is int for n in counts) and self.best.metric in ("", "bleu", "nll")
                and all(type(n) in (int, float) and math.isfinite(n) and n >= 0
                        for n in numbers))


def save_step(run_dir: Path, model: torch.nn.Module, opt: Optimization, p: Progress,
              plan: BatchPlan, tokenizer_sha256: str) -> None:
    """Step `p.step`'s weights and training state (with the batch plan its data position
    counts in), the older steps pruned to train.keep_last, the weight average's weights
    as `avg`, and the CTranslate2 caches of weights now gone removed."""
    state = {**p.state(), **opt.state(), "rng": rng_state(),
             "plan": plan.fingerprint(p.position.epoch) if p.position.index
             else None}  # an epoch's start is the same in every plan
    save_checkpoint(model, state, run_dir, p.step, tokenizer_sha256, opt.tc.keep_last)
    remove_stale_caches(run_dir)
    if opt.ema:
        with opt.averaged():
            save_weights(model, run_dir / CHECKPOINT_DIR / AVG_FILE, tokenizer_sha256)


def rng_state() -> dict[str, Any]:
    state = {"python": random.getstate(), "torch": torch.get_rng_state(),
             "numpy": _numpy_rng_to_tensors(np.random.get_state())}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(_tuples(state["python"]))
    torch.set_rng_state(state["torch"])
    name, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _numpy_rng_to_tensors(state: tuple) -> tuple:
    """numpy's state holds an ndarray, which a weights-only load refuses: a tensor won't."""
    name, keys, pos, has_gauss, gauss = state
    return (name, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, gauss)


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, (list, tuple)) else value
