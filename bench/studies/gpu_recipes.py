"""Rank training recipes on one GPU in one sitting: K variants trained side by side, each
in its own process, for equal minutes (or equal updates), then each scored with beam
search on dev.tatoeba, dev.newstest2012 and test.tico19.

    python -m bench.studies.gpu_recipes --minutes 6        # every variant, 6 min each
    python -m bench.studies.gpu_recipes --only base vocab16k postnorm --updates 2000
    python -m bench.studies.gpu_recipes --config configs/gpu-1h.yaml --minutes 8 --work /tmp/s
    python -m bench.studies.gpu_recipes --group challenger --plan   # what, how long; no GPU

Each variant is `--config` (configs/gpu-10m.yaml by default) with a few `--set`
overrides (`VARIANTS`); a variant changing data.* settings gets data prepared with them
(once per distinct setting). All variants train at the same time on the one device, so
with --minutes they share it for the same wall time, and the ranking is at an equal
budget: what each recipe learns in what a user would wait. The decay of each run ends
with that budget (train.decay_minutes), as the shipped recipes' does. Then every run
is scored with `transcli evaluate` (the config's beam search; the averaged weights when
the recipe keeps them, else the best validation), and one table is printed (variant,
updates, target tokens/s, BLEU / chrF per set) with a PNG of the training curves.
Figures go to --work and, when $OUT is set, also into $OUT. Every step is bounded in
time; a variant that fails is reported in its row and the others go on.

`--group challenger` is the set expected to beat configs/gpu-10m.yaml, beside it (`GROUPS`);
`--plan` prints what a command would run and how long it would take, from the estimates
below, and runs nothing (no GPU needed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional

from bench.common import (
    CORPORA,
    NEVER,
    ROOT,
    SCORED_SETS,
    Child,
    data_dir,
    data_overrides,
    prepare_corpus,
    run_summary,
    score_set,
    set_flags,
)

CONFIG = ROOT / "configs" / "gpu-10m.yaml"
# label: overrides of --config; data.* ones prepare data of their own.
VARIANTS: dict[str, list[str]] = {
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
# Named sets of variants. challenger: what should beat gpu-10m (base, beside them): larger
# token batches (launch-bound updates), a wider feed-forward layer and 8 heads (the
# transformer-base shape; at ~4% of the card's peak its extra FLOPs cost little time, and
# 8 minutes made 25 passes over the corpus with valid BLEU still rising), and the two
# together. Padding needs no variant: the batch order of the GPU-speed work applies to all.
GROUPS = {"challenger": ["base", "batch24k", "ffn2048", "ffn2048-batch24k"]}
PREPARE_S = 600  # bound on one data preparation
SCORE_S = 600  # bound on scoring one run on one set
# --plan's estimates: one prepare of the corpus (25 s on a 2-core CPU, 2026-11-27); a
# training process's start and last save; one set scored by one run with the config's
# beam on a GPU, the runs at once (2,000-3,000 lines in 6-8 s of search alone, 2026-11-26).
PREPARE_ESTIMATE_S = 60
TRAIN_OVERHEAD_S = 45
SCORE_ESTIMATE_S = 30
LIMIT_S = 540  # what one command of the challenger must fit in (a GPU session's call: 10 min)
OUT_FILES = ("study.md", "study.json", "curves.png")  # copied into $OUT as gpu-<name>


def prepare(args: argparse.Namespace, variants: dict[str, list[str]]) -> dict[str, Any]:
    """Each distinct data setting prepared once under --work: {data dir: dir or error}."""
    prepared: dict[Path, Any] = {}
    for overrides in variants.values():
        out = data_dir(args.work, overrides)
        if out not in prepared:
            problem = prepare_corpus(args.config, out, overrides, args.corpus,
                                     args.work / f"{out.name}.log", PREPARE_S)
            prepared[out] = out if problem is None else {"error": f"prepare: {problem}"}
            print(f"prepared {out.name}: {problem or out}", flush=True)
    return prepared


def budget(args: argparse.Namespace) -> list[str]:
    """The overrides that give every variant the same budget, its decay ending with it.
    The warm-up is the study's own: runs sharing a device make fewer updates than a
    recipe alone would in its time."""
    warmup = args.warmup or (max(1, args.updates // 10) if args.updates else 300)
    if args.updates:
        return [f"train.max_steps={args.updates}", "train.decay_minutes=0",
                f"train.warmup_steps={warmup}"]
    return [f"train.decay_minutes={args.minutes}", f"train.max_steps={NEVER}",
            f"train.warmup_steps={warmup}"]


def train_all(args: argparse.Namespace, variants: dict[str, list[str]],
              prepared: dict[Path, Any]) -> dict[str, Any]:
    """Every variant trained at once, each in its own process; {label: run dir or error}."""
    running: dict[str, Child] = {}
    results: dict[str, Any] = {}
    for label, overrides in variants.items():
        data = prepared[data_dir(args.work, overrides)]
        if not isinstance(data, Path):  # its data could not be prepared
            results[label] = data
            continue
        run = results[label] = args.work / label / "run"
        train = [item for item in overrides if item not in data_overrides(overrides)]
        running[label] = Child(
            ["train", "-c", args.config, "--data", data, "--out", run, "--force",
             *set_flags([*train, *budget(args), f"train.device={args.device}", *args.sets])],
            log=args.work / f"{label}.train.log")
    deadline = time.monotonic() + args.train_timeout
    for label, child in running.items():
        problem = child.wait(max(1.0, deadline - time.monotonic()), stop=True)
        if problem:
            results[label] = {"error": problem}
        print(f"trained {label}: {results[label]}", flush=True)
    return results


def checkpoint(overrides: list[str], config: Path) -> str:
    """The averaged weights when the recipe keeps them (EMA), else the best validation."""
    from transcli.config.loading import load_config

    return "avg" if load_config(config, overrides).train.ema_decay else "best"


def score(args: argparse.Namespace, label: str, run: Path, overrides: list[str]) -> dict:
    """BLEU and chrF of one run on each set, with the config's search."""
    summary = run_summary(run)
    row: dict[str, Any] = {"variant": label, "updates": summary["updates"],
                           "tgt_tok_s": summary["tgt_tok_s"],
                           "checkpoint": checkpoint(overrides, args.config)}
    for name in SCORED_SETS:
        result = score_set(run, row["checkpoint"], args.corpus, name, args.work / label,
                           ["--device", args.device], SCORE_S)
        row[name] = result if "error" in result else {"bleu": result["bleu"],
                                                      "chrf": result["chrf"]}
        if "signatures" in result:
            row.setdefault("signatures", result["signatures"])
    return row


