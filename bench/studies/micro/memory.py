"""Peak resident memory of one translation process as the input goes on, per
`decode.cpu_gemm` (torch's BLAS or oneDNN for the float32 products).

    .venv/bin/python -m bench.studies.micro memory --model RUN_DIR [--checkpoint avg]

Each setting runs in a subprocess of its own (greedy, 1 thread): 1,000 lines of
dev.tatoeba, then dev.newstest2012 in three chunks of 1,000, then dev.tatoeba again;
prints the peak RSS after each chunk. A process whose memory is bounded stops growing
once it has seen every batch shape; one that grows keeps climbing.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
from pathlib import Path

from bench.common import CORPORA, ROOT, cpu_translator, read_lines

GEMMS = ["blas", "onednn"]


def worker(args: argparse.Namespace) -> None:
    translator = cpu_translator(args.model, args.checkpoint, 1, [
        "decode.strategy=greedy", "decode.beam_size=1", f"decode.cpu_gemm={args.worker}"])
    tatoeba = read_lines(CORPORA / "dev.tatoeba.en", 1000)
    news = read_lines(CORPORA / "dev.newstest2012.en", 3000)
    chunks = [("tatoeba 1-1000", tatoeba)] + [
        (f"newstest {i + 1}-{i + 1000}", news[i:i + 1000]) for i in range(0, 3000, 1000)]
    for name, lines in chunks + [("tatoeba again", tatoeba)]:
        translator.translate(lines)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{args.worker:8} after {name:20} peak RSS {peak:7.0f} MiB", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="trained run dir")
    parser.add_argument("--checkpoint", default="best")
    parser.add_argument("--worker", choices=GEMMS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    for gemm in GEMMS:
        subprocess.run([sys.executable, "-m", "bench.studies.micro", "memory", "--model",
                        str(args.model), "--checkpoint", args.checkpoint, "--worker", gemm],
                       check=True, cwd=ROOT)
