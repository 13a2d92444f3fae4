"""Units whose translation failed its check (`checks.py`), translated again another way.

    failed ──strict──▶ numbers and glossary terms masked too (`Preparer.strict`)
           ──search──▶ beam search, more beams, every hypothesis, room to the model's
                       positions ──▶ the first that passes its check
           ──split───▶ (a translation cut where no search could fit it: its source cut
                       to the model's positions, or its length limit already theirs)
                       the sentence in two at the clause boundary nearest its middle,
                       each half translated (and checked) as a line of its own
           ──source──▶ nothing passed: the sentence as written, its spans and glossary
                       terms back, never a translation that failed passed off as one

The `Tally` of the translator counts each failure and how it ended (`checks.Tally`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Protocol, Sequence

import regex

from transcli.config.schema import DecodeConfig
from transcli.data.tokenizer import Tokenizer
from transcli.inference.checks import CUT, Tally
from transcli.inference.confidence import SURE, Calibration, Line, confidence, joined
from transcli.inference.engines import Engine
from transcli.inference.positions import fitting_chars, source_ids
from transcli.inference.realtext import Preparer, Unit
from transcli.inference.search import Hypothesis

WIDE_BEAM = 8  # beams (and hypotheses looked at) of the search again
NONE = 0.0  # the confidence of a sentence written as its source: nothing was translated
Hypotheses = list[list[tuple[str, float]]]  # per unit, (text, score) best first


class Retranslator(Protocol):
    """What the repair needs of a `translator.Translator`."""

    preparer: Preparer
    tally: Tally
    decode: DecodeConfig
    engine: Engine
    tokenizer: Tokenizer
    calibration: Optional[Calibration]

    def search_lines(self, lines: list[str], indices: Sequence[int], loops: None = None,
                     constraints: None = None, decode: Optional[DecodeConfig] = None
                     ) -> tuple[list[list[int]], list[list[Hypothesis]]]: ...

    def texts(self, found: list[list[Hypothesis]]) -> Hypotheses: ...

    def translate_lines(self, lines: list[str], first: int = 0) -> list[Line]: ...



@dataclass(frozen=True)
class Candidate:
    """A hypothesis of a repair's search: its text, whether it ended, its confidence."""

    text: str
    finished: bool
    confidence: Optional[float]


@dataclass
class Failed:
    """A unit whose best translation failed its check."""

    unit: Unit
    index: int  # its line's index (seeds sampling)
    cut: bool  # the failure was (also) a cut
    roomy: bool  # a search with more room could finish it
    truncated: bool  # its source was cut to fit the model (`Tally.truncated`)


def review(translator: Retranslator, units: list[Unit], results: list[Line],
           found: list[list[Hypothesis]], sources: list[list[int]], indices: list[int]
           ) -> None:
    """Each unit's best translation (`results[i]`'s first, finished) checked
    (`Unit.check`); one that fails is counted and replaced by its repair (`repaired`),
    with the repair's confidence."""
    positions = translator.engine.max_positions
    failed, where = [], []
    for i, (unit, hyps, source) in enumerate(zip(units, found, sources)):
        full = len(source) >= positions  # perhaps cut to fit: `_cut` says
        truncated = full and _cut(translator, unit.text)
        verdict = unit.check(results[i].best, bool(hyps and hyps[0].eos) and not truncated)
        if not verdict.ok:
            translator.tally.add(verdict)
            decode = translator.decode
            limit = decode.max_len_a * (len(source) - 1) + decode.max_len_b
            failed.append(Failed(unit, indices[i], CUT in verdict.problems,
                                 not full and limit < positions, truncated))
            where.append(i)
    for i, (text, trust) in zip(where, repaired(translator, failed)):
        results[i].hypotheses[0] = (text, results[i].hypotheses[0][1])
        results[i].confidence = trust


def _cut(translator: Retranslator, text: str) -> bool:
    """Whether `text` was cut to fit the model's positions."""
    return source_ids(translator.tokenizer, [text], translator.engine.max_positions)[1][0]


