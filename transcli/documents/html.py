"""HTML: the text of a page translated, its markup written back byte for byte.

The page is read by the standard library's `html.parser` (the HTML tokenizer that
ships with Python, kept in step with the HTML standard, and the one parser at hand that
says where each tag starts, which a byte-equal rewrite needs; lxml and html5lib rebuild
a tree and write their own serialisation). Each event's source text is the page
between its start and the next event's, so whatever the tokenizer tolerates (an
unclosed `<p>`, a stray `</b>`, entities without `;`, comments, CDATA in inline SVG)
is written back as it came.

What is translated: runs of text between block-level tags (a paragraph, a heading, a
list item, a table cell, a title), each one unit with its inline markup (`<b>`, `<a>`,
`<br>`, `<img>`, ...) as tags; and the attribute values meant for people (`alt`,
`title`, `placeholder`, `aria-label`). What is not: every tag and every other
attribute, entities outside translated text, comments, and the contents of `<script>`,
`<style>`, `<pre>`, `<textarea>`, `<template>`, `<code>`, `<kbd>`, `<samp>`, `<svg>` and
`<math>` (an inline one stays where it was in its sentence, untranslated). Such an element
left open ends where browsers end it: at the end tag of an element open around it
(`<div><pre>ls</div>`), and an `<svg>` or `<math>` also at an HTML tag that breaks out of
it (`<p>`). Comments end at `-->` or `--!>`, as the HTML standard says.

Bad input is one line naming the file, line and column: a tag or comment left open at
the end of the file (a cut-off download), or a NUL character (not an HTML file).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from html.parser import HTMLParser, attrfind_tolerant, tagfind_tolerant
from typing import Iterable, Iterator, Optional

from transcli.documents.checks import Check
from transcli.documents.units import (
    Atom,
    Close,
    Item,
    Open,
    Part,
    Text,
    Unit,
    has_letters,
    inline_unit,
)
from transcli.system.errors import UserError

# Elements that hold words inside a sentence; their tags become a unit's tags.
INLINE = frozenset("""a abbr acronym b bdi bdo big button cite data del dfn em font i ins
    label mark nobr q rb rp rt rtc ruby s small span strike strong sub sup time tt u""".split())
# Empty elements that sit inside a sentence (their alt or title is translated).
ATOMS = frozenset("br img wbr input embed".split())
# Elements whose whole content is kept as it is: inside a sentence as one untranslated
# word, or on their own between units.
KEPT_INLINE = frozenset("code kbd samp svg math".split())
KEPT_BLOCK = frozenset("script style pre textarea template".split())
# Attributes whose values people read.
FOR_PEOPLE = frozenset({"alt", "title", "placeholder", "aria-label"})
PIECE_CHARS = 1 << 20  # markup without text is handed on in pieces of about this size
_COMMENT_END = re.compile(r"--!?>")
_ANGLED = re.compile(r"<[^<>]*>")
# Elements that hold no content (their start is all there is).
VOID = frozenset("area base br col embed hr img input link meta param source track wbr"
                 .split())
# A start tag of these ends an open <p> (the HTML standard's "close a p element").
_CLOSES_P = frozenset("""address article aside blockquote details dialog div dl fieldset
    figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr main menu nav ol p pre
    section table ul""".split())
# Elements a start tag of the same name ends when it is the one open (`<li>a<li>b`).
_SIBLINGS = frozenset("p li dt dd option tr td th".split())
# HTML start tags that end an open <svg> or <math> (the standard's "breakout" tags).
_BREAKOUT = frozenset("""b big blockquote body br center code dd div dl dt em embed h1 h2
    h3 h4 h5 h6 head hr i img li listing menu meta nobr ol p pre ruby s small span strong
    strike sub sup table tt u ul var""".split())


@dataclass(frozen=True)
class Event:
    """One token of the page: its kind (start, startend, end, data, other), the tag's
    name, the decoded text of data, its source text and where it starts."""

    kind: str
    tag: str
    text: str
    raw: str
    line: int
    column: int


class _Tokenizer(HTMLParser):
    """`html.parser` noting each token's kind and start; the source text between two
    starts is the earlier token's."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str, str, int, int]] = []

    def _note(self, kind: str, tag: str = "", text: str = "") -> None:
        self.found.append((kind, tag, text, *self.getpos()))

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self._note("start", tag)

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        self._note("startend", tag)

    def handle_endtag(self, tag: str) -> None:
        self._note("end", tag)

    def handle_data(self, data: str) -> None:
        self._note("data", text=data)

    def handle_comment(self, data: str) -> None:
        self._note("other")

    def handle_decl(self, decl: str) -> None:
        self._note("decl")

    def handle_pi(self, data: str) -> None:
        self._note("other")

    def unknown_decl(self, data: str) -> None:
        self._note("other")  # <![CDATA[...]]>

    def parse_comment(self, i: int, report: int = 1) -> int:
        """A comment ends as browsers end it (the HTML standard's comment states): at
        `-->` or `--!>`, and `<!-->` and `<!--->` are empty comments (Python before
        3.13 ended one at `-- >` and never at `--!>`)."""
        rawdata = self.rawdata
        for empty in ("<!-->", "<!--->"):
            if rawdata.startswith(empty, i):
                end = i + len(empty)
                break
        else:
            match = _COMMENT_END.search(rawdata, i + 4)
            if match is None:
                return -1
            end = match.end()
        if report:
            self.handle_comment(rawdata[i + 4:end])
        return end

    def parse_endtag(self, i: int) -> int:
        """`</>` is markup browsers skip: kept as markup, not read as text."""
        if self.rawdata.startswith("</>", i) and self.cdata_elem is None:
            self._note("other")
            return i + 3
        return super().parse_endtag(i)


