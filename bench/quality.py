"""Quality benchmark: prepare, train for a budget, then score beside Apertium: the one
"train, then score" of bench/ (`gpu_check e2e` and the recipe study run it too).

    python -m bench.quality --config configs/small.yaml --minutes 60 --work /tmp/q/today
    python -m bench.quality --config configs/small.yaml --steps 1300 --threads 1 \\
        --set train.schedule=linear --label decay --work /tmp/q/decay --data /tmp/q/data-8k
    python -m bench.quality --table /tmp/q/today /tmp/q/decay     # the README table
    python -m bench.quality --skip-train --work /tmp/q/today       # re-score a run
    python -m bench.quality --config configs/cpu-1h.yaml --minutes 70 \\
        --set data.src_lang=es --set data.tgt_lang=en --work /tmp/q/es-en  # Spanish to English

Trains on --corpus/train for --minutes (then SIGTERM: transcli saves and exits; the same
--work resumes unless --fresh) or --steps updates, then scores a checkpoint on
--test-sets with `transcli evaluate`, and Apertium (`apt-get install apertium-eng-spa`)
where installed, in the direction data.src_lang / data.tgt_lang give (en to es by
default). Writes results.json and everything else under --work (and --data).
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
    languages,
    must,
    prepare_corpus,
    run_summary,
    score_set,
    set_flags,
    transcli,
)

RESULTS = "results.json"
SCORE_S = 3600  # a bound on scoring one set
APERTIUM = {"en": "eng", "es": "spa"}  # Apertium's names of the languages


def score_apertium(name: str, args: argparse.Namespace) -> Optional[dict]:
    """Apertium line by line (-u drops its unknown-word marks); None when not installed."""
    if shutil.which("apertium") is None:
        return None
    src, tgt = languages(args.sets)
    hyp = args.work / f"{name}.apertium.{tgt}"
    if not hyp.is_file():
        source = (args.corpus / f"{name}.{src}").read_text(encoding="utf-8").splitlines()
        pair = f"{APERTIUM[src]}-{APERTIUM[tgt]}"
        out = subprocess.run(["apertium", "-u", pair], input="\n".join(source) + "\n",
                             capture_output=True, text=True, check=True).stdout
        lines = [line.strip() for line in out.rstrip("\n").split("\n")]
        if len(lines) != len(source):
            sys.exit(f"apertium returned {len(lines)} lines for {len(source)} on {name}")
        hyp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = args.work / f"{name}.apertium.json"
    must(transcli(["evaluate", "--hyp", hyp, "--ref", args.corpus / f"{name}.{tgt}", "--json"],
                  args.work / f"{name}.apertium.log", stdout=result))
    return json.loads(result.read_text(encoding="utf-8"))


def scores(args: argparse.Namespace, run: Path, overrides: list[str]) -> dict[str, Any]:
    """BLEU and chrF of the run's --checkpoint, and of Apertium, on each set."""
    found: dict[str, Any] = {}
    flags = [*(["--device", args.device] if args.device else []),
             *set_flags(item for item in overrides if item.startswith("decode."))]
    for name in args.test_sets:
        ours = score_set(run, args.checkpoint, args.corpus, name, args.work, flags, SCORE_S,
                         languages(args.sets))
        must(ours.get("error"))
        found[name] = {"bleu": ours["bleu"], "chrf": ours["chrf"], "lines": ours["lines"],
                       "signature": ours["signatures"]}
        theirs = score_apertium(name, args)
        if theirs:
            found[name]["apertium"] = {"bleu": theirs["bleu"], "chrf": theirs["chrf"]}
    return found


