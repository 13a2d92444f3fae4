"""gettext PO catalogues (.po, .pot): each untranslated message's `msgstr` filled with
the translation of its `msgid` (plural forms: `msgstr[0]` from `msgid`, the others from
`msgid_plural`); every other line written as it is.

Kept as they are: the header, `msgid`s and contexts, comments, references, flags (a
`fuzzy` flag stays), obsolete `#~` entries, and messages that have a translation
already, unless `--force`. A message's leading and trailing whitespace and its line
breaks are kept; its lines are translated one by one; inline HTML tags in a one-line
message are tags of its unit. Each translation is checked as msgfmt --check-format checks
it (`formatstrings.py`, under the entry's flags) before it is written: one that fails is
repaired (its placeholders put back by position) or left untranslated (`msgstr ""`).

The catalogue is read as it streams, one entry at a time: each entry's lines are parsed
by polib (its syntax errors are ours, with the line in the file) and only its `msgstr`
lines are replaced. Catalogues must be UTF-8 (the header's charset says so; a template's
`CHARSET` is taken as UTF-8).
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import replace
from typing import Any, Callable, Iterable, Iterator, Optional

from transcli.documents.checks import Check
from transcli.documents.formatstrings import placeholders, signature, without_placeholders
from transcli.documents.html import ATOMS, INLINE, KEPT_INLINE
from transcli.documents.units import (
    Atom,
    Item,
    Part,
    Text,
    Unit,
    inline_unit,
    markup_items,
)
from transcli.system.errors import UserError
from transcli.system.extras import require

_LINE = re.compile(r'\s*(?:(?:msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?)\s+)?'
                   r'"(?:[^"\\]|\\.)*"\s*')
_POLIB_LINE = re.compile(r"\(line (\d+)\)")
_PLURALS = re.compile(r"nplurals\s*=\s*(\d+)")
_CHARSET = re.compile(r"charset\s*=\s*([\w.-]+)", re.IGNORECASE)
# HTML elements' tags in a message: its markup ("<no view>", "<unavailable>" are words).
_ELEMENTS = INLINE | ATOMS | KEPT_INLINE | frozenset(
    "p div ul ol li dl dt dd table tr td th h1 h2 h3 h4 h5 h6 hr pre blockquote".split())
_TAGS = re.compile(rf"</?(?:{'|'.join(sorted(_ELEMENTS, key=len, reverse=True))})"
                   r"(?=[\s/>])[^<>\n]*>", re.IGNORECASE)
GROUP = 256  # entries parsed by polib at a time


class _Catalogue:
    """What the header says that the entries need: how many plural forms."""

    def __init__(self) -> None:
        self.plurals: Optional[int] = None


def pieces(chunks: Iterable[str], name: str, force: bool = False) -> Iterator[list[Part]]:
    """The catalogue, an entry at a time: its lines as they are, or with its `msgstr`
    lines replaced by units."""
    polib = require("polib", "documents")
    catalogue = _Catalogue()
    blocks = _entries(_lines(chunks))
    while group := list(itertools.islice(blocks, GROUP)):
        for (_, lines), entry in zip(group, _parsed(polib, group, catalogue, name)):
            if entry is None or entry.obsolete or not entry.msgid or (
                    _has_msgstr(entry) and not force):
                yield ["".join(lines)]
            else:
                yield _filled(entry, lines, catalogue)


def _parsed(polib: Any, group: list[tuple[int, list[str]]], catalogue: _Catalogue,
            name: str) -> list[Any]:
    """Each block's entry, or None (the header, comments alone): the group parsed by
    polib at once (setting its parser up costs more than parsing an entry), each entry
    matched to its block by the line it starts on."""
    for first, lines in group:
        _check_lines(lines, first, name)
    start = group[0][0]
    parsed = _parse(polib, "".join(line for _, lines in group for line in lines), start, name)
    by_line = {max(entry.linenum, 1) + start - 1: entry for entry in parsed}
    found = []
    for first, lines in group:
        keys = [_body(line) for line in lines]
        if not any(key.startswith("msgid ") for key in keys):
            found.append(None)
            continue
        _check_entry(keys, first, name)
        entry = next((by_line[line] for line in range(first, first + len(lines))
                      if line in by_line), None)
        if entry is None and parsed.metadata and _string_lines(lines, keys, "msgid ") == '""':
            _read_header(parsed.metadata, catalogue, first, name)
        found.append(entry)
    return found


def _lines(chunks: Iterable[str]) -> Iterator[str]:
    rest = ""
    for chunk in chunks:
        *lines, rest = (rest + chunk).split("\n")
        yield from (line + "\n" for line in lines)
    if rest:
        yield rest


def _body(line: str) -> str:
    """A line without its indentation and an obsolete entry's `#~`."""
    text = line.strip()
    return text[2:].lstrip() if text.startswith("#~") else text


