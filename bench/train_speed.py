"""Training speed: `transcli train` against a naive loop, in target tokens/s and padding.

ours:  the real `train()` (length-bucketed token-budget batches, background loader,
       label smoothing, Noam, Adam) on prepared ../shared/corpora/en-es, timed from
       the tokens_per_s of its metrics.jsonl (the first interval of a round, warm-up,
       is left out).
naive: torch.nn.Transformer with the same dimensions (bench/model_speed.Reference), the
       same objective and optimiser, fed fixed-size batches of random pairs (no length
       bucketing, collated in the loop): as many pairs per batch as ours averages, so a
       step does the same real work and pays only for padding and implementation.
The two alternate in rounds, so background load on a shared machine hits both alike.

    python bench/train_speed.py                          # tiny and small, 60 s each
    python bench/train_speed.py --configs small --seconds 120 --threads 2 --bf16
Prepared data is cached in prepared/bench-<config> (built on first use). GPU figures
(base in bf16, eager and compiled, MFU, peak memory) come from bench/gpu_check.py.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from transcli.batching import BatchPlan, collate
from transcli.config import Config, SourceConfig, load_config
from transcli.encoded import EncodedSplit, load_manifest
from transcli.objective import label_smoothed_nll, noam_lr
from transcli.prepare import prepare
from transcli.rundir import METRICS_FILE
from transcli.runlog import read_metrics
from transcli.train import train
from transcli.vocab import PAD_ID

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from model_speed import Reference  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpora" / "en-es"
LOG_EVERY = {"tiny": 10, "small": 1, "base": 10}


def prepared_dir(name: str, corpus: Path = CORPUS, out: Path | None = None) -> Path:
    """`corpus`/train.{en,es} prepared with `name`'s data settings (vocabulary size above
    all) into `out` (default prepared/bench-<name>), unless already there."""
    out = out or ROOT / "prepared" / f"bench-{name}"
    if not (out / "manifest.json").is_file():
        cfg = load_config(ROOT / "configs" / f"{name}.yaml")
        cfg.data.train = [SourceConfig(src_file=str(corpus / "train.en"),
                                       tgt_file=str(corpus / "train.es"))]
        print(f"preparing {out} (once)...", flush=True)
        prepare(cfg, out, force=False)
    return out


def run_config(name: str, data: Path, run: Path, seconds: float, sets: list[str]) -> Config:
    """`name`'s config, training only: no validation, no checkpoint until the time is up."""
    return load_config(ROOT / "configs" / f"{name}.yaml", [
        "train.max_steps=1000000000", f"train.max_minutes={seconds / 60}",
        f"train.log_every={LOG_EVERY[name]}", "train.valid_every=1000000000",
        "train.save_every=1000000000", *sets])


class Ours:
    """`transcli train`, one resumed run per round."""

    def __init__(self, name: str, data: Path, run: Path, sets: list[str]):
        self.name, self.data, self.run, self.sets = name, data, run, sets
        self.rounds: list[list[dict]] = []

    def run_for(self, seconds: float) -> None:
        before = len(self._lines())
        cfg = run_config(self.name, self.data, self.run, seconds, self.sets)
        with contextlib.redirect_stderr(io.StringIO()):  # its progress bar and messages
            train(cfg, self.data, self.run, resume=bool(self.rounds), force=not self.rounds)
        self.rounds.append(self._lines()[before:])

    def _lines(self) -> list[dict]:
        return read_metrics(self.run / METRICS_FILE, "train")

    def result(self) -> tuple[float, float, float]:
        """(target tokens/s, padding fraction, seconds measured) without warm-up intervals."""
        totals = [Steady.of(lines) for lines in self.rounds]
        tokens, seconds = sum(t.tgt_tokens for t in totals), sum(t.seconds for t in totals)
        real, padded = sum(t.real for t in totals), sum(t.padded for t in totals)
        return tokens / seconds, 1 - real / padded, seconds


@dataclass
class Steady:
    """The log intervals of `transcli train` after its first train line (whose interval
    holds the warm-up: first batches, allocator growth, compilation)."""

    tgt_tokens: float = 0.0
    src_tokens: float = 0.0
    seconds: float = 0.0
    real: float = 0.0  # positions fed, both sides, without and with padding
    padded: float = 0.0
    steps: int = 0

    @classmethod
    def of(cls, lines: list[dict]) -> Steady:
        """From consecutive "train" lines of metrics.jsonl."""
        total = cls()
        for prev, line in zip(lines, lines[1:]):
            tgt = line["tgt_tokens"] - prev["tgt_tokens"]
            src = line["src_tokens"] - prev["src_tokens"]
            total.tgt_tokens += tgt
            total.src_tokens += src
            total.seconds += tgt / line["tokens_per_s"]
            total.real += tgt + src
            total.padded += (tgt + src) / (1 - line["pad_frac"])
            total.steps += line["step"] - prev["step"]
        return total


