"""Micro-benchmarks behind decisions already taken, kept to re-check them on other
machines: `python -m bench.studies.micro NAME [options]`, NAME one of `BENCHMARKS`, each
the module of that name (`-` read as `_`) with a `main()`.

Timing side by side (`fastest`): each variant is timed in turn, round after round, so
that background load hits all of them alike, and each one's fastest round counts.
"""

from __future__ import annotations

import time
from typing import Callable

BENCHMARKS = {
    "attention": "torch's CPU attention kernels, math vs flash, by sentence length",
    "drop": "dropping finished rows from the decoder's cache: select vs fill",
    "step": "one cached decoding step per CPU product path (F.linear, BLAS, oneDNN)",
    "topk": "search's pick from [rows, vocab] log-probs: selection.top_k vs torch.topk",
    "int8-speed": "--int8 with its output layer in int8 vs float32, taking turns",
    "int8-accuracy": "NLL per reference token of the torch engine's int8 variants",
    "memory": "peak RSS of one translation process chunk after chunk, BLAS vs oneDNN",
}


def fastest(calls: dict[str, Callable[[], object]], rounds: int,
            repeats: int) -> dict[str, float]:
    """Seconds per call of each of `calls`: the mean of `repeats` calls in a row, the least
    such mean over `rounds` rounds in which the calls alternate."""
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            for _ in range(repeats):
                call()
            best[name] = min(best[name], (time.perf_counter() - start) / repeats)
    return best
