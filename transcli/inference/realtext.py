"""From a line of real text to the sentences the model sees, and back.

    line ──protect──▶ spans masked ──split──▶ sentences ──case──▶ what the model reads
    translations ──recase──▶ ──restore spans──▶ joined with the line's own spacing

`Preparer.plan` makes a line's `Plan` (its `Unit`s: one per sentence, or one for the
line); `Unit.finish` gives a unit's translation its case and spans back, `Plan.join`
makes the line's translation of its units'. A glossary's terms (`glossary.py`) are
protected spans that go back as their Spanish form. Each step is
`decode`'s to turn off (`protect`, `truecase`, `split`);
with all of them off the model reads the line as it is. A unit with no letter left
(a URL alone, a number, an emoji) is copied, not translated.
"""

from __future__ import annotations

import copy
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, Optional

import regex

from transcli.config.schema import DecodeConfig
from transcli.data.terms import annotate
from transcli.inference.casing import Truecaser, case_of, recased
from transcli.inference.checks import Verdict, check
from transcli.inference.glossary import ANNOTATE, CONSTRAIN, PLACEHOLDER, TERM, Glossary, method
from transcli.inference.sentences import sentence_bounds
from transcli.inference.spans import (
    NUMBERS,
    Masked,
    Placement,
    Span,
    find_spans,
    mask,
    relative_place,
    restore,
)


@dataclass
class Unit:
    """One piece of a line translated on its own."""

    masked: Masked  # the sentence, its spans replaced by placeholders
    text: str  # what the model reads: `masked.text` in the case the model knows
    case: Optional[str]  # the case its translation is given back in (`casing.recased`)
    before: str  # what separates it from the unit before it in the line
    copied: bool  # no letter to translate: its translation is its text
    # Per glossary term in `text`, its Spanish forms: what constrained search must write
    # (when terms are constraints, not placeholders: `glossary.method`).
    terms: tuple[tuple[str, ...], ...] = ()
    # The sentence as its translation must carry it (`check`): spans as they go back,
    # glossary terms the model writes as their forms.
    expected: str = ""

    @property
    def source(self) -> str:
        """The sentence with its spans back: what a unit `copied` is translated as (a
        glossary's term in it as its Spanish form)."""
        return restore(self.masked.text, self.masked)

    def finish(self, translation: str, place: Placement = relative_place) -> str:
        """The unit's translation in the source's case, with its spans back (a glossary's
        forms in that case too: an ALL-CAPS line's terms in capitals)."""
        masked = self.masked.replaced(lambda form: recased(form, self.case)) \
            if self.case else self.masked
        return restore(recased(translation, self.case), masked, place)


    def check(self, translation: str, finished: bool = True) -> Verdict:
        """This unit's finished translation checked against its source (`checks.check`;
        `finished`: the search ended it, the source uncut)."""
        outputs = [recased(span.output, self.case) if self.case and span.replacement
                   else span.output for span in self.masked.spans]
        return check(self.expected, outputs, translation, finished, bool(self.terms))


def _edited(text: str, spans: list[Span]) -> str:
    """`text` with each of `spans` (in order, its offsets) as it goes back."""
    parts, last = [], 0
    for span in spans:
        parts += [text[last:span.start], span.output]
        last = span.end
    return "".join(parts + [text[last:]])


@dataclass
class Plan:
    """A line as units; an empty or blank line has none."""

    units: list[Unit]

    def join(self, finished: list[str]) -> str:
        """The line's translation: each unit's finished one after the spacing before it."""
        return "".join(unit.before + text for unit, text in zip(self.units, finished))


