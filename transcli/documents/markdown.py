"""Markdown: paragraphs, headings, list items, quotes and table cells translated; code,
link targets and front matter kept as they are.

The document is parsed by markdown-it-py (CommonMark, with GitHub's tables and
strikethrough), which says which lines each block holds; each block's inline content
is walked token by token against its source, so every piece of markup is known by its
exact text. Emphasis (`*`, `**`, `_`, `~~`), links (`[text](target "title")`, reference
links) and inline HTML tags are tags of the unit; inline code, autolinks, images (whose
alt text is translated), line breaks are kept whole where the sentence has them. HTML
blocks go through the HTML format. Everything else (fenced and indented code, link
reference definitions, rules, YAML or TOML front matter, blank lines) is written as it
is. A block whose source the walk cannot account for, character for character, is kept
as it is rather than guessed at.

A translated block is written on one line in place of its source lines (a paragraph
that ran over three lines of a quote or list item comes back as one line there, which
Markdown reads the same).
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import replace
from typing import Any, Iterable, Iterator, Optional

from transcli.documents.checks import Check
from transcli.documents.html import INLINE, html_parts, tag_parts
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
    render,
)
from transcli.system.extras import require

_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")
_LINE_START = re.compile(r"[#+=-]|\d+[.)]")
_PREFIX = re.compile(r"[\s>*+\-#\d.)|]*")
_BREAK = re.compile(r"[ \t]*\\?\n[ \t]*")
_FRONT = {"---": ("---", "..."), "+++": ("+++",)}
_HTML_OPEN = re.compile(r"<([a-zA-Z][a-zA-Z0-9-]*)[^>]*(?<!/)>$")
_HTML_CLOSE = re.compile(r"</([a-zA-Z][a-zA-Z0-9-]*)\s*>$")
# Where inline markup can start (emphasis, links, images, code, HTML, entities, escapes,
# strikethrough, line breaks): text without these is text alone.
_INLINE_START = re.compile(r"[*_\[\]<>!`~&\\\n]")


def escape(text: str) -> str:
    """Translated text made literal: characters that would start markup escaped."""
    return _SPECIAL.sub(r"\\\1", text)


def frame(text: str) -> str:
    """A block written at a line's start must not become a heading or a list item."""
    return "\\" + text if _LINE_START.match(text) else text


def pieces(chunks: Iterable[str], name: str, force: bool = False) -> Iterator[list[Part]]:
    """The document as pieces: each block's markup and its unit."""
    text = "".join(chunks)
    source = _Source(text)
    md = _parser()
    cursor = seen = 0  # the source written up to; the end of the last block found
    cells = False  # inside a table: a cell is found after the one before it on its line
    for token in md.parse(_without_front_matter(text)):
        cells = token.type != "table_close" and (cells or token.type == "table_open")
        if token.map is None or token.type not in ("inline", "html_block") or (
                not cells and token.type == "inline" and not has_letters(token.content)):
            continue
        if token.type == "html_block":
            start, end, parts = _html_block(source, token, name)
        elif (where := _located(source, token, seen)) is None:
            continue
        else:
            (start, end), seen = where, where[1]
            parts = _inline_parts(source, token, start, end)
        if parts is not None:
            yield [text[cursor:start], *parts]
            cursor = seen = end
    yield [text[cursor:]]


@functools.lru_cache(maxsize=1)
def _parser() -> Any:
    """CommonMark with GitHub's tables and strikethrough."""
    markdown_it = require("markdown_it", "documents")
    md = markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"])
    md.disable("text_join")  # escapes and entities stay tokens of their own, with their source
    return md


def _markup_of(written: str) -> list[tuple]:
    """A unit's inline markup as Markdown reads it (emphasis, links and their targets,
    images, code spans, inline HTML, line breaks), in order: what its translation must
    keep (`checks.Check`)."""
    if not _INLINE_START.search(written):
        return []
    md = _parser()
    tokens: list[Any] = []
    md.inline.parse(written, md, {}, tokens)  # (parseInline, without the core's steps)
    return [(token.type, token.markup, tuple(sorted((token.attrs or {}).items())),
             token.content if token.type in ("code_inline", "html_inline") else "")
            for token in tokens if token.type not in ("text", "text_special", "softbreak")]


