"""Real text, not test sets: how a run translates what people have.

    python -m bench.robustness --model RUN [--checkpoint avg] [--lines 200]
    python -m bench.robustness --model RUN --features both       # off and on, side by side
    python -m bench.robustness --model RUN --set decode.engine=ct2 --set decode.word_reward=0

From the first --lines lines of each dev set (dev.tatoeba, dev.newstest2012 in
../shared/corpora/en-es; --sets and --corpus choose) it builds variant sets (--variants
chooses; clean always runs):

    clean       the set as it is
    caps        source and reference in ALL CAPS (scored case-insensitively)
    title       the source in Title Case (scored case-insensitively)
    emoji       an emoji inserted at a word boundary of each line
    spans       a URL, e-mail address, number, `code`, @handle, #tag, path or format
                placeholder inserted into each line (the kinds in turn)
    scripts     a word in another script (Greek, Chinese, Arabic, ...) inserted
    paragraphs  5 consecutive lines joined into one (beside the clean lines' translations
                joined the same way: sentence by sentence)

and translates each with `transcli translate` (a process of its own). Per variant it
prints BLEU and chrF (of the translation without the inserted span, against the
untouched reference, where one was inserted), beside what it is compared with (the
clean set, case-insensitively for caps and title; sentence by sentence for
paragraphs); the share of inserted spans that come out exactly once and unchanged; the
input characters dropped or replaced (`lost_characters`); the translations that loop
(`repeats.degenerate`); for caps, the share of translations in capitals. `--features
off` translates with the real-text handling off (decode.protect, truecase,
split, retry_repeats), as transcli translated before it; `both` runs the two
and prints them side by side. The header names the run and the machine; everything is
written under --work (a temp dir by default), results.json included.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Optional

import regex

from bench.common import dev_sets_parser, read_lines, run_summary, set_flags, transcli

OFF = ("decode.protect=false", "decode.truecase=false", "decode.split=false",
       "decode.retry_repeats=false")
PARAGRAPH = 5  # sentences per paragraph
VARIANTS = ["caps", "title", "emoji", "spans", "scripts", "paragraphs"]
INSERTED: dict[str, list[str]] = {
    "url": ["https://example.com/docs/install?lang=en", "http://www.test.org/a/b.html",
            "www.transcli.dev", "https://github.com/user/repo/issues/54"],
    "email": ["support@example.org", "jane.doe+news@mail.co.uk"],
    "number": ["1,299.99", "3.5", "42", "1.234,56", "12:30", "2024", "0.75", "10,000"],
    "code": ["`pip install transcli`", "`x = 1`", "`--help`"],
    "handle": ["@transcli", "@jane_doe"],
    "tag": ["#trees", "#NLP2024"],
    "path": ["/home/user/notes.txt", "C:\\Users\\me\\report.docx", "docs/INFERENCE.md"],
    "placeholder": ["{name}", "%s", "%(count)d", "{{user}}", "{0}"],
}
EMOJI = ["😀", "❤️", "👍🏽", "🎉", "🇪🇸", "👨‍👩‍👧", "🌳"]
SCRIPTS = ["λόγος", "東京", "Москва", "مرحبا", "שלום", "こんにちは", "서울"]
_LATIN_OR_ASCII = regex.compile(r"[\p{Latin}\x00-\x7f]")
_CAPITAL_START = regex.compile(r"(?<![\w'’])\w")


# ----------------------------------------------------------------------------- variants


class Variant:
    """One variant set: its source lines, references, and per line the span inserted
    (None where none was)."""

    def __init__(self, name: str, src: list[str], ref: list[str],
                 inserted: Optional[list[str]] = None, lowercase: bool = False):
        self.name, self.src, self.ref = name, src, ref
        self.inserted = inserted
        self.lowercase = lowercase  # scored case-insensitively


def insert_at_boundary(line: str, piece: str, rng: random.Random) -> str:
    """`piece` put between two words of `line` (or before its final punctuation)."""
    body = line.rstrip(".!?…\"'” ")
    spaces = [i for i, char in enumerate(body) if char == " "]
    at = rng.choice(spaces + [len(body)])
    return f"{line[:at]} {piece}{line[at:]}" if at else f"{piece} {line}"


def inserted_variant(name: str, src: list[str], ref: list[str], pick: Callable[[int], str],
                     seed: int) -> Variant:
    pieces = [pick(i) for i in range(len(src))]
    lines = [insert_at_boundary(line, piece, random.Random(f"{seed}/{name}/{i}"))
             for i, (line, piece) in enumerate(zip(src, pieces))]
    return Variant(name, lines, ref, pieces)


def variants(src: list[str], ref: list[str], seed: int = 1) -> list[Variant]:
    kinds = list(INSERTED)

    def span(i: int) -> str:
        pool = INSERTED[kinds[i % len(kinds)]]
        return pool[(i // len(kinds)) % len(pool)]

    groups = range(0, len(src) - PARAGRAPH + 1, PARAGRAPH)
    return [
        Variant("clean", src, ref),
        Variant("caps", [line.upper() for line in src], [line.upper() for line in ref],
                lowercase=True),
        Variant("title", [_CAPITAL_START.sub(lambda m: m.group().upper(), line) for line in src],
                ref, lowercase=True),
        inserted_variant("emoji", src, ref, lambda i: EMOJI[i % len(EMOJI)], seed),
        inserted_variant("spans", src, ref, span, seed),
        inserted_variant("scripts", src, ref, lambda i: SCRIPTS[i % len(SCRIPTS)], seed),
        Variant("paragraphs", [" ".join(src[i:i + PARAGRAPH]) for i in groups],
                [" ".join(ref[i:i + PARAGRAPH]) for i in groups]),
    ]


# ----------------------------------------------------------------------------- measures


def lost_characters(src: str, hyp: str) -> int:
    """Characters of `src` a translation should carry (outside ASCII and the Latin script:
    emoji, other scripts, symbols) missing from `hyp`, counted with their multiplicity,
    plus each `⁇` (sentencepiece's unknown piece) in `hyp`."""
    carried = Counter(char for char in src if not char.isspace()
                      and not _LATIN_OR_ASCII.match(char))
    have = Counter(hyp)
    return sum(max(0, count - have[char]) for char, count in carried.items()) + hyp.count("⁇")


def without(hyp: str, piece: Optional[str]) -> str:
    """`hyp` without the first copy of `piece` (the span's complement)."""
    if piece is None or piece not in hyp:
        return hyp
    return " ".join(hyp.replace(piece, "", 1).split())


def scores(hyps: list[str], refs: list[str], lowercase: bool) -> tuple[float, float]:
    from sacrebleu.metrics import BLEU, CHRF

    return (BLEU(lowercase=lowercase).corpus_score(hyps, [refs]).score,
            CHRF(lowercase=lowercase).corpus_score(hyps, [refs]).score)


def upper_share(hyps: list[str]) -> float:
    cased = [h for h in hyps if any(c.isupper() or c.islower() for c in h)]
    return sum(not any(c.islower() for c in h) for h in cased) / max(1, len(cased))


def measure(variant: Variant, hyps: list[str]) -> dict[str, Any]:
    from transcli.inference.repeats import degenerate

    pieces = variant.inserted or [None] * len(hyps)
    bleu, chrf = scores([without(h, p) for h, p in zip(hyps, pieces)], variant.ref,
                        variant.lowercase)
    result: dict[str, Any] = {
        "lines": len(hyps), "bleu": bleu, "chrf": chrf,
        "lost": sum(lost_characters(s, h) for s, h in zip(variant.src, hyps)),
        "loops": sum(degenerate(s, h) for s, h in zip(variant.src, hyps))}
    if variant.inserted:
        result["kept"] = sum(h.count(p) == 1 for h, p in zip(hyps, pieces)) / len(hyps)
    if variant.name == "caps":
        result["upper"] = upper_share(hyps)
    return result


def compared(name: str, results: dict[str, dict[str, Any]], clean_hyps: list[str],
             variant: Variant, clean: Variant) -> Optional[float]:
    """The BLEU a variant is held against: the clean set's (case-insensitive for caps and
    title), or for paragraphs the clean translations joined as the paragraphs are."""
    if name == "paragraphs":
        joined = [" ".join(clean_hyps[i:i + PARAGRAPH])
                  for i in range(0, len(variant.src) * PARAGRAPH, PARAGRAPH)]
        return scores(joined, variant.ref, False)[0]
    if variant.lowercase:
        return scores(clean_hyps, clean.ref, True)[0]
    return None if name == "clean" else results["clean"]["bleu"]


# ----------------------------------------------------------------------------- running


def translate(args: argparse.Namespace, source: list[str], work: Path, stem: str,
              settings: list[str]) -> tuple[list[str], float]:
    """The translations of `source` by `transcli translate` (one process), and its seconds."""
    (work / f"{stem}.en").write_text("".join(line + "\n" for line in source), encoding="utf-8")
    start = time.monotonic()
    problem = transcli(["translate", "--model", args.model, "--checkpoint", args.checkpoint,
                        "-i", work / f"{stem}.en", "-o", work / f"{stem}.hyp",
                        *set_flags(settings)], work / f"{stem}.log")
    seconds = time.monotonic() - start
    if problem:
        raise SystemExit(f"{stem}: {problem}")
    return (work / f"{stem}.hyp").read_text(encoding="utf-8").split("\n")[:-1], seconds


def run_set(args: argparse.Namespace, name: str, work: Path, features: str
            ) -> dict[str, dict[str, Any]]:
    src = read_lines(args.corpus / f"{name}.en", args.lines)
    ref = read_lines(args.corpus / f"{name}.es", args.lines)
    settings = [*(OFF if features == "off" else ()), *args.set]
    sets = variants(src, ref)
    results: dict[str, dict[str, Any]] = {}
    clean_hyps: list[str] = []
    for variant in sets:
        if variant.name not in args.variants and variant.name != "clean":
            continue
        hyps, seconds = translate(args, variant.src, work, f"{name}.{variant.name}.{features}",
                                  settings)
        clean_hyps = hyps if variant.name == "clean" else clean_hyps
        results[variant.name] = {**measure(variant, hyps), "seconds": seconds,
                                 "against": compared(variant.name, results, clean_hyps,
                                                     variant, sets[0])}
    return results


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in
                  Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor() or "unknown CPU")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{platform.node()}: {model}, {os.cpu_count()} cores, load average {load}"


