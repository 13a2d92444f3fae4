"""The recipe study: which training recipe learns most in an equal budget, on the CPU or
on one GPU: variants trained side by side, each scored, one table.

    python -m bench.studies.recipes --device cuda --minutes 6             # every GPU variant
    python -m bench.studies.recipes --device cuda --group challenger --minutes 5 --plan
    python -m bench.studies.recipes --device cpu --round cpu3 --cpu-minutes 64 --work /tmp/s3

Each variant (ROUNDS) is one `python -m bench.quality` run in WORK/<variant>, --parallel
at a time; one with its results.json is not run again, so that a stopped study goes on
(and the same command again prints the table). The table and the curves go to WORK (and
to $OUT when set). Budgets: --minutes (each decay
ending with it), --updates, or --cpu-minutes (one thread each: budget / its CPU seconds
per update, measured first). --plan checks every variant and says how long, without a GPU.
docs/CPU-RECIPE.md and docs/GPU.md say more and have the rounds run so far.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from bench.common import (
    CORPORA,
    NEVER,
    ROOT,
    SCORED_SETS,
    Child,
    child_env,
    data_dir,
    data_overrides,
    must,
    output_lines,
    prepare_corpus,
    set_flags,
    transcli,
)
from bench.quality import RESULTS, table_lines

BF16 = ["train.cpu_precision=bf16"]
# cpu3, label: overrides of configs/cpu-1h.yaml as it is (2+2 x 320), in bf16; rounds
# cpu1 and cpu2 are at 7e5bbcb (bench/studies/cpu_recipes.py --round 1, 2). No slower weight
# average: the EMA's warm-up keeps its decay below 0.999 until update 8,990, so a probe
# or an hour with ema_decay 0.9995 would train and average exactly as cpu1h does.
CPU_3: dict[str, list[str]] = {
    "cpu1h": [],
    "dropout0.1": ["model.dropout=0.1"],
    "sampling": ["train.sample_alpha=0.1"],
}
# gpu, label: overrides of configs/gpu-10m.yaml.
GPU: dict[str, list[str]] = {
    "base": [],
    "vocab8k": ["data.vocab_size=8000"],
    "vocab16k": ["data.vocab_size=16000"],
    "vocab32k": ["data.vocab_size=32000"],
    "postnorm": ["model.pre_norm=false", "train.lr_factor=0.5"],
    "dropout0.1": ["model.dropout=0.1"],
    "dropout0.3": ["model.dropout=0.3"],
    "batch8k": ["train.batch_tokens=8000"],
    "batch25k": ["train.batch_tokens=25000"],
    "ffn2048": ["model.d_ff=2048", "model.heads=8"],
    "lr2x": ["train.lr_factor=1.4"],
    # The update is launch-bound (one H200, 2026-11-27: 21 updates/s at 12K tokens, about 4%
    # of the card's peak), so twice the tokens per update cost far less than twice the time;
    # the peak rate scaled by sqrt(2) for the larger batch.
    "batch24k": ["train.batch_tokens=24000", "train.lr_factor=0.99"],
    # Both: the larger model on the larger batches.
    "ffn2048-batch24k": ["model.d_ff=2048", "model.heads=8", "train.batch_tokens=24000",
                         "train.lr_factor=0.99"],
}
CONFIGS = ROOT / "configs"
ROUNDS: dict[str, tuple[Path, dict[str, list[str]]]] = {
    "cpu3": (CONFIGS / "cpu-1h.yaml", {label: BF16 + o for label, o in CPU_3.items()}),
    "gpu": (CONFIGS / "gpu-10m.yaml", GPU)}
# Named sets of gpu variants. challenger: what should beat gpu-10m (base, beside them):
# larger batches (launch-bound updates), the transformer-base FFN and heads (at ~4% of the
# card's peak extra FLOPs cost little; 8 minutes made 25 passes with BLEU still rising).
GROUPS = {"challenger": ["base", "batch24k", "ffn2048", "ffn2048-batch24k"]}
# --plan's estimates: one prepare of the corpus (25 s on a 2-core CPU, 2026-11-27), a
# training process's start and last save, one set scored by the runs at once on a GPU
# with the config's beam (2,000-3,000 lines in 6-8 s of search alone, 2026-11-26).
PREPARE_ESTIMATE_S, TRAIN_OVERHEAD_S, SCORE_ESTIMATE_S = 60, 45, 30
LIMIT_S = 540  # what one command of the challenger must fit in (a GPU session's call: 10 min)
OUT_FILES = ("study.md", "study.json", "curves.png")


def checkpoint(config: Path, overrides: list[str]) -> str:
    """The averaged weights when the recipe keeps them (EMA), else the best validation."""
    from transcli.config.loading import load_config

    return "avg" if load_config(config, overrides).train.ema_decay else "best"


def budget(args: argparse.Namespace) -> list[str]:
    """The study's warm-up (a tenth of --updates, 300 with --minutes, the config's with
    --cpu-minutes; --set train.warmup_steps=N wins); with --minutes, decays end with it."""
    warmup = max(1, args.updates // 10) if args.updates else 300 if args.minutes else None
    return ([f"train.warmup_steps={warmup}"] if warmup else []) + (
        [f"train.decay_minutes={args.minutes}", f"train.max_steps={NEVER}"] if args.minutes
        else [])


def prepare(args: argparse.Namespace, variants: dict[str, list[str]]) -> dict[Path, str]:
    """Each distinct data setting prepared once under --work: {data dir: why it failed}."""
    failed: dict[Path, str] = {}
    for out, overrides in {data_dir(args.work, o): o for o in variants.values()}.items():
        problem = prepare_corpus(args.config, out, overrides, args.corpus,
                                 args.work / f"{out.name}.log", 600)
        if problem:
            failed[out] = f"prepare: {problem}"
        print(f"prepared {out.name}: {problem or out}", flush=True)
    return failed


def calibrate(args: argparse.Namespace, variants: dict[str, list[str]]) -> dict[str, float]:
    """CPU seconds per update (one thread) of each variant, measured once into WORK."""
    path = args.work / "calibration.json"
    rates = json.loads(path.read_text()) if path.is_file() else {}
    for label in (label for label in variants if label not in rates):
        overrides = variants[label]
        train = [s for s in overrides if s not in data_overrides(overrides)] + [
            "train.threads=1", f"train.valid_every={NEVER}", f"train.save_every={NEVER}",
            "train.log_every=10", "train.decay_minutes=0", "train.max_minutes=0"]
        costs = []  # CPU time (user + system) of a run of 10 updates, then of 40
        for steps in (10, 40):
            with tempfile.TemporaryDirectory() as tmp:
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                must(transcli(["train", "--config", args.config, "--data",
                               data_dir(args.work, overrides), "--out", Path(tmp) / "run",
                               *set_flags(train + [f"train.max_steps={steps}"])],
                              Path(tmp) / "log"))
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                costs.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        rates[label] = (costs[1] - costs[0]) / 30
        print(f"{label:10s} {rates[label]:.3f} CPU s per update (1 thread)", flush=True)
        path.write_text(json.dumps(rates, indent=1) + "\n")
    return rates


def quality_args(args: argparse.Namespace, label: str, overrides: list[str],
                 rate: Optional[float]) -> list[str]:
    """The `bench.quality` run of one variant within the study's budget."""
    sets = [*overrides, *budget(args), *args.sets]
    if rate:
        spend = ["--steps", str(int(args.cpu_minutes * 60 / rate)), "--threads", "1"]
    elif args.updates:
        spend = ["--steps", str(args.updates)]
    else:  # the decay ends the run; the cap is a margin over it
        spend = ["--minutes", f"{args.minutes + 3:g}"]
    return ["--config", str(args.config), *spend, "--label", label, "--work",
            str(args.work / label), "--data", str(data_dir(args.work, overrides)), "--corpus",
            str(args.corpus), "--device", args.device, "--checkpoint",
            checkpoint(args.config, sets), *[f"--set={item}" for item in sets]]


