"""Quality benchmark: prepare -> train for a time budget -> evaluate, beside Apertium.

    python bench/quality.py --config configs/small.yaml --minutes 60
    python bench/quality.py --skip-train --work /tmp/transcli-quality   # re-score a run

Trains on ../shared/corpora/en-es/train, stops training after --minutes with
SIGTERM (transcli saves and exits cleanly), then scores the best checkpoint on
dev.tatoeba, dev.newstest2012 and test.tico19 with `transcli evaluate`, and the
rule-based Apertium (`apt-get install apertium-eng-spa`) on the same files with
the same scorer. Everything is written under --work, never into the repository.
A second run with the same --work resumes training where the first stopped.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ROOT.parent / "shared" / "corpora" / "en-es"
SETS = ["dev.tatoeba", "dev.newstest2012", "test.tico19"]


def transcli(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "transcli", *args], check=True, **kwargs)


def prepare(config: Path, work: Path) -> Path:
    data = work / "data"
    if not (data / "manifest.json").is_file():
        transcli("prepare", "--config", str(config), "--src-file", str(CORPORA / "train.en"),
                 "--tgt-file", str(CORPORA / "train.es"), "--out", str(data))
    return data


def train(config: Path, data: Path, run: Path, minutes: float, extra: list[str]) -> float:
    """Train until the budget runs out (then SIGTERM: finish the step, save, exit 0)."""
    args = [sys.executable, "-m", "transcli", "train", "--config", str(config),
            "--data", str(data), "--out", str(run), *extra]
    if (run / "config.yaml").is_file():
        args.append("--resume")
    start = time.monotonic()
    process = subprocess.Popen(args)
    try:
        process.wait(timeout=minutes * 60)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)
        process.wait()
    if process.returncode != 0:
        sys.exit(f"training failed with exit status {process.returncode}")
    return (time.monotonic() - start) / 60


def score_model(run: Path, name: str, work: Path, beam: int, checkpoint: str) -> dict:
    result = transcli("evaluate", "--model", str(run), "--checkpoint", checkpoint,
                      "--src", str(CORPORA / f"{name}.en"), "--ref", str(CORPORA / f"{name}.es"),
                      "--beam-size", str(beam), "--hyp-out", str(work / f"{name}.transcli.es"),
                      "--json", capture_output=True, text=True)
    return json.loads(result.stdout)


def score_apertium(name: str, work: Path) -> dict | None:
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
    result = transcli("evaluate", "--hyp", str(hyp), "--ref", str(CORPORA / f"{name}.es"),
                      "--json", capture_output=True, text=True)
    return json.loads(result.stdout)


def last_validation(run: Path) -> dict:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    valid = [row for row in rows if "valid_bleu" in row or "valid_loss" in row]
    return {"steps": rows[-1]["step"] if rows else 0, **(valid[-1] if valid else {})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "small.yaml")
    parser.add_argument("--minutes", type=float, default=60.0, help="training time budget")
    parser.add_argument("--work", type=Path, default=Path("/tmp/transcli-quality"))
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--checkpoint", default="best")
    parser.add_argument("--skip-train", action="store_true", help="score the existing run")
    parser.add_argument("--set", dest="sets", action="append", default=[],
                        help="extra training overrides, section.key=value")
    args = parser.parse_args()
    if not CORPORA.is_dir():
        sys.exit(f"{CORPORA} not found: the quality benchmark needs ../shared/corpora/en-es")
    args.work.mkdir(parents=True, exist_ok=True)
    run = args.work / "run"
    if not args.skip_train:
        data = prepare(args.config, args.work)
        extra = [item for s in args.sets for item in ("--set", s)]
        spent = train(args.config, data, run, args.minutes, extra)
        print(f"trained {spent:.1f} min")
    print(f"run {run}: {json.dumps(last_validation(run))}")
    print(f"\n{'set':18s} {'lines':>6s} {'transcli BLEU':>14s} {'chrF':>6s} "
          f"{'Apertium BLEU':>14s} {'chrF':>6s}")
    for name in SETS:
        ours = score_model(run, name, args.work, args.beam_size, args.checkpoint)
        theirs = score_apertium(name, args.work)
        ref = (f"{theirs['bleu']:14.1f} {theirs['chrf']:6.1f}" if theirs
               else f"{'(not installed)':>21s}")
        print(f"{name:18s} {ours['lines']:6d} {ours['bleu']:14.1f} {ours['chrf']:6.1f} {ref}")
    print(f"\nsignature: {ours['signatures']}")


if __name__ == "__main__":
    main()
