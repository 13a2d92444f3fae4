"""The training loop of Vaswani et al. (2017), on one device or many.

One update is `accum_steps` token-budget batches per process. Their label-smoothed
loss is summed and divided by the update's target tokens over all processes, so
a 2-process DistributedDataParallel run takes the same steps as 1 process with
twice the accumulation. A session starts as `resume.start_session` checks and
`Start` restores; everything a resumed run needs is saved beside each checkpoint
(`state.save_step`); SIGINT/SIGTERM/SIGHUP finish the update and save; a non-finite
loss stops before it can be applied. What the run says and logs is `report.py`'s.
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from dataclasses import replace
from typing import Any, Iterator, NamedTuple, Optional

import numpy as np
import torch

from transcli.config.schema import Config, TrainConfig
from transcli.data.batching import BackgroundLoader, Batch, BatchStream, StreamPosition
from transcli.data.prepared_dir import PreparedDir
from transcli.data.train_batches import train_batches
from transcli.inference.calibrate import fitted_at_the_end
from transcli.model.transformer import Transformer, count_parameters
from transcli.model.vocab import PAD_ID
from transcli.rundir.checkpoints import average_last
from transcli.rundir.layout import BEST_FILE, CHECKPOINT_DIR, LOCK_FILE
from transcli.rundir.run import RunDir
from transcli.system.devices import pick_device
from transcli.system.errors import UserError, WriteFailed
from transcli.system.heap import keep_freed_memory, release_freed_memory
from transcli.system.locks import DirLock
from transcli.system.runtime import autocast, set_threads, training_precision
from transcli.system.signals import StopSignals
from transcli.system.streams import tolerant_stderr
from transcli.training import report
from transcli.training.compiling import CompiledStates, compile_blocker
from transcli.training.distributed import Dist, no_sync
from transcli.training.memory import check_training_memory
from transcli.training.objective import LossSums, TeacherForcing, guide_of, training_loss
from transcli.training.optimization import Optimization
from transcli.training.resume import StartOptions, start_session
from transcli.training.state import SUMS, AlignSums, DeviceSums, Progress, save_step
from transcli.training.validation import validation_set

RELEASE_EVERY = 50  # updates between handing kept memory back to the OS (not per log line)


def train(cfg: Config, data: PreparedDir, run: RunDir,
          options: StartOptions = StartOptions()) -> None:
    """Train on an opened prepared dir into a run dir (as `options` ask: a new run, a
    resume, --force); under torchrun, one process per device. The run's languages are the
    prepared dir's (a config's data.src_lang/tgt_lang name what `prepare` reads)."""
    source, target = data.langs
    cfg = replace(cfg, data=replace(cfg.data, src_lang=source, tgt_lang=target))
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


@contextlib.contextmanager
def run_lock(run: RunDir, dist: Dist) -> Iterator[None]:
    """Rank 0 holds the run dir's lock (`locks.DirLock`) for the life of the run, taken
    before anything is read or written there; when it cannot, every rank stops."""
    run_dir = run.path
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"{run_dir}: --out is a file, not a directory")
    lock, problem = None, None
    if dist.main:
        try:
            lock = DirLock(run_dir, LOCK_FILE, "training process")
        except UserError as exc:
            problem = exc
    refused = dist.sum_on_cpu(torch.tensor([float(problem is not None)]))[0] > 0
    if refused:
        raise problem or UserError(f"{run_dir}: rank 0 could not lock the run dir")
    try:
        yield
    finally:
        if lock is not None:
            lock.release()


def training_device(name: str, dist: Dist) -> torch.device:
    device = pick_device(name)
    if device.type == "cuda":
        device = torch.device("cuda", dist.local_rank)
        torch.cuda.set_device(device)
        torch.set_float32_matmul_precision("high")  # TF32 matmuls
        torch.backends.cudnn.allow_tf32 = True
    return device


class DeviceSettings(NamedTuple):
    """What of the train settings the device runs, decided before the first update."""

    tc: TrainConfig  # train.compile and train.cuda_graphs as they run here
    precision: str  # what training runs in (`runtime.training_precision`)
    warnings: list[str]  # a line for each setting the device cannot run as asked


def device_settings(tc: TrainConfig, device: torch.device) -> DeviceSettings:
    """bf16 on a CPU without bf16 kernels runs in fp32; torch.compile without the C++
    compiler inductor needs on the CPU runs eagerly; CUDA graphs exist on CUDA only.
    Each is said in a line, rather than failing (or being dropped) after the start."""
    precision = training_precision(device.type, tc.precision, tc.cpu_precision)
    warnings = []
    if device.type == "cpu" and precision != tc.cpu_precision:
        warnings.append(f"warning: train.cpu_precision is {tc.cpu_precision} but this CPU has "
                        f"no bf16 kernels (AVX512 or AMX): training in {precision}, much "
                        f"faster here (set train.cpu_precision=fp32 to silence this)")
    blocker = compile_blocker(device) if tc.compile else None
    if blocker:
        warnings.append(f"warning: train.compile: {blocker}: training eagerly (set "
                        f"train.compile=false to silence this)")
        tc = replace(tc, compile=False, cuda_graphs=False)
    if tc.cuda_graphs and device.type != "cuda":
        warnings.append(f"warning: train.cuda_graphs replays CUDA graphs, and this run is on "
                        f"{device}: it compiles without them (set train.cuda_graphs=false to "
                        f"silence this)")
        tc = replace(tc, cuda_graphs=False)
    return DeviceSettings(tc, precision, warnings)


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


def training_net(model: Transformer, tc: TrainConfig, dist: Dist, device: torch.device
                 ) -> tuple[torch.nn.Module, Optional[CompiledStates]]:
    """The teacher-forced loss fed each batch (with the head guided alignment trains, if
    any), its model's part compiled when asked, wrapped for several processes."""
    guide = guide_of(tc, model.cfg)
    compiled = CompiledStates(model, tc, device, guide) if tc.compile else None
    net = TeacherForcing(model, tc.label_smoothing, PAD_ID, compiled, guide)
    return dist.wrap(net, device), compiled


