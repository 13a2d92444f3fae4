"""Whether a function of a text takes linear time, measured so that a busy machine does
not make the test fail and a quadratic path fails in bounded time."""

from __future__ import annotations

import multiprocessing
import time
from typing import Callable, Optional


def grows_linearly(work: Callable[[str], object], build: Callable[[int], str], size: int,
                   ratio: float = 40.0, slack: float = 3.0) -> tuple[float, Optional[float]]:
    """`work` on `build(size // 10)` in this process, then on `build(size)` in a child
    process given `ratio` times as long plus `slack` seconds (linear time takes about
    ten times as long; quadratic a hundred). (small seconds, big seconds), or None for
    the big one when the child ran out of its time and was stopped."""
    small_text = build(size // 10)
    started = time.monotonic()
    work(small_text)
    small = time.monotonic() - started
    big_text = build(size)
    child = multiprocessing.get_context("fork").Process(target=work, args=(big_text,))
    started = time.monotonic()
    child.start()
    child.join(ratio * small + slack)
    big = time.monotonic() - started
    if child.is_alive():
        child.kill()
        child.join()
        return small, None
    assert child.exitcode == 0, f"the work failed in the child (exit code {child.exitcode})"
    return small, big
