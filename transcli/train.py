"""`transcli train`: the training loop of Vaswani et al. (2017), on one device or many.

One update is `accum_steps` token-budget batches per process. Their label-smoothed
loss is summed and divided by the update's target tokens over all processes, so
a 2-process DistributedDataParallel run takes the same steps as 1 process with
twice the accumulation. Everything a resumed run needs (weights, optimizer, step,
data position, RNG, counters) is saved beside each checkpoint; SIGINT/SIGTERM
finish the update and save; a non-finite loss stops before it can be applied.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import random
import signal
import sys
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch
import torch.distributed as tdist
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from transcli.batching import (BackgroundLoader, Batch, BatchPlan, BatchStream, StreamPosition,
                               plain_batches)
from transcli.checkpoint import (average_checkpoints, discard_after, load_state, load_weights,
                                 pick_device, prune_checkpoints, save_checkpoint, save_weights)
from transcli.config import Config
from transcli.encoded import EncodedSplit, load_manifest
from transcli.errors import UserError
from transcli.model import Transformer, count_parameters
from transcli.objective import label_smoothed_nll, noam_lr
from transcli.rundir import (AVG_FILE, BEST_FILE, CHECKPOINT_DIR, complete_steps, run_identity,
                             start_step, step_path, write_run_files)
from transcli.runlog import MetricsLog
from transcli.tokenizer import TOKENIZER_FILE, Tokenizer
from transcli.vocab import PAD_ID


@dataclass(frozen=True)
class Dist:
    """This process's place in a torchrun job (rank 0 of 1 without torchrun)."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0

    @classmethod
    def from_env(cls) -> Dist:
        env = os.environ
        return cls(int(env.get("RANK", 0)), int(env.get("WORLD_SIZE", 1)),
                   int(env.get("LOCAL_RANK", 0)))


def train(cfg: Config, data_dir: str | Path, run_dir: str | Path, resume: bool = False,
          force: bool = False) -> None:
    """Train on a prepared dir into a run dir; under torchrun, one process per device."""
    dist = Dist.from_env()
    device = training_device(cfg.train.device, dist)
    if dist.world > 1:
        tdist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    try:
        Trainer(cfg, Path(data_dir), Path(run_dir), dist, device, resume, force).run()
    finally:
        if dist.world > 1:
            tdist.destroy_process_group()


def training_device(name: str, dist: Dist) -> torch.device:
    device = pick_device(name)
    if device.type == "cuda":
        device = torch.device("cuda", dist.local_rank)
        torch.cuda.set_device(device)
        torch.set_float32_matmul_precision("high")  # TF32 matmuls
        torch.backends.cudnn.allow_tf32 = True
    return device


def release_freed_memory() -> None:
    """Hand memory freed by earlier batches back to the OS (glibc only).

    Every batch has another shape, and glibc keeps the freed blocks: with bf16
    autocast on CPU a small-config run grew from 2 to 5.7 GB RSS in 18 minutes.
    Trimming held a 120-step probe at 1.04 GB instead of 1.7 GB, and a 60-step
    small-config run peaked at 2.50 GB instead of 2.87 GB.
    """
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _load_libc() -> Optional[ctypes.CDLL]:
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:  # not glibc (macOS, musl): nothing to trim
        return None


_LIBC = _load_libc()


# ----------------------------------------------------------------------------- bookkeeping


@dataclass
class Interval:
    """Sums since the last log line (saved, so a resumed run logs the same numbers)."""

    loss: float = 0.0
    nll: float = 0.0
    tokens: float = 0.0
    correct: float = 0.0
    padded: float = 0.0  # positions fed, padding included (both sides)
    real: float = 0.0


@dataclass
class Best:
    """The early-stopping record: best validation so far and validations since."""

    value: Optional[float] = None
    step: int = 0
    stale: int = 0


@dataclass
class Progress:
    step: int = 0
    position: StreamPosition = field(default_factory=StreamPosition)
    src_tokens: int = 0  # real tokens trained on, all processes
    tgt_tokens: int = 0
    interval: Interval = field(default_factory=Interval)
    best: Best = field(default_factory=Best)


class StopSignals:
    """SIGINT/SIGTERM ask for a clean stop after the current update; a second one
    interrupts at once (the checkpoint files are atomic either way)."""

    def __init__(self) -> None:
        self.received: Optional[str] = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.received:
            print(f"transcli train: second {name}: stopping now; the latest checkpoint is "
                  f"intact (continue with --resume)", file=sys.stderr)
            raise SystemExit(128 + signum)
        self.received = name

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


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


