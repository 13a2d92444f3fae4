"""Subtitles: SubRip (.srt) and WebVTT (.vtt). Each cue's text is translated as one
sentence; numbering, identifiers, timings, cue settings, NOTE, STYLE and REGION blocks
are written as they are.

SubRip files are read by `srt` (its parser checks the blocks follow one another, and
its own pattern says where each cue's text lies); WebVTT cues by `webvtt-py` (each block
judged by its strict parser: timings, settings), blocks found as WebVTT parsers find them
(a timing line with no empty line before it starts a cue). Both are checked for cues that end
before they start. A cue's lines are joined for the model and its translation broken
again into as many lines, at the spaces nearest an even split. Inline markup (`<i>`,
`<b>`, `<font ...>`, WebVTT's `<v Name>`, `<c.class>`, timestamps; SubRip's `{\\an8}`)
are tags of the unit.
"""

from __future__ import annotations

import bisect
import html
import itertools
import re
from typing import Any, Callable, Iterable, Iterator

from transcli.documents.checks import Check
from transcli.documents.units import MARKUP, Part, inline_unit, markup_items
from transcli.system.errors import UserError
from transcli.system.extras import require

_BREAKABLE = re.compile(r"<[^<>]*>|\{[^{}]*\}| ")
_MARKUP = re.compile(r"<[^<>]*>|\{[^{}]*\}")


# ------------------------------------------------------------------ the cue's text


def cue_parts(raw: str, escape: Callable[[str], str], decode: Callable[[str], str]
              ) -> list[Part]:
    """A cue's text (its lines) as a unit: markup as tags, lines joined by spaces, the
    translation broken into as many lines, where the source broke (in shares of its
    visible text)."""
    newline = "\r\n" if "\r\n" in raw else "\n"
    lengths = [len(_MARKUP.sub("", line.strip())) for line in raw.split("\n")]
    total = max(sum(lengths), 1)
    shares = [before / total for before in itertools.accumulate(lengths[:-1])]
    return inline_unit(markup_items(raw, decode), escape,
                       lambda text: _broken(text, shares, newline), CHECK)


def _cue_needs(written: str) -> tuple[list[str], bool]:
    """A cue's tags, in order, and whether each of its lines holds something and no
    `-->` (an empty line would end the cue, an arrow start another): what its
    translation must keep (`checks.Check`)."""
    return MARKUP.findall(written), all(
        line.strip() and "-->" not in line for line in written.split("\n"))


CHECK = Check(_cue_needs, lambda text: MARKUP.sub("", text), from_source=True)


def _broken(text: str, shares: list[float], newline: str) -> str:
    """`text` broken into lines at spaces outside markup, each nearest to its share of
    the visible text (a space after a punctuation mark counts as nearer)."""
    spaces, visible, total = _spaces(text)
    cuts: list[int] = []
    first = 0  # the first space after the last cut
    for share in shares:
        if first >= len(spaces):
            break
        k = _nearest(spaces, visible, first, total * share, text)
        cuts.append(spaces[k])
        first = k + 1
    out, at = [], 0
    for cut in cuts:
        out.append(text[at:cut])
        at = cut + 1
    return newline.join([*out, text[at:]])


def _spaces(text: str) -> tuple[list[int], list[int], int]:
    """The spaces of `text` outside markup, the visible characters (markup left out)
    before each, and the visible characters in all."""
    spaces, visible = [], []
    seen = at = 0
    for match in _BREAKABLE.finditer(text):
        seen += match.start() - at
        at = match.end()
        if match.group() == " ":
            spaces.append(match.start())
            visible.append(seen)
            seen += 1
    return spaces, visible, seen + len(text) - at


def _nearest(spaces: list[int], visible: list[int], first: int, goal: float, text: str
             ) -> int:
    """The space from `first` on whose visible offset is nearest to `goal`, one after a
    punctuation mark counting 4 nearer (of equals, the first): only the spaces within
    4 of the nearest can be it, and they are around where `goal` sorts among them."""
    i = bisect.bisect_left(visible, goal, lo=first)
    reach = min(abs(visible[j] - goal) for j in (i - 1, i) if first <= j < len(spaces)) + 4
    low, high = i, i
    while low > first and goal - visible[low - 1] <= reach:
        low -= 1
    while high < len(spaces) and visible[high] - goal <= reach:
        high += 1
    return min(range(low, high), key=lambda j: abs(visible[j] - goal)
               - 4 * (text[spaces[j] - 1] in ",.;:!?"))


# ------------------------------------------------------------------ SubRip


