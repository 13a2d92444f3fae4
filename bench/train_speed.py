"""Training speed of `transcli train` in target tokens/s: side by side (the default), one
run measured once steady (a row of `make gpu-check`'s table), or profiled.

    python -m bench.train_speed --baseline 0aaecd6 --bf16           # vs a revision, 4 min
    python -m bench.train_speed --steady --configs gpu-10m --device cuda --seconds 25
    python -m bench.train_speed --profile --configs gpu-10m --device cuda

Side by side: the real `python -m transcli train` of this tree and of --baseline REV (its
tree exported), same data, config and seed, taking turns in --rounds so that background
load hits both alike. --steady
prints a table row and a RESULT line of JSON; --profile times each `Trainer.update` and
profiles PROFILED of them. docs/BENCHMARKS.md and docs/GPU.md say more and have figures.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple, Optional
from unittest import mock

from bench.common import (
    NEVER,
    RESULT,
    ROOT,
    Child,
    Steady,
    child_env,
    export_tree,
    output_lines,
    prepared_dir,
    set_flags,
    transcli,
)
from bench.flops import (
    Lengths,
    dense_bf16_peak,
    mfu_text,
    parameters_per_token,
    training_flops,
)
from transcli.config.loading import load_config
from transcli.config.schema import Config
from transcli.data.encoded import EncodedSplit, load_manifest
from transcli.rundir.layout import METRICS_FILE
from transcli.rundir.metrics import read_metrics

# The user's setting: each implementation's subprocess starts from it and applies its own
# default.
USER_OMP_WAIT_POLICY = os.environ.get("OMP_WAIT_POLICY")
QUIET = [f"train.max_steps={NEVER}", f"train.valid_every={NEVER}", f"train.save_every={NEVER}",
         "train.valid_bleu_lines=0"]  # nothing but updates: no end, validation or save
LOG_EVERY = 5  # --steady's log interval, in updates
WINDOW = 4  # log lines per window
WINDOWS = 3  # consecutive windows that must agree
TOLERANCE = 0.10  # how far from their median
MEASURE_S = 6.0  # training seconds measured once steady
START = {"step": 0, "epoch": 0, "tgt_tokens": 0, "src_tokens": 0}  # before the first line
WARMUP = 60  # --profile: updates before the profiled ones (allocator, kernel choice)
PROFILED = 20
LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cudaGraphLaunch", "cudaLaunchKernelExC",
            "cuLaunchKernelEx", "cudaMemcpyAsync", "cudaMemsetAsync")


def config_path(name: str) -> Path:
    return ROOT / "configs" / f"{name}.yaml"


class Implementation:
    """`python -m transcli train` of one source tree, resumed round after round."""

    def __init__(self, label: str, tree: Path, config: Path, data: Path, run: Path,
                 sets: list[str], args: argparse.Namespace):
        self.label, self.tree, self.config, self.data, self.run = label, tree, config, data, run
        self.sets, self.threads, self.log_every = sets, args.threads, args.log_every
        self.rounds: list[list[dict]] = []

    def train(self, sets: list[str], resume: bool) -> None:
        env = child_env(self.tree, OMP_NUM_THREADS=str(self.threads))
        if USER_OMP_WAIT_POLICY is None:
            env.pop("OMP_WAIT_POLICY", None)
        problem = transcli(["train", "--config", self.config, "--data", self.data, "--out",
                            self.run, *set_flags(self.sets + sets),
                            "--resume" if resume else "--force"],
                           self.run.with_name(self.run.name + ".log"), env=env, cwd=self.tree)
        if problem:
            sys.exit(f"{self.label}: {problem}")

    def run_for(self, seconds: float) -> None:
        before = len(self.lines())
        self.train([f"train.max_minutes={seconds / 60}", f"train.log_every={self.log_every}"],
                   resume=bool(self.rounds))
        self.rounds.append(self.lines()[before:])

    def lines(self) -> list[dict]:
        return [r for r in read_metrics(self.run / METRICS_FILE, "train") if not r.get("partial")]

    def result(self) -> tuple[float, float, float]:
        """(target tokens/s, padding fraction, seconds measured) without warm-up intervals."""
        total = Steady()
        for lines in self.rounds:
            total.add(Steady.of(lines))
        if not total.seconds:  # e.g. torch.compile took the whole round
            sys.exit(f"{self.label}: no log interval after each round's first to measure "
                     f"({[len(lines) for lines in self.rounds]} lines per round); give more "
                     f"--seconds, fewer --rounds or a smaller --log-every")
        return total.tgt_tokens / total.seconds, 1 - total.real / total.padded, total.seconds


def compare(name: str, args: argparse.Namespace, baseline: Optional[Path], tmp: Path) -> None:
    data, config = args.data or prepared_dir(name), config_path(name)
    sets = [f"train.device={args.device}", *QUIET, *args.sets] + (
        ["train.cpu_precision=bf16"] if args.bf16 else [])
    loops: list[Implementation] = []
    if baseline is not None:
        loops.append(Implementation(f"baseline {args.baseline}", baseline, config, data,
                                    tmp / f"{name}-baseline", sets, args))
    loops.append(Implementation("this tree", ROOT, config, data, tmp / f"{name}-ours", sets,
                                args))
    for _ in range(args.rounds):
        for loop in loops:
            loop.run_for(args.seconds / args.rounds / len(loops))
    cfg = load_config(config, args.sets)
    print(f"{name}: d_model {cfg.model.d_model}, {cfg.model.enc_layers}+{cfg.model.dec_layers} "
          f"layers, vocab {load_manifest(data)['vocab_size']}, {cfg.train.batch_tokens} "
          f"tokens/batch, {'bf16 autocast' if args.bf16 else 'fp32'}, {args.threads} threads")
    results = {loop.label: loop.result() for loop in loops}
    for label, (rate, pad, measured) in results.items():
        print(f"  {label:22s} {rate:9,.0f} tgt tok/s   padding {100 * pad:5.1f}%   "
              f"({measured:.0f} s measured)")
    first_rate = next(iter(results.values()))[0]
    print("  ratio to the first row: " + ", ".join(
        f"{label} {rate / first_rate:.2f}x" for label, (rate, _, _) in list(results.items())[1:]),
        flush=True)


def steady_from(lines: list[dict[str, Any]]) -> Optional[int]:
    """The index of the line from which the rate is steady (`lines[0]` being `START`),
    or None yet."""
    for end in range(WINDOW * WINDOWS + 1, len(lines)):
        rates = [Steady.of(lines[e - WINDOW:e + 1]).rate()
                 for e in range(end - WINDOW * (WINDOWS - 1), end + 1, WINDOW)]
        middle = statistics.median(rates)
        if all(abs(rate - middle) <= TOLERANCE * middle for rate in rates):
            return end
    return None


def steady_sets(args: argparse.Namespace) -> list[str]:
    return [f"train.device={args.device}", "train.precision=bf16", *QUIET,
            f"train.log_every={LOG_EVERY}", "train.keep_last=1",
            f"train.max_minutes={args.seconds / 60:.3f}", *args.sets]


def watch(args: argparse.Namespace, data: Path, work: Path) -> tuple[
        list[dict[str, Any]], list[float], Optional[int], Optional[str]]:
    """Train until measured (or the allowance is spent): the log lines (after `START`),
    the wall seconds at which each was seen, where steadiness began, and why the process
    ended by itself (None when it was stopped here)."""
    run = work / "run"
    started = time.monotonic()
    child = Child(["train", "--config", config_path(args.configs[0]), "--data", data, "--out",
                   run, "--force", *set_flags(steady_sets(args))], work / "train.log",
                  env=child_env(PYTHONUNBUFFERED="1"))
    lines, seen, start = [START], [], None
    while time.monotonic() - started < args.seconds and child.process.poll() is None:
        time.sleep(0.25)
        lines = [START, *read_metrics(run / METRICS_FILE, "train")]
        seen += [time.monotonic() - started] * (len(lines) - 1 - len(seen))
        start = start or steady_from(lines)
        if start is not None and Steady.of(lines[start:]).seconds >= MEASURE_S:
            break
    ended = child.process.poll() is not None
    if not args.keep:
        child.process.kill()
    problem = child.wait(0, stop=True)  # a kept run saves its checkpoint on SIGTERM
    return lines, seen, start, problem if ended else None


def measure_steady(args: argparse.Namespace, data: Path, work: Path) -> dict[str, Any]:
    """One row of the table: its figures, or an "error" saying why there are none."""
    work.mkdir(parents=True, exist_ok=True)
    lines, seen, start, problem = watch(args, data, work)
    cfg = load_config(config_path(args.configs[0]), steady_sets(args))
    result: dict[str, Any] = {"config": args.configs[0], "batch_tokens": cfg.train.batch_tokens,
                              "setting": args.label, "sets": args.sets}
    last = lines[-1]
    result.update({key: last[key] for key in ("compiles", "batch_shapes", "graph_skips",
                                              "peak_gib") if key in last})
    if start is None or start == len(lines) - 1:
        rate = f", last {last['tokens_per_s']:,.0f} tgt tok/s" if len(lines) > 1 else ""
        why = problem or (f"no steady rate within {args.seconds:.0f} s ({last['step']} "
                          f"updates logged{rate})" if len(lines) > 1 else
                          f"no update logged within {args.seconds:.0f} s (still compiling?)")
        return {**result, "error": why}
    steady = Steady.of(lines[start:])
    return {**result, **throughput(cfg, data, steady, args.device),
            "steady_s": seen[start - 1], "partial": steady.seconds < MEASURE_S,
            "loss": last["loss"]}


def throughput(cfg: Config, data: Path, steady: Steady, device: str) -> dict[str, Any]:
    """Tokens/s, padding and model FLOP/s of the measured updates.

    The dense FLOPs use the measured source and target tokens; attention, quadratic in
    each sentence's length, uses the training pairs' average per target token (every
    epoch visits each pair once, so the measured batches follow that average).
    """
    from transcli.data.batching import BatchPlan

    split = EncodedSplit(data, "train")
    plan = BatchPlan(split.src_lengths, split.tgt_lengths, cfg.train.batch_tokens,
                     cfg.train.seed, cfg.model.max_positions)
    per_tgt = Lengths.of(plan.src_len[plan.indices], plan.tgt_len[plan.indices]).per_target_token()
    n = steady.tgt_tokens
    counted = Lengths(steady.src_tokens, n, per_tgt.src_sq * n, per_tgt.tgt_sq * n,
                      per_tgt.cross * n)
    flops_per_s = training_flops(cfg.model, load_manifest(data)["vocab_size"],
                                 counted) / steady.seconds
    peak = dense_bf16_peak(device)
    return {"updates_s": steady.steps / steady.seconds, "tgt_tok_s": n / steady.seconds,
            "pad_frac": 1 - steady.real / steady.padded, "updates": steady.steps,
            "seconds": steady.seconds, "tflop_s": flops_per_s / 1e12,
            "mfu": mfu_text(flops_per_s, device),
            "mfu_fraction": flops_per_s / peak if peak else None}


def table_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The rows as a Markdown table: its head, then one line per row."""
    lines = ["| config | batch tokens | setting | updates/s | tgt tok/s | MFU | padding | "
             "peak GiB | s to steady | compiles (shapes) |",
             "|---|---:|---|---:|---:|---|---:|---:|---:|---:|"]
    for row in rows:
        head = f"| {row['config']} | {row['batch_tokens']} | {row['setting']} |"
        compiles = (f"{row['compiles']} ({row['batch_shapes']})" if "compiles" in row else "-")
        if row.get("graph_skips"):
            compiles += f", {row['graph_skips']} not graphed"
        if "error" in row:
            lines.append(f"{head} {row['error']} | | | | | | {compiles} |")
            continue
        partial = " (partial)" if row["partial"] else ""
        lines.append(f"{head} {row['updates_s']:.1f} | {row['tgt_tok_s']:,.0f}{partial} | "
                     f"{row['mfu']} | {100 * row['pad_frac']:.1f}% | "
                     f"{row.get('peak_gib', float('nan')):.1f} | {row['steady_s']:.0f} | "
                     f"{compiles} |")
    return lines