def fused_adam(params: Any, **options: Any) -> torch.optim.Adam:
    """Adam with fused kernels, on CUDA and also on CPU (torch >= 2.4): 3x faster steps
    than the per-tensor loop, 12 ms instead of 41 ms for the small config."""
    params = list(params)
    try:
        return torch.optim.Adam(params, lr=0.0, fused=True, **options)
    except RuntimeError:  # an older torch without fused CPU kernels
        return torch.optim.Adam(params, lr=0.0, **options)


def update_seed(seed: int, step: int, rank: int) -> int:
    """Dropout's seed for one update of one process: a resumed run, or any rank of a
    DDP job, draws the same masks without carrying every process's RNG state."""
    return int(np.random.SeedSequence([seed, step, rank]).generate_state(1)[0])


# ----------------------------------------------------------------------------- the loop


class Trainer:
    def __init__(self, cfg: Config, data_dir: Path, run_dir: Path, dist: Dist,
                 device: torch.device, resume: bool, force: bool):
        self.cfg, self.tc = cfg, cfg.train
        self.data_dir, self.run_dir = data_dir, run_dir
        self.dist, self.device = dist, device
        self.manifest = load_manifest(data_dir)
        self.tokenizer = Tokenizer(data_dir / TOKENIZER_FILE)
        vocab = self.tokenizer.vocab_size
        if self.manifest.get("vocab_size", vocab) != vocab:
            raise UserError(f"{data_dir}: manifest.json says vocab_size "
                            f"{self.manifest['vocab_size']} but {TOKENIZER_FILE} has {vocab}")
        identity = run_identity(cfg, self.manifest, vocab)
        start = start_step(run_dir, cfg, identity, data_dir, resume, force)
        self._barrier()
        if dist.main:
            if resume:
                discard_after(run_dir, start)
            write_run_files(run_dir, cfg, identity, data_dir, fresh=not resume)
        self._barrier()

        self.train_split = EncodedSplit(data_dir, "train")
        self.plan = BatchPlan(self.train_split.src_lengths, self.train_split.tgt_lengths,
                              self.tc.batch_tokens, self.tc.seed, cfg.model.max_positions)
        if not self.plan.indices.size:
            raise UserError(f"{data_dir}: no training pair fits model.max_positions="
                            f"{cfg.model.max_positions}")

        torch.manual_seed(self.tc.seed)
        self.model = Transformer(cfg.model, vocab).to(device)
        self.optimizer = fused_adam(self.model.parameters(), betas=(self.tc.adam_beta1,
                                    self.tc.adam_beta2), eps=self.tc.adam_eps)
        self.scaler = (torch.amp.GradScaler("cuda")
                       if device.type == "cuda" and self.tc.precision == "fp16" else None)
        self.progress = Progress()
        self.log = MetricsLog(run_dir, enabled=dist.main)
        if start:
            self._restore(start)
        if resume and dist.main:
            self.log.resume(start)

        self.ddp = (DistributedDataParallel(self.model, device_ids=[device.index]
                                            if device.type == "cuda" else None)
                    if dist.world > 1 else None)
        net: torch.nn.Module = self.ddp or self.model
        self.net = torch.compile(net) if self.tc.compile else net
        valid = ValidationSet(cfg, data_dir, self.manifest) if dist.main else None
        self.valid = valid if valid is not None and valid.batches else None  # none: no valid split
        self.saved_step = start
        self.stop_reason: Optional[str] = None  # rank 0's decision: early stop, time limit
        self.last: dict[str, float] = {}  # the latest update's loss, lr and gradient norm
        self.paused = 0.0  # seconds of validation inside the current log interval
        self.interval_start = time.perf_counter()

    # ------------------------------------------------------------------ state

    def _state(self) -> dict[str, Any]:
        p = self.progress
        return {"step": p.step, "position": p.position.state(),
                "src_tokens": p.src_tokens, "tgt_tokens": p.tgt_tokens,
                "interval": asdict(p.interval), "best": asdict(p.best),
                "optimizer": self.optimizer.state_dict(),
                "scaler": self.scaler.state_dict() if self.scaler else {},
                "rng": rng_state(), "world_size": self.dist.world}

    def _restore(self, step: int) -> None:
        load_weights(self.model, step_path(self.run_dir, step))
        state = load_state(self.run_dir, step)
        self.optimizer.load_state_dict(state["optimizer"])
        if self.scaler and state["scaler"]:
            self.scaler.load_state_dict(state["scaler"])
        set_rng_state(state["rng"])
        self.progress = Progress(state["step"], StreamPosition(**state["position"]),
                                 state["src_tokens"], state["tgt_tokens"],
                                 Interval(**state["interval"]), Best(**state["best"]))

    # ------------------------------------------------------------------ main loop

    def run(self) -> None:
        p, tc = self.progress, self.tc
        if p.step >= tc.max_steps:
            self._say(f"{self.run_dir}: already at step {p.step} (max_steps={tc.max_steps}); "
                      f"nothing to do")
            return
        self._say(self._banner())
        stream = BatchStream(self.plan, p.position, self.dist.rank, self.dist.world)
        loader = BackgroundLoader(self.train_split, stream, pin_memory=self.device.type == "cuda")
        bar = tqdm(total=tc.max_steps, initial=p.step, unit="step", dynamic_ncols=True,
                   disable=not self.dist.main, mininterval=1.0, file=sys.stderr)
        started = time.perf_counter()
        reason = "finished"
        try:
            with StopSignals() as signals:
                while p.step < tc.max_steps:
                    pulled = [loader.next() for _ in range(tc.accum_steps)]
                    batches = [batch for batch, _ in pulled]
                    totals, stop = self._agree(batches, signals.received)
                    if stop:
                        reason = signals.received or self.stop_reason or "stop"
                        break
                    self._update(batches, totals)
                    p.position = StreamPosition(**pulled[-1][1])
                    bar.update(1)
                    self._after_update(bar)
                    if (self.dist.main and tc.max_minutes
                            and time.perf_counter() - started > tc.max_minutes * 60):
                        self.stop_reason = f"time limit of {tc.max_minutes:g} min"
        finally:
            loader.close()
            bar.close()
        self._finish(reason)

    def _agree(self, batches: list[Batch], signalled: Optional[str]) -> tuple[list[float], bool]:
        """Sum over processes of (target tokens, padded, real positions), and whether any
        process wants to stop: one tiny all-reduce on the CPU, no device sync."""
        values = torch.tensor([sum(b.tgt_tokens for b in batches),
                               sum(b.padded_positions for b in batches),
                               sum(b.real_positions for b in batches),
                               float(signalled is not None),
                               float(self.stop_reason is not None)], dtype=torch.float64)
        if self.dist.world > 1:
            tdist.all_reduce(values, group=self._cpu_group())
        totals = values.tolist()
        return totals[:3], totals[3] > 0 or totals[4] > 0

    def _update(self, batches: list[Batch], totals: list[float]) -> None:
        """Forward/backward every batch, then one optimizer step (unless non-finite)."""
        p, tc = self.progress, self.tc
        torch.manual_seed(update_seed(tc.seed, p.step, self.dist.rank))
        self.net.train()
        scale = self.dist.world / totals[0]  # DDP averages gradients over processes
        sums = torch.zeros(4, device=self.device)
        for i, batch in enumerate(batches):
            batch = batch.to(self.device)
            last = i == len(batches) - 1
            with self._no_sync(last):
                with self._autocast():
                    log_probs = self.net(batch.src, batch.tgt_in)
                loss, nll, n, correct = label_smoothed_nll(log_probs, batch.tgt_out,
                                                           tc.label_smoothing, PAD_ID)
                scaled = loss * scale
                (self.scaler.scale(scaled) if self.scaler else scaled).backward()
            sums += torch.stack([loss.detach(), nll, n.float(), correct.float()])
        if self.dist.world > 1:
            tdist.all_reduce(sums)
        if self.scaler:
            self.scaler.unscale_(self.optimizer)
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(),
                                              tc.clip_grad_norm or math.inf)
        loss_sum, nll_sum, tokens, correct, grad_norm = torch.cat(
            [sums, norm.reshape(1).float().to(sums.device)]).tolist()  # the one sync
        self._check_finite(loss_sum / tokens, grad_norm)
        lr = noam_lr(p.step + 1, self.cfg.model.d_model, tc.warmup_steps, tc.lr_factor)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        if self.scaler:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        p.step += 1
        p.tgt_tokens += int(tokens)
        p.src_tokens += int(totals[2] - tokens)
        iv = p.interval
        iv.loss += loss_sum
        iv.nll += nll_sum
        iv.tokens += tokens
        iv.correct += correct
        iv.padded += totals[1]
        iv.real += totals[2]
        self.last = {"lr": lr, "grad_norm": grad_norm, "loss": loss_sum / tokens}

    def _check_finite(self, loss: float, grad_norm: float) -> None:
        """Refuse to apply an update that would poison the weights (fp16's GradScaler
        skips overflowing steps by itself, so only the loss is checked there)."""
        bad = None if math.isfinite(loss) else f"loss is {loss}"
        if bad is None and not math.isfinite(grad_norm) and not self.scaler:
            bad = f"gradient norm is {grad_norm}"
        if bad:
            steps = complete_steps(self.run_dir)
            kept = (f"the last good checkpoint (step {steps[-1]}) is intact" if steps
                    else "no checkpoint had been saved yet")
            raise UserError(f"step {self.progress.step + 1}: {bad}: training diverged and "
                            f"stopped before applying the update; {kept} in {self.run_dir}. "
                            f"Try a lower train.lr_factor or set train.clip_grad_norm")

    def _after_update(self, bar: tqdm) -> None:
        p, tc = self.progress, self.tc
        bar.set_postfix(loss=f"{self.last['loss']:.3f}", lr=f"{self.last['lr']:.2e}",
                        refresh=False)
        if p.step % tc.log_every == 0:
            record = self._log_line()
            release_freed_memory()
            bar.set_postfix(loss=f"{record['loss']:.3f}", lr=f"{record['lr']:.2e}",
                            tok_s=f"{record['tokens_per_s']:.0f}", refresh=False)
        if self.valid is not None and p.step % tc.valid_every == 0:
            self._validate()
        if p.step % tc.save_every == 0 or p.step == tc.max_steps:
            self._save()

    def _log_line(self) -> dict[str, Any]:
        p, iv = self.progress, self.progress.interval
        elapsed = max(time.perf_counter() - self.interval_start - self.paused, 1e-9)
        nll = iv.nll / iv.tokens
        record = {"step": p.step, "split": "train", "epoch": p.position.epoch,
                  "loss": iv.loss / iv.tokens,
                  "nll": nll, "ppl": math.exp(min(nll, 50.0)), "acc": iv.correct / iv.tokens,
                  "lr": self.last["lr"], "grad_norm": self.last["grad_norm"],
                  "tokens_per_s": iv.tokens / elapsed, "pad_frac": 1.0 - iv.real / iv.padded,
                  "tgt_tokens": p.tgt_tokens, "src_tokens": p.src_tokens}
        self.log.append(record)
        p.interval = Interval()
        self.interval_start, self.paused = time.perf_counter(), 0.0
        return record

    def _validate(self) -> None:
        """Rank 0: valid loss and greedy BLEU, best checkpoint, early-stopping count.
        "Best" follows train.early_stop_metric: BLEU, or the valid NLL for `loss` and
        for runs that decode no BLEU lines."""
        assert self.valid is not None
        started = time.perf_counter()
        p, tc = self.progress, self.tc
        self.model.eval()
        scores = self.valid.scores(self.model, self.tokenizer, self.device, self._autocast)
        record = {"step": p.step, "split": "valid", "loss": scores["valid_loss"], **scores}
        self.model.train()
        higher_better = "valid_bleu" in record and tc.early_stop_metric == "bleu"
        value = record["valid_bleu"] if higher_better else record["valid_nll"]
        best = p.best
        improved = best.value is None or (value > best.value if higher_better
                                          else value < best.value)
        if improved:
            save_weights(self.model, self.run_dir / CHECKPOINT_DIR / BEST_FILE)
            p.best = Best(value, p.step, 0)
        else:
            best.stale += 1
            if tc.patience and best.stale >= tc.patience:
                metric = "BLEU" if higher_better else "NLL"
                self.stop_reason = (f"early stop: no better valid {metric} in {best.stale} "
                                    f"validations (best {best.value:.4g} at step {best.step})")
        record["best"] = improved
        self.log.append(record)
        self.log.plot()
        tqdm.write(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                            for k, v in record.items()), file=sys.stderr)
        self.paused += time.perf_counter() - started

    def _save(self) -> None:
        if self.dist.main:
            save_checkpoint(self.model, self._state(), self.run_dir, self.progress.step)
            prune_checkpoints(self.run_dir, self.tc.keep_last)
        self.saved_step = self.progress.step

    def _finish(self, reason: str) -> None:
        p = self.progress
        if self.saved_step != p.step:
            self._save()
        if not self.dist.main:
            return
        steps = complete_steps(self.run_dir)[-self.tc.average_last:]
        if steps:
            average_checkpoints([step_path(self.run_dir, s) for s in steps],
                                self.run_dir / CHECKPOINT_DIR / AVG_FILE)
        self.log.plot()
        where = f"checkpoint step {p.step} saved in {self.run_dir / CHECKPOINT_DIR}"
        if reason in ("SIGINT", "SIGTERM"):
            self._say(f"{reason} received: stopped after step {p.step}; {where}; "
                      f"continue with --resume")
        elif reason == "finished":
            self._say(f"finished at step {p.step}; {where}")
        else:
            self._say(f"{reason}: stopped after step {p.step}; {where}")

    # ------------------------------------------------------------------ helpers

    def _precision(self) -> str:
        return self.tc.precision if self.device.type == "cuda" else self.tc.cpu_precision

    def _autocast(self) -> contextlib.AbstractContextManager:
        """Mixed precision: matmuls in bf16/fp16, weights, softmax and loss in fp32."""
        precision = self._precision()
        if precision == "fp32":
            return contextlib.nullcontext()
        dtype = torch.bfloat16 if precision == "bf16" else torch.float16
        return torch.autocast(self.device.type, dtype=dtype)

    def _no_sync(self, last: bool) -> contextlib.AbstractContextManager:
        """Gradients are all-reduced once per update, on its last batch."""
        return self.ddp.no_sync() if self.ddp is not None and not last else contextlib.nullcontext()

    def _cpu_group(self) -> Any:
        if not hasattr(self, "_gloo"):
            nccl = tdist.get_backend() == "nccl"
            self._gloo = tdist.new_group(backend="gloo") if nccl else None
        return self._gloo

    def _barrier(self) -> None:
        if self.dist.world > 1:
            tdist.barrier()

    def _say(self, message: str) -> None:
        if self.dist.main:
            tqdm.write(f"transcli train: {message}", file=sys.stderr)

    def _banner(self) -> str:
        p, tc, dist = self.progress, self.tc, self.dist
        precision = self._precision()
        start = f"resuming at step {p.step}" if p.step else "new run"
        return (f"{start} in {self.run_dir}: {count_parameters(self.model):,} parameters on "
                f"{self.device} ({precision}{', compiled' if tc.compile else ''}) x {dist.world} "
                f"process(es); {len(self.plan.indices):,} training pairs "
                f"({self.plan.skipped} over max_positions left out), "
                f"{len(self.plan.epoch(p.position.epoch))} batches of <= {tc.batch_tokens} "
                f"tokens per epoch, {tc.accum_steps * dist.world} per update")


