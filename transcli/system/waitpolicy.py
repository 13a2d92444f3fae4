"""How torch's OpenMP threads wait between parallel regions, chosen before torch loads.

libgomp's threads spin for a while after each region, so the next one starts at once:
on idle cores a small model's training step is markedly faster for it (README,
"Benchmarks"). On cores other processes are using, the spinning threads take time
those processes need and the whole machine crawls; sleeping (`OMP_WAIT_POLICY=PASSIVE`)
is then far better. So at start-up transcli looks at its cores for a moment: it leaves
libgomp's default when other processes leave them idle, and asks for PASSIVE when they
do not. A policy the user set wins. Nothing here imports torch.
"""

from __future__ import annotations

import os
import time
from typing import Optional

SAMPLE_SECONDS = 0.1
BUSY_CORES = 0.25  # cores' worth of other processes' work that makes threads sleep


def cpu_ticks(cpus: set[int], stat: str = "/proc/stat") -> Optional[tuple[int, int]]:
    """(busy, total) clock ticks so far on `cpus`; None where /proc/stat is unreadable."""
    busy = total = 0
    try:
        with open(stat, encoding="ascii") as lines:
            for line in lines:
                name, *fields = line.split()
                if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cpus:
                    continue
                ticks = [int(field) for field in fields[:8]]  # user .. steal
                idle = ticks[3] + ticks[4]  # idle + iowait
                busy += sum(ticks) - idle
                total += sum(ticks)
    except (OSError, ValueError):
        return None
    return (busy, total) if total else None


def busy_cores(before: tuple[int, int], after: tuple[int, int], cores: int) -> float:
    """Cores' worth of work done between two `cpu_ticks` samples."""
    ticks = after[1] - before[1]
    return 0.0 if ticks <= 0 else cores * (after[0] - before[0]) / ticks


def choose(environ: dict[str, str] = os.environ, seconds: float = SAMPLE_SECONDS) -> str:
    """Set OMP_WAIT_POLICY=PASSIVE in `environ` unless it is set or the cores are idle;
    return the policy in force ("default" for libgomp's own)."""
    if "OMP_WAIT_POLICY" in environ:
        return environ["OMP_WAIT_POLICY"] or "default"
    if environ.get("OMP_NUM_THREADS") == "1":  # no other thread to wake
        return "default"
    try:
        cpus = os.sched_getaffinity(0)
    except AttributeError:  # not Linux: no /proc/stat either
        cpus = set()
    before = cpu_ticks(cpus)
    if before is not None:
        time.sleep(seconds)  # this process sleeps: what is counted is the others' work
        after = cpu_ticks(cpus)
        if after is not None and busy_cores(before, after, len(cpus)) < BUSY_CORES:
            return "default"
    environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return "PASSIVE"
