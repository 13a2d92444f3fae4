"""How far to trust a translation: a number in [0, 1] per line, from what the search
already knows of its hypothesis (no second model, no extra pass).

A translation's features (`features`) are glass-box signals (Fomicheva et al. 2020): the
mean, the least and the spread of its tokens' log-probabilities, its length against
the source's, and whether it ended. `Calibration` maps them to an estimate of the
line's quality, the sentence chrF it would get against a reference, divided by 100: a
least-squares line over the features, then a monotone map of that line's value to the
mean chrF of the lines with such values (isotonic regression, `isotonic`), both fitted
on the run's own valid split (`fit`, by `calibrate.py`). The fitted numbers are kept in
the run dir (`CALIBRATION_FILE`), so every command that loads the run gives the same
confidence.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np

from transcli.rundir.layout import CALIBRATION_FILE, RUN_RECORD
from transcli.system.errors import UserError

if TYPE_CHECKING:
    from transcli.inference.search import Hypothesis

SURE = 1.0  # the confidence of a line or sentence with nothing to translate
FEATURES = ("mean_logprob", "least_logprob", "spread", "length_ratio", "ended")
RIDGE = 1e-3  # keeps the least-squares line defined when a feature is constant


def features(hypothesis: Hypothesis, source_tokens: int) -> list[float]:
    """The `FEATURES` of a hypothesis of a source of `source_tokens` pieces (EOS left
    out). Without per-token log-probs (an engine that gives the total only), the mean
    stands for all of them."""
    steps = list(hypothesis.steps) or [hypothesis.logprob / max(1, len(hypothesis.tokens))]
    mean = sum(steps) / len(steps)
    spread = math.sqrt(sum((step - mean) ** 2 for step in steps) / len(steps))
    ratio = math.log((len(hypothesis.tokens) + 1) / (max(1, source_tokens) + 1))
    return [mean, min(steps), spread, ratio, float(hypothesis.eos)]


def confidence(calibration: Optional[Calibration], hypothesis: Hypothesis, source: list[int]
               ) -> Optional[float]:
    """How far to trust `hypothesis` of `source` (ids, EOS last) by `calibration`; None
    without one."""
    if calibration is None:
        return None
    return calibration(features(hypothesis, len(source) - 1))


@dataclass
class Line:
    """A line's (or a sentence's) translation: up to `decode.n_best` (text, score) pairs,
    best first, and how far to trust the best (`Calibration`, in [0, 1]; None
    where the run has no calibration)."""

    hypotheses: list[tuple[str, float]]
    confidence: Optional[float]
    others: tuple[Optional[float], ...] = ()  # the confidence of each of hypotheses[1:]

    @property
    def best(self) -> str:
        return self.hypotheses[0][0]


def joined(values: Sequence[Optional[float]], texts: Sequence[str]) -> Optional[float]:
    """The confidence of a line of sentences (or of a text of lines) `texts` whose own
    are `values`: their mean, each weighing as many characters as it has."""
    if not values:
        return SURE
    if any(value is None for value in values):
        return None
    weights = [max(1, len(text)) for text in texts]
    return sum(w * v for w, v in zip(weights, values) if v is not None) / sum(weights)


MARK = "[?] "  # before a translation below --min-confidence, with --below mark


@dataclass
class Trust:
    """What a command does with each line's confidence: show it (`shown`), and below
    `least`, either write the line as its source (`below` "source") or mark it ("mark":
    `MARK` before the translation); `low` counts such lines."""

    shown: bool = False
    least: Optional[float] = None
    below: str = "source"
    low: int = 0

    @property
    def needed(self) -> bool:
        return self.shown or self.least is not None

    def written(self, source: str, line: Line) -> str:
        """The text written for `source`, translated as `line`."""
        text = line.best
        if self.least is not None and line.confidence is not None \
                and line.confidence < self.least and source.strip():
            self.low += 1
            text = source if self.below == "source" else MARK + text
        if self.shown:
            shown = "" if line.confidence is None else f"{line.confidence:.2f}"
            return f"{text.replace(chr(9), ' ')}\t{shown}"
        return text

    def summary(self) -> str:
        """One line on the lines below `least` ("" when none was asked for)."""
        if self.least is None:
            return ""
        done = "written as their source" if self.below == "source" else f"marked {MARK.strip()}"
        return f"{self.low} line(s) below confidence {self.least:g}: {done}"


@dataclass(frozen=True)
class Calibration:
    """The fitted map from `FEATURES` to a quality estimate in [0, 1]."""

    weights: tuple[float, ...]  # per feature, then the intercept
    knots: tuple[float, ...]  # the line's values where the monotone map changes
    levels: tuple[float, ...]  # the estimate at each knot (linear in between)
    lines: int = 0  # the lines it was fitted on
    pearson: float = math.nan  # of the estimate against their chrF / 100

    def __call__(self, values: Sequence[float]) -> float:
        line = float(np.dot(self.weights[:-1], values) + self.weights[-1])
        return float(np.clip(np.interp(line, self.knots, self.levels), 0.0, 1.0))

    def save(self, run_dir: Path) -> None:
        from transcli.system.outputs import output_file

        with output_file(run_dir / CALIBRATION_FILE, "the confidence calibration",
                         record=RUN_RECORD) as out:
            out.write((json.dumps({"features": FEATURES, **asdict(self)}, indent=1) + "\n")
                      .encode())

    @classmethod
    def load(cls, run_dir: Path) -> Optional[Calibration]:
        """The run's calibration; None where it has none (a run trained before it)."""
        from transcli.system.errors import first_line
        from transcli.system.files import read_json

        path = run_dir / CALIBRATION_FILE
        if not path.is_file():
            return None
        try:
            found = read_json(path)
            if tuple(found.get("features", ())) != FEATURES:
                return None  # fitted on other features: `transcli calibrate` fits it anew
            calibration = cls(tuple(map(float, found["weights"])),
                              tuple(map(float, found["knots"])),
                              tuple(map(float, found["levels"])), int(found.get("lines", 0)),
                              float(found.get("pearson", math.nan)))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise UserError(f"{path}: not a confidence calibration ({first_line(exc)}); "
                            f"fit it again with: transcli calibrate {run_dir}") from None
        if len(calibration.weights) != len(FEATURES) + 1 or not calibration.knots or \
                len(calibration.knots) != len(calibration.levels):
            raise UserError(f"{path}: not a confidence calibration (its sizes); fit it "
                            f"again with: transcli calibrate {run_dir}")
        return calibration


