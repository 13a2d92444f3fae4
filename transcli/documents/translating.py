"""Translating a document: its units through the model a chunk at a time, the document
written back as they come.

The model sees only lines of text: each unit's text, split at its line breaks, without
the whitespace around each line and without lines that hold no letter (numbers,
symbols), each distinct line once per chunk. `translate` is any function from lines to
their translations (a `Translator`'s, or the identity in the round-trip tests): this
layer never sees a model. `align`, where given (a `Translator`'s `alignments`), says for
each translated line of a unit with inline tags which of its characters each piece of
the translation came from, and the tags are placed by it (`units.place_tags`; by
position without it). `DocumentFile` streams a file for `translate`; `WholeDocument`
takes a document given whole (`serve`'s requests and uploads) in the same chunks, and
leaves the model's work between reading and writing to its caller.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Mapping, Optional, Sequence

from transcli.documents.checks import Counts
from transcli.documents.formats import DocumentFormat
from transcli.documents.reading import decoded_chunks
from transcli.documents.units import Part, Unit, has_letters, render
from transcli.inference.streaming import Output, chunked, drain, stream
from transcli.system.files import open_checked

if TYPE_CHECKING:
    from transcli.inference.alignment import Alignment as Aligned

# Lines in, their translations out; the int is the index of the first line among all
# lines sent so far (sampling seeds each line by it).
Translate = Callable[[list[str], int], list[str]]
# Lines and their translations in, per line which of its characters the translation's
# came from (`Translator.alignments`; None: not known): inline tags are placed by it.
Align = Callable[[list[str], list[str]], list[Optional["Aligned"]]]
Piece = list[Part]


class Lines:
    """`translate` with the count of lines sent to it, for the seeds of the next call."""

    def __init__(self, translate: Translate):
        self.translate, self.sent = translate, 0

    def __call__(self, lines: list[str]) -> list[str]:
        first, self.sent = self.sent, self.sent + len(lines)
        return self.translate(lines, first) if lines else []


def translations(texts: Iterable[str], translate: Callable[[list[str]], list[str]]
                 ) -> dict[str, str]:
    """Each text's translation: line by line, each line's surrounding whitespace kept, a
    line without letters kept as it is."""
    texts = list(texts)
    wanted = wanted_lines(texts)
    return assembled(texts, dict(zip(wanted, translate(wanted))))


def wanted_lines(texts: Iterable[str]) -> list[str]:
    """The lines the model is given for `texts`: each line with letters, without the
    whitespace around it, once."""
    return list(dict.fromkeys(core for text in dict.fromkeys(texts) for line in text.split("\n")
                              if has_letters(core := line.strip())))


def assembled(texts: Iterable[str], found: dict[str, str]) -> dict[str, str]:
    """Each text's translation from its lines' (`found`: line -> translation)."""
    return {text: "\n".join(_line(line, found) for line in text.split("\n"))
            for text in dict.fromkeys(texts)}


def _line(line: str, found: dict[str, str]) -> str:
    core = line.strip()
    if core not in found:
        return line
    start = line.index(core)
    return line[:start] + found[core] + line[start + len(core):]


def aligned_texts(units: Iterable[Unit], found: Mapping[str, str], align: Optional[Align]
                  ) -> dict[str, Aligned]:
    """The alignment of each text with tags among `units` that its translation in `found`
    changed, by `align` (none without it): what places their tags. A text of several
    lines is aligned line by line, as it was translated, its lines' alignments joined."""
    pairs = to_align(units, found)
    if align is None or not pairs:
        return {}
    from transcli.inference.alignment import joined  # a model translates: torch is loaded

    done = dict(zip(pairs, align([line for line, _ in pairs], [text for _, text in pairs])))
    aligned = {}
    for text in _tagged(units, found):
        lines = list(_lines(text, found[text]))
        parts = [(alignment, start, at) for line, translation, start, at in lines
                 if (alignment := done.get((line, translation))) is not None]
        if parts and len(parts) == len(lines):
            aligned[text] = joined(parts)
    return aligned


def to_align(units: Iterable[Unit], found: Mapping[str, str]) -> list[tuple[str, str]]:
    """The (line, translation) pairs whose alignments place the tags of `units`: the
    translated lines of each text with tags that its translation in `found` changed."""
    return list(dict.fromkeys((line, translation) for text in _tagged(units, found)
                              for line, translation, _, _ in _lines(text, found[text])))