class _Source:
    """The page's text from the first token not yet handed on: (line, column) from the
    tokenizer turned into offsets, and the text before them let go."""

    def __init__(self) -> None:
        self.text = ""
        self.base = 0  # offset of text[0] in the page
        self.lines = [0]  # offset of each line's start, from line `first_line`
        self.first_line = 1

    def add(self, chunk: str) -> None:
        start = self.base + len(self.text)
        self.lines.extend(start + match.end() for match in re.finditer("\n", chunk))
        self.text += chunk

    def offset(self, line: int, column: int) -> int:
        return self.lines[line - self.first_line] + column

    def take(self, start: int, end: int) -> str:
        return self.text[start - self.base:end - self.base]

    def forget(self, offset: int, line: int) -> None:
        """Let go of the text before `offset`, on `line`."""
        self.text = self.text[offset - self.base:]
        self.base = offset
        del self.lines[:line - self.first_line]
        self.first_line = line


def events(chunks: Iterable[str], name: str) -> Iterator[Event]:
    """The page's tokens in order, each with its source text."""
    tokenizer, source = _Tokenizer(), _Source()
    pending: Optional[tuple[str, str, str, int, int]] = None
    for chunk in chunks:
        _check_nul(chunk, source, name)
        source.add(chunk)
        tokenizer.feed(chunk)
        found, tokenizer.found = tokenizer.found, []
        if pending is not None:
            found.insert(0, pending)
        pending = found.pop() if found else None  # its end is the next token's start
        yield from _with_raw(found, pending, source)
        if pending is not None:
            source.forget(source.offset(*pending[3:]), pending[3])
    _check_end(pending, tokenizer, source, name)
    tokenizer.close()
    found = ([pending] if pending is not None else []) + tokenizer.found
    yield from _with_raw(found, None, source)


def _with_raw(found: list, following: Optional[tuple], source: _Source) -> Iterator[Event]:
    ends = [source.offset(*item[3:]) for item in found[1:]]
    ends.append(source.offset(*following[3:]) if following else source.base + len(source.text))
    for (kind, tag, text, line, column), end in zip(found, ends):
        yield Event(kind, tag, text, source.take(source.offset(line, column), end), line,
                    column)


def _check_nul(chunk: str, source: _Source, name: str) -> None:
    if (at := chunk.find("\0")) < 0:
        return
    before = chunk[:at]
    line = source.first_line + len(source.lines) - 1 + before.count("\n")
    column = (at - before.rfind("\n") if "\n" in before
              else source.base + len(source.text) - source.lines[-1] + at + 1)
    raise UserError(f"{name}: line {line}, column {column}: a NUL character: not an HTML file")


