"""The stages behind bench/gpu_check.py, which imports this once CUDA is known to be there
(the CPU tests import it too: nothing here touches CUDA at import).

Throughput (`check`): each setting (a config at a batch size, eager or compiled; by
default base at 25,000 tokens and small at 4,096) trains in bf16 through
`transcli.training.loop.train` in a fresh process (`gpu_check measure`), so its peak
memory and recompile count are its own; inductor's on-disk cache is shared, so the first
compiled setting pays most of the compilation. Tokens/s come from the run's
metrics.jsonl, leaving out a warm-up of training seconds (compilation, the recompiles
new batch shapes trigger, and the first few hundred updates, which run slower while the
allocator grows). End to end (`e2e`): `transcli train`, then `transcli evaluate`, as
bench/quality.py runs them.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NoReturn, Optional

import torch

from bench.common import (
    CORPORA,
    DEV_SETS,
    NEVER,
    ROOT,
    Steady,
    child_env,
    prepare_corpus,
    run_summary,
    score_set,
    set_flags,
    transcli,
)
from bench.flops import Lengths, dense_bf16_peak, mfu_text, training_flops
from transcli.config.loading import load_config
from transcli.config.schema import Config
from transcli.data.batching import BatchPlan
from transcli.data.encoded import EncodedSplit, load_manifest
from transcli.rundir.layout import CONFIG_FILE, CURVES_FILE, METRICS_FILE
from transcli.rundir.metrics import read_metrics
from transcli.training.loop import train

BASE = ROOT / "configs" / "base.yaml"
CARRY = ROOT / "gpu-carry"  # ignored by git: prepared data to copy to a GPU machine
CARRIED_CORPUS = CARRY / "corpus"
SETTINGS = ["base:25000", "small:4096"]  # config:batch_tokens, what `check` times
CHILD_ENV = child_env(PYTHONUNBUFFERED="1")  # a child's lines are logged as they come
RESULT = "RESULT "  # prefix of a `measure` process's one line of JSON
EXCEPTION_LINE = re.compile(r"[\w.]*(Error|Exception|Unsupported|Interrupt)\b")

LOG_EVERY = 5
WARMUP_S = 60.0  # training seconds before the measurement starts (compiled: + allowance)
STARTUP_S = 30.0  # a `measure` process's imports, data loading and final save (estimate)
TEST_TIMEOUT_S = 300


def run_stage(args: argparse.Namespace) -> int:
    stages = {"check": check, "e2e": e2e, "carry": carry, "measure": measure}
    return stages[args.stage](args)


# ----------------------------------------------------------------------------- plumbing


class Report:
    """Lines to stdout and, under the device tool ($OUT set), to $OUT/<name>.log; results
    to $OUT/<name>.json, rewritten after each step so a stopped run still returns them."""

    def __init__(self, name: str):
        self.name = name
        self.out = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
        self.results: dict[str, Any] = {}
        if self.out:
            self.out.mkdir(parents=True, exist_ok=True)
            (self.out / f"{name}.log").write_text("", encoding="utf-8")

    def say(self, text: str = "") -> None:
        print(text, flush=True)
        if self.out:
            with open(self.out / f"{self.name}.log", "a", encoding="utf-8") as log:
                log.write(text + "\n")

    def save(self) -> None:
        if self.out:
            (self.out / f"{self.name}.json").write_text(json.dumps(self.results, indent=1) + "\n",
                                                        encoding="utf-8")

    def keep(self, source: Path, name: str) -> None:
        """Copy a file into $OUT (the device tool brings back 8 files at most)."""
        if self.out and source.is_file():
            shutil.copyfile(source, self.out / name)


def fail(message: str) -> NoReturn:
    print(f"gpu-check: {message}", file=sys.stderr)
    sys.exit(1)


def device_summary() -> dict[str, Any]:
    props = torch.cuda.get_device_properties(0)
    peak = dense_bf16_peak(props.name)
    return {"device": props.name, "torch": torch.__version__, "cuda": torch.version.cuda,
            "capability": f"{props.major}.{props.minor}",
            "memory_gib": round(props.total_memory / 2**30, 1),
            "dense_bf16_peak_tflops": peak / 1e12 if peak else None}


def describe(info: dict[str, Any]) -> str:
    peak = info["dense_bf16_peak_tflops"]
    return (f"{info['device']} (compute {info['capability']}, {info['memory_gib']} GiB, dense bf16 "
            f"peak {f'{peak:.0f} TFLOP/s' if peak else 'unknown'}); torch {info['torch']}, "
            f"CUDA {info['cuda']}")


def corpus_with(names: list[str]) -> Optional[Path]:
    """The first corpus folder holding all of `names`: the carried one, then ../shared."""
    for folder in (CARRIED_CORPUS, CORPORA):
        if all((folder / name).is_file() for name in names):
            return folder
    return None


def carried_data(config: str, corpus: Optional[Path] = None) -> Path:
    """Where `make gpu-carry` puts the corpus prepared with configs/<config>.yaml; with
    `corpus`, prepared there from it first (unless it is there already)."""
    out = CARRY / f"{config}-data"
    problem = corpus and prepare_corpus(ROOT / "configs" / f"{config}.yaml", out, corpus=corpus)
    if problem:
        fail(problem)
    return out


def base_data(explicit: Optional[Path], report: Report, config: str = "base") -> Path:
    """The corpus prepared with configs/<config>.yaml: given, carried, or prepared now."""
    if explicit is not None:
        if not (explicit / "manifest.json").is_file():
            fail(f"{explicit}: not a prepared dir (no manifest.json)")
        return explicit
    out = carried_data(config)
    if (out / "manifest.json").is_file():
        return out
    corpus = corpus_with(["train.en", "train.es"])
    if corpus is None:
        fail(f"no prepared data in {out} and no train.en/train.es in {CARRIED_CORPUS} or "
             f"{CORPORA}: run `make gpu-carry` beforehand and copy gpu-carry/ along "
             f"(docs/GPU.md), or give --data")
    report.say(f"preparing {corpus}/train.{{en,es}} with configs/{config}.yaml into {out}")
    started = time.perf_counter()
    carried_data(config, corpus)
    report.say(f"  prepared in {time.perf_counter() - started:.0f} s")
    return out


def parse_setting(text: str) -> tuple[str, int]:
    """"small:4096" -> ("small", 4096); a config of configs/."""
    name, _, tokens = text.partition(":")
    if not (ROOT / "configs" / f"{name}.yaml").is_file() or not tokens.isdigit():
        fail(f"--settings {text}: give CONFIG:BATCH_TOKENS with a config of configs/")
    return name, int(tokens)


# ----------------------------------------------------------------------------- check


def check(args: argparse.Namespace) -> int:
    """GPU tests, then throughput of each setting that fits the time budget."""
    started = time.monotonic()
    report = Report("gpu-check")
    info = report.results["device"] = device_summary()
    report.say(f"gpu-check on {describe(info)}")
    ok = args.no_tests or run_tests(report)
    settings = [parse_setting(text) for text in args.settings]
    data = {name: base_data(args.data if name == "base" else None, report, name)
            for name in dict.fromkeys(name for name, _ in settings)}
    report.say(f"\nthroughput in bf16; each setting trains for a warm-up ({WARMUP_S:g} s; "
               f"compiled, that + a compile allowance) + {args.seconds:g} s, measured after "
               f"the warm-up")
    rows = report.results["throughput"] = []
    compile_allowance = args.compile_seconds
    # Per setting, eager first (what the compiled run is compared with), so that the
    # first setting's pair comes before the budget runs out.
    for config, batch_tokens in settings:
        for compiled in (False,) if args.no_compile else (False, True):
            warmup = WARMUP_S + (compile_allowance if compiled else 0.0)
            left = args.budget - (time.monotonic() - started)
            if STARTUP_S + warmup + args.seconds > left:
                row = {"config": config, "batch_tokens": batch_tokens, "compiled": compiled,
                       "error": f"skipped: needs ~{STARTUP_S + warmup + args.seconds:.0f} s, "
                                f"{max(left, 0):.0f} s of --budget left"}
            else:
                row = spawn_measure(config, data[config], batch_tokens, compiled,
                                    args.seconds, warmup, left)
                if compiled and "first_log_s" in row:  # later compiles mostly hit the cache
                    compile_allowance = max(30.0, 1.5 * row["first_log_s"])
            rows.append(row)
            report.say(format_row(row))
            report.save()
    report.say("\n" + summary_table(rows, info["device"]))
    report.results["tests_passed"] = ok
    report.save()
    failed = [row for row in rows if "error" in row and not row["error"].startswith("skipped")]
    return 0 if ok and not failed else 1


def run_tests(report: Report) -> bool:
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-rfEs", "-p", "no:cacheprovider",
               "tests/test_gpu.py"]
    report.say(f"tests: {' '.join(command[1:])}")
    started = time.perf_counter()
    try:
        proc = subprocess.run(command, cwd=ROOT, env=CHILD_ENV, capture_output=True,
                              text=True, timeout=TEST_TIMEOUT_S)
        output, status = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        output = (exc.stdout or "") if isinstance(exc.stdout, str) else ""
        output, status = output + f"\ntimed out after {TEST_TIMEOUT_S} s", -1
    seconds = time.perf_counter() - started
    if report.out:
        (report.out / "gpu-tests.log").write_text(output, encoding="utf-8")
    lines = output.strip().splitlines()
    shown = [line for line in lines if line.startswith(("FAILED", "ERROR", "SKIPPED"))]
    for line in shown + lines[-1:]:
        report.say(f"  {line}")
    report.results["tests"] = {"returncode": status, "seconds": round(seconds, 1),
                               "summary": lines[-1] if lines else ""}
    report.save()
    return status == 0


def spawn_measure(config: str, data: Path, batch_tokens: int, compiled: bool, seconds: float,
                  warmup: float, timeout: float) -> dict[str, Any]:
    """One setting in a fresh process; its result, or an "error" naming what went wrong."""
    command = [sys.executable, "-m", "bench.gpu_check", "measure", "--config", config,
               "--data", str(data), "--batch-tokens", str(batch_tokens), "--seconds",
               str(seconds), "--warmup-seconds", str(warmup)] + (["--compile"] if compiled else [])
    row: dict[str, Any] = {"config": config, "batch_tokens": batch_tokens, "compiled": compiled}
    try:
        proc = subprocess.run(command, cwd=ROOT, env=CHILD_ENV, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {**row, "error": f"stopped after {timeout:.0f} s (the rest of --budget)"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT):])
    lines = proc.stderr.strip().splitlines() or ["no output"]
    # dynamo ends with advice lines: the exception's own line says more
    cause = next((line for line in reversed(lines) if EXCEPTION_LINE.match(line)), lines[-1])
    return {**row, "error": f"exit status {proc.returncode}: {cause[-300:]}"}


def format_row(row: dict[str, Any]) -> str:
    mode = "compiled" if row["compiled"] else "eager"
    label = f"  {row.get('config', 'base'):6s} {mode:8s} {row['batch_tokens']:>6} tokens"
    if "error" in row:
        return f"{label}  {row['error']}"
    return (f"{label}  {row['updates_s']:6.1f} updates/s  {row['tgt_tok_s']:>10,.0f} tgt tok/s  "
            f"pad {100 * row['pad_frac']:4.1f}%  {row['tflop_s']:6.1f} TFLOP/s  MFU {row['mfu']}  "
            f"peak {row['peak_gib']:.1f} GiB  recompiles {row['recompiles']}\n"
            f"{'':33s}({row['seconds']:.0f} s, {row['steps']} updates measured after "
            f"{row['warmup_steps']} warm-up updates in {row['warmup_s']:.0f} s, the first "
            f"{LOG_EVERY} in {row['first_log_s']:.0f} s, from epoch {row['epoch_at_start']}; "
            f"{row['graphs']} graphs, {row['graph_breaks']} graph breaks)"
            + "".join(f"\n{'':33s}recompile: {reason}" for reason in row["recompile_reasons"]))


def summary_table(rows: list[dict[str, Any]], device: str) -> str:
    """One table of every setting. "first updates, s": the first log interval's seconds,
    which hold compilation (compiled) and the allocator's growth (both)."""
    lines = [f"bf16 training on {device}:",
             "| config | batch tokens | mode | updates/s | tgt tok/s | MFU | padding | "
             "peak GiB | first updates, s | recompiles |",
             "|---|---:|---|---:|---:|---|---:|---:|---:|---:|"]
    for row in rows:
        head = (f"| {row.get('config', 'base')} | {row['batch_tokens']} | "
                f"{'compiled' if row['compiled'] else 'eager'} |")
        if "error" in row:
            lines.append(f"{head} {row['error']} | | | | | | |")
        else:
            lines.append(f"{head} {row['updates_s']:.1f} | {row['tgt_tok_s']:,.0f} | "
                         f"{row['mfu']} | {100 * row['pad_frac']:.1f}% | {row['peak_gib']:.1f} | "
                         f"{row['first_log_s']:.0f} | {row['recompiles']} |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- measure


class RecompileLog(logging.Handler):
    """torch.compile's recompile messages in this process (what TORCH_LOGS=recompiles
    prints): each names the function and the guard that failed."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []
        import torch._dynamo.guards as guards

        torch._logging.set_logs(recompiles=True)
        logging.getLogger(f"{guards.__name__}.__recompiles").addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def reasons(self, limit: int = 5) -> list[str]:
        """'function: first failed guard' of the first `limit` recompiles."""
        found = []
        for message in self.messages[:limit]:
            lines = [line.strip() for line in message.splitlines()]
            guard = next((line[2:] for line in lines if line.startswith("- ")), "?")
            found.append(f"{lines[0].removeprefix('Recompiling function ')}: {guard}")
        return found


def measure(args: argparse.Namespace) -> int:
    """Train a config for warm-up + measured time; print one RESULT line of JSON."""
    cfg = load_config(ROOT / "configs" / f"{args.config}.yaml", [
        "train.device=cuda", "train.precision=bf16", f"train.compile={str(args.compile).lower()}",
        f"train.batch_tokens={args.batch_tokens}", f"train.max_steps={NEVER}",
        f"train.max_minutes={(args.warmup_seconds + args.seconds) / 60}",
        f"train.log_every={LOG_EVERY}", f"train.valid_every={NEVER}",
        f"train.save_every={NEVER}", "train.valid_bleu_lines=0", "train.keep_last=1",
        "train.average_last=1"])
    recompiles = RecompileLog()
    torch.cuda.reset_peak_memory_stats()
    with tempfile.TemporaryDirectory() as tmp:
        train(cfg, args.data, Path(tmp) / "run")
        lines = read_metrics(Path(tmp) / "run" / METRICS_FILE, "train")
    row: dict[str, Any] = {"config": args.config, "batch_tokens": args.batch_tokens,
                           "compiled": args.compile}
    logged = [{"step": 0, "epoch": 0, "tgt_tokens": 0, "src_tokens": 0}] + lines
    cut = warmup_end(logged, args.warmup_seconds)
    steady = Steady.of(logged[cut:])
    if not steady.seconds:
        row["error"] = (f"no log interval ended after {args.warmup_seconds:.0f} s of warm-up "
                        f"({lines[-1]['step'] if lines else 0} updates)")
    else:
        row.update(throughput(cfg, args.data, steady))
        warmup = Steady.of(logged[:cut + 1])
        from torch._dynamo.utils import counters

        row.update({
            "warmup_steps": warmup.steps, "warmup_s": warmup.seconds,
            "epoch_at_start": logged[cut]["epoch"], "first_log_s": Steady.of(logged[:2]).seconds,
            "peak_gib": torch.cuda.max_memory_allocated() / 2**30,
            "reserved_gib": torch.cuda.max_memory_reserved() / 2**30,
            "recompiles": len(recompiles.messages), "recompile_reasons": recompiles.reasons(),
            "graphs": counters["stats"]["unique_graphs"],
            "graph_breaks": sum(counters["graph_break"].values()),
            "last_loss": lines[-1]["loss"]})
    print(RESULT + json.dumps(row), flush=True)
    return 0


def warmup_end(lines: list[dict[str, Any]], seconds: float) -> int:
    """Index of the first line (after a zero `start` line) by which `seconds` of
    training have passed: the measurement runs from there. At least 1: the first
    interval, with its first batches (and compilation), is never measured."""
    elapsed = 0.0
    for i, (prev, line) in enumerate(zip(lines, lines[1:]), start=1):
        elapsed += (line["tgt_tokens"] - prev["tgt_tokens"]) / line["tokens_per_s"]
        if elapsed >= seconds:
            return i
    return len(lines) - 1


def throughput(cfg: Config, data: Path, steady: Steady) -> dict[str, Any]:
    """Tokens/s, padding and model FLOP/s of the measured updates.

    The dense FLOPs use the measured source and target tokens; attention, quadratic in
    each sentence's length, uses the training pairs' average per target token (every
    epoch visits each pair once, so the measured batches follow that average).
    """
    split = EncodedSplit(data, "train")
    plan = BatchPlan(split.src_lengths, split.tgt_lengths, cfg.train.batch_tokens,
                     cfg.train.seed, cfg.model.max_positions, multiple=8)
    per_tgt = Lengths.of(plan.src_len[plan.indices], plan.tgt_len[plan.indices]).per_target_token()
    n = steady.tgt_tokens
    counted = Lengths(steady.src_tokens, n, per_tgt.src_sq * n, per_tgt.tgt_sq * n,
                      per_tgt.cross * n)
    flops_per_s = training_flops(cfg.model, load_manifest(data)["vocab_size"],
                                 counted) / steady.seconds
    peak = dense_bf16_peak(torch.cuda.get_device_name())
    return {"updates_s": steady.steps / steady.seconds,
            "tgt_tok_s": n / steady.seconds, "src_tok_s": steady.src_tokens / steady.seconds,
            "pad_frac": 1 - steady.real / steady.padded, "steps": steady.steps,
            "seconds": steady.seconds, "tflop_s": flops_per_s / 1e12,
            "mfu": mfu_text(flops_per_s, torch.cuda.get_device_name()),
            "mfu_fraction": flops_per_s / peak if peak else None}


# ----------------------------------------------------------------------------- e2e


def e2e(args: argparse.Namespace) -> int:
    """Train base for --minutes, then BLEU/chrF of --checkpoint on the two dev sets."""
    report = Report("gpu-e2e")
    info = report.results["device"] = device_summary()
    report.say(f"gpu-e2e on {describe(info)}")
    data = base_data(args.data, report)
    evals = corpus_with([f"{name}.{lang}" for name in DEV_SETS for lang in ("en", "es")])
    if evals is None:
        fail(f"no {', '.join(DEV_SETS)} .en/.es files in {CARRIED_CORPUS} or {CORPORA}: "
             f"run `make gpu-carry` beforehand and carry gpu-carry (README, section GPUs)")
    run = args.work / "run"
    sets = ["train.device=cuda", f"train.max_minutes={args.minutes}", *args.sets]
    report.say(f"training {BASE.relative_to(ROOT)} on {data} for {args.minutes:g} min into {run} "
               f"(--set {' --set '.join(sets)})")
    started = time.perf_counter()
    args.work.mkdir(parents=True, exist_ok=True)
    problem = transcli(["train", "--config", BASE, "--data", data, "--out", run, "--force",
                        *set_flags(sets)], args.work / "train.log", args.minutes * 60 + 300,
                       env=CHILD_ENV)
    if problem:
        report.say(f"transcli {problem}")
        return 1
    report.results["train"] = {"wall_s": time.perf_counter() - started, **run_summary(run)}
    report.say(describe_run(report.results["train"]))
    report.keep(run / METRICS_FILE, "gpu-e2e-metrics.jsonl")
    report.keep(run / CURVES_FILE, "gpu-e2e-curves.png")
    report.save()
    return score_e2e(args, run, evals, report)


def score_e2e(args: argparse.Namespace, run: Path, evals: Path, report: Report) -> int:
    scores = report.results["scores"] = {}
    for name in DEV_SETS:
        started = time.perf_counter()
        result = score_set(run, args.checkpoint, evals, name, args.work, ["--device", "cuda"],
                           timeout=300)
        if "error" in result:
            report.say(f"transcli {result['error']}")
            return 1
        scores[name] = {**result, "seconds": time.perf_counter() - started}
        report.save()
    report.say("\n| set | lines | BLEU | chrF | translate + score, s |\n|---|---:|---:|---:|---:|")
    for name, result in scores.items():
        report.say(f"| {name} | {result['lines']} | {result['bleu']:.1f} | {result['chrf']:.1f} | "
                   f"{result['seconds']:.0f} |")
    signatures = next(iter(scores.values()))["signatures"]
    beam = load_config(run / CONFIG_FILE).decode.beam_size
    report.say(f"checkpoint {args.checkpoint}, beam {beam}; sacreBLEU BLEU "
               f"{signatures['bleu']}, chrF {signatures['chrf']}")
    return 0


def describe_run(summary: dict[str, Any]) -> str:
    rate, loss = summary["tgt_tok_s"], summary["last_train_loss"]
    text = (f"trained {summary['updates']} updates in {summary['wall_s'] / 60:.1f} min "
            f"(process wall time), {f'{rate:,.0f}' if rate else '?'} tgt tok/s after the "
            f"first log interval; last train loss {f'{loss:.3f}' if loss else '?'}")
    valid = summary["last_valid"]
    if valid:
        text += (f"; valid at step {valid['step']}: NLL {valid['valid_nll']:.3f}"
                 + (f", greedy BLEU {valid['valid_bleu']:.1f}" if "valid_bleu" in valid else ""))
    return text


# ----------------------------------------------------------------------------- carry


def carry(args: argparse.Namespace) -> int:
    """Fill gpu-carry/ (no GPU needed): the dev sets, and the corpus prepared with each
    config `check` times (or, with --with-train, the raw training files)."""
    corpus = args.corpus or CORPORA
    names = [f"{name}.{lang}" for name in DEV_SETS for lang in ("en", "es")]
    needed = names + ["train.en", "train.es"]
    missing = [name for name in needed if not (corpus / name).is_file()]
    if missing:
        fail(f"{corpus}: missing {', '.join(missing)} (give --corpus DIR)")
    CARRIED_CORPUS.mkdir(parents=True, exist_ok=True)
    for name in names + (["train.en", "train.es"] if args.with_train else []):
        shutil.copyfile(corpus / name, CARRIED_CORPUS / name)
    if not args.with_train:
        for config in dict.fromkeys(parse_setting(text)[0] for text in SETTINGS):
            carried_data(config, corpus)
    size = sum(f.stat().st_size for f in CARRY.rglob("*") if f.is_file())
    print(f"{CARRY}: {size / 2**20:.1f} MiB; name it in the device tool's carry: "
          f'carry=["gpu-carry"] (README, section GPUs)')
    return 0
