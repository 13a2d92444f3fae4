"""The training loop of Vaswani et al. (2017), on one device or many.

One update is `accum_steps` token-budget batches per process. Their label-smoothed
loss is summed and divided by the update's target tokens over all processes, so
a 2-process DistributedDataParallel run takes the same steps as 1 process with
twice the accumulation. Everything a resumed run needs (weights, optimizer, step,
data position, RNG, counters, averaged weights) is saved beside each checkpoint
(`state.py`); SIGINT/SIGTERM/SIGHUP finish the update and save; a non-finite
loss stops before it can be applied. Validation and the best/patience policy are in
`validation.py`; the parts a run is built from, in `parts.py`; what it prints, in
`report.py`.
"""

from __future__ import annotations

import contextlib
import math
import time
from typing import NamedTuple, Optional

import numpy as np
import torch

from transcli.config.schema import Config
from transcli.data.batching import BackgroundLoader, Batch, BatchStream, StreamPosition
from transcli.data.prepared_dir import PreparedDir
from transcli.model.transformer import Transformer, count_parameters
from transcli.rundir.layout import BEST_FILE, CHECKPOINT_DIR
from transcli.rundir.metrics import MetricsLog
from transcli.rundir.run import RunDir
from transcli.system.errors import UserError, WriteFailed
from transcli.system.runtime import autocast, keep_freed_memory, release_freed_memory, set_threads
from transcli.system.signals import StopSignals
from transcli.system.streams import tolerant_stderr
from transcli.training import report
from transcli.training.distributed import Dist, no_sync
from transcli.training.memory import check_training_memory
from transcli.training.objective import LossSums
from transcli.training.optimization import Optimization
from transcli.training.parts import (
    device_settings,
    run_lock,
    speed_notes,
    training_batches,
    training_device,
    training_net,
)
from transcli.training.records import RunRecords, record_run
from transcli.training.resume import StartOptions, start_session
from transcli.training.state import DeviceSums
from transcli.training.validation import validation_set

RELEASE_EVERY = 50  # updates between handing kept memory back to the OS (not per log line)


def train(cfg: Config, data: PreparedDir, run: RunDir,
          options: StartOptions = StartOptions()) -> None:
    """Train on an opened prepared dir into a run dir (as `options` ask: a new run, a
    resume, --force); under torchrun, one process per device."""
    dist = Dist.from_env()
    device = training_device(cfg.train.device, dist)
    if device.type == "cpu":
        set_threads(cfg.train.threads)
        keep_freed_memory()
    dist.start(device)
    try:
        with tolerant_stderr(), run_lock(run, dist):
            trainer = Trainer(cfg, data, run, dist, device, options)
            try:
                trainer.run()
            except WriteFailed as exc:  # disk full, permissions: say what is safe
                raise WriteFailed(f"{exc}; training stopped at step {trainer.progress.step}, "
                                  f"{report.saved_steps(run)}") from None
    finally:
        dist.stop()


def update_seed(seed: int, step: int, rank: int) -> int:
    """Dropout's seed for one update of one process: a resumed run, or any rank of a
    DDP job, draws the same masks without carrying every process's RNG state."""
    return int(np.random.SeedSequence([seed, step, rank]).generate_state(1)[0])


class StepInfo(NamedTuple):
    """What all processes share before an update: its sizes, whether to stop, and the
    session's clock (the same on every process, so are their learning rates)."""

    tgt_tokens: float
    padded: float  # positions fed, padding included (both sides)
    real: float
    stop: bool
    seconds: float  # since the session started, averaged over processes


def share_step_info(batches: list[Batch], dist: Dist, seconds: float,
                    *stop_requests: Optional[str]) -> StepInfo:
    """Sum over processes of the update's sizes and stop requests: one tiny all-reduce
    on the CPU, no device sync."""
    values = torch.tensor([sum(b.tgt_tokens for b in batches),
                           sum(b.padded_positions for b in batches),
                           sum(b.real_positions for b in batches),
                           sum(request is not None for request in stop_requests),
                           seconds], dtype=torch.float64)
    tokens, padded, real, stop, seconds = dist.sum_on_cpu(values).tolist()
    return StepInfo(tokens, padded, real, stop > 0, seconds / dist.world)


# ----------------------------------------------------------------------------- the loop