class Preparer:
    """Plans lines as `decode` asks, knowing the tokenizer's pieces."""

    def __init__(self, decode: DecodeConfig, sp: Any, glossary: Optional[Glossary] = None,
                 annotated: bool = False):
        """`sp`: the sentencepiece processor (`Tokenizer.sp`): which characters it has a
        piece for, how many tokens a line is, and the likely casing of words. `glossary`:
        terms written in Spanish, with `decode.protect` or without, as `glossary.method`
        says (`annotated`: the model was trained with term annotation)."""
        self.decode = decode
        self.glossary = glossary
        self.annotated = annotated
        self.sp = sp
        self.truecaser = Truecaser(sp)
        pieces = [sp.IdToPiece(i) for i in range(sp.GetPieceSize())]
        self.known = frozenset(piece for piece in pieces if len(piece) == 1)
        self.pool = placeholder_pool(sp)

    def derived(self, decode: DecodeConfig, glossary: Optional[Glossary]) -> Preparer:
        """This preparer with other settings and glossary (what it knows of the
        tokenizer shared)."""
        other = copy.copy(self)
        other.decode, other.glossary = decode, glossary
        return other

    def unknown(self, char: str) -> bool:
        """Whether the vocabulary lacks a piece for a character."""
        return char not in self.known

    def caseless_unknown(self, char: str) -> bool:
        """Whether the vocabulary lacks a piece for a character in either case: a capital
        it lacks in an ALL-CAPS line is translated lower-cased (`_unit` checks that)."""
        return all(variant not in self.known for variant in (char, char.lower(), char.upper()))

    def plan(self, line: str, split: bool = True) -> Plan:
        """`line`'s units: its sentences when it is to be split (`split` and `decode` say
        so), else the whole line. A blank line has none."""
        text = readable(line).strip()
        if not text:
            return Plan([])
        masked = self._mask(text, self.caseless_unknown)
        bounds = self._sentences(masked.text) if split else [(0, len(masked.text))]
        units, last = [], 0
        for start, end in bounds:
            part = masked.part(start, end)
            units.append(self._unit(part, masked.text[last:start]))
            last = end
        return Plan(units)

    def strict(self, unit: Unit) -> Unit:
        """`unit` planned another way, for a translation that failed its check
        (`repair.py`): every number masked (none stands for itself), and the glossary's
        terms masked too (placeholders, not constraints), so that restore puts back each
        exactly."""
        original = unit.masked.original()
        return self._unit(self._mask(original, self.caseless_unknown, True), unit.before, True)

    def _mask(self, text: str, unknown: Callable[[str], bool], strict: bool = False) -> Masked:
        """`text` with its spans (`_spans`) masked; no placeholder is a number a glossary
        form of the line holds (the model's copy of it would meet the term)."""
        forms = [form for span in self.glossary.find(text)
                 for form in self.glossary.entry(span.text).spanish] if self.glossary else []
        return mask(text, self._spans(text, unknown, strict), self.pool, forms,
                    numbers_stay=not strict)

    def _sentences(self, text: str) -> list[tuple[int, int]]:
        """Where `text`'s sentences are, when the line is to be split (`decode.split`;
        never with n-best lists); else all of it. Every line of several sentences, however
        short: on the dev sets' lines of several sentences, an hour's model scored 35.2
        BLEU sentence by sentence against 31.4 whole (dev.tatoeba) and 12.8 against 10.5
        (dev.newstest2012), and splitting only lines over 20 or 40 tokens fell between."""
        whole = [(0, len(text))]
        if self.decode.n_best > 1:
            return whole
        if not (self.decode.split or self.decode.split_sentences):
            return whole
        return sentence_bounds(text) or whole

    def _unit(self, masked: Masked, before: str, strict: bool = False) -> Unit:
        """A sentence as the model reads it. Where a character it lacks is still there
        (a capital it has only in lower case, in a line not re-cased), the sentence's
        spans are found again, every character it lacks among them."""
        unit = self._cased(masked, before, strict)
        if self.decode.protect and any(self.unknown(char) for char in unit.text
                                       if not char.isspace()):
            original = masked.original()
            unit = self._cased(self._mask(original, self.unknown, strict), before, strict)
        return unit

    @property
    def terms_as(self) -> Optional[str]:
        """How glossary terms are applied (`glossary.method`); None without a glossary."""
        return method(self.decode, self.annotated) if self.glossary is not None else None

    def _spans(self, text: str, unknown: Callable[[str], bool], strict: bool = False
               ) -> list[Span]:
        """The spans of `text` to mask: all kinds with `decode.protect` (or `strict`), and
        the glossary's terms (alone when `decode.protect` is off: the glossary was asked
        for), unless they are constraints or annotations (they still keep other spans
        from overlapping them) whose form the model can write (a form with a character
        the vocabulary lacks goes back by its placeholder), and the unit is not `strict`."""
        terms = self.glossary.find if self.glossary else None
        if self.decode.protect or strict:
            spans = find_spans(text, unknown, terms=terms)
        else:
            spans = find_spans(text, kinds=frozenset(), terms=terms) if terms else []
        if self.terms_as in (None, PLACEHOLDER) or strict:
            return spans
        return [span for span in spans if span.kind != TERM or not self._writable(span.output)]

    def _writable(self, form: str) -> bool:
        """Whether the vocabulary has every character of `form`, in one case at least (an
        ALL-CAPS line's form is in capitals here, and written in lower case)."""
        return not any(self.caseless_unknown(char) for char in form if not char.isspace())

    def _cased(self, masked: Masked, before: str, strict: bool) -> Unit:
        case = case_of(masked.text) if self.decode.truecase else None
        text = self.truecaser(masked.text, case) if case else masked.text
        text = _SPACES.sub(" ", text)  # a tab in a sentence reads as a space
        protect = self.decode.protect or strict
        copied = (protect or bool(masked.spans)) and not any(char.isalpha() for char in text)
        terms: tuple[tuple[str, ...], ...] = ()
        expected = restore(masked.text, masked)
        if self.glossary is not None and not copied and not strict:
            if self.terms_as == CONSTRAIN:
                terms = self.glossary.forms(text)
            elif self.terms_as == ANNOTATE:
                text = annotate(text, [(span.start, span.end, span.output)
                                       for span in self.glossary.find(text)])
            if terms or self.terms_as == ANNOTATE:  # the model writes the forms
                expected = _edited(expected, self.glossary.find(expected))
        return Unit(masked, text, case, before, copied, terms, expected)