def busy_seconds(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of (start, end) intervals."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def summarise(events: Any, wall_s: float, host_s: list[float]) -> dict[str, Any]:
    """The profile's figures from torch.profiler's events (times in microseconds)."""
    import torch

    device = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
    device_time: collections.Counter[str] = collections.Counter()
    for e in device:
        device_time[e.name] += e.time_range.end - e.time_range.start
    launches = sum(1 for e in events if e.name.startswith(LAUNCHES))
    busy = busy_seconds([(e.time_range.start, e.time_range.end) for e in device]) / 1e6
    n = len(host_s)
    return {"updates": n, "wall_ms_per_update": 1e3 * wall_s / n, "gpu_busy": busy / wall_s,
            "kernels_per_update": len(device) / n, "launch_calls_per_update": launches / n,
            "host_ms_per_update": 1e3 * sum(host_s) / n,
            "top_kernels": [[name, us / 1e3 / n] for name, us in device_time.most_common(10)]}


class Profiled:
    """`Trainer.update` timed, updates WARMUP .. WARMUP + PROFILED - 1 profiled; then the
    run is asked to stop."""

    def __init__(self, update: Any, cuda: bool) -> None:
        import torch
        from torch.profiler import ProfilerActivity, profile

        self.plain, self.count = update, 0
        self.synchronize = torch.cuda.synchronize if cuda else lambda: None
        self.host: list[float] = []
        self.profiler = profile(activities=[ProfilerActivity.CPU]
                                + ([ProfilerActivity.CUDA] if cuda else []))
        self.started = 0.0
        self.result: Optional[dict[str, Any]] = None

    def __call__(self, trainer: Any, batches: Any, info: Any) -> bool:
        if self.count == WARMUP:
            self.synchronize()
            self.profiler.__enter__()
            self.started = time.perf_counter()
        began = time.perf_counter()
        done = self.plain(trainer, batches, info)
        if self.count >= WARMUP and self.result is None:
            self.host.append(time.perf_counter() - began)
        self.count += 1
        if self.count == WARMUP + PROFILED:
            self.synchronize()
            wall = time.perf_counter() - self.started
            self.profiler.__exit__(None, None, None)
            self.result = summarise(self.profiler.events(), wall, self.host)
            trainer.stop_reason = "profiled"
        return done


# ----------------------------------------------------------------------------- the CPU
MATMULS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm",
           "aten::_addmm_activation")  # the ops whose own time is matrix products
