"""What a unit's translation must keep for its format, and what became of a document's
units.

The model's output is where a document breaks: a placeholder moved or dropped, text that
reads as markup, a subtitle line left empty. So every unit is checked on its way back:
its format's `Check` reads what must survive (`markup`: a page's tags and attributes in
order, a Markdown unit's links, images and code, a catalogue's placeholders as msgfmt
reads them, a cue's tags and shape) from the unit as written with its translation, and
it must be what it reads from the unit as written with its own text. A unit that fails
is repaired (its tags placed by position instead of by the model's alignment; for a
catalogue, the translation's placeholders taken out and the message's put back by
position) or, when no repair passes, written untranslated; `Counts` says how many of
each, for the summary a command prints.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable, Optional


@dataclass(frozen=True)
class Check:
    """A format's check of a written unit. `markup` reads, from a unit as the format
    writes it (framed: a PO string, a cue's lines), what must be the same in the
    translation as in the source. `clean` takes out of a translation what the format
    would read as markup or placeholders, for a repair that writes what is left (with
    the unit's `fallback` where it has one: a catalogue's message with its placeholders
    as tags, put back by position; None: no such repair). `kept` is what a unit kept
    untranslated is written as (None: as it was read; a catalogue's message: an empty
    msgstr, as gettext marks one untranslated)."""

    markup: Callable[[str], Any]
    clean: Optional[Callable[[str], str]] = None
    kept: Optional[str] = None
    framed: bool = True  # False: `markup` reads the unit before its frame (the same)
    # True: what `markup` reads from the unit as it was read (`Unit.raw`) is what it must
    # read from its translation (where nothing it reads is translated: a cue's tags, a
    # Markdown unit's links and code, not an alt text it holds)
    from_source: bool = False


@dataclass
class Counts:
    """What became of a document's units that the model changed: written translated,
    repaired (their markup put back another way, then checked again), or kept in
    English (their markup did not survive). A driver returns one; counts of other
    checks can join it as fields."""

    translated: int = 0
    repaired: int = 0
    kept: int = 0

    def __iadd__(self, other: Counts) -> Counts:
        for field in fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))
        return self

    def as_dict(self) -> dict[str, int]:
        return {field.name: getattr(self, field.name) for field in fields(self)}

    def summary(self) -> Optional[str]:
        """One line for the user when a unit was repaired or kept in English (None when
        every unit came through as the model wrote it)."""
        notes = []
        if self.kept:
            notes.append(f"{self.kept} unit{'s' * (self.kept != 1)} kept in English: their "
                         "markup did not survive the translation")
        if self.repaired:
            notes.append(f"{self.repaired} unit{'s' * (self.repaired != 1)} repaired: their "
                         "markup put back by position")
        if not notes:
            return None
        total = self.translated + self.repaired + self.kept
        return f"{'; '.join(notes)} (of {total} translated)"
