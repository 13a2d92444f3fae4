"""Rank training recipes on one GPU in one sitting: K variants trained side by side, each
in its own process, for equal minutes (or equal updates), then each scored with beam
search on dev.tatoeba, dev.newstest2012 and test.tico19.

    python -m bench.gpu_study --minutes 6                     # every variant, 6 min each
    python -m bench.gpu_study --only base vocab16k postnorm --updates 2000
    python -m bench.gpu_study --config configs/gpu-1h.yaml --minutes 8 --work /tmp/study

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
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

from bench.common import CORPORA, ROOT

SETS = ("dev.tatoeba", "dev.newstest2012", "test.tico19")
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
NEVER = "1000000000"
PREPARE_S = 600  # bound on one data preparation
SCORE_S = 600  # bound on scoring one run on one set


def transcli(args: list[str], log: Path, timeout: float, env: dict[str, str],
             stdout: Optional[Path] = None) -> Optional[str]:
    """Run `python -m transcli ARGS` with its stderr (and stdout, unless given a file of
    its own) into `log`; None when it worked, else why not (its last line)."""
    with open(log, "w", encoding="utf-8") as err, \
            open(stdout or os.devnull, "w", encoding="utf-8") as out:
        try:
            proc = subprocess.run([sys.executable, "-m", "transcli", *args],
                                  stdout=out if stdout else err, stderr=err, cwd=ROOT,
                                  env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"stopped after {timeout:.0f} s"
    if proc.returncode == 0:
        return None
    lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return f"exit status {proc.returncode}: {(lines or ['no output'])[-1][-200:]}"


def data_sets(overrides: list[str]) -> list[str]:
    return [item for item in overrides if item.startswith("data.")]


def data_name(overrides: list[str]) -> str:
    chosen = data_sets(overrides)
    return "data-" + ("-".join(item.split("=", 1)[1] for item in chosen) or "default")


def prepare(args: argparse.Namespace, variants: dict[str, list[str]], env: dict[str, str]
            ) -> dict[str, Any]:
    """Each distinct data setting prepared once under --work: {data name: dir or error}."""
    prepared: dict[str, Any] = {}
    for overrides in variants.values():
        name = data_name(overrides)
        out = args.work / name
        if name in prepared or (out / "manifest.json").is_file():
            prepared[name] = out
            continue
        sets = [item for item in data_sets(overrides) for item in ("--set", item)]
        problem = transcli(["prepare", "-c", str(args.config), "--src-file",
                            str(args.corpus / "train.en"), "--tgt-file",
                            str(args.corpus / "train.es"), "--out", str(out), "--force", *sets],
                           args.work / f"{name}.log", PREPARE_S, env)
        prepared[name] = out if problem is None else {"error": f"prepare: {problem}"}
        print(f"prepared {name}: {problem or out}", flush=True)
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
              prepared: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """Every variant trained at once, each in its own process; {label: run dir or error}."""
    running: dict[str, tuple[subprocess.Popen, Any]] = {}
    results: dict[str, Any] = {}
    for label, overrides in variants.items():
        data = prepared[data_name(overrides)]
        if isinstance(data, dict):
            results[label] = data
            continue
        run = args.work / label / "run"
        sets = [item for s in [*overrides, *budget(args), f"train.device={args.device}",
                               *args.sets] for item in ("--set", s)]
        log = open(args.work / f"{label}.train.log", "w", encoding="utf-8")
        command = [sys.executable, "-m", "transcli", "train", "-c", str(args.config),
                   "--data", str(data), "--out", str(run), "--force", *sets]
        running[label] = (subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                           cwd=ROOT, env=env), log)
        results[label] = run
    deadline = time.monotonic() + args.train_timeout
    for label, (proc, log) in running.items():
        try:
            status = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.terminate()  # transcli saves and stops on SIGTERM
            status = proc.wait(timeout=120)
        log.close()
        if status != 0:
            tail = (args.work / f"{label}.train.log").read_text(errors="replace").strip()
            results[label] = {"error": f"train: exit status {status}: "
                                       f"{(tail.splitlines() or [''])[-1][-200:]}"}
        print(f"trained {label}: {results[label]}", flush=True)
    return results


def checkpoint(overrides: list[str], config: Path) -> str:
    """The averaged weights when the recipe keeps them (EMA), else the best validation."""
    from transcli.config.loading import load_config

    return "avg" if load_config(config, overrides).train.ema_decay else "best"


def score(args: argparse.Namespace, label: str, run: Path, overrides: list[str],
          env: dict[str, str]) -> dict[str, Any]:
    """BLEU and chrF of one run on each set, with the config's search."""
    from transcli.rundir.layout import METRICS_FILE
    from transcli.rundir.metrics import read_metrics

    lines = read_metrics(run / METRICS_FILE, "train")
    seconds = sum((b["tgt_tokens"] - a["tgt_tokens"]) / b["tokens_per_s"]
                  for a, b in zip(lines, lines[1:])) if len(lines) > 1 else 0.0
    row: dict[str, Any] = {"variant": label, "updates": lines[-1]["step"] if lines else 0,
                           "tgt_tok_s": ((lines[-1]["tgt_tokens"] - lines[0]["tgt_tokens"])
                                         / seconds) if seconds else None,
                           "checkpoint": checkpoint(overrides, args.config)}
    for name in SETS:
        out = args.work / label / f"{name}.json"
        problem = transcli(["evaluate", "-m", str(run), "--checkpoint", row["checkpoint"],
                            "--src", str(args.corpus / f"{name}.en"),
                            "--ref", str(args.corpus / f"{name}.es"), "--device", args.device,
                            "--json", "--hyp-out", str(args.work / label / f"{name}.hyp.es")],
                           args.work / label / f"{name}.log", SCORE_S, env, stdout=out)
        if problem:
            row[name] = {"error": problem}
            continue
        result = json.loads(out.read_text(encoding="utf-8"))
        row[name] = {"bleu": result["bleu"], "chrf": result["chrf"]}
        row.setdefault("signatures", result["signatures"])
    return row


def table(rows: list[dict[str, Any]]) -> str:
    """One markdown table: variant, updates, tokens/s, BLEU / chrF per set."""
    head = "| variant | updates | tgt tok/s | " + " | ".join(SETS) + " |"
    lines = [head, "|---|---:|---:|" + "---:|" * len(SETS)]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['variant']} | {row['error']} |" + " |" * (len(SETS) + 1))
            continue
        speed = f"{row['tgt_tok_s']:,.0f}" if row.get("tgt_tok_s") else "-"
        cells = [f"{row[s]['bleu']:.1f} / {row[s]['chrf']:.1f}" if "bleu" in row[s]
                 else row[s]["error"] for s in SETS]
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
                        help="train.{en,es} and the .en/.es files of " + ", ".join(SETS))
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
    missing = [f"{name}.{lang}" for name in ("train", *SETS) for lang in ("en", "es")
               if not (args.corpus / f"{name}.{lang}").is_file()]
    if missing:
        print(f"gpu-study: {args.corpus}: missing {', '.join(missing)} (give --corpus)",
              file=sys.stderr)
        return 1
    args.work.mkdir(parents=True, exist_ok=True)
    variants = {label: VARIANTS[label] for label in (args.only or VARIANTS)}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])}
    started = time.monotonic()
    trained = train_all(args, variants, prepare(args, variants, env), env)
    rows = [{"variant": label, **run} if isinstance(run, dict)
            else score(args, label, run, variants[label], env) for label, run in trained.items()]
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
