"""The CPU recipe study: which CPU recipe learns most in a fixed compute budget.

    python -m bench.studies.cpu_recipes calibrate --work /tmp/study  # CPU s per update, each
    python -m bench.studies.cpu_recipes probe --work /tmp/study --cpu-minutes 64 [--only a b]
    python -m bench.studies.cpu_recipes table --work /tmp/study
    python -m bench.studies.cpu_recipes probe --round 1 --work /tmp/study1  # the first round

Probes run side by side, one torch thread each, so the budget is counted in CPU
time, not wall time: a variant's probe trains `budget / (its CPU seconds per update)`
updates, whatever else the machine is doing. `calibrate` measures that rate with two
short runs of each variant (the slope between 10 and 40 updates, so start-up costs
cancel). Each probe is one `python -m bench.quality` run (prepare, train, score beam 4 on
dev.tatoeba, dev.newstest2012 and test.tico19 beside Apertium) in WORK/<variant>;
`table` prints them all. The winner is then confirmed by a wall-clock hour on an idle
machine: `python -m bench.quality --config configs/cpu-1h.yaml --minutes 70`.

Round 1 (`--round 1`) varied configs/small.yaml and found the recipe of
configs/cpu-1h.yaml; round 2 (the default) varied configs/cpu-1h.yaml in its 3+3 x 256
shape and found its 2+2 x 320 one; round 3 (`--round 3`) varies configs/cpu-1h.yaml as it
is. Rounds 2 and 3 end the decay with the probe's updates instead of the clock
(docs/CPU-RECIPE.md has the rounds run so far).
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

BF16 = ["train.cpu_precision=bf16"]
# Linear decay to 0 at the probe's end, same peak as today's (post-norm did not cope with
# lr_factor 1.0: the "decay-lr1" probe's loss stalled near 5).
DECAY = ["train.schedule=linear"]
# Round 1, label: overrides of configs/small.yaml (data.* ones prepare their own data).
ROUND_1: dict[str, list[str]] = {
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
# configs/cpu-1h.yaml's shape before round two chose 2+2 x 320.
SHAPE_3X256 = ["model.enc_layers=3", "model.dec_layers=3", "model.d_model=256",
               "model.d_ff=1024", "model.heads=4", "train.lr_factor=0.5"]
# Round 2, label: overrides of configs/cpu-1h.yaml in its 3+3 x 256 shape. The two shapes
# cost about what 3+3 x 256 costs per target token (12 d^2 per encoder layer, 16 d^2 per
# decoder layer, plus the 8K output layer), and keep its peak learning rate (lr_factor x
# sqrt(d/256)): 6+6 x 192 is pre-norm, since 6 post-norm encoder layers stalled in round 1.
ROUND_2: dict[str, list[str]] = {label: SHAPE_3X256 + overrides for label, overrides in {
    "cpu1h": [],
    "long2x": ["train.long_weight=2"],
    "vocab16k": ["data.vocab_size=16000"],
    "deep6x192": ["model.enc_layers=6", "model.dec_layers=6", "model.d_model=192",
                  "model.d_ff=768", "model.pre_norm=true", "train.lr_factor=0.433"],
    "wide2x320": ["model.enc_layers=2", "model.dec_layers=2", "model.d_model=320",
                  "model.d_ff=1280", "model.heads=5", "train.lr_factor=0.559"],
}.items()}
# Round 3, label: overrides of configs/cpu-1h.yaml as it is (2+2 x 320). No slower weight
# average: the EMA's warm-up keeps its decay below 0.999 until update 8,990, so a probe
# or an hour with ema_decay 0.9995 would train and average exactly as cpu1h does.
ROUND_3: dict[str, list[str]] = {
    "cpu1h": [],
    "dropout0.1": ["model.dropout=0.1"],
    "sampling": ["train.sample_alpha=0.1"],
}
ROUNDS = {1: (ROOT / "configs" / "small.yaml", ROUND_1),
          2: (ROOT / "configs" / "cpu-1h.yaml", ROUND_2),
          3: (ROOT / "configs" / "cpu-1h.yaml", ROUND_3)}


def checkpoint_for(config: Path, overrides: list[str]) -> str:
    """A run with a weight average is scored on it; others on their best validation."""
    from transcli.config.loading import load_config

    train = [item for item in overrides if not item.startswith("data.")]
    return "avg" if load_config(config, train).train.ema_decay else "best"


def prepared(work: Path, config: Path, overrides: list[str]) -> Path:
    data = data_dir(work, overrides)
    must(prepare_corpus(config, data, overrides))
    return data


def cpu_seconds(command: list[str]) -> float:
    """CPU time (user + system) of a transcli command run to completion."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.NamedTemporaryFile() as log:
        must(transcli(command, Path(log.name)))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def calibrate(work: Path, config: Path, variants: dict[str, list[str]]) -> None:
    path = work / "calibration.json"
    rates = json.loads(path.read_text()) if path.is_file() else {}
    for label, changes in variants.items():
        overrides = BF16 + changes
        data = prepared(work, config, overrides)
        train = [s for s in overrides if s not in data_overrides(overrides)] + [
            "train.threads=1", "train.valid_every=" + NEVER, "train.save_every=" + NEVER,
            "train.log_every=10", "train.decay_minutes=0", "train.max_minutes=0"]
        costs = []
        for steps in (10, 40):
            with tempfile.TemporaryDirectory() as tmp:
                costs.append(cpu_seconds(
                    ["train", "--config", config, "--data", data, "--out", Path(tmp) / "run",
                     *set_flags(train + [f"train.max_steps={steps}"])]))
        rates[label] = (costs[1] - costs[0]) / 30
        print(f"{label:10s} {rates[label]:.3f} CPU s per update (1 thread)", flush=True)
        path.write_text(json.dumps(rates, indent=1) + "\n")


