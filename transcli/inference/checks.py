"""The check of every translated unit on its way back, and the tally of what failed.

The round trip of protect and restore cannot see what the model got wrong, so each
unit's finished translation (spans, case and terms back: `realtext.Unit.finish`) is
checked against its source (`check`): every protected span is there exactly once as it
goes back, no number of the source is changed, dropped or added, the search ended by
itself (not stopped by the length limit, its source not cut to fit the model), a
source with letters gets a translation with letters, and the translation is not a
fragment of its source (two fifths of its letters or fewer: "Video.js is pretty easy to
set up." -> "Video."). A unit that fails is translated again another way
(`repair.py`); the `Tally` counts what failed and how it ended, and says it in one
line at the end of a command, and in `serve`'s log.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional, Sequence, TextIO

import regex

SPAN = "span"  # a protected span missing, changed or doubled
DIGITS = "digits"  # a number of the source changed, dropped, or one added
CUT = "cut"  # stopped by the length limit, or its source cut to fit the model
EMPTY = "empty"  # nothing for a source with letters
APPENDED = "appended"  # words after its sentence's end, its glossary terms among them
FRAGMENT = "fragment"  # two fifths of the source's letters or fewer
MEANING = {SPAN: "a protected span lost or changed", DIGITS: "a number changed",
           CUT: "cut by the length limit", EMPTY: "empty", FRAGMENT: "a fragment of the source",
           APPENDED: "glossary terms put after the sentence's end"}
FRAGMENT_SHARE = 0.4  # this share of the source's letters or fewer is a fragment...
FRAGMENT_LETTERS = 20  # ... of a source with at least this many letters
_NUMBER = regex.compile(r"\d+")
_LETTER = regex.compile(r"\p{L}")
_ENDS = regex.compile(r"[.!?…][\"'”’»)]*\s+\p{L}")  # a sentence's end, and another one


@dataclass(frozen=True)
class Verdict:
    """What is wrong with a translation (nothing: it passed)."""

    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


def check(expected: str, outputs: Sequence[str], translation: str, finished: bool = True,
          constrained: bool = False) -> Verdict:
    """`translation` checked as the module doc says against `expected`, its source with
    its protected spans as they go back (`outputs`: a glossary term's is its Spanish
    form); `finished`: the search ended it, and its source was not cut. `constrained`:
    its glossary terms were constraints of the search, which may not end before it has
    written them all: one sentence written as two (its terms put after its end, "...
    pronto. 10 años.") is a problem too."""
    problems = [] if finished else [CUT]
    if constrained and _ENDS.search(translation) and not _ENDS.search(expected):
        problems.append(APPENDED)
    spans_letters = sum(_letters(output) for output in outputs)
    letters = _letters(expected) - spans_letters
    written = _letters(translation) - spans_letters
    if _letters(expected) and not _letters(translation):
        problems.append(EMPTY)
    elif letters >= FRAGMENT_LETTERS and written <= letters * FRAGMENT_SHARE:
        problems.append(FRAGMENT)
    if not _spans_kept(expected, outputs, translation):
        problems.append(SPAN)
    if Counter(_NUMBER.findall(expected)) != Counter(_NUMBER.findall(translation)):
        problems.append(DIGITS)
    return Verdict(tuple(problems))


def _spans_kept(expected: str, outputs: Sequence[str], translation: str) -> bool:
    """Whether each span's output is in `translation` as often as the spans that go back
    as it, and no more often than in the source (where it may stand outside a span)."""
    wanted = Counter(outputs)
    return all(wanted[output] <= _count(translation, output) <= max(
        wanted[output], _count(expected, output)) for output in wanted)


def _count(text: str, piece: str) -> int:
    """`piece`'s occurrences in `text`, not inside a longer word or number."""
    before = r"(?<![\w])" if regex.match(r"\w", piece) else ""
    after = r"(?![\w])" if regex.search(r"\w$", piece) else ""
    return len(regex.findall(before + regex.escape(piece) + after, text))


def _letters(text: str) -> int:
    return len(_LETTER.findall(text))


@dataclass
class Tally:
    """What the checks found, over a command's (or a server's) units: the problems of
    the first translations, and how those units ended: `repaired` (translated again
    another way, and passed), `untranslated` (written as their source, spans and
    glossary terms back: no other way passed); and the input lines cut to fit the
    model's `positions` (in the end: a line translated in parts is not)."""

    positions: int = 0
    truncated: int = 0
    problems: Counter[str] = field(default_factory=Counter)
    failed: int = 0
    repaired: int = 0
    untranslated: int = 0

    def add(self, verdict: Verdict) -> None:
        self.failed += 1
        self.problems.update(verdict.problems)

    def summary(self) -> str:
        """One line: how many failed, why, and how they ended ("" when none did)."""
        if not self.failed:
            return ""
        why = ", ".join(f"{count} {MEANING[problem]}" for problem, count
                        in sorted(self.problems.items(), key=lambda item: -item[1]))
        return (f"{self.failed} translated sentence(s) failed their check ({why}): "
                f"{self.repaired} translated again another way (numbers and glossary terms "
                f"as placeholders, a wider search, or in halves), {self.untranslated} "
                f"written as their source")

    def report(self, stream: Optional[TextIO] = None) -> None:
        """transcli's warning lines (on `stream`, stderr by default): inputs cut to fit,
        translations that failed (a dead stderr is `system.streams`' to handle)."""
        stream = stream or sys.stderr
        if self.truncated:
            print(f"transcli: warning: {self.truncated} input line(s) longer than the model's "
                  f"{self.positions} positions were truncated to fit", file=stream)
        if line := self.summary():
            print(f"transcli: warning: {line}", file=stream)