def run_benchmark(args: argparse.Namespace) -> None:
    args.work.mkdir(parents=True, exist_ok=True)
    run = args.work / "run"
    overrides = list(args.sets) + ([f"train.threads={args.threads}"] if args.threads else [])
    overrides += [f"train.device={args.device}"] if args.device else []
    if args.steps:
        overrides += [f"train.max_steps={args.steps}", "train.max_minutes=0",
                      "train.decay_minutes=0"]
    spent = None
    if not args.skip_train:  # to the step budget, or SIGTERM at --minutes: transcli saves
        data = args.data or args.work / "data"
        must(prepare_corpus(args.config, data, overrides, args.corpus))
        resume = (run / "config.yaml").is_file() and not args.fresh
        start = time.monotonic()
        must(Child(["train", "--config", args.config, "--data", data, "--out", run,
                    *set_flags(item for item in overrides if not item.startswith("data.")),
                    "--resume" if resume else "--force"]).wait(
                        None if args.steps else args.minutes * 60, stop=True))
        spent = (time.monotonic() - start) / 60
        print(f"trained {spent:.1f} min", flush=True)
    summary = run_summary(run)
    results: dict[str, Any] = {
        "label": args.label or args.work.name, "config": str(args.config), "sets": args.sets,
        "budget": f"{args.steps} updates" if args.steps else f"{args.minutes:g} min",
        "minutes": spent, "checkpoint": args.checkpoint,
        "load_average_end": os.getloadavg()[0], "updates": summary["updates"],
        "tgt_tokens_per_s": summary["tgt_tok_s"] or 0.0,
        "last_valid": summary["last_valid"] or {}, "scores": scores(args, run, overrides)}
    (args.work / RESULTS).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print("\n".join(table_lines([results])))


def table_lines(runs: list[dict[str, Any]]) -> list[str]:
    """Markdown: one row per run (a run with an "error" says it), then Apertium's row
    (from the first run that has it); the columns are the first scored run's sets."""
    names = next((list(r["scores"]) for r in runs if "scores" in r), list(SCORED_SETS))
    lines = ["| variant | budget | updates | tgt tok/s |"
             + "".join(f" {name} BLEU | chrF |" for name in names),
             "|" + "---|" * (4 + 2 * len(names))]
    for r in runs:
        if "error" in r:
            lines.append(f"| {r['label']} | {r['error']} |" + " |" * (2 + 2 * len(names)))
            continue
        cells = "".join(f" {r['scores'][n]['bleu']:.1f} | {r['scores'][n]['chrf']:.1f} |"
                        for n in names)
        lines.append(f"| {r['label']} | {r['budget']} | {r['updates']} | "
                     f"{r['tgt_tokens_per_s']:,.0f} |{cells}")
    apertium = next((r for r in runs if "apertium" in r.get("scores", {}).get(names[0], {})),
                    None)
    if apertium:
        cells = "".join(f" {apertium['scores'][n]['apertium']['bleu']:.1f} | "
                        f"{apertium['scores'][n]['apertium']['chrf']:.1f} |" for n in names)
        lines.append(f"| Apertium (rule-based) | | | |{cells}")
    return lines


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
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
    parser.add_argument("--corpus", type=Path, default=CORPORA,
                        help="train.{en,es} and the scored sets' .en/.es files")
    parser.add_argument("--test-sets", nargs="+", default=list(SCORED_SETS),
                        help="the sets scored (default: %(default)s)")
    parser.add_argument("--label", help="the run's name in the table (default: WORK's name)")
    parser.add_argument("--threads", type=int, default=0, help="train.threads (0: default)")
    parser.add_argument("--device", help="train.device, and evaluate's (default: the config's)")
    parser.add_argument("--checkpoint", default="best")
    parser.add_argument("--fresh", action="store_true",
                        help="train the run afresh, never resume it")
    parser.add_argument("--skip-train", action="store_true", help="score the existing run")
    parser.add_argument("--set", dest="sets", action="append", default=[],
                        help="extra overrides, section.key=value (data.* ones go to prepare, "
                        "decode.* ones to scoring too, also with --skip-train)")
    parser.add_argument("--table", type=Path, nargs="+",
                        help="print the table of these --work dirs' results and exit")
    return parser.parse_args(argv)


def main(argv: Optional[list[str]] = None) -> None:
    args = parse_args(argv)
    if args.table:
        print("\n".join(table_lines([json.loads((w / RESULTS).read_text())
                                     for w in args.table])))
        return
    if not args.corpus.is_dir():
        sys.exit(f"{args.corpus} not found: the quality benchmark needs a corpus "
                 f"(../shared/corpora/en-es, or --corpus)")
    run_benchmark(args)


if __name__ == "__main__":
    main()