# Characters that show nothing and join nothing a translation keeps: control characters
# (a NUL, a carriage return inside a line; not a tab), a soft hyphen, a zero-width space,
# a word joiner, a byte-order mark inside a line. The model reads the words they sit in
# whole ("Super\u00adman" is Superman). Not the zero-width joiner: it makes one emoji of
# several.
_INVISIBLE = regex.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u200b\u2060\ufeff]")
_SPACES = regex.compile(r"[^\S ]")  # whitespace other than a space: a tab, a form feed


def readable(line: str) -> str:
    """`line` as it is translated: in Unicode's composed form (NFC: "café" written with
    a combining accent is the same word), without invisible and control characters
    (`_INVISIBLE`)."""
    return _INVISIBLE.sub("", unicodedata.normalize("NFC", line))


def placeholder_pool(sp: Any) -> tuple[str, ...]:
    """The placeholders a line's spans take, in turn: the numbers of 2 to 4 digits that
    are one piece of the vocabulary, most frequent first (one piece is copied as one
    token), then `spans.NUMBERS`."""
    single = []
    for i in range(sp.GetPieceSize()):
        piece = sp.IdToPiece(i)
        number = piece.removeprefix("\u2581")
        if piece != number and number.isdigit() and 2 <= len(number) <= 4 and number[0] != "0":
            single.append((sp.GetScore(i), number))
    ordered = [number for _, number in sorted(single, key=lambda item: -item[0])]
    return tuple(dict.fromkeys(ordered + list(NUMBERS)))
