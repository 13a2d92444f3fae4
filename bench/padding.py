"""Padding of the batch plan: the share of padded positions training would feed, computed
from the prepared corpus's lengths alone (no model, no device).

    python -m bench.padding                          # configs/gpu-10m.yaml, its 12K batches
    python -m bench.padding --config base --batch-tokens 25000 --data prepared/base

Rows: lengths rounded up to a multiple (`train.pad_multiple`: 8 was CUDA's default until
this table, 1 is now both devices'), the same in the former order (target length, then
source length) for comparison, and every batch one of N shapes (`train.batch_shapes`, for
CUDA graphs). Per row: padding over an epoch (both sides, as training logs `pad_frac`),
batches per epoch, the distinct batch shapes (rows x source x target) an epoch holds, and
the seconds the plan took. Padding is the same every epoch up to ties: epoch 0 is shown.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from bench.common import ROOT, prepared_dir
from transcli.config.loading import load_config
from transcli.data.batching import BatchPlan, pack_batches
from transcli.data.encoded import EncodedSplit

MULTIPLES = (1, 2, 4, 8)
SHAPES = (8, 16, 24, 32)


def former_order_padding(plan: BatchPlan) -> tuple[float, int, int]:
    """(padding, batches, shapes) of the plan cut from the former order: by target
    length, then source length."""
    order = plan.indices[np.lexsort((plan.src_len[plan.indices], plan.tgt_len[plan.indices]))]
    batches = pack_batches(order, plan.src_len, plan.tgt_len, plan.batch_tokens, plan.multiple)
    real = sum(int(plan.src_len[b].sum() + plan.tgt_len[b].sum()) for b in batches)
    shapes = [plan.shape(b) for b in batches]
    return 1 - real / sum(r * (s + t) for r, s, t in shapes), len(batches), len(set(shapes))


def row(label: str, plan: BatchPlan, seconds: float) -> str:
    batches = plan.epoch(0)
    shapes = len({plan.shape(b) for b in batches})
    return (f"| {label} | {100 * plan.padding(0):.1f}% | {len(batches)} | {shapes} | "
            f"{seconds:.2f} |")


def table(split: EncodedSplit, batch_tokens: int, max_len: int, seed: int) -> list[str]:
    lines = ["| batches | padding | batches per epoch | shapes | plan, s |",
             "|---|---:|---:|---:|---:|"]
    for multiple in MULTIPLES:
        started = time.perf_counter()
        plan = BatchPlan(split.src_lengths, split.tgt_lengths, batch_tokens, seed, max_len,
                         multiple=multiple)
        plan.epoch(0)
        lines.append(row(f"lengths rounded to {multiple}", plan,
                         time.perf_counter() - started))
        padding, count, shapes = former_order_padding(plan)
        lines.append(f"| lengths rounded to {multiple}, former order | {100 * padding:.1f}% | "
                     f"{count} | {shapes} | |")
    for shapes in SHAPES:
        started = time.perf_counter()
        plan = BatchPlan(split.src_lengths, split.tgt_lengths, batch_tokens, seed, max_len,
                         shapes=shapes)
        plan.epoch(0)
        lines.append(row(f"at most {shapes} shapes", plan, time.perf_counter() - started))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="gpu-10m", help="a config of configs/")
    parser.add_argument("--data", type=Path, help="its prepared dir (default: prepared once "
                                                  "from ../shared/corpora/en-es)")
    parser.add_argument("--batch-tokens", type=int, help="default: the config's")
    args = parser.parse_args()
    cfg = load_config(ROOT / "configs" / f"{args.config}.yaml")
    data = args.data or prepared_dir(args.config)
    split = EncodedSplit(data, "train")
    tokens = args.batch_tokens or cfg.train.batch_tokens
    print(f"{data}: {len(split):,} training pairs, {tokens:,}-token batches "
          f"(configs/{args.config}.yaml's max_positions {cfg.model.max_positions})\n")
    print("\n".join(table(split, tokens, cfg.model.max_positions, cfg.train.seed)))


if __name__ == "__main__":
    main()
