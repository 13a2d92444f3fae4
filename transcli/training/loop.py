"""The training loop of Vaswani et al. (2017), on one device or many.

One update is `accum_steps` token-budget batches per process. Their label-smoothed
loss is summed and divided by the update's target tokens over all processes, so
a 2-process DistributedDataParallel run takes the same steps as 1 process with
twice the accumulation. Everything a resumed run needs (weights, optimizer, step,
data position, RNG, counters, averaged weights) is saved beside each checkpoint
(`state.py`); SIGINT/SIGTERM/SIGHUP finish the update and save; a non-finite
loss stops before it can be applied. Validation and the best/patience policy are in
`validation.py`; what a run is built from, in `setup.py`.
"""

from __future__ import annotations

import contextlib
import math
import shlex
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple, Optional

import numpy as np
import torch
from tqdm import tqdm

from transcli.config.schema import Config
from transcli.data.batching import BackgroundLoader, Batch, BatchStream, StreamPosition
from transcli.data.encoded import load_manifest
from transcli.data.tokenizer import TOKENIZER_FILE, Tokenizer
from transcli.model.transformer import Transformer, count_parameters
from transcli.rundir.checkpoints import (
    average_checkpoints,
    load_state,
    load_weights,
    prune_checkpoints,
    save_checkpoint,
    save_weights,
)
from transcli.rundir.layout import (
    AVG_FILE,
    BEST_FILE,
    CHECKPOINT_DIR,
    complete_steps,
    run_identity,
    start_step,
    state_path,
    step_checkpoints,
    step_path,
)
from transcli.rundir.metrics import MetricsLog
from transcli.system.errors import UserError, WriteFailed
from transcli.system.runtime import (
    autocast,
    keep_freed_memory,
    release_freed_memory,
    set_threads,
    training_precision,
)
from transcli.system.signals import StopSignals, tolerant_stderr
from transcli.training.distributed import Dist, no_sync
from transcli.training.init_from import init_source, origin_record
from transcli.training.memory import check_training_memory
from transcli.training.objective import LossSums, decay_clock
from transcli.training.optimization import Optimization
from transcli.training.setup import (
    checked_vocab,
    open_run_dir,
    run_lock,
    training_batches,
    training_device,
    training_net,
)
from transcli.training.state import (
    Interval,
    Progress,
    Tally,
    check_state,
    rng_state,
    set_rng_state,
)
from transcli.training.validation import ValidationSet, judge

RELEASE_EVERY = 50  # updates between handing kept memory back to the OS (not per log line)


def train(cfg: Config, data_dir: str | Path, run_dir: str | Path, resume: bool = False,
          force: bool = False) -> None:
    """Train on a prepared dir into a run dir; under torchrun, one process per device."""
    dist = Dist.from_env()
    device = training_device(cfg.train.device, dist)
    if device.type == "cpu":
        set_threads(cfg.train.threads)
        keep_freed_memory()
    dist.start(device)
    try:
        with tolerant_stderr(), run_lock(Path(run_dir), dist):
            trainer = Trainer(cfg, Path(data_dir), Path(run_dir), dist, device, resume, force)
            try:
                trainer.run()
            except WriteFailed as exc:  # disk full, permissions: say what is safe
                raise WriteFailed(f"{exc}; training stopped at step {trainer.progress.step}, "
                                  f"{saved_steps(Path(run_dir))}") from None
    finally:
        dist.stop()


def update_seed(seed: int, step: int, rank: int) -> int:
    """Dropout's seed for one update of one process: a resumed run, or any rank of a
    DDP job, draws the same masks without carrying every process's RNG state."""
    return int(np.random.SeedSequence([seed, step, rank]).generate_state(1)[0])


class Agreed(NamedTuple):
    """What all processes agree on before an update: its sizes, whether to stop, and
    the sitting's clock (the same on every process, so are their learning rates)."""

    tgt_tokens: float
    padded: float  # positions fed, padding included (both sides)
    real: float
    stop: bool
    seconds: float  # since the sitting started, averaged over processes


