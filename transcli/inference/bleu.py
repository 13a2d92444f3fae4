"""sacreBLEU's BLEU, chrF and TER of translations against references.

`score` and `CorpusScorer` only compute, never print (`evaluate` prints, the training
loop keeps validation BLEU), and import sacreBLEU when first called so that importing
this module stays cheap. Files are read as the `sacrebleu` command reads them (only '\\n'
ends a line, each line right-stripped), so the figures are the ones
`sacrebleu REF... -i HYP -m bleu chrf ter` prints for the same files (which it
un-gzips too; transcli also reads .bz2 and .xz).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional

from transcli.inference.repeats import degenerate

# sacreBLEU's own default width: one decimal, as the `sacrebleu` command prints.
TEXT_WIDTH = 1


@dataclass(frozen=True)
class MetricScore:
    """One corpus-level metric, in sacreBLEU's terms."""

    name: str  # sacreBLEU's name: BLEU, chrF2, TER
    score: float  # full precision; `text` holds the rounded figure
    text: str  # sacreBLEU's line, e.g. "BLEU = 23.4 56.1/29.0/17.3/10.2 (BP = ...)"
    signature: str  # e.g. "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"

    def with_signature(self) -> str:
        """The form sacreBLEU recommends for papers: "BLEU|nrefs:1|... = 23.4 ..."."""
        name, rest = self.text.split(" = ", 1)
        return f"{name}|{self.signature} = {rest}"


@dataclass(frozen=True)
class Scores:
    """Corpus scores of one set of hypotheses, keyed "bleu", "chrf" and maybe "ter"."""

    metrics: dict[str, MetricScore]
    lines: int
    nrefs: int
    loops: int = 0  # hypotheses that repeat themselves more than their first reference
    terms: Optional[tuple[int, int]] = None  # glossary entries used, applicable (evaluate)
    # sentences whose translation failed its check, translated again another way, written
    # as their source (evaluate --model: `checks.Tally`)
    checks: Optional[tuple[int, int, int]] = None
    # how the confidence ranks the lines (evaluate --model, a calibrated run: `Ranking`)
    ranking: Optional[Ranking] = None

    @property
    def bleu(self) -> float:
        return self.metrics["bleu"].score

    @property
    def chrf(self) -> float:
        return self.metrics["chrf"].score

    @property
    def ter(self) -> Optional[float]:
        metric = self.metrics.get("ter")
        return None if metric is None else metric.score

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON: full-precision scores, signatures and sacreBLEU's lines."""
        return {
            **{key: metric.score for key, metric in self.metrics.items()},
            "signatures": {key: metric.signature for key, metric in self.metrics.items()},
            "sacrebleu": {key: metric.with_signature() for key, metric in self.metrics.items()},
            "lines": self.lines,
            "nrefs": self.nrefs,
            "loops": self.loops,
            **({} if self.terms is None else {
                "term_use": self.terms[0] / self.terms[1] if self.terms[1] else None,
                "terms_used": self.terms[0], "terms_applicable": self.terms[1]}),
            **({} if self.checks is None else dict(zip(
                ("checks_failed", "checks_repaired", "checks_untranslated"), self.checks))),
            **({} if self.ranking is None else {"confidence": {  # NaN: constant confidences
                key: None if value != value else value
                for key, value in self.ranking.__dict__.items()}}),
        }


@dataclass(frozen=True)
class Ranking:
    """How well each line's confidence ranks the lines: Pearson's and Spearman's
    correlation with their sentence chrF, the BLEU of the most confident `share` of the
    lines and of all."""

    pearson: float
    spearman: float
    share: float
    bleu_confident: float
    bleu_all: float