def table(all_results: dict[str, dict[str, dict[str, dict[str, Any]]]]) -> str:
    """Rows of set, variant and features (off and on side by side)."""
    def cell(value: Any, form: str) -> str:
        return "-" if value is None else format(value, form)

    head = (f"{'set':<17}{'variant':<11}{'features':<9}{'lines':>6}{'BLEU':>7}{'chrF':>7}"
            f"{'against':>9}{'kept':>8}{'lost':>6}{'loops':>6}{'upper':>7}{'sec':>7}")
    rows = [head]
    names = next(iter(all_results.values()))
    for name in names:
        for variant in names[name]:
            for features, by_set in all_results.items():
                r = by_set[name][variant]
                rows.append(f"{name:<17}{variant:<11}{features:<9}{r['lines']:>6}"
                            f"{r['bleu']:>7.1f}{r['chrf']:>7.1f}{cell(r['against'], '9.1f'):>9}"
                            f"{cell(r.get('kept'), '8.1%'):>8}{r['lost']:>6}{r['loops']:>6}"
                            f"{cell(r.get('upper'), '7.0%'):>7}{r['seconds']:>7.1f}")
    return "\n".join(rows)


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = dev_sets_parser(__doc__)
    parser.add_argument("--variants", nargs="+", default=VARIANTS, choices=VARIANTS,
                        help="Which variants besides clean (all by default).")
    parser.add_argument("--features", choices=("on", "off", "both"), default="on")
    return parser.parse_args(argv)


def main(argv: Optional[list[str]] = None) -> None:
    args = parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="robustness-"))
    work.mkdir(parents=True, exist_ok=True)
    summary = run_summary(Path(args.model))
    print(f"run {args.model} (checkpoint {args.checkpoint}, {summary['updates']} updates); "
          f"settings: {' '.join(args.set) or 'the run config'}\nmachine {machine()}\n"
          f"work {work}", flush=True)
    features = ["off", "on"] if args.features == "both" else [args.features]
    results = {f: {name: run_set(args, name, work, f) for name in args.sets} for f in features}
    print(table(results))
    print(f"machine after: load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    (work / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