def agree(batches: list[Batch], dist: Dist, seconds: float,
          *stop_requests: Optional[str]) -> Agreed:
    """Sum over processes of the update's sizes and stop requests: one tiny all-reduce
    on the CPU, no device sync."""
    values = torch.tensor([sum(b.tgt_tokens for b in batches),
                           sum(b.padded_positions for b in batches),
                           sum(b.real_positions for b in batches),
                           sum(request is not None for request in stop_requests),
                           seconds], dtype=torch.float64)
    tokens, padded, real, stop, seconds = dist.sum_on_cpu(values).tolist()
    return Agreed(tokens, padded, real, stop > 0, seconds / dist.world)


# ----------------------------------------------------------------------------- the loop


class Trainer:
    def __init__(self, cfg: Config, data_dir: Path, run_dir: Path, dist: Dist,
                 device: torch.device, resume: bool, force: bool):
        self.cfg, self.tc, self.run_dir, self.data_dir = cfg, cfg.train, run_dir, data_dir
        self.dist, self.device = dist, device
        # decided once: bf16 asked for on a CPU without bf16 kernels runs in fp32
        self.run_precision = training_precision(device.type, self.tc.precision,
                                                self.tc.cpu_precision)
        manifest = load_manifest(data_dir)
        self.tokenizer = Tokenizer(data_dir / TOKENIZER_FILE)
        vocab = checked_vocab(manifest, self.tokenizer, data_dir)
        check_training_memory(cfg, vocab, device, dist.world if device.type == "cpu" else 1)
        self.init = init_source(cfg, data_dir, run_dir, resume)  # fine-tuning: checked weights
        identity = {**run_identity(cfg, manifest, vocab),
                    **origin_record(self.init, run_dir, resume)}
        start = start_step(run_dir, cfg, identity, data_dir, resume, force)
        self.plan, self.make_batch = training_batches(cfg, data_dir, manifest, vocab,
                                                      self.tokenizer, dist.rank, device)
        torch.manual_seed(self.tc.seed)
        self.model = Transformer(cfg.model, vocab).to(device)
        if self.init is not None:  # before the optimizer: a weight average starts from them
            load_weights(self.model, self.init.weights)
        self.opt = Optimization(self.model, self.tc, cfg.model.d_model, device)
        self.progress = Progress()
        if start:
            self._restore(start)
        self.ddp, self.net = training_net(self.model, self.tc, dist, device)
        valid = ValidationSet(cfg, data_dir, manifest) if dist.main else None
        self.valid = valid if valid is not None and valid.batches else None  # none: no valid split
        # Everything that can be refused was checked: only now is the run dir written.
        self.log = MetricsLog(run_dir, enabled=dist.main, tensorboard=self.tc.tensorboard)
        open_run_dir(cfg, identity, data_dir, run_dir, dist, resume, start, self.log)
        self.saved_step, self.saved_seconds = start, self.progress.seconds
        self.stop_reason: Optional[str] = None  # rank 0's decision: early stop, time limit
        self.tally = Tally(device)  # the updates' sums, on the device until read
        self.signals = StopSignals()  # the run's, once it runs
        self.lr = 0.0  # the latest update's learning rate
        self.grad_norm = math.nan  # the gradient norm of the latest update read
        self.paused = 0.0  # seconds of validation and saving inside the current log interval
        self.interval_start = self.started = time.perf_counter()
        self.sitting = (self.progress.step, self.progress.seconds)  # where this sitting began

    def _restore(self, step: int) -> None:
        load_weights(self.model, step_path(self.run_dir, step))
        state = load_state(self.run_dir, step)
        check_state(state, state_path(self.run_dir, step), step, self.model)
        self.opt.load_state(state)
        set_rng_state(state["rng"])
        self.progress = Progress.from_state(state)

    def run(self) -> None:
        p, tc = self.progress, self.tc
        if p.step >= tc.max_steps or self._decay_over(p.seconds):
            budget = (f"decay_minutes={tc.decay_minutes:g}" if self._decay_over(p.seconds)
                      else f"max_steps={tc.max_steps}")
            self._say(f"{self.run_dir}: already at step {p.step} ({budget}); nothing to do")
            return
        if self.device.type == "cpu" and self.run_precision != self.tc.cpu_precision:
            self._say(f"warning: train.cpu_precision is {self.tc.cpu_precision} but this CPU "
                      f"has no bf16 kernels (AVX512 or AMX): training in {self.run_precision}, "
                      f"much faster here (set train.cpu_precision=fp32 to silence this)")
        self._say(self._banner())
        stream = BatchStream(self.plan, p.position, self.dist.rank, self.dist.world)
        loader = BackgroundLoader(self.make_batch, stream, pin_memory=self.device.type == "cuda")
        bar = tqdm(total=tc.max_steps, initial=p.step, unit="step", dynamic_ncols=True,
                   disable=not self.dist.main, mininterval=1.0, file=sys.stderr)
        expected_end(bar, p, self.sitting[0], 0.0, tc)
        reason = "finished"
        try:
            with StopSignals(then=f"continue with: {self._resume_command()}") as signals:
                self.signals = signals
                while p.step < tc.max_steps:
                    pulled = [loader.next() for _ in range(tc.accum_steps)]
                    batches = [batch for batch, _ in pulled]
                    agreed = agree(batches, self.dist, time.perf_counter() - self.started,
                                   signals.received, self.stop_reason)
                    clock = self.sitting[1] + agreed.seconds
                    if agreed.stop or self._decay_over(clock):
                        p.seconds = clock  # the sitting's tail counts: a resume goes on
                        reason = (signals.received or self.stop_reason
                                  or f"end of the {tc.decay_minutes:g}-minute decay")
                        break
                    if not self._update(batches, agreed):
                        p.seconds = clock
                        reason = signals.received or "stopped"
                        break
                    p.position = StreamPosition(**pulled[-1][1])
                    bar.update(1)
                    self._after_update(bar)
        finally:
            loader.close()
            bar.close()
        self._finish(reason)

    def _update(self, batches: list[Batch], agreed: Agreed) -> bool:
        """Forward/backward every batch, then one optimizer step, all queued on the device
        without waiting for it: an update whose loss or gradient is not finite is skipped
        there (`Optimization.step`) and reported when the tally is next read. A single
        process stopped by a signal between its batches drops the update (False), so that
        a long accumulation does not keep it from saving."""
        p = self.progress
        torch.manual_seed(update_seed(self.tc.seed, p.step, self.dist.rank))
        self.net.train()
        scale = self.dist.world / agreed.tgt_tokens  # DDP averages gradients over processes
        sums = torch.zeros(4, device=self.device)
        for i, batch in enumerate(batches):
            if i and self.dist.world == 1 and self.signals.received:
                self.opt.adam.zero_grad(set_to_none=True)
                return False
            batch = batch.to(self.device)
            with no_sync(self.ddp, last=i == len(batches) - 1):
                with self._autocast():
                    stats = self.net(batch.src, batch.tgt_in, batch.tgt_out, batch.rows)
                self.opt.backward(stats[0] * scale)
            sums += stats.detach()
        norm = self.opt.grad_norm()
        sums = self.dist.sum(sums)
        bad = ~torch.isfinite(sums[0])
        if self.opt.scaler is None:  # fp16's GradScaler skips overflowing steps by itself
            bad |= ~torch.isfinite(norm)
        p.seconds = self.sitting[1] + agreed.seconds
        self.lr = self.opt.step(p.step + 1, decay_clock(p.seconds, p.warmup_seconds,
                                                        self.tc.decay_minutes), skip=bad)
        p.step += 1
        self.tally.add(sums, norm, bad, p.step)
        if p.step == self.tc.warmup_steps:
            p.warmup_seconds = p.seconds
            if self.tc.decay_minutes and p.seconds >= self.tc.decay_minutes * 60:
                self._say(f"warning: the warm-up took {p.seconds / 60:.1f} min, longer than "
                          f"train.decay_minutes={self.tc.decay_minutes:g}; the run stops here")
        p.tgt_tokens += int(agreed.tgt_tokens)  # counted on the host, from the batches
        p.src_tokens += int(agreed.real - agreed.tgt_tokens)
        p.interval.padded += agreed.padded
        p.interval.real += agreed.real
        return True

    def _settle(self) -> None:
        """Read the device's tally into the log interval (the one wait for the device in
        a log interval); stop if an update was not finite."""
        sums, self.grad_norm, bad_step = self.tally.read()
        LossSums.add(self.progress.interval, sums)
        if bad_step:
            raise UserError(f"step {bad_step}: the loss or the gradient norm was not finite "
                            f"(nan or inf): training diverged; that update was not applied "
                            f"and training stopped; {saved_steps(self.run_dir)}. Try a lower "
                            f"train.lr_factor or set train.clip_grad_norm")

    def _after_update(self, bar: tqdm) -> None:
        p, tc = self.progress, self.tc
        if p.step % RELEASE_EVERY == 0:
            release_freed_memory()
        if p.step % tc.log_every == 0:
            self._settle()
            record = self._log_line()
            bar.set_postfix(loss=f"{record['loss']:.3f}", lr=f"{record['lr']:.2e}",
                            tok_s=f"{record['tokens_per_s']:.0f}", refresh=False)
        expected_end(bar, p, self.sitting[0], time.perf_counter() - self.started, tc)
        if self.valid is not None and p.step % tc.valid_every == 0:
            self._validate()
        if p.step % tc.save_every == 0 or p.step == tc.max_steps:
            self._save()
        elapsed = time.perf_counter() - self.started
        if self.dist.main and tc.max_minutes and elapsed > tc.max_minutes * 60:
            self.stop_reason = f"time limit of {tc.max_minutes:g} min"

    def _decay_over(self, seconds: float) -> bool:
        """train.decay_minutes of training (`seconds`) are behind this run, after warm-up:
        the next update would run at rate zero. Decided before an update, on the clock
        all processes agreed on."""
        p, tc = self.progress, self.tc
        return (p.step >= tc.warmup_steps
                and decay_clock(seconds, p.warmup_seconds, tc.decay_minutes) >= 1.0)

    def _log_line(self, partial: bool = False) -> dict[str, Any]:
        """The interval's means as a "train" line; a `partial` one (a run's last, shorter
        interval) is dropped again by a resume, which continues that interval."""
        p, iv = self.progress, self.progress.interval
        elapsed = max(time.perf_counter() - self.interval_start - self.paused, 1e-9)
        record = {"step": p.step, "split": "train", "epoch": p.position.epoch, **iv.means(),
                  "lr": self.lr, "grad_norm": self.grad_norm,
                  "tokens_per_s": iv.tokens / elapsed, "pad_frac": 1.0 - iv.real / iv.padded,
                  "tgt_tokens": p.tgt_tokens, "src_tokens": p.src_tokens}
        self.log.append({**record, "partial": True} if partial else record)
        p.interval = Interval()
        self.interval_start, self.paused = time.perf_counter(), 0.0
        return record

    def _validate(self) -> None:
        """Rank 0: valid loss and greedy BLEU (of the averaged weights when there are
        any), the best checkpoint, the early-stopping count."""
        assert self.valid is not None
        self._settle()
        started = time.perf_counter()
        p, tc = self.progress, self.tc
        self.model.eval()
        with self.opt.averaged():
            scores = self.valid.scores(self.model, self.tokenizer, self.device, self._autocast)
            p.best, improved, stop = judge(p.best, p.step, scores, tc.early_stop_metric,
                                           tc.patience)
            if improved:
                save_weights(self.model, self.run_dir / CHECKPOINT_DIR / BEST_FILE)
        self.model.train()
        self.stop_reason = self.stop_reason or stop
        record = {"step": p.step, "split": "valid", "loss": scores["valid_loss"], **scores,
                  "best": improved}
        self.log.append(record)
        self.log.plot()
        tqdm.write(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                            for k, v in record.items()), file=sys.stderr)
        self.paused += time.perf_counter() - started

    def _save(self) -> None:
        started = time.perf_counter()
        self._settle()  # what is saved comes from finite updates only
        if self.dist.main:
            state = {**self.progress.state(), **self.opt.state(), "rng": rng_state(),
                     "world_size": self.dist.world}
            save_checkpoint(self.model, state, self.run_dir, self.progress.step)
            prune_checkpoints(self.run_dir, self.tc.keep_last)
            if self.opt.ema:
                with self.opt.averaged():
                    save_weights(self.model, self.run_dir / CHECKPOINT_DIR / AVG_FILE)
        self.saved_step, self.saved_seconds = self.progress.step, self.progress.seconds
        self.paused += time.perf_counter() - started  # tokens/s counts training only

    def _finish(self, reason: str) -> None:
        p = self.progress
        self._settle()
        if self.saved_step != p.step or (self.tc.decay_minutes
                                         and self.saved_seconds != p.seconds):
            self._save()  # the decay's clock must keep this sitting's last seconds too
        if not self.dist.main:
            return
        if p.interval.tokens:
            self._log_line(partial=True)
        steps = [s for s, _ in step_checkpoints(self.run_dir)][-self.tc.average_last:]
        if steps and not self.opt.ema:
            average_checkpoints([step_path(self.run_dir, s) for s in steps],
                                self.run_dir / CHECKPOINT_DIR / AVG_FILE)
        self.log.plot()
        self._say(ending(reason, p.step, self.tc, self.run_dir, self._resume_command()))

    def _autocast(self) -> contextlib.AbstractContextManager:
        return autocast(self.device, self.run_precision)

    def _resume_command(self) -> str:
        """The command line that continues this run where it stops."""
        return (f"transcli train --data {shlex.quote(str(self.data_dir))} "
                f"--out {shlex.quote(str(self.run_dir))} --resume")

    def _say(self, message: str) -> None:
        if self.dist.main:
            tqdm.write(f"transcli train: {message}", file=sys.stderr)

    def _banner(self) -> str:
        """The run's first line: where it starts, the model, the machine, the data."""
        t, p = self, self.progress
        start = f"resuming at step {p.step}" if p.step else "new run"
        if t.init is not None:
            start += f" from the weights of {t.init.weights}"
        extras = "".join(f", {name}" for name, on in (
            ("compiled", t.tc.compile), (f"EMA {t.tc.ema_decay:g}", t.opt.ema),
            (f"subword sampling alpha {t.tc.sample_alpha:g}", t.tc.sample_alpha),
            (f"{t.tc.schedule} decay over {t.tc.decay_minutes:g} min of training "
             f"({p.seconds / 60:.1f} done)", t.tc.decay_minutes)) if on)
        threads = f", {torch.get_num_threads()} threads" if t.device.type == "cpu" else ""
        return (f"{start} in {t.run_dir}: {count_parameters(t.model):,} parameters on "
                f"{t.device} ({t.run_precision}{threads}{extras}) x {t.dist.world} process(es); "
                f"{len(t.plan.indices):,} training pairs ({t.plan.skipped} over max_positions "
                f"left out), {len(t.plan.epoch(p.position.epoch))} batches of <= "
                f"{t.tc.batch_tokens} tokens per epoch, "
                f"{t.tc.accum_steps * t.dist.world} per update")


