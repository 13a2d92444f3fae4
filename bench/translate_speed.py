"""Translation speed: cached vs uncached decoding, greedy and beam 5, on real text.

    .venv/bin/python bench/translate_speed.py [--model RUN_DIR] [--lines 1000] [--threads N]

Translates the first N lines of ../shared/corpora/en-es/dev.tatoeba.en (short
conversational sentences) and dev.newstest2012.en (long news sentences) through
`Translator` -- the code `transcli translate` runs -- with greedy search and beam 5,
each with the cached decoder (one new position per step) and with the uncached
reference (the whole prefix re-run every step), in the same process. Prints
sentences/s, target tokens/s, the cached/uncached speedup, whether both gave the
same output, and the peak RSS.

With --model, a trained run's weights, tokenizer and decode settings are used. Without
it, a small-config model (configs/small.yaml) is built untrained, with a throwaway
8,000-piece sentencepiece model trained on a slice of ../shared/corpora/en-es/train.*;
an untrained model never emits EOS, so every sentence decodes to its maximum length
(a * source + b tokens): the figures then compare full-length decodes, which favours
the cache more than a trained model's shorter outputs do.

On a CPU shared with other jobs, torch's OpenMP threads spin-wait for a core the
other jobs hold: here two threads ran this benchmark up to 14x slower than one.
Run it with OMP_WAIT_POLICY=PASSIVE (or --threads 1) there; the table's header
says how many threads ran.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from transcli.checkpoint import load_trained  # noqa: E402
from transcli.config import Config, load_config  # noqa: E402
from transcli.model import Transformer  # noqa: E402
from transcli.tokenizer import TOKENIZER_FILE, Tokenizer, train_tokenizer  # noqa: E402
from transcli.translate import Translator  # noqa: E402

CORPORA = ROOT.parent / "shared" / "corpora" / "en-es"
SETS = ["dev.tatoeba.en", "dev.newstest2012.en"]
SPM_LINES = 40_000  # sentences sampled from train.{en,es} for the throwaway tokenizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="trained run dir (default: untrained small)")
    parser.add_argument("--checkpoint", default="best")
    parser.add_argument("--lines", type=int, default=1000, help="lines per test set")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if not CORPORA.is_dir():
        print(f"skipped: {CORPORA} not found (the benchmark needs the shared corpora)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        model, tokenizer, cfg, what = load_model(args, Path(tmp))
    print(f"model: {what}; CPU, torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"{args.lines} lines per set; decode: alpha {cfg.decode.length_penalty}, "
          f"max length {cfg.decode.max_len_a:g} * source + {cfg.decode.max_len_b}, "
          f"{cfg.decode.batch_tokens} source tokens per batch")
    warm_up(model, tokenizer, cfg, read_lines(CORPORA / SETS[0], 16), args.beam)
    sets = {name.removesuffix(".en"): read_lines(CORPORA / name, args.lines) for name in SETS}
    searches = {"greedy": 1, f"beam{args.beam}": args.beam}
    print(f"{'set':<18}{'search':<8}{'decoder':<10}{'sent/s':>9}{'tok/s':>10}{'seconds':>9}"
          f"{'tok/sent':>9}{'speedup':>9}{'same':>6}")
    runs: dict[tuple[str, str, bool], tuple[float, int, list[str]]] = {}
    peaks = {}
    for cached in (True, False):  # cached first, so its peak RSS can be told apart
        for set_name, lines in sets.items():
            for label, beam in searches.items():
                decode = replace(cfg.decode, beam_size=beam, n_best=1)
                translator = Translator(model, tokenizer, decode, "cpu", cached=cached)
                start = time.perf_counter()
                output = translator.translate(lines)
                seconds = time.perf_counter() - start
                runs[set_name, label, cached] = (seconds, translator.target_tokens, output)
                twin = runs[set_name, label, True]
                speedup = "" if cached else f"{seconds / twin[0]:.2f}x"
                same = "" if cached else ("yes" if output == twin[2] else "NO")
                tokens = translator.target_tokens
                print(f"{set_name:<18}{label:<8}{'cached' if cached else 'uncached':<10}"
                      f"{len(lines) / seconds:>9.1f}{tokens / seconds:>10.0f}{seconds:>9.1f}"
                      f"{tokens / len(lines):>9.1f}{speedup:>9}{same:>6}", flush=True)
        peaks[cached] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB
    print("speedup = uncached seconds / cached seconds; same = identical output text")
    print(f"peak RSS: {peaks[True]:.0f} MiB after the cached runs, "
          f"{peaks[False]:.0f} MiB after the uncached ones")


def load_model(args: argparse.Namespace, tmp: Path) -> tuple[Transformer, Tokenizer, Config, str]:
    """A trained run, or an untrained small model with a throwaway tokenizer."""
    if args.model:
        model, tokenizer, cfg = load_trained(args.model, args.checkpoint, "cpu")
        return model, tokenizer, cfg, f"trained run {args.model} ({args.checkpoint})"
    cfg = load_config(ROOT / "configs" / "small.yaml")
    # Trained in a child process so that its memory does not count in the peak RSS.
    child = multiprocessing.get_context("spawn").Process(
        target=train_tokenizer,
        args=([CORPORA / "train.en", CORPORA / "train.es"], tmp),
        kwargs=dict(vocab_size=cfg.data.vocab_size, model_type=cfg.data.tokenizer,
                    character_coverage=cfg.data.character_coverage,
                    input_sentence_size=SPM_LINES, seed=1))
    child.start()
    child.join()
    if child.exitcode != 0:
        sys.exit("sentencepiece training failed")
    tokenizer = Tokenizer(tmp / TOKENIZER_FILE)  # loaded into memory: outlives tmp
    torch.manual_seed(1)
    model = Transformer(cfg.model, tokenizer.vocab_size).eval()
    return model, tokenizer, cfg, (f"configs/small.yaml, UNTRAINED (decodes run to max "
                                   f"length), {tokenizer.vocab_size}-piece throwaway tokenizer")


def warm_up(model: Transformer, tokenizer: Tokenizer, cfg: Config, lines: list[str],
            beam: int) -> None:
    """One untimed pass of each kind, so first-call setup does not count in the first row."""
    for beam_size in (1, beam):
        for cached in (True, False):
            decode = replace(cfg.decode, beam_size=beam_size, n_best=1, max_len_b=5)
            Translator(model, tokenizer, decode, "cpu", cached=cached).translate(lines)


def read_lines(path: Path, count: int) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        return [line.rstrip("\n") for _, line in zip(range(count), handle)]


if __name__ == "__main__":
    main()