CHECK = Check(_markup_of, from_source=True)


def _without_front_matter(text: str) -> str:
    """The text with front matter (between `---` lines, or `+++` for TOML, at the very
    start) blanked, line count kept, so that the parser never reads it as Markdown."""
    lines = text.split("\n")
    first = lines[0].lstrip("\ufeff").rstrip()
    if first not in _FRONT:
        return text
    for i in range(1, len(lines)):
        if lines[i].rstrip() in _FRONT[first]:
            return "\n" * (i + 1) + "\n".join(lines[i + 1:])
    return text


class _Source:
    """The document's text and where each line starts."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line(self, number: int) -> tuple[int, int]:
        """Offsets of a line (0-based), without its line end."""
        start = self.starts[number]
        end = self.starts[number + 1] - 1 if number + 1 < len(self.starts) else len(self.text)
        return start, end - (self.text[start:end].endswith("\r"))

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1


def _html_block(source: _Source, token: Any, name: str) -> tuple[int, int, list[Part]]:
    start = source.line(token.map[0])[0]
    end = source.line(token.map[1] - 1)[1]
    return start, end, html_parts(source.text[start:end], name)


def _located(source: _Source, token: Any, after: int) -> Optional[tuple[int, int]]:
    """Where a block's inline content lies in the source, from `after` on (a table
    cell after the one before it on its line); None when it cannot be placed exactly."""
    lines = token.content.split("\n")
    first, last = token.map[0], token.map[0] + len(lines) - 1
    start = _find(source, lines[0], first, after)
    if start is None:
        return None
    end = _find(source, lines[-1], last, start if first == last else 0)
    if end is None:
        return None
    return start, end + len(_match(source, lines[-1], end).group())


def _inline_parts(source: _Source, token: Any, start: int, end: int) -> Optional[list[Part]]:
    """A block's inline content (at `start:end` in the source) as parts: its unit, or
    its markup with the units inside it (the alt texts of a row of badges); None when
    it holds nothing to translate or its source cannot be accounted for."""
    if not has_letters(token.content):
        return None
    items = _items(token.children or [], token.content)
    if items is None:
        return None
    parts = inline_unit(items, escape, frame, CHECK)
    if len(parts) == 1 and isinstance(parts[0], Unit):
        return [replace(parts[0], raw=source.text[start:end])]
    if not any(isinstance(part, Unit) for part in parts):
        return None
    return parts if render(parts, {}) == source.text[start:end] else None


def _match(source: _Source, line: str, at: int) -> re.Match:
    return _pattern(line).match(source.text, at)


def _pattern(line: str) -> re.Pattern:
    """A content line as it is in the source (a table cell's `|` may be `\\|` there)."""
    return re.compile(re.escape(line).replace(r"\|", r"\\?\|"))


def _find(source: _Source, line: str, number: int, after: int) -> Optional[int]:
    """Where content `line` starts on source line `number`, at or after `after`, with
    only block markers (quote, list, heading, table) before it."""
    start, end = source.line(number)
    low = max(start, after)
    match = _pattern(line).search(source.text, low, end)
    if match is None or not _PREFIX.fullmatch(source.text, low, match.start()):
        return None
    return match.start()


def _items(children: list, content: str) -> Optional[list[Item]]:
    """The inline tokens as items, each with its exact source text in `content`; None
    when a token's source is not where it should be."""
    items: list[Item] = []
    at, skip = 0, 0
    for token in children:
        if skip:
            skip -= 1
            continue
        found = _item(token, content, at)
        if found is None:
            return None
        new_items, at, skip = found
        items.extend(new_items)
    return items if at == len(content) else None


def _item(token: Any, content: str, at: int
          ) -> Optional[tuple[list[Item], int, int]]:
    """One token (with the tokens after it it takes along): its items, where the source
    goes on, how many following tokens it took."""
    kind = token.type
    if kind in ("text", "text_special"):
        raw = token.content if kind == "text" else token.markup
        return ([Text(token.content, raw)], at + len(raw), 0) if content.startswith(
            raw, at) else None
    if kind in ("softbreak", "hardbreak"):
        match = _BREAK.match(content, at)
        if match is None:
            return None
        found: list[Item] = [Text(" ", match.group())] if kind == "softbreak" else [
            Atom((match.group(),)), Text(" ", "")]
        return found, match.end(), 0
    if kind.endswith("_open") and kind[:-5] in ("em", "strong", "s"):
        return _literal(Open(kind[:-5], (token.markup,)), token.markup, content, at)
    if kind.endswith("_close") and kind[:-6] in ("em", "strong", "s"):
        return _literal(Close(kind[:-6], token.markup), token.markup, content, at)
    if kind == "code_inline":
        end = _code_end(content, at, token.markup)
        return ([Atom((content[at:end],))], end, 0) if end else None
    if kind == "html_inline":
        return _literal(_html_item(token.content), token.content, content, at)
    if kind == "link_open":
        return _link_open(token, content, at)
    if kind == "link_close":
        end = _link_tail(content, at)
        return ([Close("link", content[at:end])], end, 0) if end else None
    if kind == "image":
        return _image(token, content, at)
    return None


def _literal(item: Item, raw: str, content: str, at: int
             ) -> Optional[tuple[list[Item], int, int]]:
    return ([item], at + len(raw), 0) if content.startswith(raw, at) else None


def _html_item(raw: str) -> Item:
    """Inline HTML: an inline element's start or end is a tag of the unit, anything
    else (a `<br>`, a comment) is kept whole."""
    if (match := _HTML_OPEN.match(raw)) and match.group(1).lower() in INLINE:
        return Open(match.group(1).lower(), tag_parts(raw))
    if (match := _HTML_CLOSE.match(raw)) and match.group(1).lower() in INLINE:
        return Close(match.group(1).lower(), raw)
    return Atom(tag_parts(raw))


def _code_end(content: str, at: int, ticks: str) -> int:
    """The end of the code span opening at `at` (its closing run of backticks)."""
    if not content.startswith(ticks, at):
        return 0
    close = re.compile(f"(?<!`){re.escape(ticks)}(?!`)")
    match = close.search(content, at + len(ticks))
    return match.end() if match else 0


def _link_open(token: Any, content: str, at: int
               ) -> Optional[tuple[list[Item], int, int]]:
    if token.markup == "autolink":  # <https://...>: kept whole, its text and its end too
        end = content.find(">", at) + 1
        return ([Atom((content[at:end],))], end, 2) if end and content[at] == "<" else None
    return _literal(Open("link", ("[",)), "[", content, at)


def _link_tail(content: str, at: int) -> int:
    """The end of a link's `](target "title")`, `][label]` or `]`; 0 if none is there."""
    from markdown_it.helpers import parseLinkDestination, parseLinkTitle

    if content[at:at + 1] != "]":
        return 0
    at += 1
    if content[at:at + 1] == "[":
        end = content.find("]", at)
        return end + 1 if end >= 0 else 0
    if content[at:at + 1] != "(":
        return at
    at = _skip_space(content, at + 1)
    destination = parseLinkDestination(content, at, len(content))
    if destination.ok:
        at = _skip_space(content, destination.pos)
        title = parseLinkTitle(content, at, len(content))
        if title.ok:
            at = _skip_space(content, title.pos)
    return at + 1 if content[at:at + 1] == ")" else 0


def _skip_space(content: str, at: int) -> int:
    while at < len(content) and content[at] in " \t\n":
        at += 1
    return at


def _image(token: Any, content: str, at: int) -> Optional[tuple[list[Item], int, int]]:
    """`![alt](target)`: kept whole but for its alt text, which is translated."""
    label = token.content
    if not content.startswith("![" + label + "]", at):
        return None
    middle = at + 2 + len(label)
    end = _link_tail(content, middle)
    if not end:
        return None
    alt = " ".join("".join(child.content for child in token.children or []).split())
    parts: tuple[Part, ...] = (content[at:end],)
    if has_letters(alt):
        parts = ("![", Unit(alt, label, (), escape), content[middle:end])
    return [Atom(parts)], end, 0
