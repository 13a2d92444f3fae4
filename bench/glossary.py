"""Glossaries: do the terms come through, and what do they cost?

    python -m bench.glossary --model RUN [--checkpoint avg] [--lines 500]
    python -m bench.glossary --model RUN --sets test.tico19 --dict-lines 50000

For each set (--sets; dev.tatoeba and dev.newstest2012 in ../shared/corpora/en-es by
default, --corpus chooses) it takes the first --lines pairs, translates the English
without a glossary, and builds a glossary from them whose terms change outputs: for each
line, the first content word of the source (4 letters or more, not a function word)
whose dictionary translation is in the line's reference and not in the unconstrained
translation, and in the reference of every line with that word (a term the references
translate two ways is no term of theirs); written as the reference writes it. The
dictionary pairs each English word with the Spanish word it co-occurs with most
(`data.terms.dictionary`: Dice's coefficient over lines, at least --min-dice and
--min-count lines), counted over the first --dict-lines lines of the corpus'
train.{en,es} (when it has them) and the set itself: a simple aligner, good enough to
pick terms a reference really uses.

It then translates the set again with the glossary (`decode.glossary`) in each of
--methods (`decode.glossary_method`: constrained search, placeholders, and annotation
for a run trained with it) and prints, for each and without the glossary: the term-use
rate (`glossary.TermUse`), BLEU, chrF, lines per second of wall time and of CPU time, the
speed against the translation without the glossary by CPU time (the machine's other work
does not lengthen it), and how many lines without a term came out differently (none
should: such a line is translated exactly as without a glossary). The glossaries, each
method's translations and results.json go under --work.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

from bench.common import dev_sets_parser, read_lines
from transcli.data.terms import content_words, dictionary, words, written_words

METHODS = ("constrain", "placeholder", "annotate")  # decode.glossary_method's, bar auto


def pick_terms(src: list[str], ref: list[str], hyps: list[str], lexicon: dict[str, str]
               ) -> dict[str, str]:
    """One entry per line at most: its first content word whose translation the
    reference has and the unconstrained translation lacks, and which every reference
    of a line with that word has (as a glossary's term is used wherever its English is:
    an entry the references translate two ways is no term of theirs)."""
    lines = [(set(words(source)), set(words(reference))) for source, reference in zip(src, ref)]

    def consistent(word: str, target: str) -> bool:
        return all(target in spanish for english, spanish in lines if word in english)

    lower = {w for reference in ref for w in written_words(reference) if w.islower()}
    terms: dict[str, str] = {}
    for source, reference, hyp in zip(src, ref, hyps):
        said, wanted = set(words(hyp)), set(words(reference))
        for word in content_words(source):
            target = lexicon.get(word)
            if (target is not None and target in wanted and target not in said
                    and consistent(word, target)):
                terms.setdefault(word, as_written(target, reference, lower))
                break
    return terms


def as_written(word: str, reference: str, lower: set[str]) -> str:
    """`word` (lower case) as `reference` writes it past its first word ("Irak"); where
    it is only the first, in lower case if any reference writes it so (`lower`), else
    capitalised (a name)."""
    found = next((w for w in written_words(reference)[1:] if w.lower() == word), None)
    if found is not None:
        return found
    return word if word in lower else word[:1].upper() + word[1:]


def write_glossary(terms: dict[str, str], path: Path) -> Path:
    path.write_text("# built by bench.glossary\n" + "".join(
        f"{english}\t{spanish}\n" for english, spanish in terms.items()), encoding="utf-8")
    return path


def timed(translator: Any, lines: list[str]) -> tuple[list[str], tuple[float, float]]:
    """The translations, and the seconds they took: wall time, and this process' CPU time
    (which a busy machine's other work does not lengthen: the speed ratios use it)."""
    wall, cpu = time.perf_counter(), time.process_time()
    hyps = translator.translate(lines)
    return hyps, (time.perf_counter() - wall, time.process_time() - cpu)


def measured(glossary: Any, src: list[str], ref: list[str], hyps: list[str],
             seconds: tuple[float, float]) -> dict[str, Any]:
    """Term use (of `glossary`'s entries, whether or not it was applied), BLEU, chrF and
    lines per second of wall time and of CPU time, of one translation of a set."""
    from transcli.inference.bleu import score
    from transcli.inference.glossary import TermUse

    terms = TermUse(glossary)
    terms.add(src, hyps)
    scores = score(hyps, [ref], ter=False)
    return {"term_use": terms.rate, "terms_used": terms.used,
            "terms_applicable": terms.applicable, "bleu": scores.bleu, "chrf": scores.chrf,
            "lines_per_s": len(src) / seconds[0] if seconds[0] else None,
            "lines_per_cpu_s": len(src) / seconds[1] if seconds[1] else None}


def run_set(args: argparse.Namespace, translator: Any, name: str, work: Path
            ) -> dict[str, Any]:
    """A set without, then with, the glossary built for it (module doc)."""
    from transcli.inference.glossary import read_glossary

    src = read_lines(args.corpus / f"{name}.en", args.lines)
    ref = read_lines(args.corpus / f"{name}.es", args.lines)
    translator.preparer.glossary = None
    translator.translate(src[:16])  # warmed up: the first batches cost more
    plain, plain_s = timed(translator, src)
    pairs = list(zip(src, ref))
    train = args.corpus / "train.en"
    if args.dict_lines and train.is_file():
        pairs += zip(read_lines(train, args.dict_lines),
                     read_lines(args.corpus / "train.es", args.dict_lines))
    wanted = {word for line in src for word in content_words(line)}
    lexicon = dictionary(pairs, wanted, args.min_dice, args.min_count)
    terms = pick_terms(src, ref, plain, lexicon)
    glossary = read_glossary(write_glossary(terms, work / f"{name}.glossary.tsv"))
    translator.preparer.glossary = glossary
    untouched = [i for i, line in enumerate(src) if not glossary.used(line, "")[1]]
    result = {"lines": len(src), "entries": len(glossary),
              "lines_with_a_term": len(src) - len(untouched), "changed_without_a_term": 0,
              "without": measured(glossary, src, ref, plain, plain_s)}
    for method in args.methods:
        forced, forced_s = timed(translator.derived(
            replace(translator.decode, glossary_method=method)), src)
        (work / f"{name}.{method}.es").write_text("".join(f"{line}\n" for line in forced),
                                                  encoding="utf-8")
        result["changed_without_a_term"] += sum(plain[i] != forced[i] for i in untouched)
        result[method] = measured(glossary, src, ref, forced, forced_s)
    return result


def table(results: dict[str, dict[str, Any]]) -> str:
    def cell(value: Optional[float], form: str) -> str:
        return "-" if value is None else format(value, form)

    rows = [f"{'set':<17}{'glossary':<12}{'entries':>8}{'matched':>8}{'term use':>9}"
            f"{'BLEU':>7}{'chrF':>7}{'lines/s':>9}{'lines/cpu-s':>12}{'speed':>7}"]
    for name, r in results.items():
        plain = r["without"]["lines_per_cpu_s"]
        for side in [key for key in r if key == "without" or key in METHODS]:
            m = r[side]
            speed = m["lines_per_cpu_s"] / plain if plain and m["lines_per_cpu_s"] else None
            rows.append(f"{name:<17}{side:<12}{r['entries']:>8}{r['lines_with_a_term']:>8}"
                        f"{cell(m['term_use'], '9.1%')}{m['bleu']:>7.1f}{m['chrf']:>7.1f}"
                        f"{cell(m['lines_per_s'], '9.1f')}{cell(m['lines_per_cpu_s'], '12.1f')}"
                        f"{cell(speed, '6.2f')}x")
        rows.append(f"{'':<17}lines without a term translated differently: "
                    f"{r['changed_without_a_term']} (should be 0)")
    return "\n".join(rows)


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = dev_sets_parser(__doc__)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dict-lines", type=int, default=20_000,
                        help="Lines of train.{en,es} the dictionary is counted over too.")
    parser.add_argument("--min-dice", type=float, default=0.3)
    parser.add_argument("--min-count", type=int, default=2)
    parser.add_argument("--methods", nargs="+", default=["constrain", "placeholder"],
                        choices=METHODS,
                        help="How the glossary is applied (decode.glossary_method), each "
                             "measured on the same lines (annotate: for a run trained with "
                             "train.term_annotation).")
    return parser.parse_args(argv)


def main(argv: Optional[list[str]] = None) -> None:
    args = parse_args(argv)
    from transcli.inference.translator import load_translator
    from transcli.rundir.run import open_run_dir

    work = args.work or Path(tempfile.mkdtemp(prefix="glossary-"))
    work.mkdir(parents=True, exist_ok=True)
    translator = load_translator(open_run_dir(Path(args.model), args.set), args.checkpoint,
                                 args.device)
    print(f"run {args.model} (checkpoint {args.checkpoint}); settings: "
          f"{' '.join(args.set) or 'the run config'}; work {work}", flush=True)
    results = {name: run_set(args, translator, name, work) for name in args.sets}
    print(table(results))
    (work / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
