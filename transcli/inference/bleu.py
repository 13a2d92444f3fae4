"""sacreBLEU's BLEU, chrF and TER of translations against references.

`score` only computes, never prints (`evaluate` prints, the training loop keeps
validation BLEU), and imports sacreBLEU when first called so that importing this
module stays cheap. Files are read as the `sacrebleu` command reads them (only '\\n'
ends a line, each line right-stripped), so the figures are the ones
`sacrebleu REF... -i HYP -m bleu chrf ter` prints for the same files (which it
un-gzips too; transcli also reads .bz2 and .xz).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from transcli.system.errors import UserError
from transcli.system.text import read_text_file

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
        }


def score(hyps: list[str], refs: list[list[str]], ter: bool = True) -> Scores:
    """Corpus BLEU and chrF (and TER unless `ter=False`) with sacreBLEU's defaults.

    `hyps` are detokenised hypotheses; `refs` holds one list per reference set,
    each as long as `hyps`. The defaults (13a tokenisation, mixed case, exp
    smoothing; chrF2 with character 6-grams) are those of the `sacrebleu`
    command, so the signatures and figures match it.
    """
    if not hyps:
        raise ValueError("no hypotheses to score")
    if not refs or any(len(stream) != len(hyps) for stream in refs):
        raise ValueError(f"{len(hyps)} hypotheses but reference sets of "
                         f"{[len(stream) for stream in refs]} lines")
    from sacrebleu.metrics import BLEU, CHRF, TER

    metrics = {"bleu": BLEU(), "chrf": CHRF()}
    if ter:
        metrics["ter"] = TER()
    results = {}
    for key, metric in metrics.items():
        result = metric.corpus_score(hyps, refs)
        results[key] = MetricScore(name=result.name, score=float(result.score),
                                   text=result.format(width=TEXT_WIDTH),
                                   signature=str(metric.get_signature()))
    return Scores(metrics=results, lines=len(hyps), nrefs=len(refs))


def read_scored_lines(path: Path) -> list[str]:
    """Hypotheses or references as sacreBLEU scores them: each line, read by transcli's
    one rule (`system.text`: only '\\n' ends a line, .gz/.bz2/.xz decompressed, strict
    UTF-8) with a byte-order mark kept, then `rstrip()`ped, as the `sacrebleu` command
    does."""
    return [line.rstrip() for line in read_text_file(path, keep_bom=True)]


def check_line_counts(name: Path, count: int, refs: list[Path],
                      ref_lines: list[list[str]]) -> None:
    """Every reference must be as long as the hypotheses (or the source)."""
    for ref, lines in zip(refs, ref_lines):
        if len(lines) != count:
            raise UserError(f"line counts differ: {name} has {count} lines, "
                            f"{ref} has {len(lines)}")
    if count == 0:
        raise UserError(f"{name}: no lines to score")


def format_text(scores: Scores) -> str:
    """One line per metric: sacreBLEU's figure and details, then its signature."""
    return "\n".join(f"{metric.text}  (signature: {metric.signature})"
                     for metric in scores.metrics.values())