def _entries(lines: Iterable[str]) -> Iterator[tuple[int, list[str]]]:
    """The lines of each entry (comments, keywords, strings, the blank lines after it),
    with the number of its first line: an entry ends where, after its `msgstr`, a line
    starts another (a comment or a keyword other than `msgstr`)."""
    block: list[str] = []
    first, seen_msgstr = 1, False
    for number, line in enumerate(lines, start=1):
        body = _body(line)
        continues = body == "" or body.startswith('"') or body.startswith("msgstr")
        if seen_msgstr and not continues:
            yield first, block
            block, first, seen_msgstr = [], number, False
        block.append(line)
        seen_msgstr = seen_msgstr or body.startswith("msgstr")
    if block:
        yield first, block


def _check_lines(lines: list[str], first: int, name: str) -> None:
    """Each line a comment, blank, or a keyword and a whole quoted string: polib lets a
    string without its closing quote pass."""
    for number, line in enumerate(lines, start=first):
        if not line.lstrip().startswith("#") and line.strip() and not _LINE.fullmatch(line):
            raise UserError(f"{name}: line {number}: not a PO line: {line.strip()[:60]!r}")


def _check_entry(keys: list[str], first: int, name: str) -> None:
    """One `msgid`, then its `msgstr`: what gettext requires of an entry (polib lets a
    `msgid` without `msgstr` pass)."""
    msgids = [i for i, key in enumerate(keys) if key.startswith("msgid ")]
    msgstrs = [i for i, key in enumerate(keys) if key.startswith("msgstr")]
    if not msgstrs or msgstrs[0] < msgids[0]:
        raise UserError(f"{name}: line {first + msgids[0]}: a msgid without its msgstr")
    if len(msgids) > 1:
        raise UserError(f"{name}: line {first + msgids[1]}: a second msgid before a msgstr")


def _parse(polib: Any, text: str, first: int, name: str) -> Any:
    try:
        return polib.pofile(text, encoding="utf-8")
    except (OSError, ValueError) as exc:
        where = _POLIB_LINE.search(str(exc))
        line = first + int(where.group(1)) - 1 if where else first
        reason = str(exc).split(":", 1)[1].strip() if ":" in str(exc) else "syntax error"
        raise UserError(f"{name}: line {line}: {reason}") from None


def _read_header(metadata: dict, catalogue: _Catalogue, first: int, name: str) -> None:
    charset = _CHARSET.search(metadata.get("Content-Type", ""))
    if charset and charset.group(1).lower() not in ("utf-8", "utf8", "charset"):
        raise UserError(f"{name}: line {first}: the catalogue is in {charset.group(1)}: "
                        "transcli writes UTF-8 catalogues only (msgconv --to-code=UTF-8 "
                        "converts it)")
    plurals = _PLURALS.search(metadata.get("Plural-Forms", ""))
    catalogue.plurals = int(plurals.group(1)) if plurals else None


def _has_msgstr(entry: Any) -> bool:
    return bool(entry.msgstr or any(entry.msgstr_plural.values()))


def _filled(entry: Any, lines: list[str], catalogue: _Catalogue) -> list[Part]:
    """The entry's lines with its `msgstr` lines replaced by its translation's."""
    newline = "\r\n" if lines[0].endswith("\r\n") else "\n"
    keys = [_body(line) for line in lines]
    where = [i for i, key in enumerate(keys) if key.startswith("msgstr")]
    start, end = where[0], where[-1] + 1
    while end < len(lines) and keys[end].startswith('"'):
        end += 1
    singular = _unit(entry.msgid, _string_lines(lines, keys, "msgid "), newline, entry.flags)
    if entry.msgid_plural:
        plural = _unit(entry.msgid_plural, _string_lines(lines, keys, "msgid_plural "),
                       newline, entry.flags)
        count = catalogue.plurals or max(len(entry.msgstr_plural), 2)
        written: list[Part] = []
        for n in range(count):
            written += [f"msgstr[{n}] ", singular if n == 0 else plural, newline]
    else:
        written = ["msgstr ", singular, newline]
    return ["".join(lines[:start]), *written, "".join(lines[end:])]