FFN_SHAPE = (4096, 320, 1280)  # configs/cpu-1h.yaml's feed-forward product: m, k, n
CUBE_SHAPE = (2048, 2048, 2048)
MATMUL_S = 2.0  # CPU seconds each matmul rate is measured for
OPS_SHOWN = 14  # ops other than matmuls in the profile's table


class CpuTimed:
    """`Trainer.update` on the CPU: `warmup` updates, then `timed` ones timed (the
    process's CPU time and the wall time from one update's start to the next's, so that
    the loop between updates and the batch loader's thread count), then `profiled` ones
    (at least one) under torch.profiler; then the run is asked to stop."""

    def __init__(self, update: Any, warmup: int, timed: int, profiled: int) -> None:
        from torch.profiler import ProfilerActivity, profile

        self.plain, self.count = update, 0
        self.warmup, self.timed, self.profiled = warmup, timed, max(profiled, 1)
        self.marks: list[tuple[float, float]] = []  # (CPU s, wall s) at each timed start
        self.lengths: list[Lengths] = []  # the positions each timed update fed
        self.profiler = profile(activities=[ProfilerActivity.CPU]) if profiled else None
        self.ops: list[tuple[str, float]] = []  # (op, own microseconds), profiled updates
        self.parameters = 0  # `parameters_per_token` of the model trained

    def __call__(self, trainer: Any, batches: Any, info: Any) -> bool:
        first = self.warmup + self.timed  # the first update after the timed ones
        if self.warmup <= self.count <= first:
            self.marks.append((time.process_time(), time.perf_counter()))
        if self.warmup <= self.count < first:
            self.lengths.append(batch_lengths(batches))
        if self.count == first and self.profiler is not None:
            self.profiler.__enter__()
        done = self.plain(trainer, batches, info)
        self.count += 1
        if self.count == first + self.profiled:
            if self.profiler is not None:
                self.profiler.__exit__(None, None, None)
                self.ops = [(e.key, e.self_cpu_time_total) for e in self.profiler.key_averages()]
            self.parameters = parameters_per_token(trainer.model)
            trainer.stop_reason = "profiled"
        return done


