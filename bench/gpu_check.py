"""The GPU path in one command per stage: `make gpu-check`, `make gpu-e2e`, `make gpu-carry`.

    python3 -m bench.gpu_check check              # GPU tests, then training throughput
    python3 -m bench.gpu_check e2e --minutes 5    # train base, BLEU on dev.tatoeba + newstest
    python3 -m bench.gpu_check carry              # beforehand, on any machine: fill gpu-carry/

`check` runs tests/test_gpu.py, then times `transcli train` in bf16, eager and
torch.compile'd, of each --settings CONFIG:BATCH_TOKENS (default base at the paper's
25K-token batches and small at 4K): updates/s, target tokens/s after warm-up, MFU
(bench/flops.py), padding, peak GPU memory, the first updates' seconds (compilation)
and recompiles, in one table. `e2e` trains base for a set number of minutes and scores it
with `transcli evaluate --device cuda`. Each stage fits in 10 minutes. Figures go to
stdout and, when $OUT is set, into $OUT as .json and .log files.

It needs only what a GPU image usually has (torch with CUDA, sentencepiece, sacrebleu,
typer, tqdm, pyyaml, safetensors, matplotlib; `PYTHONPATH=.`, nothing installed). This
file imports only the standard library until it has seen CUDA, so a machine without
torch or without a GPU gets one line and exit status 1, never a traceback.

Data: each config's prepared corpus (--data for base), else gpu-carry/CONFIG-data (made
by `carry`), else prepared on the spot from gpu-carry/corpus or ../shared/corpora/en-es.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Optional


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

    check = stages.add_parser("check", help="GPU tests, then base training throughput")
    check.add_argument("--data", type=Path, help="prepared dir of configs/base.yaml's data")
    check.add_argument("--settings", nargs="+", default=["base:25000", "small:4096"],
                       help="CONFIG:BATCH_TOKENS to time, each eager then compiled")
    check.add_argument("--seconds", type=float, default=30.0,
                       help="measured training time per setting, after warm-up")
    check.add_argument("--compile-seconds", type=float, default=150.0,
                       help="time allowed for the first compiled run's compilation")
    check.add_argument("--budget", type=float, default=560.0,
                       help="wall seconds for the whole stage: settings that would not fit "
                            "are skipped (the device tool stops a command at 600 s)")
    check.add_argument("--no-tests", action="store_true", help="skip tests/test_gpu.py")
    check.add_argument("--no-compile", action="store_true", help="time eager mode only")

    e2e = stages.add_parser("e2e", help="train base for --minutes, then BLEU on dev sets")
    e2e.add_argument("--data", type=Path, help="prepared dir of configs/base.yaml's data")
    e2e.add_argument("--minutes", type=float, default=5.0, help="training time")
    e2e.add_argument("--work", type=Path, default=Path("/tmp/transcli-gpu-e2e"),
                     help="run dir and translations go here (replaced)")
    e2e.add_argument("--checkpoint", default="last", help="best, last or avg")
    e2e.add_argument("--set", dest="sets", action="append", default=[],
                     help="extra training overrides, section.key=value (repeatable)")

    carry = stages.add_parser("carry", help="prepare base and copy the dev sets into "
                                            "gpu-carry/ (no GPU needed)")
    carry.add_argument("--corpus", type=Path, help="dir with train.{en,es} and the dev sets "
                                                  "(default ../shared/corpora/en-es)")
    carry.add_argument("--with-train", action="store_true",
                       help="also copy train.{en,es} (to prepare on the GPU machine instead)")

    measure = stages.add_parser("measure", help=argparse.SUPPRESS)  # one setting, for check
    measure.add_argument("--config", default="base")
    measure.add_argument("--data", type=Path, required=True)
    measure.add_argument("--batch-tokens", type=int, required=True)
    measure.add_argument("--seconds", type=float, required=True)
    measure.add_argument("--warmup-seconds", type=float, required=True)
    measure.add_argument("--compile", action="store_true")
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()
    if args.stage != "carry":
        problem = cuda_problem()
        if problem:
            print(f"gpu-check: {problem}", file=sys.stderr)
            sys.exit(1)
    from bench import gpu_bench  # torch, transcli and the benchmarks: only once they can run

    sys.exit(gpu_bench.run_stage(args))


if __name__ == "__main__":
    main()
