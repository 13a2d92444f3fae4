"""Process-wide settings of the machine transcli runs on: torch's threads, the device
and its precision. (How freed memory is kept or handed back: transcli.system.heap; how
OpenMP's threads wait, chosen before torch loads: transcli.system.waitpolicy.)
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (torch loads where a function needs it: `available_cores` does not)
    import torch


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask, e.g. under taskset or a
    container's cpuset), not all the machine has."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def set_threads(threads: int) -> int:
    """Give torch `threads` intra-op threads (0: one per available core), never more than
    the cores this process may use (more only make the threads wait on each other, and
    thousands exhaust the process); returns the count."""
    import torch

    cores = available_cores()
    if threads > cores:
        print(f"transcli: note: {threads} threads asked for, {cores} core(s) here: "
              f"using {cores}", file=sys.stderr)
    count = min(threads, cores) or min(cores, torch.get_num_threads())
    torch.set_num_threads(count)
    return count


def inference_setup(device: torch.device, threads: int) -> None:
    """Before a model for translating or scoring loads onto `device`: on the CPU,
    `threads` torch threads (0: one per available core)."""

    if device.type == "cpu":
        set_threads(threads)


def cpu_has_bf16() -> bool:
    """Whether torch has bf16 kernels for this CPU (oneDNN's check: AVX512 or AMX). On
    others (AVX2-only x86, for one) bf16 autocast still runs, but through conversions that
    make training many times slower than fp32 (README, "The CPU recipe")."""
    import torch

    return (torch.backends.mkldnn.is_available()
            and bool(torch.ops.mkldnn._is_mkldnn_bf16_supported()))


def training_precision(device_type: str, precision: str, cpu_precision: str) -> str:
    """What training runs in: `precision` on CUDA; `cpu_precision` on the CPU, except that
    bf16 becomes fp32 on a CPU without bf16 kernels (`cpu_has_bf16`)."""
    if device_type == "cuda":
        return precision
    return "fp32" if cpu_precision == "bf16" and not cpu_has_bf16() else cpu_precision


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """Mixed precision: matmuls in bf16/fp16, weights, softmax and loss in fp32."""
    import torch

    if precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device.type, dtype=dtype)