class CorpusScorer:
    """sacreBLEU's corpus scores, added up chunk by chunk: each metric's corpus score is a
    function of the sum of its sentences' statistics (sacreBLEU computes it that way too),
    so memory follows one chunk of lines, however long the corpus. The defaults (13a
    tokenisation, mixed case, exp smoothing; chrF2 with character 6-grams) are those of
    the `sacrebleu` command, so the signatures and figures match it."""

    def __init__(self, ter: bool = True, per_line: bool = False):
        """`per_line`: keep each line's BLEU and chrF statistics (`ranking`)."""
        from sacrebleu.metrics import BLEU, CHRF, TER

        self.metrics: dict[str, Any] = {"bleu": BLEU(), "chrf": CHRF()}
        if ter:
            self.metrics["ter"] = TER()
        self.sums: dict[str, list[float]] = {}
        self.lines = 0
        self.nrefs = 0
        self.loops = 0
        self.per_line: Optional[dict[str, list[list[float]]]] = (
            {"bleu": [], "chrf": []} if per_line else None)

    def add(self, hyps: list[str], refs: list[list[str]]) -> None:
        """One chunk: hypotheses, and per reference set its lines for them."""
        if not refs or any(len(stream) != len(hyps) for stream in refs):
            raise ValueError(f"{len(hyps)} hypotheses but reference sets of "
                             f"{[len(stream) for stream in refs]} lines")
        if not hyps:
            return
        for key, metric in self.metrics.items():
            stats = metric._extract_corpus_statistics(hyps, refs)
            if self.per_line is not None and key in self.per_line:
                self.per_line[key].extend(stats)
            total = [sum(column) for column in zip(*stats)]
            self.sums[key] = [a + b for a, b in zip(self.sums[key], total)] \
                if key in self.sums else total
        self.lines += len(hyps)
        self.nrefs = len(refs)
        self.loops += sum(degenerate(ref, hyp) for hyp, ref in zip(hyps, refs[0]))

    def result(self) -> Scores:
        if not self.lines:
            raise ValueError("no hypotheses to score")
        results = {}
        for key, metric in self.metrics.items():
            result = metric._compute_score_from_stats(self.sums[key])
            results[key] = MetricScore(name=result.name, score=float(result.score),
                                       text=result.format(width=TEXT_WIDTH),
                                       signature=str(metric.get_signature()))
        return Scores(metrics=results, lines=self.lines, nrefs=self.nrefs, loops=self.loops)


    def ranking(self, confidences: list[float], share: float = 0.8) -> Ranking:
        """How `confidences` (one per line added, `per_line`) rank the lines."""
        from transcli.inference.confidence import pearson, spearman

        assert self.per_line is not None and len(confidences) == self.lines
        bleu, chrf = self.metrics["bleu"], self.metrics["chrf"]
        sentence_chrf = [chrf._compute_score_from_stats(stats).score
                         for stats in self.per_line["chrf"]]
        order = sorted(range(self.lines), key=lambda i: -confidences[i])
        kept = order[:max(1, round(share * self.lines))]

        def corpus_bleu(lines: list[int]) -> float:
            stats = [self.per_line["bleu"][i] for i in lines]  # type: ignore[index]
            return float(bleu._compute_score_from_stats(
                [sum(column) for column in zip(*stats)]).score)

        return Ranking(pearson(confidences, sentence_chrf), spearman(confidences, sentence_chrf),
                       share, corpus_bleu(kept), corpus_bleu(list(range(self.lines))))


def score(hyps: list[str], refs: list[list[str]], ter: bool = True) -> Scores:
    """Corpus BLEU and chrF (and TER unless `ter=False`) with sacreBLEU's defaults, of
    detokenised `hyps` against `refs`: one list per reference set, each as long as
    `hyps`."""
    scorer = CorpusScorer(ter)
    scorer.add(hyps, refs)
    return scorer.result()


def scored_lines(lines: Iterator[str]) -> Iterator[str]:
    """Hypotheses or references as sacreBLEU scores them: each line (read by
    `system.text`'s rule with a byte-order mark kept, as the `sacrebleu` command keeps it)
    `rstrip()`ped, as that command does."""
    return (line.rstrip() for line in lines)


def format_text(scores: Scores) -> str:
    """One line per metric: sacreBLEU's figure and details, then its signature; then the
    count of translations that loop, with a glossary its term-use rate, and with a
    model the sentences that failed their check."""
    lines = [*(f"{metric.text}  (signature: {metric.signature})"
               for metric in scores.metrics.values()),
             f"Loops = {scores.loops} of {scores.lines} translations (words or "
             f"characters repeated more often than in the reference)"]
    if scores.terms is not None:
        used, applicable = scores.terms
        rate = f"{100 * used / applicable:.1f}%" if applicable else "n/a"
        lines.append(f"Term use = {rate}: {used} of {applicable} glossary entries found in "
                     f"a source line have a target form in its translation")
    if scores.checks is not None:
        failed, repaired, untranslated = scores.checks
        lines.append(f"Checks = {failed} sentence(s) failed the check of their translation: "
                     f"{repaired} translated again another way, {untranslated} written as "
                     f"their source")
    if (r := scores.ranking) is not None:
        lines.append(f"Confidence = Pearson {r.pearson:.3f}, Spearman {r.spearman:.3f} with "
                     f"the sentence chrF; BLEU {r.bleu_confident:.1f} on the most confident "
                     f"{100 * r.share:.0f}% of the lines, {r.bleu_all:.1f} on all")
    return "\n".join(lines)
