"""Translating a document: its units through the model a chunk at a time, the document
written back as they come.

The model sees only lines of text: each unit's text, split at its line breaks, without
the whitespace around each line and without lines that hold no letter (numbers,
symbols), each distinct line once per chunk. `translate` is any function from lines to
their translations (a `Translator`'s, or the identity in the round-trip tests): this
layer never sees a model. `align`, where given (a `Translator`'s `alignments`), says for
each translated line of a unit with inline tags which of its characters each piece of
the translation came from, and the tags are placed by it (`units.place_tags`; by
position without it). `Document` is the one driver: a file streamed by `translate`, or a
document given whole to `serve`, in the same chunks.
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence

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
    return Document(fmt, text, name, force).translated(translate, align).decode()


def translate_bytes(data: bytes, fmt: DocumentFormat, translate: Translate, name: str,
                    force: bool = False, align: Optional[Align] = None) -> bytes:
    """A file given whole (an upload), translated into the same format."""
    return Document(fmt, data, name, force).translated(translate, align)


@dataclass
class Chunk:
    """What the model is given at a time: `lines`, the lines of `units` (each once).
    `pieces`: the part of a text document they are in, written as soon as they are
    translated (a Word file's chunk has none: the file is written whole at the end)."""

    units: list[Unit]
    lines: list[str]
    pieces: list[Piece]


class Document:
    """A document opened for translation: a file or stdin (`translate`), or data given
    whole (`serve`'s requests and uploads). Bad input is said here, before any model
    loads. Its `chunks` are what the model is given at a time, and `written` is a chunk
    with its lines' translations: the same chunks, whoever translates them, so a file
    comes back byte for byte the same from `translate` and `serve`. A Word file is read
    whole and `finished` whole; a text document streams, piece by piece."""

    def __init__(self, fmt: DocumentFormat, source: str | bytes, name: Optional[str] = None,
                 force: bool = False):
        """`source`: the data (`str` or `bytes`, named `name`), or for `translate` a
        path or "-" for stdin (a `str` with `name` None)."""
        self.fmt, self.force = fmt, force
        self.path = source if name is None else None
        self.name = name or ("<stdin>" if source == "-" else str(source))
        self.data = None if name is None else source
        self.counts = Counts()  # what became of the units written so far
        self._found: dict[str, str] = {}  # a Word file's translations, until `finished`
        self._aligned: dict[str, Aligned] = {}
        self.whole = self._whole() if fmt.binary else None
        self.total: Optional[int] = None  # units, where known before translating
        if self.whole is not None:
            self.total = len(self.whole.units)
        elif self.path not in (None, "-") and Path(self.path).is_file():
            self.total = sum(map(_units, self._pieces()))
        elif self.path not in (None, "-"):
            open_checked(self.path, "rb").close()  # its one-line error, now

    def _whole(self) -> Any:
        """A Word file, read whole."""
        data = self.data
        if data is None:
            data = sys.stdin.buffer.read() if self.path == "-" else _read(str(self.path))
        return self.fmt.load().Document(data, self.name)

    def _pieces(self) -> Iterator[Piece]:
        if self.data is not None:
            text = ([self.data] if isinstance(self.data, str)
                    else decoded_chunks(io.BytesIO(self.data), self.name))
            yield from read_pieces(self.fmt, text, self.name, self.force)
        elif self.path == "-":
            yield from read_pieces(self.fmt, decoded_chunks(sys.stdin.buffer, self.name),
                                   self.name, self.force)
        else:
            with open_checked(str(self.path), "rb") as handle:
                yield from read_pieces(self.fmt, decoded_chunks(handle, self.name), self.name,
                                       self.force)

    def chunks(self) -> Iterator[Chunk]:
        """The document's chunks, read as they are asked for."""
        if self.whole is not None:
            for units in chunked(self.whole.units, _text_size):
                yield Chunk(units, wanted_lines(unit.text for unit in units), [])
            return
        for pieces in chunked(self._pieces(), _size):
            units = list(units_of(pieces))
            yield Chunk(units, wanted_lines(unit.text for unit in units), pieces)

    def found(self, chunk: Chunk, done: Sequence[str]) -> dict[str, str]:
        """Each unit's text -> its translation, from `done`, the translations of the
        chunk's lines."""
        return assembled((unit.text for unit in chunk.units), dict(zip(chunk.lines, done)))

    def to_align(self, chunk: Chunk, done: Sequence[str]) -> list[tuple[str, str]]:
        """The (line, translation) pairs whose alignments `written`'s `align` is asked
        for (`serve` gets them from the model before writing)."""
        return to_align(chunk.units, self.found(chunk, done))

    def written(self, chunk: Chunk, done: Sequence[str], align: Optional[Align] = None
                ) -> bytes:
        """The chunk's pieces with `done`, its lines' translations (tags placed by
        `align` where given; what became of its units added to `counts`); a Word file
        keeps them until it is `finished`."""
        found = self.found(chunk, done)
        aligned = aligned_texts(chunk.units, found, align)
        if self.whole is not None:  # a later chunk's translation of a text stands
            self._found.update(found)
            self._aligned.update(aligned)
            return b""
        return "".join(render(piece, found, aligned, self.counts)
                       for piece in chunk.pieces).encode()

    def finished(self) -> bytes:
        """What is written after the last chunk: a Word file, whole."""
        if self.whole is None:
            return b""
        return self.whole.written(self._found, self._aligned, self.counts)

    def translated(self, translate: Translate, align: Optional[Align] = None) -> bytes:
        """The document translated by `translate`, a chunk at a time."""
        lines = Lines(translate)
        return b"".join(self.written(chunk, lines(chunk.lines), align)
                        for chunk in self.chunks()) + self.finished()

    def translate(self, output: Output, translate: Translate, progress: bool = True,
                  align: Optional[Align] = None) -> Counts:
        """Translate into `output`, in the same format, a chunk at a time, with a progress
        bar in units; inline tags placed by `align` where given (a `Translator`'s
        `alignments`), else by position (`units.place_tags`). What became of the units
        (`Counts`: translated, repaired, kept in English)."""
        lines = Lines(translate)
        binary = self.whole is not None
        drain(stream(self.chunks(), lambda chunks, first: [
            self.written(chunk, lines(chunk.lines), align).decode() for chunk in chunks],
                     None if binary else output, total=self.total, progress=progress,
                     unit="unit", cost=lambda chunk: 0, lines=1, end="",
                     count=lambda chunks: sum(_counted(chunk) for chunk in chunks)))
        if binary:
            with output.open() as handle:
                handle.write(self.finished())
        return self.counts


def _read(path: str) -> bytes:
    with open_checked(path, "rb") as handle:
        return handle.read()


def _counted(chunk: Chunk) -> int:
    """Units of a chunk the progress bar counts: a Word file's paragraphs, a text
    document's units of running text (not the alt texts inside them)."""
    return len(chunk.units) if not chunk.pieces else sum(map(_units, chunk.pieces))


def _units(piece: Piece) -> int:
    """Units of running text in a piece (not the alt texts inside them)."""
    return sum(isinstance(part, Unit) for part in piece)


def _size(piece: Piece) -> int:
    return sum(len(part) if isinstance(part, str) else len(part.raw) for part in piece)


def _text_size(unit: Unit) -> int:
    return len(unit.text)
