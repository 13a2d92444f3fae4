"""Speed of `--int8` (torch engine) with its output layer in int8, as it runs now, against
int8 Linear layers with the output layer in float32, as it ran before.

    python -m bench.studies.micro int8-speed --model RUN_DIR [--checkpoint avg] [--threads 1 2]

One process loads the run's model once with `--int8`; the two output products take turns
on the same slice of lines (`--pairs` pairs of `--lines` lines, each pair in the other
order than the one before, walking through the first 1,000 lines of
../shared/corpora/en-es/dev.tatoeba and dev.newstest2012), greedy and beam 5, no word
reward. On a machine whose speed drifts from minute to minute, each pair's ratio (time
before / time now) compares like with like; the median ratio and its quartiles are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from bench.common import CORPORA, cpu_translator, read_lines
from transcli.model.transformer import output_product

CASES = [("dev.tatoeba", "greedy", 200), ("dev.newstest2012", "greedy", 125),
         ("dev.tatoeba", "beam", 125), ("dev.newstest2012", "beam", 100)]


def ratios(model_dir: str, checkpoint: str, name: str, strategy: str, threads: int,
           lines: int, pairs: int) -> list[float]:
    """Time with the float32 output product over time with the int8 one, per pair."""
    translator = cpu_translator(model_dir, checkpoint, threads, [
        f"decode.strategy={strategy}", "decode.beam_size=5", "decode.quantize=int8"])
    model = translator.engine.model
    products = {"now": model.output_product, "before": output_product}
    text = read_lines(CORPORA / f"{name}.en", 1000)
    translator.translate(text[:8])  # first-call set-up, not timed
    found = []
    for pair in range(pairs):
        first = (pair * lines) % len(text)
        part = text[first:first + lines]
        seconds = {}
        for way in (["before", "now"] if pair % 2 == 0 else ["now", "before"]):
            model.output_product = products[way]
            start = time.perf_counter()
            translator.translate(part)
            seconds[way] = time.perf_counter() - start
        found.append(seconds["before"] / seconds["now"])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="trained run dir")
    parser.add_argument("--checkpoint", default="avg")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--pairs", type=int, default=8)
    args = parser.parse_args()
    print(f"model {args.model} ({args.checkpoint}); load average {os.getloadavg()[0]:.2f}")
    for threads in args.threads:
        for name, strategy, lines in CASES:
            found = ratios(args.model, args.checkpoint, name, strategy, threads, lines,
                           args.pairs)
            low, _, high = statistics.quantiles(found, n=4)
            print(f"{threads} thread(s) {name:17s} {strategy:6s} before/now "
                  f"{statistics.median(found):.3f} (quartiles {low:.3f}-{high:.3f}, "
                  f"{args.pairs} pairs of {lines} lines)", flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")

