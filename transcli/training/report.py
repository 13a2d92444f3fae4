"""What a training run tells its user: the first line, the progress bar, the log lines
(`TrainLog`), the last line.

A run ended by a clock (`train.decay_minutes`, or this session's `train.max_minutes`)
shows its progress in minutes, the one total that does not move; a run ended by
`train.max_steps` in updates. The first and the last line say what a run of that length
gives: a model needs thousands of updates before it translates, and a short one only
repeats frequent words.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import torch
from tqdm import tqdm

from transcli.config.schema import TrainConfig
from transcli.rundir.layout import CHECKPOINT_DIR, complete_steps
from transcli.rundir.metrics import MetricsLog
from transcli.rundir.run import YOUNG_MODEL, RunDir
from transcli.training.compiling import CompiledStates
from transcli.training.state import Interval, Progress


def say(message: str, main: bool = True, prefix: bool = True) -> None:
    """One line on stderr, above the progress bar, from the main process only."""
    if main:
        tqdm.write(f"transcli train: {message}" if prefix else message, file=sys.stderr)


def start_lines(start: str, model: str, data: str, tc: TrainConfig, progress: Progress,
                device: torch.device, precision: str, world: int,
                notes: list[str]) -> list[str]:
    """The session's first lines: its `notes` (settings the device does not run as asked,
    what a resume changes), then where the run starts, the model, the machine, the data,
    and what a run of that length gives."""
    threads = f", {torch.get_num_threads()} threads" if device.type == "cpu" else ""
    machine = f"{device} ({precision}{threads}) x {world} process(es)"
    return [*notes, f"{start}: {model} on {machine}; {data}. {plan(tc, progress)}"]


def data_line(pairs: int, skipped: int, batches: int, tc: TrainConfig, world: int) -> str:
    return (f"{pairs:,} training pairs ({skipped} over max_positions left out), {batches} "
            f"batches of <= {tc.batch_tokens} tokens per epoch, {tc.accum_steps * world} per "
            f"update")


def recipe(tc: TrainConfig, ema: bool) -> str:
    """The recipe's options that are on, as ", compiled, EMA 0.999, ..." (or "")."""
    return "".join(f", {name}" for name, on in (
        ("compiled", tc.compile), (f"EMA {tc.ema_decay:g}", ema),
        (f"subword sampling alpha {tc.sample_alpha:g}", tc.sample_alpha),
        (f"pairs over {tc.long_tokens} source pieces x{tc.long_weight:g}", tc.long_weight != 1),
        (f"{tc.case_augment * 100:g}% of pairs cased", tc.case_augment),
        (f"{tc.term_annotation * 100:g}% of pairs with a term annotated", tc.term_annotation),
        (f"{tc.schedule} decay over {tc.decay_minutes:g} min of training", tc.decay_minutes))
        if on)


def plan(tc: TrainConfig, progress: Progress) -> str:
    """How the run will end, when its first quality figure comes, and what a run of
    that length gives."""
    ends = [f"{tc.max_steps:,} updates"]
    if tc.decay_minutes:
        left = max(0.0, tc.decay_minutes - progress.seconds / 60)
        ends.insert(0, f"the end of its {tc.decay_minutes:g}-minute decay ({left:.1f} min "
                       f"left)")
    if tc.max_minutes:
        ends.insert(0, f"{tc.max_minutes:g} minute{'' if tc.max_minutes == 1 else 's'} of "
                       f"this session")
    stops = f"It stops at {ends[0]}" + (
        f" (or {' or '.join(ends[1:])}, if sooner)" if len(ends) > 1 else "")
    first = progress.step - progress.step % tc.valid_every + tc.valid_every
    validation = (f"the first validation comes at update {first:,}" if first <= tc.max_steps
                  else f"no validation comes before that (train.valid_every={tc.valid_every})")
    return (f"{stops}; {validation}. A model of fewer than {YOUNG_MODEL:,} updates "
            f"translates poorly (repeated words)")


class ProgressBar:
    """tqdm counting minutes for a run its decay's clock ends, updates otherwise; the
    step, loss, learning rate and tokens/s ride along as its postfix. Once the session's
    first log line has a pace, a clock-ended run says how many updates its clock will
    allow (`say`): a slow or busy machine makes far fewer than the recipe's own."""

    def __init__(self, tc: TrainConfig, progress: Progress, session_start: float,
                 enabled: bool, say: Callable[[str], None] = lambda line: None):
        self.minutes = clock_minutes(tc, progress)
        self.session_start, self.first_step, self.say = session_start, progress.step, say
        self.paced = False
        if self.minutes is not None:
            self.bar = tqdm(total=round(self.minutes, 1), unit="min", disable=not enabled,
                            bar_format="{l_bar}{bar}| {n:.1f}/{total} min "
                                       "[{elapsed}<{remaining}{postfix}]",
                            mininterval=1.0, file=sys.stderr, dynamic_ncols=True)
        else:
            self.bar = tqdm(total=tc.max_steps, initial=progress.step, unit="step",
                            disable=not enabled, mininterval=1.0, file=sys.stderr,
                            dynamic_ncols=True)
        self.fields: dict[str, str] = {}

    def update(self, step: int, **fields: str) -> None:
        """After each update; `fields` (loss, lr, tok_s) when a log line has them."""
        self.fields.update(fields)
        if self.minutes is None:
            self.bar.update(1)
        else:
            elapsed = (time.perf_counter() - self.session_start) / 60
            self.bar.n = round(min(elapsed, self.minutes), 1)
            if fields and not self.paced:
                self.paced = True
                self.say(pace_line(step, self.first_step, elapsed, self.minutes))
        self.bar.set_postfix(step=f"{step:,}", **self.fields, refresh=False)
        self.bar.update(0)  # redraws at most once per mininterval

    def close(self) -> None:
        self.bar.close()


