"""Text units: what a document gives the model, and how a translation goes back in.

A `Unit` is one run of text a reader reads as prose (a paragraph, a heading, a table cell,
a subtitle, a catalogue message, an `alt` text). Its `text` is what the model sees; its
inline markup (bold, a link, a line break, an inline code span, an image) is a list of
`Tag`s over character ranges of that text, kept out of the model's sight. The words a
tag held in the source are translated with the rest of the sentence, as one sentence,
and `place_tags` says where the tag goes in the translation; `Unit.render` then writes
the markup back around those words, nested as in the source and therefore well-formed.

A unit whose translation equals its text is written back as it was read (`raw`), byte
for byte: a document translated by the identity gives back the same file.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Optional, Sequence, Union

from transcli.documents.checks import Check, Counts

if TYPE_CHECKING:  # the model's side, loaded with torch only when a model translates
    from transcli.inference.alignment import Alignment as Aligned

Part = Union[str, "Unit"]  # markup written as it is, or text to translate inside it
Aligns = Mapping[str, "Aligned"]  # a text -> the alignment of it and its translation
UNALIGNED: Aligns = MappingProxyType({})  # none: tags placed by position


def same(text: str) -> str:
    return text


@dataclass(frozen=True)
class Tag:
    """Inline markup over `text[start:end]` of its unit: `open` is written before those
    characters, `close` after them. An empty range is markup that holds no words (a line
    break, an image, an inline code span): `spaced` says whether the source had
    whitespace before and after it. `parent` is the index of the tag it sits in (-1: in
    none): the nesting the translation keeps."""

    start: int
    end: int
    open: tuple[Part, ...]
    close: str = ""
    parent: int = -1
    spaced: tuple[bool, bool] = (False, False)


@dataclass(frozen=True)
class Unit:
    """`text` as the model sees it, `raw` as the document holds it; `escape` makes plain
    text safe in the format (HTML's `&lt;`), `frame` turns the rendered unit into what the
    format writes (quotes around an attribute value, a PO string's lines)."""

    text: str
    raw: str
    tags: tuple[Tag, ...] = ()
    escape: Callable[[str], str] = same
    frame: Callable[[str], str] = same
    check: Optional[Check] = None  # what the format needs of it (`checks.py`)
    # it with its placeholders as tags, for a repair (made when one is needed)
    fallback: Optional[Callable[[], Optional[Unit]]] = None

    def units(self) -> Iterator[Unit]:
        """This unit and the units inside its tags (an image's alt text in a paragraph)."""
        yield self
        for tag in self.tags:
            for part in tag.open:
                if isinstance(part, Unit):
                    yield from part.units()

    def unchanged(self, translations: Mapping[str, str]) -> bool:
        return all(translations.get(unit.text, unit.text) == unit.text for unit in self.units())

    def render(self, translations: Mapping[str, str], aligned: Aligns = UNALIGNED,
               counts: Optional[Counts] = None) -> str:
        """The unit written with `translations` (text -> translation; a text missing from
        it stays as it is), its tags placed by `aligned[text]` where there is one (the
        alignment of the text and its translation): as it was read when nothing in it
        changed. What its format needs (`check`) is checked in what is written; a unit
        that fails is repaired or kept as it was read (`checks.py`), and `counts` says
        which."""
        if self.unchanged(translations):
            return self.raw
        inner = Counts()
        opens = [render(tag.open, translations, aligned, inner) for tag in self.tags]
        target = translations.get(self.text, self.text)
        for repaired, written in enumerate(self._tries(target, opens, aligned.get(self.text))):
            if written is not None:
                if counts is not None:
                    counts += inner
                    counts.translated += not repaired
                    counts.repaired += bool(repaired)
                return written
        if counts is not None:
            counts.kept += 1
        return self.raw if self.check is None or self.check.kept is None else self.check.kept

    def _tries(self, target: str, opens: list[str], alignment: Optional[Aligned]
               ) -> Iterator[Optional[str]]:
        """The unit written with `target`: as placed (by `alignment`, if any), then the
        repairs (tags by position; the placeholders put back by position), each once
        its format's check passes it (None while it fails); none when `target` lost
        every word of the unit's text."""
        if has_letters(self.text) and not has_letters(target):
            return  # words translated to nothing: kept as they were
        check = self.check
        if check is None:
            yield self.frame(self._inner(target, opens, alignment))
            return
        wanted = check.markup(self.raw) if check.from_source else self._checked(
            self._inner(self.text, opens, None), check)[1]
        yield self._passing(self._inner(target, opens, alignment), check, wanted)
        if alignment is not None:
            yield self._passing(self._inner(target, opens, None), check, wanted)
        if check.clean is not None:
            unit = (self.fallback() if self.fallback is not None else None) or self
            yield unit._passing(unit._inner(check.clean(target), opens if unit is self else [
                render(tag.open, {}) for tag in unit.tags], None), check, wanted)

    def _checked(self, inner: str, check: Check) -> tuple[str, Any]:
        """The unit as written (framed) from `inner`, and what `check` reads from it
        (from `inner` itself where the frame cannot change that)."""
        written = self.frame(inner)
        return written, check.markup(written if check.framed else inner)

    def _passing(self, inner: str, check: Check, wanted: Any) -> Optional[str]:
        written, found = self._checked(inner, check)
        return written if found == wanted else None

    def _inner(self, target: str, opens: list[str], alignment: Optional[Aligned]) -> str:
        """The unit with `target`, its tags placed by `alignment` (by position without
        one) and written with their starts `opens`, before its frame."""
        placed = place_tags(self.text, [(tag.start, tag.end) for tag in self.tags], target,
                            alignment)
        return _markup(self, target, placed, opens)


def render(parts: Sequence[Part], translations: Mapping[str, str], aligned: Aligns = UNALIGNED,
           counts: Optional[Counts] = None) -> str:
    """A piece of a document (markup and units) written with `translations` (and
    `aligned` and `counts`, as `Unit.render` takes them)."""
    return "".join(part if isinstance(part, str) else part.render(translations, aligned, counts)
                   for part in parts)


# ------------------------------------------------------------------ placing tags

_TOKEN = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")


def place_tags(source: str, ranges: Sequence[tuple[int, int]], target: str,
               alignment: Optional[Aligned] = None) -> list[tuple[int, int]]:
    """Where each tag's character range of `source` goes in `target`, its translation.

    With an `alignment` of the two (the model's, `Translator.alignments`: which source
    characters each piece of the translation came from), by meaning: a tag that holds
    words goes around the stretch of whole tokens (words, punctuation marks) of the
    target that came from its words (`Alignment.span`), a tag that holds none (a line
    break, an image) at the word boundary between what came from either side of it
    (`Alignment.place`). Without one (a translation that is not the model's), and for a
    tag whose words nothing in the translation came from, by position: each range's
    ends are read as positions among the source's tokens, scaled to the target's token
    count; right when the words keep roughly their place, wrong when the translation
    moves them.

    Either way the ends then keep their source order: rounded to token boundaries of
    the target, never out of order, and where a tag that held words would hold none,
    spread so that distinct ends stay distinct while the target has tokens enough (a
    tag that held words then holds at least one). So ranges nested or apart in the
    source are nested or apart in the target, and the markup stays well-formed
    whatever the model wrote; tags therefore keep their order (two tagged phrases the
    translation swaps cannot both follow their words). An unchanged target keeps the
    ranges as they are."""
    if target == source or not ranges:
        return list(ranges)
    spans = [m.span() for m in _TOKEN.finditer(source)]
    wanted = [m.span() for m in _TOKEN.finditer(target)]
    ends = sorted({end for pair in ranges for end in pair})
    scale = len(wanted) / max(len(spans), 1)
    stops = [end for _, end in spans]
    found = {end: _position(spans, stops, end) * scale for end in ends}
    if alignment is not None:
        found = {**found, **_aligned(alignment, ranges, target, wanted, found)}
    where = dict(zip(ends, _boundaries([found[end] for end in ends], len(wanted), False)))
    if any(where[start] == where[end] for start, end in ranges if start < end):
        where = dict(zip(ends, _boundaries([found[end] for end in ends], len(wanted), True)))
    return [_characters(wanted, where[start], where[end], start == end, target)
            for start, end in ranges]


def _aligned(alignment: Aligned, ranges: Sequence[tuple[int, int]], target: str,
             tokens: list[tuple[int, int]], near: dict[int, float]) -> dict[int, float]:
    """The token boundaries of `target` (of `tokens`) that `alignment` gives the ends of
    `ranges`, those of the first range with that end; `near`: where position puts them,
    what breaks ties, and what stands for a range whose words no piece of the target
    came from."""
    cuts = [start for start, _ in tokens] + [len(target)]
    starts = [start for start, _ in tokens]
    found: dict[int, float] = {}
    for start, end in ranges:
        if start == end:
            at = alignment.place(start, end, target, _character(tokens, near[start], target))
            found.setdefault(start, bisect.bisect_left(starts, at))
        elif stretch := alignment.span(start, end, cuts, (round(near[start]),
                                                          round(near[end]))):
            found.setdefault(start, stretch[0])
            found.setdefault(end, stretch[1])
    return found


def _character(tokens: list[tuple[int, int]], position: float, text: str) -> int:
    """The character of `text` where the token boundary nearest to `position` is."""
    i = min(max(math.floor(position + 0.5), 0), len(tokens))
    return tokens[i][0] if i < len(tokens) else len(text)


def _position(spans: list[tuple[int, int]], stops: list[int], offset: int) -> float:
    """`offset` among the tokens (`stops`: where each ends): how many end at or before
    it, plus the share of the one it falls inside."""
    i = bisect.bisect_right(stops, offset)
    if i < len(spans) and spans[i][0] < offset:
        start, end = spans[i]
        return i + (offset - start) / (end - start)
    return float(i)


def _boundaries(positions: list[float], target_tokens: int, spread: bool) -> list[int]:
    """Token boundaries of the target (0..target_tokens) for the ends of the source in
    order (`positions`: where they are wanted among the target's tokens): rounded and
    kept in order (ties allowed); with `spread`, spread to stay strictly increasing
    where the target has room."""
    wanted = [math.floor(p + 0.5) for p in positions]
    out: list[int] = []
    if not spread or len(wanted) > target_tokens + 1:  # ties allowed, order kept
        for w in wanted:
            out.append(min(max(w, out[-1] if out else 0), target_tokens))
        return out
    for w in wanted:
        out.append(max(w, out[-1] + 1) if out else max(w, 0))
    for i in range(len(out) - 1, -1, -1):  # pulled back so that the last one fits
        out[i] = min(out[i], target_tokens if i == len(out) - 1 else out[i + 1] - 1)
    return out


def _characters(tokens: list[tuple[int, int]], first: int, last: int, empty: bool,
                text: str) -> tuple[int, int]:
    """Character offsets in the target of the tokens `first` to `last` (boundaries): a
    range opens at its first token's start and closes at its last token's end, so the
    whitespace around it stays outside; an empty range sits at the start of token
    `first` (`_markup` moves it to the word before when the source had it so)."""
    start = tokens[first][0] if first < len(tokens) else len(text.rstrip())
    if empty or first == last:
        return start, start
    return start, tokens[last - 1][1]


# ------------------------------------------------------------------ writing markup


def _markup(unit: Unit, target: str, placed: list[tuple[int, int]], opens: Sequence[str]
            ) -> str:
    """`target` with `unit`'s tags at `placed`, written as a tree: each tag's range is
    kept inside its parent's and after its elder sibling's, so the result nests as the
    source did even if a range came out of order (`opens[i]`: tag i's start as written).
    A tag that held no words in the source
    (a line break, an image, or a link around nothing but an image) is written whole at
    one point: its start, what it holds, its end."""
    children: dict[int, list[int]] = {}
    for i, tag in enumerate(unit.tags):
        children.setdefault(tag.parent, []).append(i)
    out = _Written()
    # Written with a stack of open tags, not by recursion: a page may nest thousands of
    # inline tags (`<b>` x 3000), past Python's recursion limit. Each entry: a tag's
    # children left to write, the cursor in its range, the range's end, the tag's close.
    stack = [(iter(children.get(-1, [])), [0], len(target), "")]
    while stack:
        kids, cursor, high, close = stack[-1]
        i = next(kids, None)
        if i is None:  # this tag's children written: its text after them, then its close
            out.add(unit.escape(target[cursor[0]:high]), close)
            stack.pop()
            continue
        tag = unit.tags[i]
        start = min(max(placed[i][0], cursor[0]), high)
        end = min(max(placed[i][1], start), high)
        after = ""
        if tag.start == tag.end:
            while not tag.spaced[0] and start > cursor[0] and target[start - 1].isspace():
                start = start - 1  # against the word before, as in the source
            end = start
            out.add(unit.escape(target[cursor[0]:start]))
            out.add(" " * (tag.spaced[0] and not out.spaced()))
            after = " " * (tag.spaced[1] and start < len(target) and not target[start].isspace())
        else:
            out.add(unit.escape(target[cursor[0]:start]))
        cursor[0] = end
        out.add(opens[i])
        stack.append((iter(children.get(i, [])), [start], end, tag.close + after))
    return out.text()


class _Written:
    """Text written so far, and whether it ends in whitespace (or is empty, at the
    start of a unit, where no space goes before markup)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.last = ""

    def add(self, *parts: str) -> None:
        for part in parts:
            if part:
                self.parts.append(part)
                self.last = part[-1]

    def spaced(self) -> bool:
        return not self.last or self.last.isspace()

    def text(self) -> str:
        return "".join(self.parts)


# ------------------------------------------------------------------ building units


@dataclass(frozen=True)
class Text:
    """Running text: as the model reads it (entities decoded) and as the source has it."""

    text: str
    raw: str


@dataclass(frozen=True)
class Open:
    """The start of inline markup that holds words (`<b>`, `**`, `[`), closed by the
    next `Close` of the same name."""

    name: str
    parts: tuple[Part, ...]


@dataclass(frozen=True)
class Close:
    name: str
    raw: str


@dataclass(frozen=True)
class Atom:
    """Markup that holds no words to translate: a line break, an image, a code span."""

    parts: tuple[Part, ...]


Item = Union[Text, Open, Close, Atom]
_SPACES = re.compile(r"\s+")
_EDGE = " \t\n\r\f"  # whitespace written as such, left outside a unit


def has_letters(text: str) -> bool:
    """Whether `text` has anything to translate (numbers and symbols alone do not)."""
    return any(char.isalpha() for char in text)


def inline_unit(items: Sequence[Item], escape: Callable[[str], str] = same,
                frame: Callable[[str], str] = same, check: Optional[Check] = None
                ) -> list[Part]:
    """The parts of a run of inline content: its whitespace on either side, as it is,
    and a `Unit` between (whitespace inside collapsed to single spaces for the model;
    `check`: what its format needs of it).
    A run whose own text holds no words (a row of badges, a link around a code span) is
    no unit: its markup as it is, with the units inside it (an image's alt text) as
    units of their own."""
    text, tags = _text_and_tags(items)
    if not has_letters(text):
        return _joined([part for item in items for part in _parts(item)])
    raw = "".join(render(_parts(item), {}) for item in items)
    lead = len(raw) - len(raw.lstrip(_EDGE))
    trail = len(raw) - len(raw.rstrip(_EDGE))
    unit = Unit(text, raw[lead:len(raw) - trail], tuple(tags), escape, frame, check)
    return [part for part in (raw[:lead], unit, raw[len(raw) - trail:]) if part != ""]


def _joined(parts: Sequence[Part]) -> list[Part]:
    """`parts` with the markup side by side made one string."""
    out: list[Part] = []
    for part in parts:
        if isinstance(part, str) and out and isinstance(out[-1], str):
            out[-1] += part
        elif part != "":
            out.append(part)
    return out


def _parts(item: Item) -> tuple[Part, ...]:
    if isinstance(item, Text):
        return (item.raw,)
    if isinstance(item, Close):
        return (item.raw,)
    return item.parts


def _text_and_tags(items: Sequence[Item]) -> tuple[str, list[Tag]]:
    """The model's text of `items` and their tags over it. A `Close` with no `Open` of
    its name is kept as an `Atom`; markup left open at the end closes with nothing (as
    the source had it). A tag that holds no words notes whether the source had
    whitespace right before and right after it (`Tag.spaced`)."""
    pieces: list[str] = []  # the text, joined once at the end (`+=` on a long str copies)
    length, last = 0, ""  # the text's length and its last character so far
    tags: list[dict] = []
    stack: list[int] = []  # indices of the tags open here
    waiting: list[int] = []  # tags of no words waiting to know whether a space follows
    spaced = True  # whether the source has whitespace (or the unit's start) right here
    for item in items:
        if isinstance(item, Text):
            piece = _SPACES.sub(" ", item.text)
            if piece[:1] == " " and last in ("", " "):
                piece = piece[1:]
            if piece:
                pieces.append(piece)
                length, last = length + len(piece), piece[-1]
            if item.raw:  # (a space the reader adds for the model is no source's)
                _resolve(tags, waiting, item.raw[:1].isspace())
                waiting, spaced = [], item.raw[-1].isspace()
            continue
        _resolve(tags, waiting, False)
        waiting, before, spaced = [], spaced, False
        if isinstance(item, Close) and any(tags[i]["name"] == item.name for i in stack):
            while stack:
                i = stack.pop()
                tags[i]["end"] = length
                waiting += [i] if tags[i]["start"] == length else []
                if tags[i]["name"] == item.name:
                    tags[i]["close"] = item.raw
                    break
            continue
        parts = item.parts if not isinstance(item, Close) else (item.raw,)
        tags.append({"start": length, "end": None, "open": parts, "close": "",
                     "parent": stack[-1] if stack else -1, "spaced": (before, False),
                     "name": item.name if isinstance(item, Open) else ""})
        if isinstance(item, Open):
            stack.append(len(tags) - 1)
        else:
            tags[-1]["end"] = length
            waiting.append(len(tags) - 1)
    for i in stack:
        tags[i]["end"] = length
    text = "".join(pieces)
    if text.endswith(" "):
        text = text[:-1]
    return text, [Tag(min(t["start"], len(text)), min(t["end"], len(text)), t["open"],
                      t["close"], t["parent"], t["spaced"]) for t in tags]


def _resolve(tags: list[dict], waiting: list[int], space_after: bool) -> None:
    for i in waiting:
        tags[i]["spaced"] = (tags[i]["spaced"][0], space_after)


MARKUP = re.compile(r"<[^<>\n]*>|\{\\[^{}\n]*\}")  # tags in plain text (`markup_items`)
_NAME = re.compile(r"</?([a-zA-Z]+)")


def markup_items(raw: str, decode: Callable[[str], str], markup: re.Pattern = MARKUP
                 ) -> list[Item]:
    """Plain text with HTML-like tags in it (a subtitle's `<i>`, a message's `<b>`; a
    subtitle's `{\\an8}`; what `markup` finds) as items: a tag's start and end pair up
    by name, anything else in angle or curly brackets (a WebVTT timestamp, `<br/>`) is
    kept whole. `decode` turns the text between into what the model reads (entities
    decoded)."""
    items: list[Item] = []
    at = 0
    for match in markup.finditer(raw):
        if match.start() > at:
            items.append(Text(decode(raw[at:match.start()]), raw[at:match.start()]))
        items.append(_markup_tag(match.group()))
        at = match.end()
    if at < len(raw):
        items.append(Text(decode(raw[at:]), raw[at:]))
    return items


def _markup_tag(raw: str) -> Item:
    name = _NAME.match(raw)
    if name is None or raw.endswith("/>"):
        return Atom((raw,))
    if raw.startswith("</"):
        return Close(name.group(1).lower(), raw)
    return Open(name.group(1).lower(), (raw,))
