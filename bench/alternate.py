"""Timing variants side by side: each is timed in turn, round after round, so that
background load hits all of them alike, and each one's fastest round counts."""

from __future__ import annotations

import time
from typing import Callable


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
