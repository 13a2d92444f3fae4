"""The GPU path in one command per stage: `make gpu-check`, `make gpu-e2e`, `make gpu-carry`.

    python3 -m bench.gpu_check check --plan       # the stages and their allowances; no GPU
    python3 -m bench.gpu_check check              # every GPU question, in at most 9 minutes
    python3 -m bench.gpu_check check --no-tests   # the same without the CUDA tests
    python3 -m bench.gpu_check e2e --minutes 5    # train base, BLEU on dev.tatoeba + newstest
    python3 -m bench.gpu_check carry              # beforehand, on any machine: fill gpu-carry/

`check` runs its stages one after the other, each stopped at its own allowance (`--plan`
lists them; the total fits 540 s): the training table (`transcli train` in bf16 of
gpu-10m at 12K-token batches eager with lengths rounded to 8 and as shipped, compiled,
and replayed as CUDA graphs, then base at 25K eager and compiled: updates/s, target
tokens/s, MFU, padding, peak memory, seconds to the first steady update, compilations;
each measured once its rate is steady), the profile (20 steady gpu-10m updates under
torch.profiler), the translation table (`python -m bench.translate_speed --device cuda`
on `--model RUN`, else on the table's gpu-10m eager run, which is stopped by SIGTERM so that
it saves a checkpoint) and the CUDA tests (`pytest -m gpu tests`). Figures go to stdout
and, as they come, to --out (default $OUT, when set): gpu-check.log, gpu-check.json,
gpu-tests.log, gpu-profile.txt and translate/. `e2e` trains base for a set number of
minutes and scores it with `transcli evaluate --device cuda`.

It needs only what a GPU image usually has (torch with CUDA, sentencepiece, sacrebleu,
typer, tqdm, pyyaml, safetensors, matplotlib, pytest; `PYTHONPATH=.`, nothing installed).
This file imports only the standard library until it has seen CUDA, so a machine without
torch or without a GPU gets one line and exit status 1, never a traceback.

Data: gpu-carry/CONFIG-data (made by `carry`; --data names base's), else prepared on the
spot from gpu-carry/corpus or ../shared/corpora/en-es (a minute or more, not in the plan).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

TOTAL_S = 540  # what `check` may take: the device tool stops a command at 600 s


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


@dataclass(frozen=True)
class Stage:
    name: str
    seconds: float
    what: str


STAGES = [
    Stage("setup", 10, "the device, the carried data"),
    Stage("table", sum(row.seconds for row in ROWS), "training table: each row a fresh "
          "`transcli train`, measured once steady, then stopped"),
    Stage("profile", 35, "20 steady gpu-10m updates under torch.profiler"),
    Stage("translate", 90, "python -m bench.translate_speed --device cuda --budget 90 on "
          "--model, else on the table's gpu-10m eager run (young: its speed, not its BLEU)"),
    Stage("tests", 125, "python -m pytest -m gpu tests (--no-tests skips it)"),
]


def plan_lines(no_tests: bool = False) -> list[str]:
    """The stages `check` runs, with their allowances and the total."""
    stages = [s for s in STAGES if not (no_tests and s.name == "tests")]
    lines = [f"{s.name:10s} {s.seconds:4.0f} s  {s.what}" for s in stages]
    rows = [f"{'':10s} {row.seconds:4.0f} s    {row.config}@{row.batch_tokens} {row.label}"
            + (f" (--set {' '.join(row.sets)})" if row.sets else "") for row in ROWS]
    total = sum(s.seconds for s in stages)
    return lines[:2] + rows + lines[2:] + [f"{'total':10s} {total:4.0f} s  (at most {TOTAL_S})"]


def cuda_problem() -> Optional[str]:
    """Why this Python cannot run the GPU stages, or None when it can."""
    try:
        import torch
    except ImportError as exc:
        return (f"{sys.executable} cannot import torch ({exc}); run it with the Python that "
                f"has CUDA torch (PYTHON=... make gpu-check)")
    with warnings.catch_warnings():  # a driver mismatch warns; the one line below says it
        warnings.simplefilter("ignore")
        available = torch.cuda.is_available()
    if not available:
        return (f"no CUDA device here (torch {torch.__version__}: torch.cuda.is_available() "
                f"is False); run it on a GPU machine (README, section GPUs)")
    return None


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    stages = parser.add_subparsers(dest="stage", required=True)
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else None

    check = stages.add_parser("check", help="every GPU stage, each in its allowance")
    check.add_argument("--plan", action="store_true",
                       help="print the stages and their allowances, touch no GPU")
    check.add_argument("--no-tests", action="store_true", help="skip the CUDA tests")
    check.add_argument("--only", nargs="+", choices=[s.name for s in STAGES[1:]],
                       help="run these stages only")
    check.add_argument("--data", type=Path, help="prepared dir of configs/base.yaml's data")
    check.add_argument("--model", type=Path, help="a trained run dir for the translation "
                                                  "table (default: the table's gpu-10m run)")
    check.add_argument("--out", type=Path, default=out, help="where the figures go "
                                                             "(default $OUT)")

    e2e = stages.add_parser("e2e", help="train base for --minutes, then BLEU on dev sets")
    e2e.add_argument("--data", type=Path, help="prepared dir of configs/base.yaml's data")
    e2e.add_argument("--minutes", type=float, default=5.0, help="training time")
    e2e.add_argument("--work", type=Path, default=Path("/tmp/transcli-gpu-e2e"),
                     help="run dir and translations go here (replaced)")
    e2e.add_argument("--checkpoint", default="last", help="best, last or avg")
    e2e.add_argument("--set", dest="sets", action="append", default=[],
                     help="extra training overrides, section.key=value (repeatable)")
    e2e.add_argument("--out", type=Path, default=out, help=argparse.SUPPRESS)

    carry = stages.add_parser("carry", help="prepare the table's corpora and copy the dev "
                                            "sets into gpu-carry/ (no GPU needed)")
    carry.add_argument("--corpus", type=Path, help="dir with train.{en,es} and the dev sets "
                                                  "(default ../shared/corpora/en-es)")

    profile = stages.add_parser("profile", help=argparse.SUPPRESS)  # the profile's process
    profile.add_argument("--data", type=Path, required=True)
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()
    if args.stage == "check" and args.plan:
        print("\n".join(plan_lines(args.no_tests)))
        return
    if args.stage == "profile":  # it trains: OpenMP's threads wait as transcli's do
        from transcli.system import waitpolicy

        waitpolicy.choose()
    if args.stage != "carry":
        problem = cuda_problem()
        if problem:
            print(f"gpu-check: {problem}", file=sys.stderr)
            sys.exit(1)
    from bench import gpu_bench  # torch, transcli and the benchmarks: only once they can run

    sys.exit(gpu_bench.run_stage(args))


if __name__ == "__main__":
    main()