def clock_minutes(tc: TrainConfig, progress: Progress) -> Optional[float]:
    """Minutes this session has before the decay's clock ends the run (or this session's
    max_minutes, when sooner), or None for a run without a clock-ended decay: its end is
    max_steps (a max_minutes alone is a cap, shown by the run's last line)."""
    if not tc.decay_minutes:
        return None
    left = max(0.0, tc.decay_minutes - progress.seconds / 60)
    return min(left, tc.max_minutes) if tc.max_minutes else left


def pace_line(step: int, first_step: int, elapsed: float, minutes: float) -> str:
    """At this session's pace so far, the update the clock's end will come near."""
    per_minute = (step - first_step) / max(elapsed, 1e-9)
    at_end = step + per_minute * max(0.0, minutes - elapsed)
    return (f"at this pace ({per_minute:,.0f} updates/min) this session ends near update "
            f"{at_end:,.0f}; fewer updates make a weaker model (a busy or slower machine "
            f"makes fewer: docs/TRAINING.md, \"What a short run gives\")")


def saved_steps(run: RunDir) -> str:
    """What a stopped run can continue from."""
    steps = complete_steps(run.path)
    if not steps:
        return f"no checkpoint had been saved yet in {run.path}"
    return f"the last good checkpoint (step {steps[-1]}) is intact in {run.path}"


def ended(reason: str) -> bool:
    """Whether a run that stopped for `reason` is over (not stopped to go on later)."""
    return reason == "finished" or reason.startswith(("end of the", "early stop"))


def ending(reason: str, step: int, tc: Any, run_dir: Path, resume: str) -> str:
    """The run's last line: why it stopped, where the checkpoint is, and, when the run is
    not over, the command (`resume`) that continues it."""
    where = (f"checkpoint step {step} saved in {run_dir / CHECKPOINT_DIR}" if step
             else "no update was made, so nothing was saved")
    if ended(reason):
        done = "finished" if reason == "finished" else reason
        message = f"{done} at step {step}; {where}"
    else:
        said = f"{reason} received" if reason in ("SIGINT", "SIGTERM", "SIGHUP") else reason
        message = f"{said}: stopped after step {step}; {where}; continue with: {resume}"
    if reason.startswith("time limit") and step < tc.max_steps / 2 and not tc.decay_minutes:
        message += (f". Warning: that is {step} of the {tc.max_steps} planned updates "
                    f"({100 * step / tc.max_steps:.0f}%): the model is undertrained and will "
                    f"translate poorly until it trains longer (the command above, or a "
                    f"larger train.max_minutes: --set train.max_minutes=N)")
    return message


def speed_notes(device: torch.device, compiled: Optional[CompiledStates]) -> dict[str, Any]:
    """What a log line adds about the run's speed: compilations and batch shapes (when
    compiled), the device's peak memory so far (CUDA)."""
    notes = compiled.notes() if compiled is not None else {}
    if device.type == "cuda":
        notes["peak_gib"] = round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
    return notes


def validation_line(record: dict[str, Any]) -> str:
    return " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in record.items())


class TrainLog(MetricsLog):
    """The metrics log as a session writes it: its "train" lines count tokens/s over
    training alone, the seconds spent validating and saving (`pause`) left out."""

    def __init__(self, run_dir: Path, enabled: bool, tensorboard: bool):
        super().__init__(run_dir, enabled, tensorboard)
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

    def train_line(self, p: Progress, lr: float, grad_norm: float,
                   notes: Optional[dict[str, Any]] = None, partial: bool = False
                   ) -> dict[str, Any]:
        """The interval's means as a "train" line, with `notes` (`speed_notes`); a
        `partial` one (a run's last, shorter interval) is dropped again by a resume,
        which continues that interval."""
        iv = p.interval
        elapsed = max(time.perf_counter() - self.interval_start - self.paused, 1e-9)
        record = {"step": p.step, "split": "train", "epoch": p.position.epoch, **iv.means(),
                  "lr": lr, "grad_norm": grad_norm, "tokens_per_s": iv.tokens / elapsed,
                  "pad_frac": 1.0 - iv.real / iv.padded, "tgt_tokens": p.tgt_tokens,
                  "src_tokens": p.src_tokens, "minutes": p.seconds / 60, **(notes or {})}
        self.append({**record, "partial": True} if partial else record)
        p.interval = Interval()
        self.interval_start, self.paused = time.perf_counter(), 0.0
        return record

    def validation(self, record: dict[str, Any]) -> None:
        self.append(record)
        self.plot()
