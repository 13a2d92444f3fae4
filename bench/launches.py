"""Operations dispatched per training update: a CPU proxy for a GPU's kernel launches.

    python -m bench.launches                       # configs/gpu-10m.yaml's model, bf16
    python -m bench.launches --config base --top 20

A small model's update on a GPU is launch-bound when its kernels are many and short: each
one costs the host a few microseconds to issue whatever its size. This counts the aten
operations one real update dispatches (`Trainer._update`: forward, the fused loss,
backward, clipping, Adam, the weight average), under a TorchDispatchMode on the CPU, with
the config's model and bf16 autocast as the GPU trains. Views and allocations launch no
kernel and are counted apart; the rest is the proxy. The CPU runs a few paths of its own
(its dropout mask, its attention kernel, a loss chunk of 1,024 rows), printed as such:
`make gpu-check`'s profile counts the kernels a GPU really launches.

The batch is the plan's first of --batch-tokens (default 1,500: the count does not depend on
the batch's size, but for the CPU's loss chunks, one per 1,024 target tokens).
"""

from __future__ import annotations

import argparse
import collections
import tempfile
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from bench.common import ROOT, prepared_dir
from transcli.config.loading import load_config
from transcli.data.batching import BatchStream, StreamPosition
from transcli.data.prepared_dir import open_prepared_dir
from transcli.rundir.run import RunDir
from transcli.training.distributed import Dist
from transcli.training.loop import Trainer, share_step_info
from transcli.training.resume import StartOptions

# Operations that allocate or read a scalar but launch no kernel of their own.
NO_KERNEL = {"aten::empty", "aten::empty_strided", "aten::empty_like", "aten::lift_fresh",
             "aten::_local_scalar_dense", "aten::set_"}


def is_view(func: Any) -> bool:
    """An operation whose result aliases its input without writing it (view, detach)."""
    return any(r.alias_info is not None and not r.alias_info.is_write
               for r in func._schema.returns)


class OpCounter(TorchDispatchMode):
    """Counts every aten operation dispatched inside it, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: collections.Counter[str] = collections.Counter()
        self.views = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if is_view(func) or func._schema.name in NO_KERNEL:
            self.views += 1
        else:
            self.ops[func._schema.name] += 1
        return func(*args, **(kwargs or {}))


def trainer_for(config: str, data: Path, run: Path, batch_tokens: int) -> Trainer:
    cfg = load_config(ROOT / "configs" / f"{config}.yaml", [
        "train.device=cpu", f"train.batch_tokens={batch_tokens}", "train.valid_bleu_lines=0",
        "train.log_every=1000000", "train.save_every=1000000", "train.valid_every=1000000"])
    trainer = Trainer(cfg, open_prepared_dir(data), RunDir(run), Dist(), torch.device("cpu"),
                      StartOptions())
    trainer.precision = "bf16"  # as on a GPU, whatever this CPU's kernels
    return trainer


def count_update(trainer: Trainer, updates: int = 3) -> tuple[OpCounter, int]:
    """Run `updates` updates of the plan's first batch; count the last one's operations.
    (The first ones create Adam's state and the weight average's buffers.)"""
    stream = BatchStream(trainer.plan, StreamPosition())
    batch = trainer.make_batch(stream.next(), StreamPosition())
    info = share_step_info([batch], trainer.dist, 0.0)
    for _ in range(updates - 1):
        trainer._update([batch], info)
    counter = OpCounter()
    with counter:
        trainer._update([batch], info)
    return counter, batch.tgt_tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="gpu-10m", help="a config of configs/")
    parser.add_argument("--data", type=Path, help="its prepared dir (default: prepared once)")
    parser.add_argument("--batch-tokens", type=int, default=1500)
    parser.add_argument("--top", type=int, default=15, help="operations listed")
    args = parser.parse_args()
    data = args.data or prepared_dir(args.config)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    with tempfile.TemporaryDirectory() as tmp:
        trainer = trainer_for(args.config, data, Path(tmp) / "run", args.batch_tokens)
        counter, tokens = count_update(trainer)
    total = sum(counter.ops.values())
    print(f"{args.config}: one bf16 update of {tokens} target tokens on the CPU dispatches "
          f"{total} operations that launch kernels, and {counter.views} views or allocations")
    print("\n| operation | per update |\n|---|---:|")
    for name, count in counter.ops.most_common(args.top):
        print(f"| {name} | {count} |")


if __name__ == "__main__":
    main()
