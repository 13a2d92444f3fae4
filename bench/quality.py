"""Quality benchmark: prepare -> train for a budget -> evaluate, beside Apertium.

    python -m bench.quality --config configs/small.yaml --minutes 60 --work /tmp/q/today
    python -m bench.quality --config configs/small.yaml --steps 1300 --threads 1 \\
        --set train.schedule=linear --label decay --work /tmp/q/decay --data /tmp/q/data-8k
    python -m bench.quality --table /tmp/q/today /tmp/q/decay     # the README table
    python -m bench.quality --skip-train --work /tmp/q/today       # re-score a run

Trains on ../shared/corpora/en-es/train, for --minutes of wall time (then SIGTERM:
transcli saves and exits cleanly; a second run with the same --work resumes) or for
--steps updates (a budget that does not depend on what else the machine is doing,
for probes run side by side), then scores a checkpoint on dev.tatoeba,
dev.newstest2012 and test.tico19 with `transcli evaluate` (beam 4, sacreBLEU
defaults), and the rule-based Apertium (`apt-get install apertium-eng-spa`) on the
same files with the same scorer. Each run writes results.json into --work; --table
prints several runs as one table. Everything is written under --work (and --data),
never into the repository.
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

from bench.common import (
    CORPORA,
    ROOT,
    SCORED_SETS,
    Child,
    must,
    prepare_corpus,
    run_summary,
    score_set,
    set_flags,
    transcli,
)

RESULTS = "results.json"


def train(args: argparse.Namespace, data: Path, run: Path, overrides: list[str]) -> float:
    """Train until the step budget is reached or --minutes run out (then SIGTERM: finish
    the step, save, exit 0); returns the minutes it took."""
    command = ["train", "--config", args.config, "--data", data, "--out", run,
               *set_flags(item for item in overrides if not item.startswith("data."))]
    if (run / "config.yaml").is_file():
        command.append("--resume")
    start = time.monotonic()
    must(Child(command).wait(None if args.steps else args.minutes * 60, stop=True))
    return (time.monotonic() - start) / 60


def score_apertium(name: str, work: Path) -> Optional[dict]:
    """Apertium line by line (-u drops its unknown-word marks); None when not installed."""
    if shutil.which("apertium") is None:
        return None
    hyp = work / f"{name}.apertium.es"
    if not hyp.is_file():
        source = (CORPORA / f"{name}.en").read_text(encoding="utf-8").splitlines()
        out = subprocess.run(["apertium", "-u", "eng-spa"], input="\n".join(source) + "\n",
                             capture_output=True, text=True, check=True).stdout
        lines = [line.strip() for line in out.rstrip("\n").split("\n")]
        if len(lines) != len(source):
            sys.exit(f"apertium returned {len(lines)} lines for {len(source)} on {name}")
        hyp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = work / f"{name}.apertium.json"
    must(transcli(["evaluate", "--hyp", hyp, "--ref", CORPORA / f"{name}.es", "--json"],
                  work / f"{name}.apertium.log", stdout=result))
    return json.loads(result.read_text(encoding="utf-8"))


def scores(args: argparse.Namespace, run: Path, overrides: list[str]) -> dict[str, Any]:
    """BLEU and chrF of the run's --checkpoint, and of Apertium, on each set."""
    found: dict[str, Any] = {}
    flags = ["--beam-size", str(args.beam_size),
             *set_flags(item for item in overrides if item.startswith("decode."))]
    for name in SCORED_SETS:
        ours = score_set(run, args.checkpoint, CORPORA, name, args.work, flags)
        must(ours.get("error"))
        found[name] = {"bleu": ours["bleu"], "chrf": ours["chrf"], "lines": ours["lines"],
                       "signature": ours["signatures"]}
        theirs = score_apertium(name, args.work)
        if theirs:
            found[name]["apertium"] = {"bleu": theirs["bleu"], "chrf": theirs["chrf"]}
    return found