def line_notes(p: Progress, device: torch.device, compiled: Optional[CompiledStates]
               ) -> dict[str, Any]:
    """What a log line adds to the interval's losses: guided alignment's mean cost (its
    interval closes with the line), and `report.speed_notes`."""
    notes = {**p.aligned.means(), **report.speed_notes(device, compiled)}
    p.aligned = AlignSums()
    return notes


# ----------------------------------------------------------------------------- the loop


class Trainer:
    """One session of a training run, this process's part of it: from its start (or
    resume) to its stop (end of the run, a signal, a time limit), saving as it goes,
    calibrating the confidence at the end. `progress` carries what a run's sessions
    share (the step, the data position, the training clock). What can be refused is
    refused before the run dir is written."""

    def __init__(self, cfg: Config, data: PreparedDir, run: RunDir, dist: Dist,
                 device: torch.device, options: StartOptions):
        self.cfg, self.data, self.run_dir, self.dist, self.device = cfg, data, run, dist, device
        settings = device_settings(cfg.train, device)  # what of the settings `device` runs
        self.tc, self.precision = settings.tc, settings.precision
        self.autocast = functools.partial(autocast, device, self.precision)
        start = start_session(cfg, data, run, options)  # every check of the run dir
        start.notes[:0] = settings.warnings
        check_training_memory(cfg, start.vocab_size, device,
                              dist.world if device.type == "cpu" else 1)
        self.plan, self.make_batch = train_batches(cfg, data, dist.rank)
        torch.manual_seed(self.tc.seed)
        self.model = Transformer(cfg.model, start.vocab_size).to(device)
        start.load_init(self.model)  # before the optimizer: a weight average starts there
        self.opt = Optimization(self.model, self.tc, cfg.model.d_model, device)
        self.progress = start.restore(self.model, self.opt, self.plan)
        self.net, self.compiled = training_net(self.model, self.tc, dist, device)
        self.valid, self.start = validation_set(cfg, data, device) if dist.main else None, start
        # Everything that can be refused was checked: only now is the run dir written.
        self.log = report.TrainLog(run.path, enabled=dist.main, tensorboard=self.tc.tensorboard)
        start.record(data, dist, self.log)
        self.stop_reason: Optional[str] = None  # rank 0's decision: early stop, time limit
        self.device_sums = DeviceSums(device)  # the updates' sums, on the device until read
        self.signals = StopSignals()  # the run's, once it runs
        self.lr, self.grad_norm = 0.0, math.nan  # of the latest update (norm: latest read)
        self.started = self.log.interval_start = time.perf_counter()  # and the first interval
        # The step and clock this session started at, and those last saved.
        self.session_start = self.saved = (self.progress.step, self.progress.seconds)

    def run(self) -> None:
        p, tc = self.progress, self.tc
        if p.step >= tc.max_steps or p.decay_over(tc, p.seconds):
            budget = (f"decay_minutes={tc.decay_minutes:g}" if p.decay_over(tc, p.seconds)
                      else f"max_steps={tc.max_steps}")
            self._say(f"{self.run_dir.path}: already at step {p.step} ({budget}); nothing to do")
            return
        with StopSignals(on_disk=lambda: f"{report.saved_steps(self.run_dir)}; continue "
                                         f"with: {self.start.resume_line}") as signals:
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
        """Forward/backward every batch, then one optimizer step, queued on the device
        without waiting for it: a non-finite update is skipped there (`Optimization.step`)
        and reported when the device sums are next read. False: a lone process stopped by
        a signal between its batches dropped the update (a long one never delays a save)."""
        p = self.progress
        torch.manual_seed(update_seed(self.tc.seed, p.step, self.dist.rank))
        self.net.train()
        scale = self.dist.world / info.tgt_tokens  # DDP averages gradients over processes
        sums = torch.zeros(SUMS, device=self.device)
        for i, batch in enumerate(batches):
            if i and self.dist.world == 1 and self.signals.received:
                self.opt.adam.zero_grad(set_to_none=True)
                return False
            batch = batch.to(self.device)
            with no_sync(self.net, last=i == len(batches) - 1):
                with self.autocast():
                    stats = self.net(batch.src, batch.tgt_in, batch.tgt_out, batch.rows,
                                     batch.align)
                self.opt.backward(training_loss(stats, self.tc.guided_alignment) * scale)
            sums[:len(stats)] += stats.detach()
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
        sums, aligned, self.grad_norm, bad_step = self.device_sums.read()
        LossSums.add(self.progress.interval, sums)
        self.progress.aligned.add(aligned)
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
            record = self.log.train_line(p, self.lr, self.grad_norm,
                                         line_notes(p, self.device, self.compiled))
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
        with self.log.pause():
            record, stop = self.valid.validate(
                self.model, self.opt, self.progress,
                self.run_dir.path / CHECKPOINT_DIR / BEST_FILE, self.device, self.autocast)
            self.stop_reason = self.stop_reason or stop
            self.log.validation(record)
            self._say(report.validation_line(record), prefix=False)

    def _save(self) -> None:
        p = self.progress
        with self.log.pause(), self.signals.finishing():  # never half a checkpoint
            self._read_device_sums()  # what is saved comes from finite updates only
            if self.dist.main:
                save_step(self.run_dir.path, self.model, self.opt, p, self.plan,
                          self.start.tokenizer_sha256)
            self.saved = (p.step, p.seconds)

    def _finish(self, reason: str) -> None:
        p = self.progress
        self._read_device_sums()
        # Saved if the run moved on, or its clock did when a decay follows the clock: the
        # next session must start from this one's last second.
        if self.saved[0] != p.step or (self.tc.decay_minutes and self.saved[1] != p.seconds):
            self._save()
        if not self.dist.main:
            return
        if p.interval.tokens:
            self.log.train_line(p, self.lr, self.grad_norm,
                                line_notes(p, self.device, self.compiled), partial=True)
        if not self.opt.ema:
            average_last(self.run_dir.path, self.tc.average_last)
        self.log.plot()
        ending = report.ending(reason, p.step, self.tc, self.run_dir.path, self.start.resume_line)
        compiled = self.compiled.summary() if self.compiled is not None else None
        fitted = report.ended(reason) and fitted_at_the_end(self.run_dir, self.data, self.device)
        for line in filter(None, [compiled, self.run_dir.young_note(p.step), fitted, ending]):
            self._say(line)

    def _say(self, message: str, prefix: bool = True) -> None:
        report.say(message, self.dist.main, prefix)

    def _say_start(self) -> None:
        t, p = self, self.progress
        data = report.data_line(len(t.plan.indices), t.plan.skipped,
                                len(t.plan.epoch(p.position.epoch)), t.tc, t.dist.world)
        model = f"{count_parameters(t.model):,} parameters{report.recipe(t.tc, bool(t.opt.ema))}"
        for line in report.start_lines(t.start.headline(), model, data, t.tc, p, t.device,
                                       t.precision, t.dist.world, t.start.notes):
            self._say(line)