def srt_pieces(chunks: Iterable[str], name: str, force: bool = False) -> Iterator[list[Part]]:
    srt = require("srt", "documents")
    text = "".join(chunks)
    lines = _Lines(text)
    try:
        cues = list(srt.parse(text))
    except srt.SRTParseError as exc:
        raise UserError(f"{name}: line {lines.number(exc.expected_start)}: not a subtitle "
                        f"(a number, 'HH:MM:SS,mmm --> HH:MM:SS,mmm', its text): "
                        f"{exc.unmatched_content.strip()[:60]!r}") from None
    at = 0
    for cue, match in zip(cues, srt.SRT_REGEX.finditer(text)):
        if cue.end < cue.start:
            raise UserError(f"{name}: line {lines.number(match.start(2))}: subtitle "
                            f"{cue.index} ends ({match.group(3)}) before it starts "
                            f"({match.group(2)})")
        start, end = match.span(5)
        if (arrow := text.find("-->", start, end)) >= 0:  # srt reads it as the cue's text
            line = text[text.rfind("\n", 0, arrow) + 1:text.find("\n", arrow)].strip()
            raise UserError(f"{name}: line {lines.number(arrow)}: not a subtitle timing "
                            f"('HH:MM:SS,mmm --> HH:MM:SS,mmm'): {line[:60]!r}")
        yield [text[at:start], *cue_parts(text[start:end], _same, _same)]
        at = end
    yield [text[at:]]


def _same(text: str) -> str:
    return text


# ------------------------------------------------------------------ WebVTT


def vtt_pieces(chunks: Iterable[str], name: str, force: bool = False) -> Iterator[list[Part]]:
    vtt = require("webvtt.vtt", "documents")
    errors = require("webvtt.errors", "documents")
    text = "".join(chunks)
    if not text.lstrip("\ufeff").startswith("WEBVTT"):
        raise UserError(f"{name}: line 1: a WebVTT file starts with 'WEBVTT'")
    at, seen_cue = 0, False
    for number, offset, block in _blocks(text):
        lines = [line.rstrip("\r\n") for line in block]
        if number == 1 or not any("-->" in line for line in lines):
            continue  # the header, a NOTE, STYLE or REGION block: as it is
        _check_cue(vtt, errors, lines, seen_cue, name, number)
        seen_cue = True
        start = offset + sum(map(len, block[:_timing(lines) + 1]))
        end = offset + sum(map(len, block)) - (len(block[-1]) - len(lines[-1]))
        if start < end:
            yield [text[at:start], *cue_parts(text[start:end], _vtt_escape, html.unescape)]
            at = end
    yield [text[at:]]


def _check_cue(vtt: Any, errors: Any, lines: list[str], seen_cue: bool, name: str,
               number: int) -> None:
    """A cue block as webvtt-py's strict parser reads it, and times in order."""
    where = f"{name}: line {number + _timing(lines)}"
    try:
        caption = vtt.parse_item(lines, strict=True, seen_cue=seen_cue)
    except (errors.MalformedCaptionError, ValueError) as exc:
        raise UserError(f"{where}: not a valid cue ({exc})") from None
    if caption is None or not hasattr(caption, "start_in_seconds"):
        raise UserError(f"{where}: not a valid cue timing ({lines[_timing(lines)]!r})")
    if caption.end_in_seconds < caption.start_in_seconds:
        raise UserError(f"{where}: cue ends ({caption.end}) before it starts ({caption.start})")


def _timing(lines: list[str]) -> int:
    return next(i for i, line in enumerate(lines) if "-->" in line)


def _vtt_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _blocks(text: str) -> Iterator[tuple[int, int, list[str]]]:
    """Blocks of lines (with their line ends) as WebVTT parsers read them: between empty
    lines, and a line with `-->` starts a block of its own where it cannot be the
    block's timing (after a timing, past the block's second line, in the header), as a
    site's captions written without empty lines have it. The number and offset of each
    block's first line, and its lines."""
    block: list[str] = []
    first = start = 0
    arrow = False  # whether the block has its timing
    for number, match in enumerate(re.finditer(r"[^\n]*\n|[^\n]+$", text), start=1):
        line = match.group()
        if line.rstrip("\r\n") == "":
            if block:
                yield first, start, block
            block, arrow = [], False
            continue
        if "-->" in line and block and (arrow or len(block) >= 2 or first == 1):
            yield first, start, block
            block, arrow = [], False
        if not block:
            first, start = number, match.start()
        block.append(line)
        arrow = arrow or "-->" in line
    if block:
        yield first, start, block


class _Lines:
    """Line numbers of offsets in a text."""

    def __init__(self, text: str):
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def number(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)
