"""Glossaries: the user's own words for things, obeyed by the translation.

A glossary file is UTF-8 TSV, one entry a line: `english<TAB>spanish[<TAB>more forms]`;
`#` starts a comment line and blank lines are skipped. Where an entry's English side
occurs in a line (whole words, any case, the longest entry where several start at one
place, never overlapping one another or another protected span), that occurrence becomes
a protected span (`spans.Span`) whose text going back is the entry's first Spanish form:
the model reads a placeholder it copies, and `spans.restore` writes the Spanish form
where the copy is, exactly once. So every path that protects spans (both engines,
`serve`'s batches, `explain`) applies the glossary with no code of its own, and a line
with no entry in it is translated exactly as without a glossary.

The form is written as the file gives it (in capitals where the English was written in
capitals, and in the case of an ALL-CAPS or Title Case line: `Unit.finish`): it is not
inflected or agreed with the words around it. Constrained search and training-time term
annotation, which would let the model fit the term into the sentence, are not built.
"""

from __future__ import annotations

import collections
import functools
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Optional, Sequence

import regex

from transcli.config.schema import DecodeConfig
from transcli.inference.spans import Span, find_spans
from transcli.system.errors import UserError
from transcli.system.text import open_text, text_lines

TERM = "term"  # the kind of a glossary's spans
# How terms get into a translation (decode.glossary_method; `method` resolves auto).
CONSTRAIN = "constrain"  # the English stays; constrained search writes a Spanish form
PLACEHOLDER = "placeholder"  # the English is masked; its placeholder's copy becomes the form
ANNOTATE = "annotate"  # the form written into the source (`data.terms.annotate`), as a
#                        run trained with train.term_annotation saw terms
_SPACE = regex.compile(r"\s+")


@dataclass(frozen=True)
class Entry:
    english: str
    spanish: tuple[str, ...]  # the first is the one written; any counts as used


def _key(text: str) -> str:
    """How an English side is looked up: Unicode's case folding, runs of spaces as one."""
    return _SPACE.sub(" ", text.strip()).casefold()


def _pattern(english: str) -> str:
    """An English side as a regex: its words with any run of spaces between."""
    return r"\s+".join(map(regex.escape, english.split()))


# Matched in any case, letter by letter (Unicode's simple folding: full folding,
# "STRASSE" for "Straße", made a glossary of 50,000 entries compile two and a half times
# as long); the pattern is made of the English sides as written, so "İstanbul" matches.
_CASELESS = regex.IGNORECASE
# What no side of an entry may hold: a line break or a tab would change the lines of
# what is translated (a one-line answer in two, a cue injected into subtitles), and
# other control characters show nothing.
_BREAKING = regex.compile(r"[\p{Cc}\p{Zl}\p{Zp}]")


def _uncrossed(pattern: regex.Pattern[str], text: str, at: int,
               crossed: Callable[[int, int], bool]) -> Optional[regex.Match[str]]:
    """The first match of `pattern` in `text` from `at` that no span crosses (inside a
    URL, a path...: tried again from the next place)."""
    while (match := pattern.search(text, at)) is not None and crossed(*match.span()):
        at = match.start() + 1
    return match


def problem(text: str) -> Optional[str]:
    """Why `text` cannot be a side of an entry (None: it can)."""
    if _BREAKING.search(text):
        return "holds a line break, a tab or another control character"
    return None


def normalized(text: str) -> str:
    """An entry's side as lines are read (`realtext.readable`): NFC, spaces as one."""
    return _SPACE.sub(" ", unicodedata.normalize("NFC", text).strip())