def fit(rows: Sequence[Sequence[float]], quality: Sequence[float]) -> Calibration:
    """The calibration of `rows` (`features` of each line) to `quality` (each line's
    sentence chrF / 100)."""
    x = np.asarray(rows, dtype=np.float64)
    y = np.asarray(quality, dtype=np.float64)
    design = np.hstack([x, np.ones((len(x), 1))])
    gram = design.T @ design + RIDGE * np.eye(design.shape[1])
    weights = np.linalg.solve(gram, design.T @ y)
    knots, levels = isotonic(design @ weights, y)
    calibration = Calibration(tuple(weights.tolist()), tuple(knots), tuple(levels), len(y))
    estimates = [calibration(row) for row in x]
    return Calibration(calibration.weights, calibration.knots, calibration.levels, len(y),
                       pearson(estimates, y.tolist()))


def isotonic(x: np.ndarray, y: np.ndarray) -> tuple[list[float], list[float]]:
    """The non-decreasing step function of `x` closest to `y` in squared error (pool
    adjacent violators), as knots (each block's mean x) and levels (its mean y)."""
    order = np.argsort(x, kind="stable")
    blocks: list[list[float]] = []  # [sum x, sum y, count]
    for xi, yi in zip(x[order].tolist(), y[order].tolist()):
        blocks.append([xi, yi, 1.0])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][2] >= blocks[-1][1] / blocks[-1][2]:
            last = blocks.pop()
            blocks[-1] = [a + b for a, b in zip(blocks[-1], last)]
    return [b[0] / b[2] for b in blocks], [b[1] / b[2] for b in blocks]


def pearson(a: Sequence[float], b: Sequence[float]) -> float:
    """Pearson's correlation; NaN where either side is constant."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if len(x) < 2 or x.std() == 0 or y.std() == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's correlation: Pearson's of the ranks (ties get their mean rank)."""
    return pearson(ranks(a), ranks(b))


def ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    found = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            found[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return found
