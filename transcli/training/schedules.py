"""The learning-rate schedules: the paper's (Vaswani et al. 2017, 5.3) and two decays.

Every schedule warms up linearly to Noam's peak; `train.schedule` names what follows
(`SCHEDULES` in config/schema.py, one function of that name here). A decay ends either
at `train.max_steps` or, with `train.decay_minutes`, when a time budget is spent
(`decay_clock`), whichever comes first.
"""

from __future__ import annotations

import math
from typing import Callable

from transcli.config.schema import SCHEDULES


def noam_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5): linear warm-up,
    then decay with the inverse square root of the (1-based) update number."""
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


# After warm-up, each schedule is a function of update `step`, the `peak` reached at update
# `warmup`, the share of the decay done (`progress`, 0 to 1) and the `final` scale.


def noam(step: int, warmup: int, peak: float, progress: float, final: float) -> float:
    """The paper's: step^-0.5, which continues the warm-up's peak at `warmup`."""
    return peak * math.sqrt(warmup / step)


def linear(step: int, warmup: int, peak: float, progress: float, final: float) -> float:
    return peak * (final + (1.0 - final) * (1.0 - progress))


def cosine(step: int, warmup: int, peak: float, progress: float, final: float) -> float:
    return peak * (final + (1.0 - final) * 0.5 * (1.0 + math.cos(math.pi * progress)))


# Each of train.schedule's names is the function of that name above.
DECAYS: dict[str, Callable[[int, int, float, float, float], float]] = {
    name: globals()[name] for name in SCHEDULES}


def learning_rate(schedule: str, step: int, d_model: int, warmup: int, factor: float,
                  total: int, final: float = 0.0, clock: float = 0.0) -> float:
    """The learning rate of update `step` (1-based).

    All schedules share Noam's warm-up and peak (factor * d_model^-0.5 * warmup^-0.5 at
    `warmup`), then: `noam` decays as step^-0.5; `linear` and `cosine` fall from the peak
    to `final` x peak at update `total` (a run that knows its length ends on a low rate),
    or sooner when `clock`, the share of a time budget spent since warm-up, runs ahead.
    """
    if step <= warmup:
        return noam_lr(step, d_model, warmup, factor)
    peak = noam_lr(warmup, d_model, warmup, factor)
    progress = min(1.0, max((step - warmup) / max(1, total - warmup), clock))
    return DECAYS[schedule](step, warmup, peak, progress, final)


def decay_clock(seconds: float, warmup_seconds: float, budget_minutes: float) -> float:
    """The share of a decay's time budget spent: training seconds since warm-up ended,
    over the budget's seconds left at that point (0 without a budget)."""
    if not budget_minutes:
        return 0.0
    span = budget_minutes * 60 - warmup_seconds
    return 1.0 if span <= 0 else max(0.0, (seconds - warmup_seconds) / span)