class Glossary:
    """Entries, and where their English sides occur in a line. A glossary `extended` by a
    request's few terms keeps the one it extends as its `base`: the request's terms are
    matched by a pattern of their own, and the base's (compiled once, however large) is
    never compiled again."""

    def __init__(self, entries: Iterable[Entry], name: str = "glossary",
                 base: Optional[Glossary] = None):
        self.name = name
        self.base = base
        self.own = {_key(entry.english): entry for entry in entries}
        self.entries: Mapping[str, Entry] = (
            collections.ChainMap(self.own, base.entries) if base is not None else self.own)

    @functools.cached_property
    def pattern(self) -> Optional[regex.Pattern[str]]:
        """The own entries' English sides, longest first (the regex takes the first
        alternative that matches at a place); compiled on first use, by whoever finds
        terms first (`serve`'s model worker, not its event loop)."""
        terms = sorted((entry.english for entry in self.own.values()), key=len, reverse=True)
        return regex.compile(
            r"(?<![\w\p{M}])(?:" + "|".join(map(_pattern, terms)) + r")(?![\w\p{M}])",
            flags=_CASELESS) if terms else None

    def extended(self, terms: Mapping[str, str]) -> Glossary:
        """This glossary and `terms` ({english: spanish}: a `serve` request's own), which
        win where both have an English side."""
        extra = [Entry(normalized(english), (normalized(spanish),))
                 for english, spanish in terms.items()]
        return Glossary(extra, self.name, base=self)

    def __len__(self) -> int:
        return len(self.entries)

    def entry(self, written: str) -> Entry:
        """The entry an occurrence `written` in a line stands for (by the regex's own
        case folding where lower case differs from it: "aſk" is "ask")."""
        found = self.entries.get(_key(written))
        return found or next(entry for entry in self.entries.values()
                             if regex.fullmatch(_pattern(entry.english), written, _CASELESS))

    def find(self, text: str, crossed: Callable[[int, int], bool] = lambda start, end: False
             ) -> list[Span]:
        """The entries' occurrences in `text`, left to right, as spans whose replacement
        is the entry's first Spanish form; none where `crossed(start, end)` (another
        protected span reaches across its edges). Where the own terms and the base's
        start at one place, the longer wins, the own on a tie."""
        layers = [glossary.pattern for glossary in self._layers() if glossary.pattern]
        ahead: list[Optional[regex.Match[str]]] = [None] * len(layers)  # each one's next
        found: list[Span] = []
        at = 0
        while True:
            ahead = [m if m is not None and m.start() >= at else
                     _uncrossed(pattern, text, at, crossed) for m, pattern in zip(ahead, layers)]
            matches = [m for m in ahead if m is not None]
            if not matches:
                return found
            match = min(matches, key=lambda m: (m.start(), -m.end()))
            written = match.group()
            found.append(Span(match.start(), match.end(), TERM, written,
                              cased_like(written, self.entry(written))))
            at = match.end()

    def _layers(self) -> list[Glossary]:
        """This glossary and the ones it extends, the nearest first."""
        return [self] + (self.base._layers() if self.base is not None else [])

    def forms(self, text: str) -> tuple[tuple[str, ...], ...]:
        """Per entry occurrence in `text`, in order: its Spanish forms, the one written as
        `find` writes it first (in capitals where the English was)."""
        return tuple(tuple(dict.fromkeys((span.output, *self.entry(span.text).spanish)))
                     for span in self.find(text))

    def used(self, source: str, translation: str) -> tuple[int, int]:
        """(entries whose Spanish form, any of them, is in `translation`; entries that
        occur in `source`): what evaluate's term-use rate adds up. An entry counts once a
        line, and matches the translation whole-word in any case."""
        applicable = {self.entry(span.text) for span in find_spans(source, terms=self.find)
                      if span.kind == TERM}
        hits = sum(any(_contains(translation, form) for form in entry.spanish)
                   for entry in applicable)
        return hits, len(applicable)


@dataclass
class TermUse:
    """The term-use rate, added up line by line: of the entries that occur in a source
    line, the share whose Spanish form (any) is in its translation."""

    glossary: Glossary
    used: int = 0
    applicable: int = 0

    def add(self, sources: Sequence[str], translations: Sequence[str]) -> None:
        for source, translation in zip(sources, translations):
            used, applicable = self.glossary.used(source, translation)
            self.used += used
            self.applicable += applicable

    @property
    def rate(self) -> Optional[float]:
        """None when no entry occurred in the source."""
        return self.used / self.applicable if self.applicable else None


def method(decode: DecodeConfig, annotated: bool = False) -> str:
    """How `decode` applies a glossary: `decode.glossary_method`, where auto is the
    annotation for a run trained with it (`annotated`), else constrained search when the
    torch engine searches (greedy or beam), else placeholders (CTranslate2 has no
    constrained search; sampling keeps one path)."""
    if decode.glossary_method != "auto":
        return decode.glossary_method
    if annotated:
        return ANNOTATE
    return CONSTRAIN if decode.engine == "torch" and decode.strategy != "sample" else PLACEHOLDER


def _contains(text: str, phrase: str) -> bool:
    return regex.search(r"(?<![\w\p{M}])" + regex.escape(phrase) + r"(?![\w\p{M}])", text,
                        flags=_CASELESS) is not None


def cased_like(written: str, entry: Entry) -> str:
    """The entry's Spanish form, in capitals where the line wrote the English in capitals
    (a word of two letters or more) and the file did not: "APPLE" -> "MANZANA"."""
    form = entry.spanish[0]
    letters = [char for char in written if char.isalpha()]
    if len(letters) >= 2 and written.isupper() and not entry.english.isupper():
        return form.upper()
    return form


def read_glossary(path: str | Path) -> Glossary:
    """The glossary in file `path`; a line that is no entry is a `UserError` naming the
    file and the line (so is a missing file or bad UTF-8, by `system.text`)."""
    path = Path(path)
    entries: dict[str, tuple[int, Entry]] = {}
    with open_text(path) as handle:
        for number, line in enumerate(text_lines(handle, path), start=1):
            entry = _entry(line, f"{path}: line {number}")
            if entry is None:
                continue
            key = _key(entry.english)
            if key in entries:
                raise UserError(f"{path}: line {number}: '{entry.english}' is already in the "
                                f"glossary (line {entries[key][0]})")
            entries[key] = (number, entry)
    return Glossary((entry for _, entry in entries.values()), str(path))


def _entry(line: str, where: str) -> Optional[Entry]:
    """The entry a line holds; None for a comment or a blank line."""
    if not line.strip() or line.lstrip().startswith("#"):
        return None
    fields = [field.strip() for field in line.split("\t")]
    while len(fields) > 2 and not fields[-1]:  # trailing tabs, as spreadsheets write them
        fields.pop()
    if len(fields) < 2:
        raise UserError(f"{where}: no tab: an entry is source<TAB>target[<TAB>more forms]")
    if not all(fields):
        side = "the source" if not fields[0] else "a target"
        raise UserError(f"{where}: {side} side is empty")
    for i, field in enumerate(fields):
        if why := problem(field):
            side = "the source" if i == 0 else "a target"
            raise UserError(f"{where}: {side} side {why}")
    return Entry(normalized(fields[0]), tuple(map(normalized, fields[1:])))
