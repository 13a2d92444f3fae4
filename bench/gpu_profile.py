"""The profile stage of `gpu-check`: 20 steady updates of configs/gpu-10m.yaml (bf16, as
shipped) under torch.profiler, in a process of its own (`gpu_check profile`).

The real training loop runs (`transcli.training.loop.train`); its `Trainer._update` is
wrapped to time each update on the host and to profile updates `WARMUP` to `WARMUP` + 20
(the first ones grow the allocator and pick kernels). Reported: how busy the GPU was over
those updates' wall time (the union of its kernels' and copies' intervals), the kernels it
ran and the launch calls the host made per update (a CUDA graph runs many kernels from one
launch), the host's time per update (issuing it: the update never waits for the GPU), and
the 10 kernels with the most GPU time. The process prints one RESULT line of JSON and is
then killed by its parent (nothing is saved).
"""

from __future__ import annotations

import collections
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

from bench.common import NEVER, ROOT
from transcli.config.loading import load_config
from transcli.data.prepared_dir import open_prepared_dir
from transcli.rundir.run import RunDir
from transcli.training.loop import Trainer, train

WARMUP = 60
PROFILED = 20
RESULT = "RESULT "
LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cudaGraphLaunch", "cudaLaunchKernelExC",
            "cuLaunchKernelEx", "cudaMemcpyAsync", "cudaMemsetAsync")


def busy_seconds(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of (start, end) intervals."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def summarise(events: Any, wall_s: float, host_s: list[float], updates: int) -> dict[str, Any]:
    """The profile's figures from torch.profiler's events (times in microseconds)."""
    device = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
    gpu_time: collections.Counter[str] = collections.Counter()
    for e in device:
        gpu_time[e.name] += e.time_range.end - e.time_range.start
    launches = sum(1 for e in events if e.name.startswith(LAUNCHES))
    busy = busy_seconds([(e.time_range.start, e.time_range.end) for e in device]) / 1e6
    return {"updates": updates, "wall_ms_per_update": 1e3 * wall_s / updates,
            "gpu_busy": busy / wall_s, "kernels_per_update": len(device) / updates,
            "launch_calls_per_update": launches / updates,
            "host_ms_per_update": 1e3 * sum(host_s) / len(host_s),
            "top_kernels": [[name, us / 1e3 / updates] for name, us in gpu_time.most_common(10)]}


class Profiled:
    """`Trainer._update`, profiling updates WARMUP .. WARMUP + PROFILED - 1."""

    def __init__(self, cuda: bool) -> None:
        self.plain, self.count, self.cuda = Trainer._update, 0, cuda
        self.host: list[float] = []
        self.profiler = profile(activities=[ProfilerActivity.CPU]
                                + ([ProfilerActivity.CUDA] if cuda else []))
        self.started = 0.0

    def synchronize(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def __call__(self, trainer: Trainer, batches: Any, info: Any) -> bool:
        if self.count == WARMUP:
            self.synchronize()
            self.profiler.__enter__()
            self.started = time.perf_counter()
        began = time.perf_counter()
        done = self.plain(trainer, batches, info)
        if self.count >= WARMUP:
            self.host.append(time.perf_counter() - began)
        self.count += 1
        if self.count == WARMUP + PROFILED:
            self.synchronize()
            wall = time.perf_counter() - self.started
            self.profiler.__exit__(None, None, None)
            result = summarise(self.profiler.events(), wall, self.host, PROFILED)
            print(RESULT + json.dumps(result), flush=True)
            time.sleep(3600)  # the parent kills this process
        return done


def profile_run(data: Path, config: str = "gpu-10m", device: str = "cuda",
                sets: tuple[str, ...] = ()) -> int:
    """`gpu_check profile`: train gpu-10m as shipped until the profile is printed (the
    CPU tests run a tiny config on the CPU)."""
    cfg = load_config(ROOT / "configs" / f"{config}.yaml", [
        f"train.device={device}", f"train.max_steps={NEVER}", f"train.log_every={NEVER}",
        f"train.valid_every={NEVER}", f"train.save_every={NEVER}", "train.valid_bleu_lines=0",
        *sets])
    profiled = Profiled(device == "cuda")
    Trainer._update = lambda trainer, batches, info: profiled(trainer, batches, info)
    with tempfile.TemporaryDirectory() as tmp:
        train(cfg, open_prepared_dir(data), RunDir(Path(tmp) / "run"))
    return 1  # the run ended before the profile was printed


def profile_lines(result: dict[str, Any]) -> list[str]:
    lines = [f"{result['updates']} updates: {result['wall_ms_per_update']:.1f} ms each, GPU busy "
             f"{100 * result['gpu_busy']:.0f}% of that; {result['kernels_per_update']:.0f} "
             f"kernels and {result['launch_calls_per_update']:.0f} launch calls per update; "
             f"host {result['host_ms_per_update']:.1f} ms per update",
             "| kernel | GPU ms per update |", "|---|---:|"]
    return lines + [f"| {name[:90]} | {ms:.2f} |" for name, ms in result["top_kernels"]]
