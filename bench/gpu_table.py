"""The training table of `gpu-check` (bench/gpu_check.py): each row a fresh `python -m
transcli train` in bf16, watched through its metrics.jsonl and stopped once measured.

Warm-up ends with a steady rate, not at a fixed minute: the log has a line every 5
updates, and the rate counts as steady from the first line that ends three windows of 4
lines (20 updates each) whose target tokens/s lie within 10% of their median; the first
line, holding the first batches and any compilation, is never in a window. The row then
measures `MEASURE_S` seconds of training after that line (or what its allowance leaves),
and the process is killed: nothing is saved. Per row: updates/s, target tokens/s, MFU
(bench/flops.py), padding, peak GPU memory, wall seconds from the process's start to the
first steady update, and torch.compile's compilations and the batch shapes met.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any, Optional

from bench.common import NEVER, ROOT, Child, Steady, child_env, set_flags
from bench.flops import Lengths, dense_bf16_peak, mfu_text, training_flops
from bench.gpu_check import Row
from transcli.config.loading import load_config
from transcli.data.batching import BatchPlan
from transcli.data.encoded import EncodedSplit, load_manifest
from transcli.rundir.layout import METRICS_FILE
from transcli.rundir.metrics import read_metrics

LOG_EVERY = 5
WINDOW = 4  # log lines per window
WINDOWS = 3  # consecutive windows that must agree
TOLERANCE = 0.10  # how far from their median
MEASURE_S = 6.0  # training seconds measured once steady
POLL_S = 0.25
START = {"step": 0, "epoch": 0, "tgt_tokens": 0, "src_tokens": 0}  # before the first line
COMMON = ["train.device=cuda", "train.precision=bf16", f"train.max_steps={NEVER}",
          f"train.log_every={LOG_EVERY}", f"train.valid_every={NEVER}",
          f"train.save_every={NEVER}", "train.valid_bleu_lines=0", "train.keep_last=1"]


def window_rate(lines: list[dict[str, Any]]) -> float:
    steady = Steady.of(lines)
    return steady.tgt_tokens / steady.seconds


def steady_from(lines: list[dict[str, Any]]) -> Optional[int]:
    """The index of the line from which the rate is steady (`lines[0]` being `START`),
    or None yet."""
    for end in range(WINDOW * WINDOWS + 1, len(lines)):
        rates = [window_rate(lines[e - WINDOW:e + 1])
                 for e in range(end - WINDOW * (WINDOWS - 1), end + 1, WINDOW)]
        middle = statistics.median(rates)
        if all(abs(rate - middle) <= TOLERANCE * middle for rate in rates):
            return end
    return None


def train_args(row: Row, data: Path, run: Path) -> list[Any]:
    sets = [*COMMON, f"train.batch_tokens={row.batch_tokens}",
            f"train.max_minutes={row.seconds / 60:.3f}", *row.sets]
    return ["train", "--config", ROOT / "configs" / f"{row.config}.yaml", "--data", data,
            "--out", run, "--force", *set_flags(sets)]


def watch(row: Row, data: Path, work: Path) -> tuple[list[dict[str, Any]], list[float],
                                                     Optional[int], Optional[str]]:
    """Run the row's training until measured (or its allowance is spent): its log lines
    (after `START`), the wall seconds at which each was seen, where steadiness began,
    and why the process ended by itself (None when it was stopped here)."""
    run, log = work / "run", work / "train.log"
    started = time.monotonic()
    child = Child(train_args(row, data, run), log, env=child_env(PYTHONUNBUFFERED="1"))
    lines, seen, start = [START], [], None
    while time.monotonic() - started < row.seconds and child.process.poll() is None:
        time.sleep(POLL_S)
        lines = [START, *read_metrics(run / METRICS_FILE, "train")]
        seen += [time.monotonic() - started] * (len(lines) - 1 - len(seen))
        start = start or steady_from(lines)
        if start is not None and Steady.of(lines[start:]).seconds >= MEASURE_S:
            break
    ended = child.process.poll() is not None
    child.process.kill()
    problem = child.wait()
    return lines, seen, start, problem if ended else None


def measure_row(row: Row, data: Path, work: Path, device: str) -> dict[str, Any]:
    """One row of the table: its figures, or an "error" saying why there are none."""
    work.mkdir(parents=True, exist_ok=True)
    lines, seen, start, problem = watch(row, data, work)
    result: dict[str, Any] = {"config": row.config, "batch_tokens": row.batch_tokens,
                              "setting": row.label, "sets": list(row.sets)}
    last = lines[-1]
    notes = {key: last[key] for key in ("compiles", "batch_shapes", "graph_skips", "peak_gib")
             if key in last}
    if start is None or start == len(lines) - 1:
        rate = f", last {last['tokens_per_s']:,.0f} tgt tok/s" if len(lines) > 1 else ""
        why = problem or (f"no steady rate within {row.seconds:.0f} s ({last['step']} updates "
                          f"logged{rate})" if len(lines) > 1 else
                          f"no update logged within {row.seconds:.0f} s (still compiling?)")
        return {**result, **notes, "error": why}
    steady = Steady.of(lines[start:])
    cfg = load_config(ROOT / "configs" / f"{row.config}.yaml",
                      [f"train.batch_tokens={row.batch_tokens}"])
    return {**result, **notes, **throughput(cfg, data, steady, device),
            "steady_s": seen[start - 1], "partial": steady.seconds < MEASURE_S,
            "loss": last["loss"]}


def throughput(cfg: Any, data: Path, steady: Steady, device: str) -> dict[str, Any]:
    """Tokens/s, padding and model FLOP/s of the measured updates.

    The dense FLOPs use the measured source and target tokens; attention, quadratic in
    each sentence's length, uses the training pairs' average per target token (every
    epoch visits each pair once, so the measured batches follow that average).
    """
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


def table(rows: list[dict[str, Any]], device: str) -> str:
    """The rows as one Markdown table."""
    lines = [f"bf16 training on {device}:",
             "| config | batch tokens | setting | updates/s | tgt tok/s | MFU | padding | "
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
    return "\n".join(lines)
