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
    """How an English side is looked up: lower case, runs of spaces as one."""
    return _SPACE.sub(" ", text.strip()).lower()


def _pattern(key: str) -> str:
    """A looked-up English side as a regex: its words with any run of spaces between."""
    return r"\s+".join(map(regex.escape, key.split(" ")))


class Glossary:
    """Entries, and where their English sides occur in a line."""

    def __init__(self, entries: Iterable[Entry], name: str = "glossary"):
        self.name = name
        self.entries = {_key(entry.english): entry for entry in entries}
        # Longest first: the regex takes the first alternative that matches at a place.
        terms = sorted(self.entries, key=len, reverse=True)
        self.pattern = regex.compile(
            r"(?<![\w\p{M}])(?:" + "|".join(map(_pattern, terms)) + r")(?![\w\p{M}])",
            flags=regex.IGNORECASE) if terms else None

    def extended(self, terms: Mapping[str, str]) -> Glossary:
        """This glossary and `terms` ({english: spanish}: a `serve` request's own), which
        win where both have an English side."""
        extra = [Entry(_SPACE.sub(" ", english.strip()), (spanish.strip(),))
                 for english, spanish in terms.items()]
        return Glossary([*self.entries.values(), *extra], self.name)

    def __len__(self) -> int:
        return len(self.entries)

    def entry(self, written: str) -> Entry:
        """The entry an occurrence `written` in a line stands for (by the regex's own
        case folding where lower case differs from it: "aſk" is "ask")."""
        found = self.entries.get(_key(written))
        return found or next(entry for key, entry in self.entries.items()
                             if regex.fullmatch(_pattern(key), written, regex.IGNORECASE))

    def find(self, text: str, crossed: Callable[[int, int], bool] = lambda start, end: False
             ) -> list[Span]:
        """The entries' occurrences in `text`, left to right, as spans whose replacement
        is the entry's first Spanish form; none where `crossed(start, end)` (another
        protected span reaches across its edges)."""
        found: list[Span] = []
        at = 0
        while self.pattern and (match := self.pattern.search(text, at)):
            start, end = match.span()
            if crossed(start, end):  # inside a URL, a path...: try from the next place
                at = start + 1
                continue
            written = match.group()
            found.append(Span(start, end, TERM, written,
                              cased_like(written, self.entry(written))))
            at = end
        return found

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
                        flags=regex.IGNORECASE) is not None


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
        raise UserError(f"{where}: no tab: an entry is english<TAB>spanish[<TAB>more forms]")
    if not all(fields):
        side = "English" if not fields[0] else "a Spanish"
        raise UserError(f"{where}: {side} side is empty")
    return Entry(_SPACE.sub(" ", fields[0]), tuple(fields[1:]))