def probe(work: Path, config: Path, variants: dict[str, list[str]], cpu_minutes: float,
          parallel: int) -> None:
    rates = json.loads((work / "calibration.json").read_text())
    queue = [label for label in variants if not (work / label / "results.json").is_file()]
    running: list[subprocess.Popen] = []
    while queue or running:
        while queue and len(running) < parallel:
            label = queue.pop(0)
            overrides = BF16 + variants[label]
            steps = int(cpu_minutes * 60 / rates[label])
            print(f"probe {label}: {steps} updates ({cpu_minutes:g} CPU minutes)", flush=True)
            log = open(work / f"{label}.log", "w")
            running.append(subprocess.Popen(
                [sys.executable, "-m", "bench.quality", "--config", str(config),
                 "--steps", str(steps), "--threads", "1", "--label", label,
                 "--work", str(work / label), "--data", str(prepared(work, config, overrides)),
                 "--checkpoint", checkpoint_for(config, overrides), *set_flags(overrides)],
                stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "OMP_NUM_THREADS": "1"}))
        while all(p.poll() is None for p in running):
            time.sleep(5)
        running = [p for p in running if p.poll() is None]
    table(work, list(variants))


def table(work: Path, labels: list[str]) -> None:
    done = [work / label for label in labels if (work / label / "results.json").is_file()]
    if not done:
        sys.exit(f"{work}: no probe has finished yet (results.json); run `probe` first")
    subprocess.run([sys.executable, "-m", "bench.quality", "--table", *map(str, done)],
                   check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["calibrate", "probe", "table"])
    parser.add_argument("--round", type=int, choices=list(ROUNDS), default=2,
                        help="1: variants of configs/small.yaml; 2: of configs/cpu-1h.yaml's "
                        "earlier 3+3 shape; 3: of configs/cpu-1h.yaml")
    parser.add_argument("--work", type=Path, default=Path("/tmp/transcli-study"))
    parser.add_argument("--only", nargs="+", metavar="LABEL", help="these variants: "
                        + "; ".join(f"round {n}: {' '.join(v)}" for n, (_, v) in ROUNDS.items()))
    parser.add_argument("--cpu-minutes", type=float, default=64.0, help="budget per probe")
    parser.add_argument("--parallel", type=int, default=2, help="probes at a time")
    args = parser.parse_args()
    config, variants = ROUNDS[args.round]
    unknown = [label for label in args.only or () if label not in variants]
    if unknown:
        parser.error(f"round {args.round} has no variant {unknown[0]!r} "
                     f"(it has {', '.join(variants)})")
    variants = {label: variants[label] for label in args.only or variants}
    args.work.mkdir(parents=True, exist_ok=True)
    if args.command == "calibrate":
        calibrate(args.work, config, variants)
    elif args.command == "probe":
        probe(args.work, config, variants, args.cpu_minutes, args.parallel)
    else:
        table(args.work, list(variants))


if __name__ == "__main__":
    main()