class Trainer:
    """One session of a training run: this process's part of it, from its start (or
    resume) to its stop (end of the run, a signal, a time limit), saving as it goes.

    A run resumed twice has three sessions; `progress` carries what they share (the
    step, the data position, the training clock), `session_start` where this one began.
    Built from an opened prepared dir and run dir; refuses what cannot be trained before
    the run dir is written."""

    def __init__(self, cfg: Config, data: PreparedDir, run: RunDir, dist: Dist,
                 device: torch.device, options: StartOptions):
        self.cfg, self.run_dir, self.dist, self.device = cfg, run, dist, device
        settings = device_settings(cfg.train, device)  # what of the settings `device` runs
        self.tc, self.precision = settings.tc, settings.precision
        start = start_session(cfg, data, run, options)  # every check of the run dir
        start.notes[:0] = settings.warnings
        check_training_memory(cfg, start.vocab_size, device,
                              dist.world if device.type == "cpu" else 1)
        self.plan, self.make_batch = training_batches(cfg, data, dist.rank)
        torch.manual_seed(self.tc.seed)
        self.model = Transformer(cfg.model, start.vocab_size).to(device)
        start.load_init(self.model)  # before the optimizer: a weight average starts there
        self.opt = Optimization(self.model, self.tc, cfg.model.d_model, device)
        self.progress = start.restore(self.model, self.opt, self.plan)
        self.net = training_net(self.model, self.tc, dist, device)  # fed each batch
        self.valid = validation_set(cfg, data, device) if dist.main else None
        self.start, self.resume_line = start, report.resume_command(data.dir, run.path)
        # Everything that can be refused was checked: only now is the run dir written.
        log = MetricsLog(run.path, enabled=dist.main, tensorboard=self.tc.tensorboard)
        record_run(start, data, dist, log)
        self.records = RunRecords(start, log, dist, self.progress, self.plan)
        self.stop_reason: Optional[str] = None  # rank 0's decision: early stop, time limit
        self.device_sums = DeviceSums(device)  # the updates' sums, on the device until read
        self.signals = StopSignals()  # the run's, once it runs
        self.lr, self.grad_norm = 0.0, math.nan  # of the latest update (norm: latest read)
        self.started = time.perf_counter()
        self.session_start = (self.progress.step, self.progress.seconds)

    def run(self) -> None:
        p, tc = self.progress, self.tc
        if p.step >= tc.max_steps or p.decay_over(tc, p.seconds):
            budget = (f"decay_minutes={tc.decay_minutes:g}" if p.decay_over(tc, p.seconds)
                      else f"max_steps={tc.max_steps}")
            self._say(f"{self.run_dir.path}: already at step {p.step} ({budget}); nothing to do")
            return
        with StopSignals(on_disk=lambda: f"{report.saved_steps(self.run_dir)}; continue "
                                         f"with: {self.resume_line}") as signals:
            self.signals = signals
            self._say_start()  # once said, a stop signal is training's (a save, exit 0)
            stream = BatchStream(self.plan, p.position, self.dist.rank, self.dist.world)
            loader = BackgroundLoader(self.make_batch, stream,
                                      pin_memory=self.device.type == "cuda")
            bar = report.ProgressBar(tc, p, self.started, self.dist.main, self._say)
            with contextlib.closing(bar), contextlib.closing(loader):  # each, whatever comes
                reason = self._loop(loader, bar)
            self._finish(reason)

    def _loop(self, loader: BackgroundLoader, bar: report.ProgressBar) -> str:
        """Update after update until the run ends or is stopped; why it stopped."""
        p, tc = self.progress, self.tc
        alone = self.dist.world == 1  # may stop while it waits: no other process waits on it
        while p.step < tc.max_steps:
            pulled = [loader.next(lambda: alone and self.signals.received)
                      for _ in range(tc.accum_steps)]
            if None in pulled:  # a signal while the batches were awaited
                p.seconds = self.session_start[1] + time.perf_counter() - self.started
                return self.signals.received or "stopped"
            batches = [batch for batch, _ in pulled]
            info = share_step_info(batches, self.dist, time.perf_counter() - self.started,
                                   self.signals.received, self.stop_reason)
            clock = self.session_start[1] + info.seconds
            if info.stop or p.decay_over(tc, clock):
                p.seconds = clock  # the session's tail counts: a resume goes on
                return (self.signals.received or self.stop_reason
                        or f"end of the {tc.decay_minutes:g}-minute decay")
            if not self.update(batches, info):
                p.seconds = clock
                return self.signals.received or "stopped"
            p.position = StreamPosition(**pulled[-1][1])
            self._after_update(bar)
        return "finished"

    def update(self, batches: list[Batch], info: StepInfo) -> bool:
        """Forward/backward every batch, then one optimizer step, all queued on the device
        without waiting for it: an update whose loss or gradient is not finite is skipped
        there (`Optimization.step`) and reported when the device sums are next read. A
        single process stopped by a signal between its batches drops the update (False),
        so that a long accumulation does not keep it from saving (bench/ profiles it)."""
        p = self.progress
        torch.manual_seed(update_seed(self.tc.seed, p.step, self.dist.rank))
        self.net.module.train()
        scale = self.dist.world / info.tgt_tokens  # DDP averages gradients over processes
        sums = torch.zeros(4, device=self.device)
        for i, batch in enumerate(batches):
            if i and self.dist.world == 1 and self.signals.received:
                self.opt.adam.zero_grad(set_to_none=True)
                return False
            batch = batch.to(self.device)
            with no_sync(self.net.ddp, last=i == len(batches) - 1):
                with self._autocast():
                    stats = self.net.module(batch.src, batch.tgt_in, batch.tgt_out, batch.rows)
                self.opt.backward(stats[0] * scale)
            sums += stats.detach()
        norm = self.opt.grad_norm()
        sums = self.dist.sum(sums)
        bad = ~torch.isfinite(sums[0])
        if self.opt.scaler is None:  # fp16's GradScaler skips overflowing steps by itself
            bad |= ~torch.isfinite(norm)
        p.seconds = self.session_start[1] + info.seconds
        self.lr = self.opt.step(p.step + 1, p.decay_spent(self.tc.decay_minutes), skip=bad)
        p.step += 1
        self.device_sums.add(sums, norm, bad, p.step)
        if p.step == self.tc.warmup_steps and (warning := p.end_warmup(self.tc)):
            self._say(warning)
        p.count(info.tgt_tokens, info.padded, info.real)
        return True

    def _read_device_sums(self) -> None:
        """Read the device's sums into the log interval (the one wait for the device in a
        log interval); stop if an update was not finite."""
        sums, self.grad_norm, bad_step = self.device_sums.read()
        LossSums.add(self.progress.interval, sums)
        if bad_step:
            raise UserError(f"step {bad_step}: the loss or the gradient norm was not finite "
                            f"(nan or inf): training diverged; that update was not applied "
                            f"and training stopped; {report.saved_steps(self.run_dir)}. Try "
                            f"a lower train.lr_factor or set train.clip_grad_norm")

    def _after_update(self, bar: report.ProgressBar) -> None:
        p, tc = self.progress, self.tc
        if p.step % RELEASE_EVERY == 0:
            release_freed_memory()
        shown: dict[str, str] = {}
        if p.step % tc.log_every == 0:
            self._read_device_sums()
            record = self.records.log_line(p, self.lr, self.grad_norm,
                                           speed_notes(self.device, self.net))
            shown = {"loss": f"{record['loss']:.3f}", "lr": f"{record['lr']:.2e}",
                     "tok_s": f"{record['tokens_per_s']:.0f}"}
        bar.update(p.step, **shown)
        if self.valid is not None and p.step % tc.valid_every == 0:
            self._validate()
        if p.step % tc.save_every == 0 or p.step == tc.max_steps:
            self._save()
        elapsed = time.perf_counter() - self.started
        if self.dist.main and tc.max_minutes and elapsed > tc.max_minutes * 60:
            self.stop_reason = f"time limit of {tc.max_minutes:g} min"

    def _validate(self) -> None:
        """Rank 0: `ValidationSet.validate`, logged; an early stop is decided here."""
        assert self.valid is not None
        self._read_device_sums()
        with self.records.pause():
            record, stop = self.valid.validate(
                self.model, self.opt, self.progress,
                self.run_dir.path / CHECKPOINT_DIR / BEST_FILE, self.device, self._autocast)
            self.stop_reason = self.stop_reason or stop
            self.records.validation(record)
            self._say(report.validation_line(record), prefix=False)

    def _save(self) -> None:
        with self.records.pause(), self.signals.finishing():  # never half a checkpoint
            self._read_device_sums()  # what is saved comes from finite updates only
            self.records.save(self.model, self.opt, self.progress)

    def _finish(self, reason: str) -> None:
        p = self.progress
        self._read_device_sums()
        if self.records.unsaved(p, clocked=bool(self.tc.decay_minutes)):
            self._save()
        if not self.dist.main:
            return
        if p.interval.tokens:
            self.records.log_line(p, self.lr, self.grad_norm, partial=True)
        if not self.opt.ema:
            self.records.average(self.tc.average_last)
        self.records.log.plot()
        ending = report.ending(reason, p.step, self.tc, self.run_dir.path, self.resume_line)
        for line in filter(None, [*self.net.summary(), self.run_dir.young_note(p.step), ending]):
            self._say(line)

    def _autocast(self) -> contextlib.AbstractContextManager:
        return autocast(self.device, self.precision)

    def _say(self, message: str, prefix: bool = True) -> None:
        report.say(message, self.dist.main, prefix)

    def _say_start(self) -> None:
        t, p = self, self.progress
        start = f"resuming at step {p.step}" if p.step else "new run"
        if t.start.init is not None:
            start += f" from the weights of {t.start.init.weights}"
        data = report.data_line(len(t.plan.indices), t.plan.skipped,
                                len(t.plan.epoch(p.position.epoch)), t.tc, t.dist.world)
        model = f"{count_parameters(t.model):,} parameters{report.recipe(t.tc, bool(t.opt.ema))}"
        for line in report.start_lines(f"{start} in {t.run_dir.path}", model, data, t.tc, p,
                                       t.device, t.precision, t.dist.world, t.start.notes):
            self._say(line)