def batch_lengths(batches: Any) -> Lengths:
    """The source and target positions (EOS and BOS included) of an update's batches."""
    import numpy as np

    from transcli.model.vocab import PAD_ID

    src = np.concatenate([(b.src != PAD_ID).sum(1).numpy() for b in batches])
    tgt = np.concatenate([(b.tgt_in != PAD_ID).sum(1).numpy() for b in batches])
    return Lengths.of(src, tgt)


def matmul_rate(m: int, k: int, n: int) -> tuple[float, float]:
    """bf16 [m, k] @ [k, n] in FLOP/s per CPU-second and per wall second, on torch's
    threads, over MATMUL_S CPU seconds."""
    import torch

    a, b = torch.randn(m, k, dtype=torch.bfloat16), torch.randn(k, n, dtype=torch.bfloat16)
    for _ in range(3):  # oneDNN builds its kernel for the shape
        a @ b
    reps, cpu, wall = 0, time.process_time(), time.perf_counter()
    while time.process_time() - cpu < MATMUL_S:
        a @ b
        reps += 1
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return 2 * m * k * n * reps / cpu, 2 * m * k * n * reps / wall


def cpu_run(args: argparse.Namespace, data: Path, profiled: int) -> CpuTimed:
    """Train the config on the CPU in this process (in a temp dir) until timed and
    profiled; exits when the run ended first."""
    from transcli.data.prepared_dir import open_prepared_dir
    from transcli.rundir.run import RunDir
    from transcli.training.loop import Trainer, train

    cfg = load_config(config_path(args.configs[0]), [
        "train.device=cpu", *QUIET, f"train.log_every={NEVER}",
        f"train.threads={args.threads or 0}", *args.sets])
    timed = CpuTimed(Trainer.update, args.warmup, args.updates, profiled)
    with mock.patch.object(Trainer, "update", lambda trainer, *batch: timed(trainer, *batch)):
        with tempfile.TemporaryDirectory() as tmp:
            train(cfg, open_prepared_dir(data), RunDir(Path(tmp) / "run"))
    if timed.count < args.warmup + args.updates + timed.profiled:
        sys.exit(f"the run ended after {timed.count} of its "
                 f"{args.warmup + args.updates + timed.profiled} updates")
    return timed


