"""Rank training recipes on one GPU in one sitting: K variants trained side by side, each
in its own process, for equal minutes (or equal updates), then each scored with beam
search on dev.tatoeba, dev.newstest2012 and test.tico19.

    python -m bench.studies.gpu_recipes --minutes 6        # every variant, 6 min each
    python -m bench.studies.gpu_recipes --only base vocab16k postnorm --updates 2000
    python -m bench.studies.gpu_recipes --config configs/gpu-1h.yaml --minutes 8 --work /tmp/s

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
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
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
}
PREPARE_S = 600  # bound on one data preparation
SCORE_S = 600  # bound on scoring one run on one set


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


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=CONFIG)
    parser.add_argument("--only", nargs="+", choices=list(VARIANTS), help="these variants")
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
    variants = {label: VARIANTS[label] for label in (args.only or VARIANTS)}
    started = time.monotonic()
    trained = train_all(args, variants, prepare(args, variants))
    rows = [{"variant": label, **run} if isinstance(run, dict)
            else score(args, label, run, variants[label]) for label, run in trained.items()]
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
        for name in ("study.md", "study.json", "curves.png"):
            if (args.work / name).is_file():
                shutil.copyfile(args.work / name, Path(os.environ["OUT"]) / f"gpu-{name}")
    return 0 if all("error" not in row for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