def run_benchmark(args: argparse.Namespace) -> None:
    args.work.mkdir(parents=True, exist_ok=True)
    run = args.work / "run"
    overrides = list(args.sets) + ([f"train.threads={args.threads}"] if args.threads else [])
    if args.steps:
        overrides += [f"train.max_steps={args.steps}", "train.max_minutes=0",
                      "train.decay_minutes=0"]
    spent = None
    if not args.skip_train:
        data = args.data or args.work / "data"
        must(prepare_corpus(args.config, data, overrides))
        spent = train(args, data, run, overrides)
        print(f"trained {spent:.1f} min")
    summary = run_summary(run)
    results: dict[str, Any] = {
        "label": args.label or args.work.name, "config": str(args.config), "sets": args.sets,
        "budget": f"{args.steps} updates" if args.steps else f"{args.minutes:g} min",
        "minutes": spent, "checkpoint": args.checkpoint, "beam": args.beam_size,
        "load_average_end": os.getloadavg()[0], "updates": summary["updates"],
        "tgt_tokens_per_s": summary["tgt_tok_s"] or 0.0,
        "last_valid": summary["last_valid"] or {}, "scores": scores(args, run, overrides)}
    (args.work / RESULTS).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print_table([results])


def print_table(runs: list[dict[str, Any]]) -> None:
    """Markdown: one row per run, then Apertium's row (from the first run that has it)."""
    head = "| variant | budget | updates | tgt tok/s |" + "".join(
        f" {name} BLEU | chrF |" for name in SCORED_SETS)
    print(head)
    print("|" + "---|" * (4 + 2 * len(SCORED_SETS)))
    for r in runs:
        cells = "".join(f" {r['scores'][n]['bleu']:.1f} | {r['scores'][n]['chrf']:.1f} |"
                        for n in SCORED_SETS)
        print(f"| {r['label']} | {r['budget']} | {r['updates']} | "
              f"{r['tgt_tokens_per_s']:,.0f} |{cells}")
    apertium = next((r for r in runs if "apertium" in r["scores"][SCORED_SETS[0]]), None)
    if apertium:
        cells = "".join(f" {apertium['scores'][n]['apertium']['bleu']:.1f} | "
                        f"{apertium['scores'][n]['apertium']['chrf']:.1f} |"
                        for n in SCORED_SETS)
        print(f"| Apertium (rule-based) | | | |{cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "small.yaml")
    parser.add_argument("--minutes", type=float, default=60.0,
                        help="training time budget from the process's start (a config with "
                        "train.decay_minutes stops itself; give this a margin as a safety cap)")
    parser.add_argument("--steps", type=int, default=0,
                        help="train this many updates instead of for --minutes")
    parser.add_argument("--work", type=Path, default=Path("/tmp/transcli-quality"))
    parser.add_argument("--data", type=Path, help="prepared dir to use or create "
                        "(default: WORK/data); runs with the same data.* settings can share it")
    parser.add_argument("--label", help="the run's name in the table (default: WORK's name)")
    parser.add_argument("--threads", type=int, default=0, help="train.threads (0: default)")
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--checkpoint", default="best")
    parser.add_argument("--skip-train", action="store_true", help="score the existing run")
    parser.add_argument("--set", dest="sets", action="append", default=[],
                        help="extra overrides, section.key=value (data.* ones go to prepare, "
                        "decode.* ones to scoring too, also with --skip-train)")
    parser.add_argument("--table", type=Path, nargs="+",
                        help="print the table of these --work dirs' results and exit")
    args = parser.parse_args()
    if args.table:
        print_table([json.loads((w / RESULTS).read_text()) for w in args.table])
        return
    if not CORPORA.is_dir():
        sys.exit(f"{CORPORA} not found: the quality benchmark needs ../shared/corpora/en-es")
    run_benchmark(args)


if __name__ == "__main__":
    main()