class Naive:
    """The textbook loop: random pairs, padded to the longest, no bucketing."""

    def __init__(self, cfg: Config, split: EncodedSplit, plan: BatchPlan, pairs_per_batch: int,
                 vocab: int, device: torch.device):
        torch.manual_seed(cfg.train.seed)
        self.cfg, self.split, self.device = cfg, split, device
        self.model = Reference(cfg.model, vocab).to(device).train()
        tc = cfg.train
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=0.0, eps=tc.adam_eps,
                                          betas=(tc.adam_beta1, tc.adam_beta2))
        self.candidates = plan.indices  # pairs that fit the positional table
        self.pairs = pairs_per_batch
        self.rng = np.random.default_rng(0)
        self.step = 0
        self.tokens = self.seconds = self.padded = self.real = 0.0
        for _ in range(2):  # warm-up, not counted
            self._step()

    def _step(self) -> tuple[int, int, int]:
        tc = self.cfg.train
        batch = collate(self.split, self.rng.choice(self.candidates, self.pairs, replace=False))
        batch = batch.to(self.device)
        self.step += 1
        for group in self.optimizer.param_groups:
            group["lr"] = noam_lr(self.step, self.cfg.model.d_model, tc.warmup_steps,
                                  tc.lr_factor)
        log_probs = self.model(batch.src, batch.tgt_in)
        loss, _, tokens, _ = label_smoothed_nll(log_probs, batch.tgt_out, tc.label_smoothing,
                                                PAD_ID)
        (loss / tokens).backward()
        if tc.clip_grad_norm:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), tc.clip_grad_norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return batch.tgt_tokens, batch.padded_positions, batch.real_positions

    def run_for(self, seconds: float) -> None:
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            tokens, padded, real = self._step()
            self.tokens += tokens
            self.padded += padded
            self.real += real
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        self.seconds += time.perf_counter() - start

    def result(self) -> tuple[float, float, float]:
        return self.tokens / self.seconds, 1 - self.real / self.padded, self.seconds


def compare(name: str, seconds: float, rounds: int, bf16: bool) -> None:
    data = prepared_dir(name)
    cfg = load_config(ROOT / "configs" / f"{name}.yaml")
    split = EncodedSplit(data, "train")
    plan = BatchPlan(split.src_lengths, split.tgt_lengths, cfg.train.batch_tokens,
                     cfg.train.seed, cfg.model.max_positions)
    pairs = round(len(plan.indices) / len(plan.epoch(0)))
    vocab = load_manifest(data)["vocab_size"]
    with tempfile.TemporaryDirectory() as tmp:
        loops = {"transcli train": Ours(name, data, Path(tmp) / "fp32", ["train.device=cpu"]),
                 "naive loop": Naive(cfg, split, plan, pairs, vocab, torch.device("cpu"))}
        if bf16:
            loops["transcli train bf16"] = Ours(name, data, Path(tmp) / "bf16", [
                "train.device=cpu", "train.cpu_precision=bf16"])
        for _ in range(rounds):
            for loop in loops.values():
                loop.run_for(seconds / rounds / len(loops))
        results = {label: loop.result() for label, loop in loops.items()}
    print(f"{name}: d_model {cfg.model.d_model}, {cfg.model.enc_layers}+{cfg.model.dec_layers} "
          f"layers, vocab {vocab}, {cfg.train.batch_tokens} tokens/batch (naive: {pairs} "
          f"random pairs/batch)")
    for label, (rate, pad, measured) in results.items():
        print(f"  {label:20s} {rate:9,.0f} tgt tok/s   padding {100 * pad:5.1f}%   "
              f"({measured:.0f} s measured)")
    naive_rate = results["naive loop"][0]
    print("  speed-up over naive: " + ", ".join(
        f"{label} {rate / naive_rate:.2f}x" for label, (rate, _, _) in results.items()
        if label != "naive loop"), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", nargs="+", default=["tiny", "small"])
    parser.add_argument("--seconds", type=float, default=60.0,
                        help="per config, all loops together")
    parser.add_argument("--rounds", type=int, default=2, help="alternations per config")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--bf16", action="store_true",
                        help="also time train.cpu_precision=bf16 (CPUs with AMX/AVX512-BF16)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads; "
          f"corpus {CORPUS}", flush=True)
    for name in args.configs:
        compare(name, args.seconds, args.rounds, args.bf16)


if __name__ == "__main__":
    main()