def _tagged(units: Iterable[Unit], found: Mapping[str, str]) -> list[str]:
    return list(dict.fromkeys(unit.text for unit in units if unit.tags
                              and found.get(unit.text, unit.text) != unit.text))


def _lines(text: str, translation: str) -> Iterator[tuple[str, str, int, int]]:
    """Each line of `text` the model translated (without the whitespace around it), its
    translation, and where each starts in `text` and `translation` (as `assembled` put
    them together)."""
    if text.count("\n") != translation.count("\n"):
        return
    start = at = 0
    for line, done in zip(text.split("\n"), translation.split("\n")):
        core, got = line.strip(), done.strip()
        if has_letters(core) and got and core != got:
            yield core, got, start + line.index(core), at + done.index(got)
        start, at = start + len(line) + 1, at + len(done) + 1


def units_of(pieces: Sequence[Piece]) -> Iterator[Unit]:
    for piece in pieces:
        for part in piece:
            if isinstance(part, Unit):
                yield from part.units()


def translated_pieces(pieces: Sequence[Piece], translate: Callable[[list[str]], list[str]],
                      align: Optional[Align] = None, counts: Optional[Counts] = None
                      ) -> list[str]:
    """Pieces of a document written with their units translated (their tags placed by
    `align` where given; what became of them added to `counts`)."""
    units = list(units_of(pieces))
    found = translations((unit.text for unit in units), translate)
    aligned = aligned_texts(units, found, align)
    return [render(piece, found, aligned, counts) for piece in pieces]


def read_pieces(fmt: DocumentFormat, chunks: Iterable[str], name: str,
                force: bool = False) -> Iterator[Piece]:
    """A text document's pieces (`formats` says what a format's module provides)."""
    return getattr(fmt.load(), fmt.reader)(chunks, name, force)


def translate_text(text: str, fmt: DocumentFormat, translate: Translate, name: str = "<text>",
                   force: bool = False, align: Optional[Align] = None) -> str:
    """A document given whole (a request's text), translated (tags placed by `align`
    where given: a `Translator`'s `alignments`)."""
    return WholeDocument(text, fmt, name, force).translated(translate, align).decode()


def translate_bytes(data: bytes, fmt: DocumentFormat, translate: Translate, name: str,
                    force: bool = False, align: Optional[Align] = None) -> bytes:
    """A file given whole (an upload), translated into the same format."""
    return WholeDocument(data, fmt, name, force).translated(translate, align)