def repaired(translator: Retranslator, failed: list[Failed]
             ) -> list[tuple[str, Optional[float]]]:
    """The translations of `failed` units, each as the module doc says, and their
    confidence: a sentence written as its source has none to give (0)."""
    decode = wide(translator.decode)
    strict = [translator.preparer.strict(item.unit) for item in failed]
    searched = [i for i, (item, unit) in enumerate(zip(failed, strict))
                if not unit.copied and (item.roomy or not item.cut)]
    found = dict(zip(searched, hypotheses(
        translator, [strict[i].text for i in searched], [failed[i].index for i in searched],
        decode)))
    results = []
    for i, (item, unit) in enumerate(zip(failed, strict)):
        hyps = found.get(i, [])
        text, confidence = passing(unit, hyps) if not unit.copied else (unit.source, SURE)
        if text is None and item.cut and not item.roomy:  # no search could fit it
            text, confidence = _in_halves(translator, item)
        # in halves, or written as its source: never the translation of a cut source
        translator.tally.truncated -= item.truncated
        results.append((_ended(translator.tally, text, unit),
                        confidence if text is not None else NONE))
    return results


def hypotheses(translator: Retranslator, lines: list[str], indices: list[int],
               decode: DecodeConfig) -> list[list[Candidate]]:
    """Each line's hypotheses by `decode`'s search, best first."""
    sources, found = translator.search_lines(lines, indices, decode=decode)
    texts = translator.texts(found)
    return [[Candidate(text, hyp.eos, confidence(translator.calibration, hyp, source))
             for (text, _), hyp in zip(line_texts, hyps)]
            for line_texts, hyps, source in zip(texts, found, sources)]


def wide(decode: DecodeConfig) -> DecodeConfig:
    """The search again: beam search of `WIDE_BEAM` beams, every hypothesis kept, and
    twice the room (within the model's positions: `Translator._search`)."""
    beams = max(WIDE_BEAM, decode.beam_size)
    return replace(decode, strategy="beam", beam_size=beams, n_best=beams,
                   max_len_a=max(2.0, 2 * decode.max_len_a), max_len_b=2 * decode.max_len_b)


def passing(unit: Unit, hypotheses: list[Candidate]
            ) -> tuple[Optional[str], Optional[float]]:
    """The first of `hypotheses` (of `unit.text`) whose finished translation passes,
    and its confidence; (None, None) when none does."""
    for candidate in hypotheses:
        done = unit.finish(candidate.text)
        if unit.check(done, candidate.finished).ok:
            return done, candidate.confidence
    return None, None


def _ended(tally: Tally, text: Optional[str], unit: Unit) -> str:
    if text is None:
        tally.untranslated += 1
        return unit.source
    tally.repaired += 1
    return text


_CLAUSE = regex.compile(r"[,;:](?=\s)|\s[-–—](?=\s)")


def _in_halves(translator: Retranslator, item: Failed
               ) -> tuple[Optional[str], Optional[float]]:
    """The unit's sentence translated in two halves, each a line of its own (checked,
    and repaired in turn); None for a sentence of one word, or one so long that the model
    could not read it whole in a few dozen pieces (such a line is cut before it is even
    tokenized: `fitting_chars`), which is written as its source."""
    text = item.unit.masked.original()
    if len(text) > fitting_chars(translator.engine.max_positions):
        return None, None
    cut = halves(text)
    if cut is None:
        return None, None
    left, space, right = cut
    done = translator.translate_lines([left, right], item.index)
    return (done[0].best + space + done[1].best,
            joined([line.confidence for line in done], [left, right]))


def halves(text: str) -> Optional[tuple[str, str, str]]:
    """`text` cut in two at the clause boundary (after `,` `;` `:`, before a dash)
    nearest its middle, else the space nearest it: (left, the space between, right);
    None when it has no space."""
    middle = len(text) / 2
    ends = [match.end() if text[match.start()] in ",;:" else match.start()
            for match in _CLAUSE.finditer(text)]
    if not ends:
        ends = [match.start() for match in regex.finditer(r"\s+", text)]
    ends = [end for end in ends if text[:end].strip() and text[end:].strip()]
    if not ends:
        return None
    at = min(ends, key=lambda end: abs(end - middle))
    right = text[at:].lstrip()
    return text[:at], text[at:len(text) - len(right)], right