def _check_end(last: Optional[tuple], tokenizer: _Tokenizer, source: _Source,
               name: str) -> None:
    """A tag or comment still open at the end of the page: the file was cut (a
    `<script>` or `<style>` left open runs to the end, as browsers read it)."""
    if last is not None and last[0] == "start" and last[1] in HTMLParser.CDATA_CONTENT_ELEMENTS:
        return
    line, column = tokenizer.getpos()
    rest = source.text[source.offset(line, column) - source.base:]
    if rest[:1] == "<" and (rest[1:2].isalpha() or rest[1:2] in ("/", "!", "?")) and rest[1:2]:
        what = "comment" if rest.startswith("<!--") else "tag"
        raise UserError(f"{name}: line {line}, column {column + 1}: {what} not closed at the "
                        f"end of the file ({rest[:30]!r}...): is the file complete?")


# ------------------------------------------------------------------ units


def escape_text(text: str) -> str:
    return html.escape(text, quote=False)


def _markup_of(written: str) -> list[str]:
    """A unit's tags, comments and kept elements, in order: what its translation must
    keep (`checks.Check`). Its text is escaped (no `<` or `>` in it), so each `<...>` is
    markup the unit wrote, and the same ones in the same order are the same markup."""
    return _ANGLED.findall(written)


CHECK = Check(_markup_of)


def tag_parts(raw: str) -> tuple[Part, ...]:
    """A start tag's source, with the values of the attributes meant for people as
    units (everything else as it is)."""
    match = tagfind_tolerant.match(raw, 1)
    if match is None:
        return (raw,)
    parts: list[Part] = []
    done, at = 0, match.end()
    while at < len(raw) and (m := attrfind_tolerant.match(raw, at)) and m.end() > at:
        value = m.group(3)
        if m.group(1).lower() in FOR_PEOPLE and value and has_letters(value):
            parts.append(raw[done:m.start(3)])
            parts.append(_attribute_unit(value))
            done = m.end(3)
        at = m.end()
    parts.append(raw[done:])
    return tuple(part for part in parts if part != "")


def _attribute_unit(value: str) -> Unit:
    quote = value[0] if value[:1] in ("'", '"') and value[-1:] == value[0] else ""
    inner = value[1:-1] if quote else value
    mark = quote or '"'
    entity = "&quot;" if mark == '"' else "&#x27;"

    def escape(text: str) -> str:
        return html.escape(text, quote=False).replace(mark, entity)

    return Unit(" ".join(html.unescape(inner).split()), value, (), escape,
                lambda text: mark + text + mark)


class _Open:
    """A stack of element names that says at once whether a name is in it."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.count: dict[str, int] = {}

    def __contains__(self, name: str) -> bool:
        return self.count.get(name, 0) > 0

    def top(self) -> Optional[str]:
        return self.names[-1] if self.names else None

    def push(self, name: str) -> None:
        self.names.append(name)
        self.count[name] = self.count.get(name, 0) + 1

    def pop(self) -> str:
        name = self.names.pop()
        self.count[name] -= 1
        return name


class _Kept:
    """An element whose content is kept as it is (`<pre>`, `<code>`, `<svg>`, ...): its
    source so far, and the elements opened inside it (`open[name]`: how many), which
    tell an end tag of its own content from the end tag of an element around it."""

    def __init__(self, name: str, raw: str, inline: bool):
        self.name, self.inline = name, inline
        self.raws = [raw]
        self.open: dict[str, int] = {}

    def ends_before(self, event: Event, around: _Open) -> bool:
        """Whether `event` comes after the element's end, as browsers read it: the end
        tag of an element open around it (`<div><pre>ls</div>`), or for `<svg>` and
        `<math>` an HTML tag that breaks out of them (outside a `<foreignObject>`)."""
        if event.kind == "end" and event.tag != self.name:
            return not self.open.get(event.tag) and event.tag in around
        return (self.name in ("svg", "math") and event.kind in ("start", "startend")
                and event.tag in _BREAKOUT
                and not any(self.open.get(tag) for tag in ("foreignobject", "desc", "title")))

    def take(self, event: Event) -> bool:
        """Adds `event` (its own content); whether it was the element's end tag."""
        self.raws.append(event.raw)
        if event.kind == "start" and event.tag not in VOID:
            self.open[event.tag] = self.open.get(event.tag, 0) + 1
        elif event.kind == "end" and self.open.get(event.tag):
            self.open[event.tag] -= 1
        elif event.kind == "end" and event.tag == self.name:
            return True
        return False


