"""What search picks from each step's log-probs, timed: `transcli.inference.selection.top_k` beside
torch's `topk` (and `max` for k = 1), on [rows, vocab] log-probs.

    .venv/bin/python -m bench.studies.micro topk [--vocab 8000] [--threads 1 2] [--rounds 5]

k = 1 is greedy's pick; k = 10 is beam 5's 2K candidates per row. The functions alternate
in rounds (`fastest`), so background load hits all alike.
"""

from __future__ import annotations

import argparse
import functools
import os
from typing import Callable

import torch

from bench.studies.micro import fastest
from transcli.inference.selection import top_k

Pick = Callable[[torch.Tensor, int], object]
PICKS: dict[str, Pick] = {
    "selection.top_k": top_k,
    "torch.topk": lambda x, k: x.topk(k, dim=-1),
    "torch.max": lambda x, k: x.max(dim=-1),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 4, 16, 64, 256, 1024])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.backends.cpu.get_cpu_capability()}; vocab "
          f"{args.vocab}; load average {os.getloadavg()[0]:.2f}")
    print("threads   k   rows  " + "  ".join(f"{name:>15s}" for name in PICKS) + "  topk/top_k")
    for threads in args.threads:
        torch.set_num_threads(threads)
        for k in (1, 10):
            picks = {name: pick for name, pick in PICKS.items() if k == 1 or name != "torch.max"}
            for rows in args.rows:
                generator = torch.Generator().manual_seed(rows)
                x = torch.randn(rows, args.vocab, generator=generator).log_softmax(dim=-1)
                calls = {name: functools.partial(pick, x, k) for name, pick in picks.items()}
                best = fastest(calls, args.rounds, args.repeats)
                cells = "  ".join(f"{best[name] * 1e3:12.3f} ms" if name in best else " " * 15
                                  for name in PICKS)
                ratio = best["torch.topk"] / best["selection.top_k"]
                print(f"{threads:7d} {k:3d} {rows:6d}  {cells}  {ratio:10.2f}", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")

