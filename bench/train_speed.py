"""Training speed: `transcli train` now against an earlier version of itself (and a naive
loop), in target tokens/s, on the shared en-es corpus; and their loss curves side by side.

    python -m bench.train_speed --baseline 0aaecd6 --bf16              # small, 4 min
    python -m bench.train_speed --baseline 0aaecd6 --bf16 --curve-steps 300
    python -m bench.train_speed --configs tiny small --naive           # vs a naive loop
    python -m bench.train_speed --bf16 --variant prenorm:model.pre_norm=true \
        --variant vocab16k:data.vocab_size=16000                       # config variants

Each implementation is the real `python -m transcli train` of a source tree (this one,
and with --baseline REV that git revision, exported to a temp dir), run as a subprocess
on the same prepared data with the same config and seed. The runs alternate in rounds
(each round resumes the run for its share of --seconds), so background load hits all
alike; tokens/s comes from each run's metrics.jsonl (a line every --log-every updates),
leaving out the first interval of every round (warm-up). Keep --log-every at the
configs' 50 when comparing with an older tree (0aaecd6 among them): those hand freed
memory back to the OS at every log line, which at one line per update makes their
steps much slower than in their users' runs (README, "Benchmarks"). --curve-steps N then trains each
implementation N updates from scratch and prints their losses at the same steps: a
faster step must not change what is learnt. --variant LABEL:key=value,... adds this
tree with other settings (a `data.*` one gets its own prepared dir).

--naive adds the textbook loop: torch.nn.Transformer with the same dimensions
(bench/reference.py), the same objective and optimiser, fed fixed-size
batches of random pairs (no length bucketing), as many pairs per batch as ours
averages. Prepared data is cached in prepared/bench-<config> (built on first use).
GPU figures (base in bf16, eager and compiled, MFU, peak memory) come from
bench/gpu_check.py.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import numpy as np
import torch

from bench.common import (
    CORPORA,
    NEVER,
    ROOT,
    Steady,
    child_env,
    export_tree,
    prepared_dir,
    set_flags,
    transcli,
)
from bench.reference import Reference
from transcli.config.loading import load_config
from transcli.config.schema import Config
from transcli.data.batching import BatchPlan, collate
from transcli.data.encoded import EncodedSplit, load_manifest
from transcli.model.vocab import PAD_ID
from transcli.rundir.layout import METRICS_FILE
from transcli.rundir.metrics import read_metrics
from transcli.training.objective import label_smoothed_nll
from transcli.training.schedules import noam_lr

# The user's setting: each implementation's subprocess starts from it and applies its own
# default.
USER_OMP_WAIT_POLICY = os.environ.get("OMP_WAIT_POLICY")


class Implementation:
    """`python -m transcli train` of one source tree, resumed round after round."""

    def __init__(self, label: str, tree: Path, config: Path, data: Path, run: Path,
                 sets: list[str], threads: int, log_every: int):
        self.label, self.tree, self.config, self.data, self.run = label, tree, config, data, run
        self.sets, self.threads, self.log_every = sets, threads, log_every
        self.rounds: list[list[dict]] = []

    def train(self, sets: list[str], resume: bool) -> None:
        env = child_env(self.tree, OMP_NUM_THREADS=str(self.threads))
        if USER_OMP_WAIT_POLICY is None:
            env.pop("OMP_WAIT_POLICY", None)
        problem = transcli(["train", "--config", self.config, "--data", self.data, "--out",
                            self.run, *set_flags(self.sets + sets),
                            "--resume" if resume else "--force"],
                           self.run.with_name(self.run.name + ".log"), env=env, cwd=self.tree)
        if problem:
            sys.exit(f"{self.label}: {problem}")

    def run_for(self, seconds: float) -> None:
        before = len(self._lines())
        self.train([f"train.max_minutes={seconds / 60}", f"train.log_every={self.log_every}"],
                   resume=bool(self.rounds))
        self.rounds.append(self._lines()[before:])

    def _lines(self) -> list[dict]:
        return [r for r in read_metrics(self.run / METRICS_FILE, "train") if not r.get("partial")]

    def result(self) -> tuple[float, float, float]:
        """(target tokens/s, padding fraction, seconds measured) without warm-up intervals."""
        total = Steady()
        for lines in self.rounds:
            total.add(Steady.of(lines))
        if not total.seconds:  # e.g. torch.compile took the whole round
            sys.exit(f"{self.label}: no log interval after each round's first to measure "
                     f"({[len(lines) for lines in self.rounds]} lines per round); give more "
                     f"--seconds, fewer --rounds or a smaller --log-every")
        return total.tgt_tokens / total.seconds, 1 - total.real / total.padded, total.seconds


class Naive:
    """The textbook loop: random pairs, padded to the longest, no bucketing."""

    label = "naive loop"

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
        self.seconds += time.perf_counter() - start

    def result(self) -> tuple[float, float, float]:
        return self.tokens / self.seconds, 1 - self.real / self.padded, self.seconds


def compare(name: str, args: argparse.Namespace, baseline: Optional[Path], tmp: Path) -> None:
    data = prepared_dir(name)
    config = ROOT / "configs" / f"{name}.yaml"
    sets = ["train.device=cpu", "train.max_steps=" + NEVER, "train.valid_every=" + NEVER,
            "train.save_every=" + NEVER] + (["train.cpu_precision=bf16"] if args.bf16 else [])
    loops: list = []
    if baseline is not None:
        loops.append(Implementation(f"baseline {args.baseline}", baseline, config, data,
                                    tmp / f"{name}-baseline", sets, args.threads,
                                    args.log_every))
    loops.append(Implementation("this tree", ROOT, config, data, tmp / f"{name}-ours", sets,
                                args.threads, args.log_every))
    for variant in args.variant:
        label, _, items = variant.partition(":")
        extra = [item for item in items.split(",") if item]
        data_sets = tuple(item for item in extra if item.startswith("data."))
        loops.append(Implementation(label, ROOT, config, prepared_dir(name, data_sets),
                                    tmp / f"{name}-{label}",
                                    sets + [i for i in extra if i not in data_sets], args.threads,
                                    args.log_every))
    if args.naive:
        cfg = load_config(config)
        split = EncodedSplit(data, "train")
        plan = BatchPlan(split.src_lengths, split.tgt_lengths, cfg.train.batch_tokens,
                         cfg.train.seed, cfg.model.max_positions)
        pairs = round(len(plan.indices) / len(plan.epoch(0)))
        loops.append(Naive(cfg, split, plan, pairs, load_manifest(data)["vocab_size"],
                           torch.device("cpu")))
    for _ in range(args.rounds):
        for loop in loops:
            loop.run_for(args.seconds / args.rounds / len(loops))
    cfg = load_config(config)
    print(f"{name}: d_model {cfg.model.d_model}, {cfg.model.enc_layers}+{cfg.model.dec_layers} "
          f"layers, vocab {load_manifest(data)['vocab_size']}, {cfg.train.batch_tokens} "
          f"tokens/batch, {'bf16 autocast' if args.bf16 else 'fp32'}, {args.threads} threads")
    results = {loop.label: loop.result() for loop in loops}
    for label, (rate, pad, measured) in results.items():
        print(f"  {label:22s} {rate:9,.0f} tgt tok/s   padding {100 * pad:5.1f}%   "
              f"({measured:.0f} s measured)")
    first_rate = next(iter(results.values()))[0]
    print("  ratio to the first row: " + ", ".join(
        f"{label} {rate / first_rate:.2f}x" for label, (rate, _, _) in list(results.items())[1:]),
        flush=True)
    if args.curve_steps:
        curves(name, [loop for loop in loops if isinstance(loop, Implementation)],
               args.curve_steps)


def curves(name: str, loops: list[Implementation], steps: int) -> None:
    """Each implementation trained `steps` updates from scratch: losses at the same steps."""
    every = max(1, steps // 10)
    table = {}
    for loop in loops:
        loop.run = loop.run.with_name(loop.run.name + "-curve")
        loop.train([f"train.max_steps={steps}", f"train.log_every={every}",
                    "train.max_minutes=0"], resume=False)
        table[loop.label] = {r["step"]: r["loss"] for r in loop._lines()}
    print(f"{name}: training loss (label-smoothed) at the same steps, same seed and data order")
    print("  step " + "".join(f"{label:>24s}" for label in table))
    for step in sorted(next(iter(table.values()))):
        print(f"  {step:4d} " + "".join(f"{losses.get(step, float('nan')):24.4f}"
                                        for losses in table.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", nargs="+", default=["small"])
    parser.add_argument("--baseline", help="a git revision to compare with (e.g. 0aaecd6)")
    parser.add_argument("--seconds", type=float, default=240.0,
                        help="per config, all implementations together")
    parser.add_argument("--rounds", type=int, default=4, help="alternations per config")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--bf16", action="store_true", help="train.cpu_precision=bf16")
    parser.add_argument("--log-every", type=int, default=50,
                        help="train.log_every: updates per measured interval")
    parser.add_argument("--naive", action="store_true", help="also time the naive loop")
    parser.add_argument("--variant", action="append", default=[],
                        help="LABEL:key=value,... this tree with other settings (repeatable)")
    parser.add_argument("--curve-steps", type=int, default=0,
                        help="then train each implementation N updates and compare losses")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} CPU threads, OMP_WAIT_POLICY "
          f"{USER_OMP_WAIT_POLICY or 'unset (each version applies its own default)'}; "
          f"load average {os.getloadavg()[0]:.2f}; corpus {CORPORA}", flush=True)
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        baseline = export_tree(args.baseline, Path(tmp) / "baseline") if args.baseline else None
        for name in args.configs:
            compare(name, args, baseline, Path(tmp))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