class _Paragraphs:
    """Tokens into pieces of the page: markup kept as it is, and units."""

    def __init__(self) -> None:
        self.parts: list[Part] = []  # the piece being gathered
        self.size = 0  # its characters of markup
        self.complete = False  # whether it holds a unit of running text
        self.items: list[Item] = []  # the inline run being gathered
        self.kept: Optional[_Kept] = None  # the element whose content is kept, if inside one
        self.around = _Open()  # the elements open here (outside kept content)

    def take(self, event: Event) -> Optional[list[Part]]:
        """Gathers `event`; a piece when one is complete."""
        if self.kept is not None and self.kept.ends_before(event, self.around):
            self._keep_done()
        if self.kept is not None:
            if self.kept.take(event):
                self._keep_done()
            return self._ready()
        self._nest(event)
        if event.kind == "data":
            self.items.append(Text(event.text, event.raw))
        elif event.kind in ("start", "startend") and (
                event.tag in KEPT_INLINE or event.tag in KEPT_BLOCK):
            if event.tag in KEPT_BLOCK:
                self._end_run()
            self.kept = _Kept(event.tag, event.raw, event.tag in KEPT_INLINE)
            if event.kind == "startend":
                self._keep_done()
        elif event.kind == "start" and event.tag in INLINE:
            self.items.append(Open(event.tag, tag_parts(event.raw)))
        elif event.kind == "end" and event.tag in INLINE:
            self.items.append(Close(event.tag, event.raw))
        elif event.tag in ATOMS or event.tag in INLINE or event.kind == "other":
            self.items.append(Atom(tag_parts(event.raw)))
            if event.tag == "br":  # a line break parts words, as a space does for the model
                self.items.append(Text(" ", ""))
        else:  # a block-level tag, a doctype
            self._end_run()
            self._add(list(tag_parts(event.raw)) if event.kind != "end" else [event.raw])
        return self._ready()

    def _nest(self, event: Event) -> None:
        """The elements open around the next token, as far as a kept element needs to
        know where it ends: an element's start opens it (and ends an open `<p>`, or a
        sibling open just before it, `<li>a<li>`), an end tag closes the elements up to
        its own."""
        around = self.around
        if event.kind == "start" and event.tag not in VOID:
            top = around.top()
            if (event.tag in _CLOSES_P and top == "p") or (
                    event.tag in _SIBLINGS and top == event.tag):
                around.pop()
            if event.tag not in KEPT_INLINE and event.tag not in KEPT_BLOCK:
                around.push(event.tag)
        elif event.kind == "end" and event.tag in around:
            while around.pop() != event.tag:
                pass

    def finish(self) -> list[Part]:
        if self.kept is not None:  # a raw-text element the file never closed
            self._keep_done()
        self._end_run()
        parts, self.parts, self.size, self.complete = self.parts, [], 0, False
        return parts

    def _keep_done(self) -> None:
        kept, self.kept = self.kept, None
        if kept.inline:
            self.items.append(Atom(("".join(kept.raws),)))
        else:
            self._add(["".join(kept.raws)])

    def _end_run(self) -> None:
        if self.items:
            parts = inline_unit(self.items, escape_text, check=CHECK)
            self.complete = self.complete or any(isinstance(part, Unit) for part in parts)
            self._add(parts)
            self.items = []

    def _add(self, parts: list[Part]) -> None:
        self.parts.extend(parts)
        self.size += sum(len(part) for part in parts if isinstance(part, str))

    def _ready(self) -> Optional[list[Part]]:
        if self.complete or self.size >= PIECE_CHARS:
            parts, self.parts, self.size, self.complete = self.parts, [], 0, False
            return parts
        return None


def pieces(chunks: Iterable[str], name: str, force: bool = False) -> Iterator[list[Part]]:
    """The page as pieces, each markup and (mostly) one unit, read as it streams."""
    paragraphs = _Paragraphs()
    for event in events(chunks, name):
        if (piece := paragraphs.take(event)) is not None:
            yield piece
    yield paragraphs.finish()


def html_parts(text: str, name: str) -> list[Part]:
    """A fragment of HTML given whole (Markdown's HTML blocks) as parts."""
    return [part for piece in pieces([text], name) for part in piece]