def saved_steps(run_dir: Path) -> str:
    """What a stopped run can continue from."""
    steps = complete_steps(run_dir)
    if not steps:
        return f"no checkpoint had been saved yet in {run_dir}"
    return f"the last good checkpoint (step {steps[-1]}) is intact in {run_dir}"


def expected_end(bar: tqdm, p: Progress, sitting_start: int, elapsed: float, tc: Any) -> None:
    """Point the progress bar (and its ETA) at the step a time budget (the sitting's
    max_minutes, the run's decay_minutes) will stop at, when that comes before max_steps.
    The pace is this sitting's; before its first update, the run's so far (a resume)."""
    left = [tc.max_minutes * 60 - elapsed] if tc.max_minutes else []
    left += [tc.decay_minutes * 60 - p.seconds] if tc.decay_minutes else []
    if p.step > sitting_start and elapsed > 0:
        pace = (p.step - sitting_start) / elapsed
    elif p.step and p.seconds > 0:
        pace = p.step / p.seconds
    else:
        return
    if left:
        reachable = p.step + max(0.0, min(left)) * pace
        bar.total = max(p.step, min(tc.max_steps, int(reachable)))


def ending(reason: str, step: int, tc: Any, run_dir: Path, resume: str) -> str:
    """The run's last line: why it stopped, where the checkpoint is, and, when the run is
    not over, the command (`resume`) that continues it."""
    where = (f"checkpoint step {step} saved in {run_dir / CHECKPOINT_DIR}" if step
             else "no update was made, so nothing was saved")
    if reason == "finished" or reason.startswith(("end of the", "early stop")):
        done = "finished" if reason == "finished" else reason
        return f"{done} at step {step}; {where}"
    said = f"{reason} received" if reason in ("SIGINT", "SIGTERM", "SIGHUP") else reason
    message = f"{said}: stopped after step {step}; {where}; continue with: {resume}"
    if reason.startswith("time limit") and step < tc.max_steps / 2 and not tc.decay_minutes:
        message += (f". Warning: that is {step} of the {tc.max_steps} planned updates "
                    f"({100 * step / tc.max_steps:.0f}%): the model is undertrained and will "
                    f"translate poorly until it trains longer (the command above, or a "
                    f"larger train.max_minutes: --set train.max_minutes=N)")
    return message
