"""How well each line's confidence ranks a run's translations of the dev sets, beside the
length-normalised log-probability alone, and what `--confidence` costs.

For each set, the first --lines are translated by `transcli translate --confidence` (the
product's path: real text, checks, repairs); each translation is then scored by `transcli
score` (its tokens' mean log-probability under the model: the baseline). Against each
line's sentence chrF (sacreBLEU's): Pearson's and Spearman's correlation of the confidence
and of the baseline, and the BLEU of the most confident 80% of the lines beside all.
With --speed-lines N, the first N lines of the first set are translated with and without
--confidence, three times each, alternating: the ratio of the medians.

    python -m bench.confidence --model RUN --checkpoint best --lines 1000 \\
        --sets dev.newstest2012 test.tico19 dev.tatoeba --work /tmp/confidence
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Optional

import sacrebleu

from bench.common import RESULT, dev_sets_parser, must, read_lines, set_flags, transcli
from transcli.inference.confidence import pearson, spearman

SHARE = 0.8  # the most confident share of the lines whose BLEU is reported


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = dev_sets_parser(__doc__)
    parser.add_argument("--speed-lines", type=int, default=0,
                        help="Lines of the first set timed with and without --confidence.")
    return parser.parse_args(argv)


def main(argv: Optional[list[str]] = None) -> None:
    args = parse_args(argv)
    work = args.work or Path("confidence-bench")
    work.mkdir(parents=True, exist_ok=True)
    results = {name: one_set(args, name, work) for name in args.sets}
    if args.speed_lines:
        results["speed"] = speed(args, args.sets[0], work)
    print(RESULT + json.dumps(results))


def one_set(args: argparse.Namespace, name: str, work: Path) -> dict[str, float]:
    """The figures of one dev set (module doc)."""
    sources = read_lines(args.corpus / f"{name}.en", args.lines)
    references = read_lines(args.corpus / f"{name}.es", args.lines)
    source, reference = work / f"{name}.en", work / f"{name}.es"
    source.write_text("\n".join(sources) + "\n", encoding="utf-8")
    reference.write_text("\n".join(references) + "\n", encoding="utf-8")
    shown, scores = work / f"{name}.confidence.tsv", work / f"{name}.scores.tsv"
    must(transcli(["translate", "-m", args.model, "--checkpoint", args.checkpoint, "-i", source,
                   "-o", shown, "--confidence", *set_flags(args.set)]))
    rows = [line.split("\t") for line in shown.read_text(encoding="utf-8").splitlines()]
    texts, confidence = [text for text, _ in rows], [float(value or 0) for _, value in rows]
    hypotheses = work / f"{name}.hyp.es"
    hypotheses.write_text("\n".join(texts) + "\n", encoding="utf-8")
    must(transcli(["score", "-m", args.model, "--checkpoint", args.checkpoint, "--src", source,
                   "--tgt", hypotheses, "-o", scores]))
    per_token = [float(line.split("\t")[2]) for line in scores.read_text().splitlines()]
    chrf = [sacrebleu.sentence_chrf(text, [ref]).score for text, ref in zip(texts, references)]
    kept = [i for i in range(len(texts)) if per_token[i] == per_token[i]]  # scored (not nan)
    top = sorted(range(len(texts)), key=lambda i: -confidence[i])[:round(SHARE * len(texts))]
    figures = {
        "lines": len(texts),
        "pearson": pearson(confidence, chrf), "spearman": spearman(confidence, chrf),
        "baseline_pearson": pearson([per_token[i] for i in kept], [chrf[i] for i in kept]),
        "baseline_spearman": spearman([per_token[i] for i in kept], [chrf[i] for i in kept]),
        "bleu_all": sacrebleu.corpus_bleu(texts, [references]).score,
        "bleu_confident": sacrebleu.corpus_bleu([texts[i] for i in top],
                                                [[references[i] for i in top]]).score,
        "mean_confidence": statistics.fmean(confidence), "mean_chrf": statistics.fmean(chrf),
    }
    print(f"{name}: " + ", ".join(f"{key} {value:.3f}" for key, value in figures.items()),
          flush=True)
    return figures


def speed(args: argparse.Namespace, name: str, work: Path) -> dict[str, float]:
    """Seconds to translate the first --speed-lines of `name` with and without
    --confidence (the medians of three alternating runs each), and their ratio."""
    source = work / f"{name}.speed.en"
    source.write_text("\n".join(read_lines(args.corpus / f"{name}.en", args.speed_lines))
                      + "\n", encoding="utf-8")
    base = ["translate", "-m", args.model, "--checkpoint", args.checkpoint, "-i", source,
            *set_flags(args.set)]
    times: dict[str, list[float]] = {"plain": [], "confidence": []}
    for _ in range(3):
        for kind, extra in (("plain", []), ("confidence", ["--confidence"])):
            started = time.perf_counter()
            must(transcli([*base, "-o", work / f"speed.{kind}", *extra]))
            times[kind].append(time.perf_counter() - started)
    plain, confident = (statistics.median(times[kind]) for kind in ("plain", "confidence"))
    print(f"speed over {args.speed_lines} lines: {plain:.1f} s plain, {confident:.1f} s with "
          f"--confidence: {plain / confident:.3f}x the speed", flush=True)
    return {"plain_s": plain, "confidence_s": confident, "speed_ratio": plain / confident}


if __name__ == "__main__":
    main()