def table(rows: list[dict[str, Any]]) -> str:
    """One markdown table: variant, updates, tokens/s, BLEU / chrF per set."""
    head = "| variant | updates | tgt tok/s | " + " | ".join(SCORED_SETS) + " |"
    lines = [head, "|---|---:|---:|" + "---:|" * len(SCORED_SETS)]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['variant']} | {row['error']} |" + " |" * (len(SCORED_SETS) + 1))
            continue
        speed = f"{row['tgt_tok_s']:,.0f}" if row.get("tgt_tok_s") else "-"
        cells = [f"{row[s]['bleu']:.1f} / {row[s]['chrf']:.1f}" if "bleu" in row[s]
                 else row[s]["error"] for s in SCORED_SETS]
        lines.append(f"| {row['variant']} | {row['updates']:,} | {speed} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


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


def estimate(args: argparse.Namespace, variants: dict[str, list[str]]
             ) -> dict[str, Optional[float]]:
    """Seconds each stage should take (`--plan`'s estimates): prepares not done yet one
    after the other, the runs trained at once, then scored at once, three sets each.
    Training by --updates has no time to tell (None)."""
    missing = {data_dir(args.work, overrides) for overrides in variants.values()}
    missing = {out for out in missing if not (out / "manifest.json").is_file()}
    train = None if args.updates else args.minutes * 60 + TRAIN_OVERHEAD_S
    stages = {"prepare": float(PREPARE_ESTIMATE_S * len(missing)), "train": train,
              "score": float(SCORE_ESTIMATE_S * len(SCORED_SETS))}
    total = None if train is None else sum(v for v in stages.values() if v is not None)
    return {**stages, "total": total}


def plan_text(args: argparse.Namespace, variants: dict[str, list[str]]) -> str:
    """What the command would run, in how long: every variant's settings checked against
    the config as training would load them (a typo fails here, not on the GPU)."""
    times = estimate(args, variants)
    budget_text = f"{args.updates} updates" if args.updates else f"{args.minutes:g} minutes"
    lines = [f"plan: {args.config.name}, {len(variants)} variants side by side on "
             f"{args.device}, {budget_text} each, in {args.work}"]
    for label, overrides in variants.items():
        ckpt = checkpoint([*overrides, *budget(args), *args.sets], args.config)
        lines.append(f"  {label:18s} {' '.join(overrides) or '(the config as it is)'}; "
                     f"data {data_dir(args.work, overrides).name}; scored: {ckpt}")
    train = (f"{times['train']:.0f} s (the budget + ~{TRAIN_OVERHEAD_S} s to start and save)"
             if times["train"] is not None else "not estimated (a budget in updates)")
    lines.append(f"  prepare ~{times['prepare']:.0f} s (data not prepared yet); train {train}; "
                 f"score ~{times['score']:.0f} s ({', '.join(SCORED_SETS)}, the runs at once)")
    total = times["total"]
    if total is None:
        lines.append("  total: not estimated (give --minutes)")
    else:
        verdict = ("over what one GPU call allows: lower --minutes" if total > LIMIT_S
                   else "within")
        lines.append(f"  total ~{total / 60:.1f} min, {verdict} {LIMIT_S / 60:g} min")
    out = " and into $OUT as gpu-<name>" if os.environ.get("OUT") else ""
    lines.append(f"  writes {', '.join(OUT_FILES)} into {args.work}{out}")
    return "\n".join(lines)


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=CONFIG)
    pick = parser.add_mutually_exclusive_group()
    pick.add_argument("--only", nargs="+", choices=list(VARIANTS), help="these variants")
    pick.add_argument("--group", choices=list(GROUPS), help="a named set of variants: "
                      + "; ".join(f"{name}: {' '.join(labels)}" for name, labels in GROUPS.items()))
    parser.add_argument("--plan", action="store_true",
                        help="print what would run and how long it would take; run nothing")
    spend = parser.add_mutually_exclusive_group()
    spend.add_argument("--minutes", type=float, default=6.0, help="training minutes each")
    spend.add_argument("--updates", type=int, help="updates each instead of minutes")
    parser.add_argument("--warmup", type=int, help="warm-up updates of every variant "
                        "(default: a tenth of --updates, else 300)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--corpus", type=Path, default=CORPORA,
                        help="train.{en,es} and the .en/.es files of " + ", ".join(SCORED_SETS))
    parser.add_argument("--work", type=Path, default=Path("/tmp/transcli-gpu-study"))
    parser.add_argument("--set", dest="sets", action="append", default=[],
                        help="an override for every variant (repeatable)")
    parser.add_argument("--train-timeout", type=float, help="seconds (default: the budget "
                        "+ 3 minutes)")
    args = parser.parse_args(argv)
    if args.train_timeout is None:
        args.train_timeout = (args.minutes or 10) * 60 + 180
    return args


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    missing = [f"{name}.{lang}" for name in ("train", *SCORED_SETS) for lang in ("en", "es")
               if not (args.corpus / f"{name}.{lang}").is_file()]
    if missing:
        print(f"gpu-study: {args.corpus}: missing {', '.join(missing)} (give --corpus)",
              file=sys.stderr)
        return 1
    args.work.mkdir(parents=True, exist_ok=True)
    labels = GROUPS[args.group] if args.group else args.only or list(VARIANTS)
    variants = {label: VARIANTS[label] for label in labels}
    if args.plan:
        from transcli.system.errors import UserError

        try:
            print(plan_text(args, variants))
        except UserError as exc:  # a variant the config refuses: its one line
            print(f"gpu-study: {exc}", file=sys.stderr)
            return 1
        return 0
    started = time.monotonic()
    trained = train_all(args, variants, prepare(args, variants))
    with ThreadPoolExecutor(max_workers=len(trained)) as pool:  # the runs scored at once
        rows = list(pool.map(lambda item: {"variant": item[0], **item[1]}
                             if isinstance(item[1], dict)
                             else score(args, item[0], item[1], variants[item[0]]),
                             trained.items()))
    runs = {label: run for label, run in trained.items() if isinstance(run, Path)}
    budget_text = f"{args.updates} updates" if args.updates else f"{args.minutes:g} minutes"
    text = (f"{args.config.name}, {len(variants)} variants side by side on {args.device}, "
            f"{budget_text} each ({time.monotonic() - started:.0f} s in all); tokens/s is "
            f"each run's share of the device\n" + table(rows))
    signature = next((row["signatures"] for row in rows if "signatures" in row), None)
    if signature:
        text += f"\nsacreBLEU BLEU {signature['bleu']}, chrF {signature['chrf']}"
    print(text)
    (args.work / "study.md").write_text(text + "\n", encoding="utf-8")
    (args.work / "study.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    if runs:
        plot(runs, args.work / "curves.png")
    if os.environ.get("OUT"):
        for name in OUT_FILES:
            if (args.work / name).is_file():
                shutil.copyfile(args.work / name, Path(os.environ["OUT"]) / f"gpu-{name}")
    return 0 if all("error" not in row for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