def cpu_figures(args: argparse.Namespace, timed: CpuTimed, vocab: int) -> dict[str, Any]:
    """CPU time and wall time per update, the model FLOPs of an update: in the short
    count (6 x `parameters_per_token` x target tokens) and in `training_flops`'s."""
    import torch

    import transcli

    cfg = load_config(config_path(args.configs[0]), args.sets)
    n = len(timed.lengths)
    (cpu0, wall0), (cpu1, wall1) = timed.marks[0], timed.marks[-1]
    tgt = sum(lengths.tgt for lengths in timed.lengths) / n
    full = sum(training_flops(cfg.model, vocab, lengths) for lengths in timed.lengths) / n
    return {"config": args.configs[0], "threads": torch.get_num_threads(), "updates": n,
            "warmup": args.warmup, "cpu_s": (cpu1 - cpu0) / n, "wall_s": (wall1 - wall0) / n,
            "tgt_tokens": tgt, "flop_per_tgt_token": 6 * timed.parameters,
            "flop": 6 * timed.parameters * tgt, "flop_full": full,
            "load": os.getloadavg()[0], "package": str(Path(transcli.__file__).parent)}


def cpu_profile(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    """`--profile` on the CPU: an update's time and FLOP rate beside the matmul rates
    measured in the same process on the same threads, and its time by op."""
    timed = cpu_run(args, data, args.profiled)
    result = cpu_figures(args, timed, load_manifest(data)["vocab_size"])
    for name, shape in (("ffn", FFN_SHAPE), ("cube", CUBE_SHAPE)):
        result[f"matmul_{name}"] = matmul_rate(*shape)
    result["profiled"] = timed.profiled
    result["ops"] = sorted(timed.ops, key=lambda op: -op[1])
    return result


def cpu_profile_lines(r: dict[str, Any]) -> list[str]:
    """What `--profile` prints on the CPU."""
    update = (r["flop"] / r["cpu_s"], r["flop"] / r["wall_s"])
    ffn, cube = r["matmul_ffn"], r["matmul_cube"]
    shape = "x".join(map(str, FFN_SHAPE))
    lines = [
        f"{r['config']}: {r['updates']} updates timed after {r['warmup']}, {r['threads']} "
        f"thread(s), load average {r['load']:.2f}",
        f"  per update: {1e3 * r['cpu_s']:,.0f} ms CPU time, {1e3 * r['wall_s']:,.0f} ms wall; "
        f"{r['tgt_tokens']:,.0f} target tokens",
        f"  model FLOPs: {r['flop_per_tgt_token'] / 1e6:.1f} MFLOP per target token (6 per "
        f"parameter), {r['flop'] / 1e9:.1f} GFLOP per update ({r['flop_full'] / 1e9:.1f} "
        f"with attention and the source side counted: bench/flops.py)",
        "  GFLOP/s per CPU-second (per wall second):",
        f"    {'the update':28s} {update[0] / 1e9:6.1f} ({update[1] / 1e9:.1f})",
        f"    {'bf16 matmul ' + shape:28s} {ffn[0] / 1e9:6.1f} ({ffn[1] / 1e9:.1f})",
        f"    {'bf16 matmul 2048x2048x2048':28s} {cube[0] / 1e9:6.1f} ({cube[1] / 1e9:.1f})",
        f"  the update at {100 * update[0] / ffn[0]:.0f}% of the {shape} matmul rate by CPU "
        f"time ({100 * update[1] / ffn[1]:.0f}% by wall time), "
        f"{100 * update[0] / cube[0]:.0f}% of 2048x2048x2048's"]
    return lines + op_lines(r["ops"], r["profiled"])


def op_lines(ops: list[list[Any]], updates: int) -> list[str]:
    """The profiled updates' time by op (torch.profiler's own time of each, its clock),
    matmuls first, then the costliest others."""
    total = sum(us for _, us in ops) or 1.0
    matmuls = [(name, us) for name, us in ops if name in MATMULS]
    others = [(name, us) for name, us in ops if name not in MATMULS]
    share = sum(us for _, us in matmuls) / total
    lines = [f"profile of {updates} update(s) by op (torch.profiler's clock): matmuls "
             f"{100 * share:.1f}%, everything else {100 * (1 - share):.1f}%",
             "| op | share | ms per update |", "|---|---:|---:|"]
    rest = sum(us for _, us in others[OPS_SHOWN:])
    shown = matmuls + others[:OPS_SHOWN] + [(f"{len(others) - OPS_SHOWN} other ops", rest)]
    return lines + [f"| {name[:60]} | {100 * us / total:.1f}% | {us / 1e3 / updates:.1f} |"
                    for name, us in shown]


class Side(NamedTuple):
    """One side of `--cpu-time`'s comparison: the transcli package in `view`, with
    `sets` added to every run's overrides."""

    label: str
    view: Path
    sets: list[str]


def cpu_time_child(args: argparse.Namespace, side: Side, data: Path,
                   log: Path) -> dict[str, Any]:
    """`--cpu-time` of one side (this tree's benchmark, the side's package first on the
    path), in a process of its own: its figures."""
    flags = ["--cpu-time", "--configs", args.configs[0], "--data", data, "--warmup",
             args.warmup, "--updates", args.updates, *set_flags(args.sets + side.sets)]
    env = child_env(ROOT, PYTHONUNBUFFERED="1")
    if args.threads:
        flags += ["--threads", args.threads]
        env["OMP_NUM_THREADS"] = str(args.threads)
    child = Child(flags, log, env=env, cwd=side.view, module="bench.train_speed")
    problem = child.wait()
    found = [line for line in output_lines(log.read_bytes()) if line.startswith(RESULT)]
    if problem or not found:
        sys.exit(f"{side.label}: {problem or 'no figures'} (log: {log})")
    return json.loads(found[-1][len(RESULT):])


def package_view(tree: Path, folder: Path) -> Path:
    """A folder holding only `tree`'s transcli package: run from there, a process imports
    that transcli and everything else (bench/) from the path."""
    folder.mkdir(parents=True)
    (folder / "transcli").symlink_to(tree / "transcli", target_is_directory=True)
    return folder


def cpu_time_sides(args: argparse.Namespace, baseline: Optional[Path], tmp: Path) -> list[Side]:
    """--baseline's tree, this tree, and this tree with the --variant overrides."""
    sides = [Side("this tree", ROOT, [])]
    if baseline is not None:
        sides.insert(0, Side(f"baseline {args.baseline}", package_view(baseline, tmp / "view"),
                             []))
    if args.variants:
        sides.append(Side("with " + " ".join(args.variants), ROOT, args.variants))
    if len(sides) < 2:
        sys.exit("--cpu-time compares: give --baseline REV or --variant SECTION.KEY=VALUE")
    return sides


def cpu_time_compare(args: argparse.Namespace, baseline: Optional[Path], tmp: Path) -> None:
    """CPU time per update of each side, one process each turn, taking turns --rounds
    times: the same batches, the medians and each side's speed against the first."""
    data = args.data or prepared_dir(args.configs[0])
    sides = cpu_time_sides(args, baseline, tmp)
    rounds: list[list[dict[str, Any]]] = [[] for _ in sides]
    for turn in range(args.rounds):
        for index, side in enumerate(sides):
            result = cpu_time_child(args, side, data, tmp / f"{turn}-{index}.log")
            rounds[index].append(result)
            print(f"  round {turn + 1} {side.label[:30]:30s} {1e3 * result['cpu_s']:7,.0f} ms "
                  f"CPU {1e3 * result['wall_s']:7,.0f} ms wall per update (load "
                  f"{result['load']:.2f})", flush=True)
    first = rounds[0]
    print(f"{args.configs[0]}: {first[0]['updates']} updates after {args.warmup}, "
          f"{first[0]['threads']} thread(s), {args.rounds} rounds; medians:")
    for side, results in zip(sides, rounds):
        cpu = statistics.median(r["cpu_s"] for r in results)
        wall = statistics.median(r["wall_s"] for r in results)
        ratios = [b["cpu_s"] / r["cpu_s"] for b, r in zip(first, results)]
        print(f"  {side.label[:30]:30s} {1e3 * cpu:7,.0f} ms CPU {1e3 * wall:7,.0f} ms wall per "
              f"update, {results[0]['flop'] / cpu / 1e9:6.1f} GFLOP/s per CPU-second; "
              f"{statistics.median(ratios):.3f}x the first's speed (median of the rounds')")


def profile_run(args: argparse.Namespace, data: Path) -> Optional[dict[str, Any]]:
    """Train the config until profiled (in a temp dir); its figures, or None when the run
    ended first."""
    from transcli.data.prepared_dir import open_prepared_dir
    from transcli.rundir.run import RunDir
    from transcli.training.loop import Trainer, train

    cfg = load_config(config_path(args.configs[0]), [f"train.device={args.device}", *QUIET,
                                                     f"train.log_every={NEVER}", *args.sets])
    profiled = Profiled(Trainer.update, args.device == "cuda")
    with mock.patch.object(Trainer, "update", lambda trainer, *batch: profiled(trainer, *batch)):
        with tempfile.TemporaryDirectory() as tmp:
            train(cfg, open_prepared_dir(data), RunDir(Path(tmp) / "run"))
    return profiled.result


def profile_lines(result: dict[str, Any]) -> list[str]:
    lines = [f"{result['updates']} updates: {result['wall_ms_per_update']:.1f} ms each, GPU busy "
             f"{100 * result['gpu_busy']:.0f}% of that; {result['kernels_per_update']:.0f} "
             f"kernels and {result['launch_calls_per_update']:.0f} launch calls per update; "
             f"host {result['host_ms_per_update']:.1f} ms per update",
             "| kernel | GPU ms per update |", "|---|---:|"]
    return lines + [f"| {name[:90]} | {ms:.2f} |" for name, ms in result["top_kernels"]]


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--steady", action="store_true", help="measure one run once steady")
    mode.add_argument("--profile", action="store_true", help="profile updates of one run")
    mode.add_argument("--cpu-time", action="store_true", help="CPU time per update on the "
                      "CPU: of this tree, or beside --baseline's in turns")
    parser.add_argument("--configs", nargs="+", default=["small"],
                        help="configs of configs/ (--steady and --profile: the first)")
    parser.add_argument("--data", type=Path, help="the config's prepared dir (default: the "
                        "shared corpus, prepared once)")
    parser.add_argument("--device", default="cpu", help="train.device")
    parser.add_argument("--set", dest="sets", action="append", default=[],
                        help="an override for every run, section.key=value (repeatable)")
    parser.add_argument("--seconds", type=float, help="compared: per config, all runs "
                        "together (default 240); --steady: the allowance (default 60)")
    parser.add_argument("--baseline", help="a git revision to compare with (e.g. 0aaecd6)")
    parser.add_argument("--variant", dest="variants", action="append", default=[],
                        help="--cpu-time: a side of this tree with this override too "
                        "(repeatable: one side with them all)")
    parser.add_argument("--rounds", type=int, default=4, help="alternations per config")
    parser.add_argument("--threads", type=int, help="torch threads per run (default: "
                        "torch's)")
    parser.add_argument("--warmup", type=int, default=3,
                        help="--profile, --cpu-time on the CPU: updates before the timed ones")
    parser.add_argument("--updates", type=int, default=12,
                        help="--profile, --cpu-time on the CPU: updates timed")
    parser.add_argument("--profiled", type=int, default=4,
                        help="--profile on the CPU: updates profiled after the timed ones")
    parser.add_argument("--bf16", action="store_true", help="train.cpu_precision=bf16")
    parser.add_argument("--log-every", type=int, default=50,
                        help="train.log_every: updates per measured interval")
    parser.add_argument("--label", default="as shipped", help="--steady: the row's setting")
    parser.add_argument("--keep", action="store_true",
                        help="--steady: stop by SIGTERM, so that the run saves a checkpoint")
    parser.add_argument("--work", type=Path, help="--steady: the run and its log go here")
    args = parser.parse_args(argv)
    args.seconds = args.seconds or (60.0 if args.steady else 240.0)
    return args


def in_process(args: argparse.Namespace) -> int:
    """--profile, or --cpu-time of this tree: it trains in this process, its OpenMP
    threads waiting as transcli's do."""
    from transcli.system import waitpolicy

    waitpolicy.choose()
    data = args.data or prepared_dir(args.configs[0])
    if args.cpu_time:
        timed = cpu_run(args, data, 0)
        result = cpu_figures(args, timed, load_manifest(data)["vocab_size"])
        print(RESULT + json.dumps(result), flush=True)
        return 0
    if args.device == "cpu":
        result = cpu_profile(args, data)
        print("\n".join(cpu_profile_lines(result)) + "\n" + RESULT + json.dumps(result),
              flush=True)
        return 0
    cuda = profile_run(args, data)
    if cuda is None:
        print(f"the run ended before {WARMUP + PROFILED} updates", file=sys.stderr)
        return 1
    print("\n".join(profile_lines(cuda)) + "\n" + RESULT + json.dumps(cuda), flush=True)
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    if args.steady:
        with tempfile.TemporaryDirectory() as tmp:
            row = measure_steady(args, args.data or prepared_dir(args.configs[0]),
                                 args.work or Path(tmp))
        print("\n".join(table_lines([row])) + "\n" + RESULT + json.dumps(row), flush=True)
        return 1 if "error" in row else 0
    if args.profile or (args.cpu_time and not (args.baseline or args.variants)):
        return in_process(args)
    import torch

    args.threads = args.threads or torch.get_num_threads()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} CPU threads, OMP_WAIT_POLICY "
          f"{USER_OMP_WAIT_POLICY or 'unset (each version applies its own default)'}; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        baseline = export_tree(args.baseline, Path(tmp) / "baseline") if args.baseline else None
        if args.cpu_time:
            cpu_time_compare(args, baseline, Path(tmp))
        for name in [] if args.cpu_time else args.configs:
            compare(name, args, baseline, Path(tmp))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