def run_all(args: argparse.Namespace, variants: dict[str, list[str]],
            failed: dict[Path, str]) -> None:
    """The variants not done yet, each a `bench.quality` process, --parallel at a time."""
    queue = [label for label in variants if not (args.work / label / RESULTS).is_file()
             and data_dir(args.work, variants[label]) not in failed]
    rates = calibrate(args, {label: variants[label] for label in queue}) \
        if args.cpu_minutes else {}
    env = child_env(OMP_NUM_THREADS="1") if args.cpu_minutes else None
    running: list[Child] = []
    while queue or running:
        while queue and len(running) < args.parallel:
            label = queue.pop(0)
            print(f"training {label}", flush=True)
            running.append(Child(quality_args(args, label, variants[label], rates.get(label)),
                                 args.work / f"{label}.log", env=env, module="bench.quality"))
        time.sleep(1)
        for child in [child for child in running if child.process.poll() is not None]:
            child.wait()
            running.remove(child)


def study_rows(args: argparse.Namespace, variants: dict[str, list[str]],
               failed: dict[Path, str]) -> list[dict[str, Any]]:
    """Each variant's results, or why there are none (its log's last line)."""
    rows = []
    for label, overrides in variants.items():
        results, log = args.work / label / RESULTS, args.work / f"{label}.log"
        if results.is_file():
            rows.append(json.loads(results.read_text(encoding="utf-8")))
            continue
        lines = output_lines(log.read_bytes()) if log.is_file() else ["not run"]
        why = failed.get(data_dir(args.work, overrides)) or lines[-1][-200:]
        rows.append({"label": label, "error": why})
    return rows