class WholeDocument:
    """A document given whole (a request's text, an uploaded file), read at once and cut
    into the chunks `DocumentFile` translates it in: `lines[k]` are the lines the model
    is given for chunk k, and `written` the document with their translations, so that
    with the same translations it is byte for byte `translate`'s output (the same lines
    in the same calls, each line's index counted as `Lines` counts it). The model's work
    is the caller's, between the two: `serve` awaits it without holding a thread."""

    def __init__(self, data: str | bytes, fmt: DocumentFormat, name: str, force: bool = False):
        self.fmt, self.name = fmt, name
        self.counts = Counts()  # what became of the units, once `written`
        if fmt.binary:
            self.whole = fmt.load().Document(data, name)
            self.chunks: list[list[Unit]] = list(chunked(self.whole.units, _text_size))
            self.pieces: list[list[Piece]] = []
        else:
            text = [data] if isinstance(data, str) else decoded_chunks(io.BytesIO(data), name)
            self.pieces = list(chunked(read_pieces(fmt, text, name, force), _size))
            self.chunks = [list(units_of(chunk)) for chunk in self.pieces]
        self.lines = [wanted_lines(unit.text for unit in units) for units in self.chunks]

    @property
    def chars(self) -> int:
        """Characters of the document's text (each unit's, markup left out, as often as it
        comes): what `serve` counts against its limit."""
        return sum(len(unit.text) for units in self.chunks for unit in units)

    def written(self, translated: Sequence[Sequence[str]], align: Optional[Align] = None
                ) -> bytes:
        """The document (UTF-8 for a text format) with `translated[k]`, the translations
        of `lines[k]` (tags placed by `align` where given); `counts` then says what
        became of its units."""
        found = self._found(translated)
        aligned = [aligned_texts(units, chunk, align) for units, chunk in zip(self.chunks, found)]
        self.counts = Counts()
        if self.fmt.binary:  # a later chunk's translation of a text stands, as in `translate`
            return self.whole.written({text: done for chunk in found
                                       for text, done in chunk.items()},
                                      {text: done for chunk in aligned
                                       for text, done in chunk.items()}, self.counts)
        return "".join(render(piece, chunk_found, chunk_aligned, self.counts)
                       for chunk, chunk_found, chunk_aligned in zip(self.pieces, found, aligned)
                       for piece in chunk).encode()

    def _found(self, translated: Sequence[Sequence[str]]) -> list[dict[str, str]]:
        """Per chunk, each unit's text -> its translation, from `translated[k]`."""
        return [assembled((unit.text for unit in units), dict(zip(lines, done)))
                for units, lines, done in zip(self.chunks, self.lines, translated)]

    def to_align(self, translated: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
        """The (line, translation) pairs whose alignments `written`'s `align` is asked
        for, given `translated` (`serve` gets them from the model before writing)."""
        return [pair for units, chunk in zip(self.chunks, self._found(translated))
                for pair in to_align(units, chunk)]

    def translated(self, translate: Translate, align: Optional[Align] = None) -> bytes:
        """The document translated by `translate`, a chunk at a time."""
        lines = Lines(translate)
        return self.written([lines(wanted) for wanted in self.lines], align)


class DocumentFile:
    """A document file (or stdin) opened for `translate`: read through once here, so that
    bad input is said before the model loads and the progress bar has a total (a Word
    file is read whole; a pipe cannot be read twice and is read as it is translated)."""

    def __init__(self, fmt: DocumentFormat, input: str, force: bool = False):
        self.fmt, self.input, self.force = fmt, input, force
        self.whole = None
        self.total: Optional[int] = None
        if fmt.binary:
            data = sys.stdin.buffer.read() if input == "-" else _read(input)
            self.whole = fmt.load().Document(data, input)
            self.total = len(self.whole.units)
        elif input != "-" and Path(input).is_file():
            self.total = sum(map(_units, self.pieces()))
        elif input != "-" and (Path(input).is_dir() or not Path(input).exists()):
            open_checked(input, "rb").close()  # its one-line error, now

    def pieces(self) -> Iterator[Piece]:
        if self.input == "-":
            yield from read_pieces(self.fmt, decoded_chunks(sys.stdin.buffer, "<stdin>"),
                                   "<stdin>", self.force)
            return
        with open_checked(self.input, "rb") as handle:
            yield from read_pieces(self.fmt, decoded_chunks(handle, self.input), self.input,
                                   self.force)

    def translate(self, output: Output, translate: Translate, progress: bool = True,
                  align: Optional[Align] = None) -> Counts:
        """Translate into `output`, in the same format, a chunk of units at a time, with
        a progress bar in units; inline tags placed by `align` where given (a
        `Translator`'s `alignments`), else by position (`units.place_tags`). What
        became of the units (`Counts`: translated, repaired, kept in English)."""
        lines = Lines(translate)
        counts = Counts()
        if self.whole is not None:
            self._translate_whole(output, lines, progress, align, counts)
            return counts
        drain(stream(self.pieces(),
                     lambda chunk, first: translated_pieces(chunk, lines, align, counts),
                     output, total=self.total, progress=progress, unit="unit", cost=_size,
                     end="", count=lambda chunk: sum(map(_units, chunk))))
        return counts

    def _translate_whole(self, output: Output, lines: Callable[[list[str]], list[str]],
                         progress: bool, align: Optional[Align], counts: Counts) -> None:
        """A document written whole (a Word file): its units translated in chunks by
        the same loop, with the same bar."""
        found: dict[str, str] = {}
        aligned: dict[str, Aligned] = {}

        def work(units: list[Unit], first: int) -> list[str]:
            chunk = translations((unit.text for unit in units), lines)
            found.update(chunk)
            aligned.update(aligned_texts(units, chunk, align))
            return []

        drain(stream(self.whole.units, work, None, total=self.total, progress=progress,
                     unit="unit", cost=_text_size))
        with output.open() as handle:
            handle.write(self.whole.written(found, aligned, counts))


def _read(path: str) -> bytes:
    with open_checked(path, "rb") as handle:
        return handle.read()


def _units(piece: Piece) -> int:
    """Units of running text in a piece (not the alt texts inside them)."""
    return sum(isinstance(part, Unit) for part in piece)


def _size(piece: Piece) -> int:
    return sum(len(part) if isinstance(part, str) else len(part.raw) for part in piece)


def _text_size(unit: Unit) -> int:
    return len(unit.text)