def _string_lines(lines: list[str], keys: list[str], keyword: str) -> str:
    """The quoted strings after `keyword`, as the source has them (line ends inside)."""
    i = next(i for i, key in enumerate(keys) if key.startswith(keyword))
    end = i + 1
    while end < len(lines) and keys[end].startswith('"'):
        end += 1
    text = "".join(lines[i:end]).rstrip("\r\n")
    return text[text.index(keyword.strip()) + len(keyword.strip()):].lstrip()


def _unit(message: str, raw: str, newline: str, flags: list[str]) -> Unit:
    """A message as a unit, written back as a PO string whatever it becomes. A one-line
    message's whitespace around is kept and its HTML elements' tags are tags; a message of
    several lines is translated line by line (`translating.translations`). Its
    translation is checked as msgfmt checks it (its placeholders under the entry's
    format flags, its tags, a line break at its start or end): one that fails is
    repaired (the placeholders put back by position) or left untranslated."""
    check = _check(tuple(flags))
    core = message.strip()
    if "\n" not in core:
        lead, trail = message[:message.index(core)], message[message.index(core) + len(core):]

        def frame(text: str) -> str:
            return _po_string(lead + text + trail, newline)

        items = markup_items(core, _same, _TAGS)
        parts = inline_unit(items)
        if len(parts) == 1 and isinstance(parts[0], Unit):
            return replace(parts[0], raw=raw, frame=frame, check=check, fallback=functools.partial(
                _with_placeholders_as_tags, items, flags, frame))
    return Unit(message, raw, (), frame=lambda text: _po_string(text, newline), check=check)


def _with_placeholders_as_tags(items: list[Item], flags: list[str],
                               frame: Callable[[str], str]) -> Optional[Unit]:
    """The message of `items` as a unit with its placeholders as tags (what a repair puts
    back by position); None if it has no text of its own then."""
    parts = inline_unit(_placeholders_as_tags(items, flags))
    return replace(parts[0], frame=frame) if len(parts) == 1 and isinstance(
        parts[0], Unit) else None


def _same(text: str) -> str:
    return text


@functools.lru_cache(maxsize=256)
def _check(flags: tuple[str, ...]) -> Check:
    """The check of a message under the format flags of its entry (`_needs`)."""
    return Check(functools.partial(_needs, flags=flags), _cleaned, '""', framed=False)


@functools.lru_cache(maxsize=1)
def _polib() -> Any:
    return require("polib", "documents")


def _needs(message: str, flags: tuple[str, ...]) -> tuple:
    """What a message (before it is quoted: its whitespace around is the msgid's) must
    keep of its msgid: its placeholders as msgfmt reads them, its tags, and a line break
    at its start and end."""
    return (signature(message, flags), _TAGS.findall(message),
            message.startswith("\n"), message.endswith("\n"))


def _cleaned(translation: str) -> str:
    """A translation without what reads as placeholders or tags, for the message's own
    to go back into by position."""
    return without_placeholders(_TAGS.sub("", translation))


def _placeholders_as_tags(items: list[Item], flags: list[str]) -> list[Item]:
    """`items` with each placeholder of their text (under `flags`) markup of its own."""
    out: list[Item] = []
    for item in items:
        if not isinstance(item, Text):
            out.append(item)
            continue
        at = 0
        for start, end in placeholders(item.raw, flags):
            out += [Text(item.raw[at:start], item.raw[at:start]), Atom((item.raw[start:end],))]
            at = end
        out.append(Text(item.raw[at:], item.raw[at:]))
    return [item for item in out if not isinstance(item, Text) or item.raw]


def _po_string(text: str, newline: str) -> str:
    """A PO string: one quoted line, or (with line breaks) an empty line and a line per
    line, as gettext writes them."""
    polib = _polib()
    lines = [line for line in re.split(r"(?<=\n)", text) if line]
    if len(lines) <= 1:
        return f'"{polib.escape(text)}"'
    return '""' + "".join(f'{newline}"{polib.escape(line)}"' for line in lines)
