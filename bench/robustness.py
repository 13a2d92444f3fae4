"""Real text, not test sets: how a run translates what people have.

    python -m bench.robustness --model RUN [--checkpoint avg] [--lines 200]
    python -m bench.robustness --model RUN --features both       # off and on, side by side
    python -m bench.robustness --model RUN --set decode.engine=ct2 --set decode.word_reward=0

From the first --lines lines of each dev set (dev.tatoeba, dev.newstest2012 in
../shared/corpora/en-es; --sets and --corpus choose), its side in the run's source
language (a Spanish to English run reads the Spanish side), it builds variant sets
(--variants chooses; clean always runs):

    clean       the set as it is
    caps        source and reference in ALL CAPS (scored case-insensitively)
    title       the source in Title Case (scored case-insensitively)
    emoji       an emoji inserted at a word boundary of each line
    spans       a URL, e-mail address, number, `code`, @handle, #tag, path or format
                placeholder inserted into each line (the kinds in turn)
    scripts     a word in another script (Greek, Chinese, Arabic, ...) inserted
    paragraphs  5 consecutive lines joined into one (beside the clean lines' translations
                joined the same way: sentence by sentence)
    identifiers a name a translation keeps (Node.js, C++, COVID-19, iPhone 15 Pro) inserted
    versions    a version (v1.4.2-rc1, 10.2.154.26, Python 3.12) inserted
    prices      an amount with its currency (€5, US$5.40, 1.234,56 €, 20 USD) inserted
    long        10 consecutive lines joined into one sentence by ", and" (", y" in
                Spanish): a sentence longer than the model's length limit allows for
    oneword     one word of each line alone (no reference: only empty lines count)
    heldout     real lines of release notes, READMEs and pricing pages
                (bench/data/heldout.tsv, which the protection code never reads), each
                with the spans that must come back exactly (no reference)

and translates each with `transcli translate` (a process of its own). Per variant it
prints BLEU and chrF (of the translation without the inserted span, against the
untouched reference, where one was inserted), beside what it is compared with (the
clean set, case-insensitively for caps and title; sentence by sentence for
paragraphs); the share of inserted spans that come out exactly once and unchanged; the
input characters dropped or replaced (`lost_characters`); the translations that loop
(`repeats.degenerate`); for caps, the share of translations in capitals; the lines
whose numbers changed (`digits`: the digit runs of source and translation differ), that
came back empty, short (under two fifths of the source's letters: cut, or a sentence
lost) or untranslated (the source as written). The span kinds of these sets are written
here, never taken from transcli's table, so that they test it. `--features
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

from bench.common import (
    dev_sets_parser,
    read_lines,
    run_languages,
    run_summary,
    set_flags,
    transcli,
)

OFF = ("decode.protect=false", "decode.truecase=false", "decode.split=false",
       "decode.retry_repeats=false")
PARAGRAPH = 5  # sentences per paragraph
VARIANTS = ["caps", "title", "emoji", "spans", "scripts", "paragraphs", "identifiers",
            "versions", "prices", "long", "oneword", "heldout"]
LONG = 10  # lines per long sentence
AND = {"en": "and", "es": "y"}  # what joins the clauses of a long sentence
HELDOUT = Path(__file__).resolve().parent / "data" / "heldout.tsv"
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
IDENTIFIERS = ["Node.js", "C++", "COVID-19", "iPhone 15 Pro", "JavaScript", "ISO-8859-1",
               "H2O", "3x", "macOS", "PostgreSQL", "C#", "x86_64", "GitHub", "IPv6", "Vue.js",
               "eBay", "MP3", "Wi-Fi 6", "USB-C", "ASP.NET"]
VERSIONS = ["v1.4.2-rc1", "2.0.1", "v18.15.0", "Python 3.12", "Node.js 20", "1.0.0-beta.2",
            "10.2.154.26", "r27c", "4.4.3", "Android 14"]
PRICES = ["€5", "US$5.40", "$19.99", "£1.2bn", "1.234,56 €", "20 USD", "$3k", "¥500",
          "€2,50", "A$12", "$1,299.99", "£4.50"]
EMOJI = ["😀", "❤️", "👍🏽", "🎉", "🇪🇸", "👨‍👩‍👧", "🌳"]
SCRIPTS = ["λόγος", "東京", "Москва", "مرحبا", "שלום", "こんにちは", "서울"]
_LATIN_OR_ASCII = regex.compile(r"[\p{Latin}\x00-\x7f]")
_DIGITS = regex.compile(r"\d+")
_LETTER = regex.compile(r"\p{L}")
_CAPITAL_START = regex.compile(r"(?<![\w'’])\w")


# ----------------------------------------------------------------------------- variants


class Variant:
    """One variant set: its source lines, references, and per line the span inserted
    (None where none was)."""

    def __init__(self, name: str, src: list[str], ref: Optional[list[str]],
                 inserted: Optional[list[str]] = None, lowercase: bool = False,
                 kept: Optional[list[list[str]]] = None):
        self.name, self.src, self.ref = name, src, ref  # no ref: not scored
        self.inserted = inserted
        self.lowercase = lowercase  # scored case-insensitively
        # per line, the spans that must come back once each: the inserted one, or given
        self.kept = kept if kept is not None else (
            [[piece] for piece in inserted] if inserted else None)


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


def variants(src: list[str], ref: list[str], seed: int = 1,
             languages: tuple[str, str] = ("en", "es")) -> list[Variant]:
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
        *(inserted_variant(name, src, ref, lambda i, pool=pool: pool[i % len(pool)], seed)
          for name, pool in (("identifiers", IDENTIFIERS), ("versions", VERSIONS),
                             ("prices", PRICES))),
        Variant("long", *(joined_sentences(lines, LONG, AND[language]) for lines, language
                          in zip((src, ref), languages))),
        Variant("oneword", [one_word(line, i) for i, line in enumerate(src)], None),
        heldout(),
    ]


def joined_sentences(lines: list[str], size: int, word: str) -> list[str]:
    """Each `size` lines as one sentence: "One, and two, and three."."""
    def body(line: str) -> str:
        return line.rstrip().rstrip(".!?…")

    return [f", {word} ".join(body(line) for line in lines[i:i + size]) + "."
            for i in range(0, len(lines) - size + 1, size)]


def one_word(line: str, index: int) -> str:
    """A word of `line` alone, without its punctuation (the index picks which)."""
    words = [word.strip(".,;:!?¿¡\"'()") for word in line.split()]
    words = [word for word in words if word] or [line.strip()]
    return words[index % len(words)]


def heldout(path: Path = HELDOUT) -> Variant:
    """The held-out lines and, per line, the spans that must come back."""
    src, kept = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            text, *spans = line.split("\t")
            src.append(text)
            kept.append([span for span in spans if span])
    return Variant("heldout", src, None, kept=kept)


# ----------------------------------------------------------------------------- measures


def lost_characters(src: str, hyp: str) -> int:
    """Characters of `src` a translation should carry (outside ASCII and the Latin script:
    emoji, other scripts, symbols; not Spanish's opening `¿` and `¡`, which English does not
    write) missing from `hyp`, counted with their multiplicity, plus each `⁇`
    (sentencepiece's unknown piece) in `hyp`."""
    carried = Counter(char for char in src if not char.isspace() and char not in "¿¡"
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
    result: dict[str, Any] = {"lines": len(hyps), "bleu": None, "chrf": None}
    if variant.ref is not None:
        result["bleu"], result["chrf"] = scores(
            [without(h, p) for h, p in zip(hyps, pieces)], variant.ref, variant.lowercase)
    result.update(
        lost=sum(lost_characters(s, h) for s, h in zip(variant.src, hyps)),
        loops=sum(degenerate(s, h) for s, h in zip(variant.src, hyps)),
        digits=sum(digits_changed(s, h) for s, h in zip(variant.src, hyps)),
        empty=sum(bool(s.strip()) and not h.strip() for s, h in zip(variant.src, hyps)),
        short=sum(short(s, h) for s, h in zip(variant.src, hyps)),
        untranslated=sum(s.strip() == h.strip() and any(c.isalpha() for c in s)
                         for s, h in zip(variant.src, hyps)))
    if variant.kept:
        result["kept"] = kept_share(variant.kept, hyps)
    if variant.name == "caps":
        result["upper"] = upper_share(hyps)
    return result


def kept_share(kept: list[list[str]], hyps: list[str]) -> float:
    """The share of the spans to keep that are in their line's translation exactly as
    often as in the list (once, for each)."""
    counts = [standing(hyp, span) == spans.count(span) for spans, hyp in zip(kept, hyps)
              for span in spans]
    return sum(counts) / max(1, len(counts))


def standing(text: str, piece: str) -> int:
    """How often `piece` is in `text` not as part of a longer word or number ("64" is not
    in "loong64")."""
    before = r"(?<!\w)" if regex.match(r"\w", piece) else ""
    after = r"(?!\w)" if regex.search(r"\w$", piece) else ""
    return len(regex.findall(before + regex.escape(piece) + after, text))


def digits_changed(src: str, hyp: str) -> bool:
    """Whether the runs of digits of `hyp` differ from those of `src` (any order)."""
    return Counter(_DIGITS.findall(src)) != Counter(_DIGITS.findall(hyp))


def short(src: str, hyp: str) -> bool:
    """Whether `hyp` has two fifths of the letters of `src` or fewer (a source of 20 or
    more): cut by the length limit, or a sentence lost. (References never are: the
    shortest of the dev sets' have 45% of their source's letters.)"""
    letters = len(_LETTER.findall(src))
    return letters >= 20 and len(_LETTER.findall(hyp)) <= 0.4 * letters


def compared(name: str, results: dict[str, dict[str, Any]], clean_hyps: list[str],
             variant: Variant, clean: Variant, target: str = "es") -> Optional[float]:
    """The BLEU a variant is held against: the clean set's (case-insensitive for caps and
    title), or for paragraphs and long sentences the clean translations joined as they
    are; none for a variant without references."""
    if variant.ref is None:
        return None
    if name == "long":
        return scores(joined_sentences(clean_hyps, LONG, AND[target]), variant.ref, False)[0]
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
    given = work / f"{stem}.src"
    given.write_text("".join(line + "\n" for line in source), encoding="utf-8")
    start = time.monotonic()
    problem = transcli(["translate", "--model", args.model, "--checkpoint", args.checkpoint,
                        "-i", given, "-o", work / f"{stem}.hyp",
                        *set_flags(settings)], work / f"{stem}.log")
    seconds = time.monotonic() - start
    if problem:
        raise SystemExit(f"{stem}: {problem}")
    return (work / f"{stem}.hyp").read_text(encoding="utf-8").split("\n")[:-1], seconds


def run_set(args: argparse.Namespace, name: str, work: Path, features: str
            ) -> dict[str, dict[str, Any]]:
    languages = run_languages(Path(args.model))
    src, ref = (read_lines(args.corpus / f"{name}.{language}", args.lines)
                for language in languages)
    settings = [*(OFF if features == "off" else ()), *args.set]
    sets = variants(src, ref, languages=languages)
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
                                                     variant, sets[0], languages[1])}
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

    head = (f"{'set':<17}{'variant':<12}{'features':<9}{'lines':>6}{'BLEU':>7}{'chrF':>7}"
            f"{'against':>9}{'kept':>8}{'lost':>6}{'loops':>6}{'digits':>7}{'empty':>6}"
            f"{'short':>6}{'untr':>5}{'upper':>7}{'sec':>7}")
    rows = [head]
    names = next(iter(all_results.values()))
    for name in names:
        for variant in names[name]:
            for features, by_set in all_results.items():
                r = by_set[name][variant]
                rows.append(f"{name:<17}{variant:<12}{features:<9}{r['lines']:>6}"
                            f"{cell(r['bleu'], '7.1f'):>7}{cell(r['chrf'], '7.1f'):>7}"
                            f"{cell(r['against'], '9.1f'):>9}{cell(r.get('kept'), '8.1%'):>8}"
                            f"{r['lost']:>6}{r['loops']:>6}{r['digits']:>7}{r['empty']:>6}"
                            f"{r['short']:>6}{r['untranslated']:>5}"
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
    source, target = run_languages(Path(args.model))
    print(f"run {args.model} ({source} to {target}, checkpoint {args.checkpoint}, "
          f"{summary['updates']} updates); "
          f"settings: {' '.join(args.set) or 'the run config'}\nmachine {machine()}\n"
          f"work {work}", flush=True)
    features = ["off", "on"] if args.features == "both" else [args.features]
    results = {f: {name: run_set(args, name, work, f) for name in args.sets} for f in features}
    print(table(results))
    print(f"machine after: load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    (work / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
