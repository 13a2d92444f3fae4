"""sacreBLEU's BLEU, chrF and TER of translations against references.

`score` only computes, never prints (`evaluate` prints, the training loop keeps
validation BLEU), and imports sacreBLEU when first called so that importing this
module stays cheap. Files are read exactly as the `sacrebleu` command reads them, so
the figures are the ones `sacrebleu REF... -i HYP -m bleu chrf ter` prints for the
same files.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from transcli.system.errors import UserError

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


def read_lines(path: Path) -> list[str]:
    """The lines of a strict UTF-8 file, without their '\\n'.

    As in the `sacrebleu` command (which opens files with newline='\\n' and
    un-gzips names ending in .gz), only '\\n' ends a line: a missing final
    newline adds no line, an empty line stays an empty line, and a stray '\\r'
    or other Unicode line break inside a line never shifts the alignment.
    """
    try:
        data = path.read_bytes()
        if path.name.endswith(".gz"):
            data = gzip.decompress(data)
    except (OSError, EOFError) as exc:
        raise UserError(f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
    pieces = data.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()  # text after the last '\n', if any, is a line; nothing is not
    lines = []
    for number, raw in enumerate(pieces, start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise UserError(f"{path}: line {number} is not valid UTF-8") from None
    return lines


def read_scored_lines(path: Path) -> list[str]:
    """Hypotheses or references as sacreBLEU scores them: each line `rstrip()`ped,
    which is what the `sacrebleu` command does (it also drops the '\\r' of CRLF)."""
    return [line.rstrip() for line in read_lines(path)]


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