def plot(runs: dict[str, Path], path: Path) -> None:
    """Training loss against updates, and valid BLEU, of every run, in one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from transcli.rundir.layout import METRICS_FILE
    from transcli.rundir.metrics import read_metrics

    fig, (loss_ax, bleu_ax) = plt.subplots(1, 2, figsize=(12, 4.5), layout="constrained")
    for label, run in runs.items():
        train = read_metrics(run / METRICS_FILE, "train")
        valid = [r for r in read_metrics(run / METRICS_FILE, "valid") if "valid_bleu" in r]
        loss_ax.plot([r["step"] for r in train], [r["loss"] for r in train], label=label)
        bleu_ax.plot([r["step"] for r in valid], [r["valid_bleu"] for r in valid], "o-",
                     label=label)
    loss_ax.set(xlabel="update", ylabel="training loss (label-smoothed)", title="training")
    bleu_ax.set(xlabel="update", ylabel="valid BLEU (greedy)", title="validation")
    loss_ax.legend(fontsize=8)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_table(args: argparse.Namespace, variants: dict[str, list[str]],
                failed: dict[Path, str]) -> int:
    """The table of every variant, printed and written with the curves; 1 if any failed."""
    rows = study_rows(args, variants, failed)
    text = "\n".join([f"{args.config.name}, round {args.round}, {len(variants)} variants on "
                      f"{args.device}; tokens/s is each run's share of the device",
                      *table_lines(rows)])
    print(text)
    (args.work / "study.md").write_text(text + "\n", encoding="utf-8")
    (args.work / "study.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    runs = {row["label"]: args.work / row["label"] / "run" for row in rows if "error" not in row}
    if runs:
        plot(runs, args.work / "curves.png")
    if os.environ.get("OUT"):
        for name in OUT_FILES:
            if (args.work / name).is_file():
                shutil.copyfile(args.work / name, Path(os.environ["OUT"]) / f"{args.round}-{name}")
    return 0 if all("error" not in row for row in rows) else 1


def plan_text(args: argparse.Namespace, variants: dict[str, list[str]]) -> str:
    """What the command would run and in how long (estimates on one GPU); every variant's
    settings checked against the config as training would load them (a typo fails here)."""
    missing = {data_dir(args.work, overrides) for overrides in variants.values()}
    missing = {out for out in missing if not (out / "manifest.json").is_file()}
    spend = (f"{args.updates} updates" if args.updates else f"{args.minutes:g} minutes"
             if args.minutes else f"{args.cpu_minutes:g} CPU-minutes")
    lines = [f"plan: {args.config.name}, round {args.round}, {len(variants)} variants on "
             f"{args.device}, {args.parallel} at a time, {spend} each, in {args.work}"]
    for label, overrides in variants.items():
        ckpt = checkpoint(args.config, [*overrides, *budget(args), *args.sets])
        lines.append(f"  {label:18s} {' '.join(overrides) or '(the config as it is)'}; "
                     f"data {data_dir(args.work, overrides).name}; scored: {ckpt}")
    prepare_s = PREPARE_ESTIMATE_S * len(missing)  # the data not prepared yet
    score_s = SCORE_ESTIMATE_S * len(SCORED_SETS)
    train_s = math.ceil(len(variants) / args.parallel) * (args.minutes or 0) * 60
    total = prepare_s + train_s + TRAIN_OVERHEAD_S + score_s
    verdict = ("over what one GPU call allows: lower --minutes" if total > LIMIT_S
               else f"within {LIMIT_S / 60:g} min")
    lines.append(f"  prepare ~{prepare_s:.0f} s, " + (
        f"train ~{train_s + TRAIN_OVERHEAD_S:.0f} s, score ~{score_s:.0f} s: total "
        f"~{total / 60:.1f} min, {verdict}" if args.minutes else
        f"score ~{score_s:.0f} s on a GPU; training not estimated (give --minutes)"))
    out = f" and into $OUT as {args.round}-<name>" if os.environ.get("OUT") else ""
    return "\n".join(lines + [f"  writes {', '.join(OUT_FILES)} into {args.work}{out}"])


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda", help="train.device: cuda or cpu")
    parser.add_argument("--round", choices=list(ROUNDS),
                        help="the variants (default: gpu on CUDA, cpu3 on the CPU)")
    parser.add_argument("--config", type=Path, help="default: the round's")
    pick = parser.add_mutually_exclusive_group()
    pick.add_argument("--only", nargs="+", metavar="LABEL", help="these variants of the round")
    pick.add_argument("--group", choices=list(GROUPS), help="a named set of gpu variants: "
                      + "; ".join(f"{name}: {' '.join(labels)}" for name, labels in GROUPS.items()))
    spend = parser.add_mutually_exclusive_group()
    spend.add_argument("--minutes", type=float, help="training minutes each (default 6)")
    spend.add_argument("--updates", type=int, help="updates each")
    spend.add_argument("--cpu-minutes", type=float, help="CPU-minutes each, one thread")
    parser.add_argument("--parallel", type=int, help="runs at a time (default: all on CUDA, 2)")
    parser.add_argument("--corpus", type=Path, default=CORPORA,
                        help="train.{en,es} and the .en/.es files of " + ", ".join(SCORED_SETS))
    parser.add_argument("--work", type=Path, default=Path("/tmp/transcli-study"))
    parser.add_argument("--set", dest="sets", action="append", default=[],
                        help="an override for every variant (repeatable)")
    parser.add_argument("--plan", action="store_true",
                        help="print what would run and how long it would take; run nothing")
    args = parser.parse_args(argv)
    args.round = args.round or ("gpu" if args.device == "cuda" else "cpu3")
    if args.minutes is None and not (args.updates or args.cpu_minutes):
        args.minutes = 6.0
    return args


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    config, variants = ROUNDS[args.round]
    args.config = args.config or config
    labels = GROUPS[args.group] if args.group else args.only or list(variants)
    unknown = [label for label in labels if label not in variants]
    if unknown:
        print(f"recipes: round {args.round} has no variant {unknown[0]!r} (it has "
              f"{', '.join(variants)})", file=sys.stderr)
        return 2
    variants = {label: variants[label] for label in labels}
    args.parallel = args.parallel or (len(variants) if args.device == "cuda" else 2)
    missing = [f"{name}.{lang}" for name in ("train", *SCORED_SETS) for lang in ("en", "es")
               if not (args.corpus / f"{name}.{lang}").is_file()]
    if missing:
        print(f"recipes: {args.corpus}: missing {', '.join(missing)} (give --corpus)",
              file=sys.stderr)
        return 1
    if args.plan:
        from transcli.system.errors import UserError

        try:
            print(plan_text(args, variants))
        except UserError as exc:  # a variant the config refuses: its one line
            print(f"recipes: {exc}", file=sys.stderr)
            return 1
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    failed = prepare(args, variants)
    run_all(args, variants, failed)
    return write_table(args, variants, failed)


if __name__ == "__main__":
    sys.exit(main())
