"""The GPU path in one command per stage: `make gpu-check`, `make gpu-e2e`, `make gpu-carry`.

    python3 -m bench.gpu_check check --plan       # the stages and their allowances; no GPU
    python3 -m bench.gpu_check check              # every GPU question, in at most 9 minutes
    python3 -m bench.gpu_check e2e --minutes 5    # train base, BLEU on dev.tatoeba + newstest
    python3 -m bench.gpu_check carry              # beforehand, on any machine: fill gpu-carry/

`check` runs the other benchmarks as child processes, each stage stopped at its allowance
(STAGES): the training table (`bench.train_speed --steady` per row of ROWS), the profile
(`bench.train_speed --profile`), the translation table (`bench.translate_speed --device
cuda`) and the CUDA tests (`pytest -m gpu tests`); `e2e` is `bench.quality` on CUDA.
Figures go to stdout and to --out (default $OUT, when set). Until it has seen CUDA this
imports only the standard library: without torch or a GPU, one line and exit status 1.
It needs only what a GPU image has (`PYTHONPATH=.`, nothing installed): docs/GPU.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from bench.common import (
    CARRY,
    CORPORA,
    DEV_SETS,
    ROOT,
    Report,
    corpus_with,
    cuda_problem,
    must,
    prepare_corpus,
    prepared_dir,
    run_child,
)

TOTAL_S = 540  # what `check` may take: the device tool stops a command at 600 s
CHILD_START_S = 5  # of a row's allowance: the benchmark's process starting and stopping


@dataclass(frozen=True)
class Row:
    """One setting of the training table: a config at a batch size, with its overrides."""

    label: str
    config: str
    batch_tokens: int
    sets: tuple[str, ...]
    seconds: float  # its allowance, process start to kill
    keep: bool = False  # stopped by SIGTERM instead: its run saves a checkpoint to translate


GRAPHS = ("train.compile=true", "train.cuda_graphs=true", "train.batch_shapes=16")
ROWS = [
    Row("eager, pad 8", "gpu-10m", 12000, ("train.pad_multiple=8",), 25),
    Row("eager", "gpu-10m", 12000, (), 25, keep=True),
    Row("compiled", "gpu-10m", 12000, ("train.compile=true",), 70),
    Row("graphed", "gpu-10m", 12000, GRAPHS, 60),
    Row("eager", "base", 25000, (), 30),
    Row("compiled", "base", 25000, ("train.compile=true",), 70),
]


STAGES = {  # name: (allowance in seconds, what it runs)
    "setup": (10, "the device, the carried data"),
    "table": (sum(row.seconds for row in ROWS), "training table: each row a `python -m "
              "bench.train_speed --steady`, measured once steady, then stopped"),
    "profile": (35, "python -m bench.train_speed --profile: 20 steady gpu-10m updates"),
    "translate": (90, "python -m bench.translate_speed --device cuda --budget 80 on --model, "
                  "else on the table's gpu-10m eager run (young: its speed, not its BLEU)"),
    "tests": (125, "python -m pytest -m gpu tests (--no-tests skips it)"),
}
ALLOWANCE = {name: seconds for name, (seconds, _) in STAGES.items()}


def plan_lines(no_tests: bool = False) -> list[str]:
    """The stages `check` runs, with their allowances and the total."""
    stages = {name: stage for name, stage in STAGES.items() if not (no_tests and name == "tests")}
    lines = [f"{name:10s} {seconds:4.0f} s  {what}" for name, (seconds, what) in stages.items()]
    rows = [f"{'':10s} {row.seconds:4.0f} s    {row.config}@{row.batch_tokens} {row.label}"
            + (f" (--set {' '.join(row.sets)})" if row.sets else "") for row in ROWS]
    total = sum(seconds for seconds, _ in stages.values())
    return lines[:2] + rows + lines[2:] + [f"{'total':10s} {total:4.0f} s  (at most {TOTAL_S})"]


def start_report(name: str, out: Optional[Path]) -> Report:
    """A report headed by the device it runs on."""
    import torch

    from bench.flops import dense_bf16_peak

    props, report = torch.cuda.get_device_properties(0), Report(name, out)
    peak = dense_bf16_peak(props.name)
    report.results["device"] = props.name
    report.say(f"{name} on {props.name} (compute {props.major}.{props.minor}, "
               f"{props.total_memory / 2**30:.1f} GiB, dense bf16 peak "
               f"{f'{peak / 1e12:.0f} TFLOP/s' if peak else 'unknown'}); torch "
               f"{torch.__version__}, CUDA {torch.version.cuda}")
    return report


def prepared_data(explicit: Optional[Path], config: str = "base") -> Path:
    """The corpus prepared with configs/<config>.yaml: --data, else carried or prepared."""
    if explicit is not None and not (explicit / "manifest.json").is_file():
        must(f"gpu-check: {explicit}: not a prepared dir (no manifest.json)")
    return explicit or prepared_dir(config)


def check(args: argparse.Namespace) -> int:
    """The stages in turn, each in its allowance; exit status 1 if any failed."""
    started = time.monotonic()
    report = start_report("gpu-check", args.out)
    names = [name for name in list(STAGES)[1:] if (not args.only or name in args.only)
             and not (args.no_tests and name == "tests")]
    report.say("plan:\n  " + "\n  ".join(plan_lines(args.no_tests)))
    data = {config: prepared_data(args.data if config == "base" else None, config)
            for config in dict.fromkeys(row.config for row in ROWS)}
    stages: dict[str, Callable[[Report, dict[str, Path], Path], bool]] = {
        "table": table_stage, "profile": profile_stage, "tests": tests_stage,
        "translate": lambda report, data, work: translate_stage(report, work, args.model)}
    report.results["stages"] = {}
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        failed = []
        for name in names:
            began = time.monotonic()
            report.say(f"\n== {name} (allowance {ALLOWANCE[name]:.0f} s)")
            if not stages[name](report, data, Path(tmp) / name):
                failed.append(name)
            report.results["stages"][name] = {"seconds": round(time.monotonic() - began, 1),
                                              "ok": name not in failed}
            report.save()
    report.say(f"\ngpu-check: {time.monotonic() - started:.0f} s in all; "
               + (f"failed: {', '.join(failed)}" if failed else "every stage ran"))
    return 1 if failed else 0


def table_stage(report: Report, data: dict[str, Path], work: Path) -> bool:
    """Each row measured by `bench.train_speed --steady`; its line of the table as it comes,
    then the table."""
    from bench.train_speed import table_lines

    rows = report.results["table"] = []
    for i, row in enumerate(ROWS):
        sets = [f"train.batch_tokens={row.batch_tokens}", *row.sets]
        outcome = run_child(["bench.train_speed", "--steady", "--configs", row.config, "--data",
                             str(data[row.config]), "--device", "cuda", "--seconds",
                             str(row.seconds - CHILD_START_S), "--label", row.label, "--work",
                             str(work / str(i)), *[f"--set={item}" for item in sets]]
                            + (["--keep"] if row.keep else []), row.seconds + 60,
                            work / f"{i}.log")
        rows.append(outcome.result or {"config": row.config, "batch_tokens": row.batch_tokens,
                                       "setting": row.label, "error": outcome.problem})
        report.say(table_lines(rows[-1:])[-1])
        report.save()
    report.say(f"\nbf16 training on {report.results['device']}:\n"
               + "\n".join(table_lines(rows)))
    return not any("error" in row for row in rows)


def profile_stage(report: Report, data: dict[str, Path], work: Path) -> bool:
    from bench.train_speed import profile_lines

    outcome = run_child(["bench.train_speed", "--profile", "--configs", "gpu-10m", "--data",
                         str(data["gpu-10m"]), "--device", "cuda"], ALLOWANCE["profile"],
                        work / "profile.log")
    if outcome.result is None:
        report.results["profile"] = {"error": outcome.problem or "no figures"}
        report.say(f"profile: {report.results['profile']['error']}")
        return False
    report.results["profile"] = outcome.result
    lines = profile_lines(outcome.result)
    for line in lines:
        report.say(line)
    if report.out:
        (report.out / "gpu-profile.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return True


def translate_stage(report: Report, work: Path, model: Optional[Path] = None) -> bool:
    """bench/translate_speed.py on CUDA in its allowance, on `model` or else on the run the
    table kept; where there is none or the command fails, the stage says why and is skipped."""
    kept = next(i for i, row in enumerate(ROWS) if row.keep)
    run = model or work.parent / "table" / str(kept) / "run"
    if not any((run / "checkpoints").glob("step-*.safetensors")):
        report.say(f"translate: skipped: no trained run at {run} (the table stage keeps one; "
                   f"or give --model RUN)")
        return False
    seconds = ALLOWANCE["translate"]
    command = ["bench.translate_speed", "--model", str(run), "--checkpoint", "last",
               "--device", "cuda", "--budget", f"{seconds - 10:.0f}", "--out",
               str(report.out / "translate" if report.out else work)]
    report.say("python -m " + " ".join(command))
    outcome = run_child(command, seconds, work / "translate.log", report.say)
    report.results["translate"] = {"problem": outcome.problem, "model": str(run)}
    if outcome.problem:
        report.say(f"translate: skipped: {outcome.problem}")
    return outcome.problem is None


def tests_stage(report: Report, data: dict[str, Path], work: Path) -> bool:
    """`pytest -m gpu tests` in its allowance; the whole output in gpu-tests.log."""
    command = ["pytest", "-m", "gpu", "-rfEs", "-p", "no:cacheprovider", "tests"]
    report.say("python -m " + " ".join(command))
    outcome = run_child(command, ALLOWANCE["tests"], (report.out or work) / "gpu-tests.log")
    shown = [line for line in outcome.lines if line.startswith(("FAILED", "ERROR", "SKIPPED"))]
    for line in shown + outcome.lines[-1:]:
        report.say(f"  {line}")
    report.results["tests"] = {"problem": outcome.problem,
                               "summary": (outcome.lines or [""])[-1]}
    return outcome.problem is None


def e2e(args: argparse.Namespace) -> int:
    """`bench.quality`: base trained --minutes on CUDA, --checkpoint scored on two dev sets."""
    report = start_report("gpu-e2e", args.out)
    data = prepared_data(args.data)
    names = [f"{name}.{lang}" for name in DEV_SETS for lang in ("en", "es")]
    evals = corpus_with(names)
    if not all((evals / name).is_file() for name in names):
        must(f"gpu-check: no {', '.join(DEV_SETS)} .en/.es files in {CARRY / 'corpus'} or "
             f"{CORPORA}: run `make gpu-carry` beforehand and carry gpu-carry (docs/GPU.md)")
    command = ["bench.quality", "--config", str(ROOT / "configs" / "base.yaml"), "--data",
               str(data), "--corpus", str(evals), "--test-sets", *DEV_SETS, "--device", "cuda",
               "--minutes", f"{args.minutes + 5:g}", "--checkpoint", args.checkpoint,
               "--work", str(args.work), "--fresh",
               *[f"--set={item}" for item in [f"train.max_minutes={args.minutes}", *args.sets]]]
    report.say("python -m " + " ".join(command))
    outcome = run_child(command, args.minutes * 60 + 1200, args.work / "quality.log",
                        report.say)
    from transcli.rundir.layout import CURVES_FILE, METRICS_FILE

    results = args.work / "results.json"
    if outcome.problem is None and results.is_file():
        report.results["quality"] = json.loads(results.read_text(encoding="utf-8"))
    for name, kept in ((METRICS_FILE, "metrics.jsonl"), (CURVES_FILE, "curves.png")):
        if args.out and (args.work / "run" / name).is_file():
            shutil.copyfile(args.work / "run" / name, args.out / f"gpu-e2e-{kept}")
    report.save()
    return 0 if "quality" in report.results else 1


def carry(args: argparse.Namespace) -> int:
    """Fill gpu-carry/ (no GPU needed): the dev sets, and the corpus prepared with each
    config of the training table, without the training text it keeps (only subword
    sampling reads it), so that the folder fits the device tool's 64 MiB."""
    corpus = args.corpus or CORPORA
    names = [f"{name}.{lang}" for name in DEV_SETS for lang in ("en", "es")]
    missing = [name for name in names + ["train.en", "train.es"]
               if not (corpus / name).is_file()]
    if missing:
        must(f"gpu-check: {corpus}: missing {', '.join(missing)} (give --corpus DIR)")
    (CARRY / "corpus").mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copyfile(corpus / name, CARRY / "corpus" / name)
    for config in dict.fromkeys(row.config for row in ROWS):
        out = CARRY / f"{config}-data"
        must(prepare_corpus(ROOT / "configs" / f"{config}.yaml", out, corpus=corpus))
        for side in ("en", "es"):
            (out / f"train.{side}").unlink(missing_ok=True)
    size = sum(f.stat().st_size for f in CARRY.rglob("*") if f.is_file())
    print(f"{CARRY}: {size / 2**20:.1f} MiB; copy it into the checkout on the GPU machine "
          f"(docs/GPU.md, make gpu-carry)")
    return 0


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    stages = parser.add_subparsers(dest="stage", required=True)
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else None

    check = stages.add_parser("check", help="every GPU stage, each in its allowance")
    check.add_argument("--plan", action="store_true",
                       help="print the stages and their allowances, touch no GPU")
    check.add_argument("--no-tests", action="store_true", help="skip the CUDA tests")
    check.add_argument("--only", nargs="+", choices=list(STAGES)[1:], help="these stages only")
    check.add_argument("--model", type=Path, help="a trained run dir for the translation "
                                                  "table (default: the table's gpu-10m run)")
    e2e = stages.add_parser("e2e", help="train base for --minutes, then BLEU on dev sets")
    e2e.add_argument("--minutes", type=float, default=5.0, help="training time")
    e2e.add_argument("--work", type=Path, default=Path("/tmp/transcli-gpu-e2e"),
                     help="run dir and translations go here (the run is started afresh)")
    e2e.add_argument("--checkpoint", default="last", help="best, last or avg")
    e2e.add_argument("--set", dest="sets", action="append", default=[],
                     help="extra training overrides, section.key=value (repeatable)")
    for stage in (check, e2e):
        stage.add_argument("--data", type=Path, help="prepared dir of configs/base.yaml's data")
        stage.add_argument("--out", type=Path, default=out, help="where the figures go "
                                                                 "(default $OUT)")
    carry = stages.add_parser("carry", help="prepare the table's corpora and copy the dev "
                                            "sets into gpu-carry/ (no GPU needed)")
    carry.add_argument("--corpus", type=Path, help="dir with train.{en,es} and the dev sets "
                                                  "(default ../shared/corpora/en-es)")
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()
    if args.stage == "check" and args.plan:
        print("\n".join(plan_lines(args.no_tests)))
        return
    if args.stage != "carry" and (problem := cuda_problem()):
        must(f"gpu-check: {problem}")
    sys.exit({"check": check, "e2e": e2e, "carry": carry}[args.stage](args))


if __name__ == "__main__":
    main()