class ValidationSet:
    """The valid split's batches for loss, and the first lines of its text for BLEU."""

    def __init__(self, cfg: Config, data_dir: Path, manifest: dict[str, Any]):
        self.cfg = cfg
        split = EncodedSplit(data_dir, "valid")
        self.batches = list(plain_batches(split, cfg.train.batch_tokens,
                                          cfg.model.max_positions)) if len(split) else []
        self.sources: list[str] = []
        self.references: list[str] = []
        lines = cfg.train.valid_bleu_lines
        if lines and self.batches:
            self.sources = _read_lines(data_dir / f"valid.{manifest['src_lang']}", lines)
            self.references = _read_lines(data_dir / f"valid.{manifest['tgt_lang']}", lines)

    def scores(self, model: Transformer, tokenizer: Tokenizer, device: torch.device,
               autocast: Any) -> dict[str, float]:
        sums = torch.zeros(4, dtype=torch.float64, device=device)
        with torch.no_grad():
            for batch in self.batches:
                batch = batch.to(device)
                with autocast():
                    log_probs = model(batch.src, batch.tgt_in)
                loss, nll, n, correct = label_smoothed_nll(
                    log_probs, batch.tgt_out, self.cfg.train.label_smoothing, PAD_ID)
                sums += torch.stack([loss, nll, n.double(), correct.double()]).double()
        loss, nll, tokens, correct = sums.tolist()
        scores = {"valid_loss": loss / tokens, "valid_nll": nll / tokens,
                  "valid_ppl": math.exp(min(nll / tokens, 50.0)), "valid_acc": correct / tokens}
        if self.sources:
            scores["valid_bleu"] = greedy_bleu(model, tokenizer, self.cfg, self.sources,
                                               self.references, device)
        return scores


def greedy_bleu(model: Transformer, tokenizer: Tokenizer, cfg: Config, sources: list[str],
                references: list[str], device: torch.device) -> float:
    """sacreBLEU of greedy translations (cached decoder): cheap enough to run often."""
    from transcli.evaluate import score
    from transcli.translate import Translator

    decode_cfg = replace(cfg.decode, strategy="greedy", beam_size=1, n_best=1)
    hypotheses = Translator(model, tokenizer, decode_cfg, device).translate(sources)
    return score(hypotheses, [references], ter=False).bleu


def _read_lines(path: Path, limit: int) -> list[str]:
    if not path.is_file():
        raise UserError(f"{path}: valid text for BLEU not found (re-run `transcli prepare`, "
                        f"or set train.valid_bleu_lines=0)")
    with open(path, encoding="utf-8") as handle:
        return [line.rstrip("\n") for _, line in zip(range(limit), handle)]
