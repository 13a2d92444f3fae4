"""The CPU recipe study: which CPU recipe learns most in a fixed compute budget.

    python -m bench.studies.cpu_recipes calibrate --work /tmp/study  # CPU s per update, each
    python -m bench.studies.cpu_recipes probe --work /tmp/study --cpu-minutes 32 [--only a b]
    python -m bench.studies.cpu_recipes table --work /tmp/study

Probes run side by side, one torch thread each, so the budget is counted in CPU
time, not wall time: a variant's probe trains `budget / (its CPU seconds per update)`
updates, whatever else the machine is doing. `calibrate` measures that rate with two
short runs of each variant (the slope between 10 and 40 updates, so start-up costs
cancel). Each probe is one `python -m bench.quality` run (prepare, train, score beam 4 on
dev.tatoeba, dev.newstest2012 and test.tico19 beside Apertium) in WORK/<variant>;
`table` prints them all. The winner is then confirmed by a wall-clock hour on an idle
machine: `python -m bench.quality --config configs/cpu-1h.yaml --minutes 60`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import (
    NEVER,
    ROOT,
    data_dir,
    data_overrides,
    must,
    prepare_corpus,
    set_flags,
    transcli,
)

CONFIG = ROOT / "configs" / "small.yaml"
BF16 = ["train.cpu_precision=bf16"]
# Linear decay to 0 at the probe's end, same peak as today's (post-norm did not cope with
# lr_factor 1.0: the "decay-lr1" probe's loss stalled near 5).
DECAY = ["train.schedule=linear"]
# label: overrides of configs/small.yaml (data.* ones prepare their own data)
VARIANTS: dict[str, list[str]] = {
    "today": [],
    "decay": DECAY,
    "decay-lr1": ["train.schedule=linear", "train.lr_factor=1.0"],
    "prenorm": ["model.pre_norm=true", "train.schedule=linear", "train.lr_factor=2.0"],
    "enc6dec2": DECAY + ["model.enc_layers=6", "model.dec_layers=2"],
    "ema": DECAY + ["train.ema_decay=0.999"],
    "sampling": DECAY + ["train.sample_alpha=0.1"],
    "vocab16k": DECAY + ["data.vocab_size=16000"],
    "dropouts": DECAY + ["model.attn_dropout=0.1", "model.act_dropout=0.1"],
    "batch2k": DECAY + ["train.batch_tokens=2048"],
}


def checkpoint_for(overrides: list[str]) -> str:
    """A run with a weight average is scored on it; others on their best validation."""
    return "avg" if any(s.startswith("train.ema_decay") for s in overrides) else "best"


def prepared(work: Path, overrides: list[str]) -> Path:
    data = data_dir(work, overrides)
    must(prepare_corpus(CONFIG, data, overrides))
    return data


def cpu_seconds(command: list[str]) -> float:
    """CPU time (user + system) of a transcli command run to completion."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.NamedTemporaryFile() as log:
        must(transcli(command, Path(log.name)))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def calibrate(work: Path, labels: list[str]) -> None:
    path = work / "calibration.json"
    rates = json.loads(path.read_text()) if path.is_file() else {}
    for label in labels:
        overrides = BF16 + VARIANTS[label]
        data = prepared(work, overrides)
        train = [s for s in overrides if s not in data_overrides(overrides)] + [
            "train.threads=1", "train.valid_every=" + NEVER, "train.save_every=" + NEVER,
            "train.log_every=10"]
        costs = []
        for steps in (10, 40):
            with tempfile.TemporaryDirectory() as tmp:
                costs.append(cpu_seconds(
                    ["train", "--config", CONFIG, "--data", data, "--out", Path(tmp) / "run",
                     *set_flags(train + [f"train.max_steps={steps}"])]))
        rates[label] = (costs[1] - costs[0]) / 30
        print(f"{label:10s} {rates[label]:.3f} CPU s per update (1 thread)", flush=True)
        path.write_text(json.dumps(rates, indent=1) + "\n")


def probe(work: Path, labels: list[str], cpu_minutes: float, parallel: int) -> None:
    rates = json.loads((work / "calibration.json").read_text())
    queue = [label for label in labels if not (work / label / "results.json").is_file()]
    running: list[subprocess.Popen] = []
    while queue or running:
        while queue and len(running) < parallel:
            label = queue.pop(0)
            overrides = BF16 + VARIANTS[label]
            steps = int(cpu_minutes * 60 / rates[label])
            print(f"probe {label}: {steps} updates ({cpu_minutes:g} CPU minutes)", flush=True)
            log = open(work / f"{label}.log", "w")
            running.append(subprocess.Popen(
                [sys.executable, "-m", "bench.quality", "--config", str(CONFIG),
                 "--steps", str(steps), "--threads", "1", "--label", label,
                 "--work", str(work / label), "--data", str(prepared(work, overrides)),
                 "--checkpoint", checkpoint_for(overrides), *set_flags(overrides)],
                stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "OMP_NUM_THREADS": "1"}))
        while all(p.poll() is None for p in running):
            time.sleep(5)
        running = [p for p in running if p.poll() is None]
    table(work, labels)


def table(work: Path, labels: list[str]) -> None:
    done = [work / label for label in labels if (work / label / "results.json").is_file()]
    if not done:
        sys.exit(f"{work}: no probe has finished yet (results.json); run `probe` first")
    subprocess.run([sys.executable, "-m", "bench.quality", "--table", *map(str, done)],
                   check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["calibrate", "probe", "table"])
    parser.add_argument("--work", type=Path, default=Path("/tmp/transcli-study"))
    parser.add_argument("--only", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--cpu-minutes", type=float, default=32.0, help="budget per probe")
    parser.add_argument("--parallel", type=int, default=2, help="probes at a time")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.command == "calibrate":
        calibrate(args.work, args.only)
    elif args.command == "probe":
        probe(args.work, args.only, args.cpu_minutes, args.parallel)
    else:
        table(args.work, args.only)


if __name__ == "__main__":
    main()
