"""Protected spans: the parts of a line that are not language (URLs, numbers, code,
placeholders, emoji, words in other scripts, characters the vocabulary lacks), taken out
before the model and put back, unchanged, after it.

`KINDS` is the one table of what is protected: a kind is a name, a pattern (the `regex`
module's syntax) and an example that its restore test translates. Earlier kinds win
where two would match at one place (an e-mail address is not a @handle). Characters the
tokenizer has no piece for are protected too (`Protector`): the model would see them as
`<unk>`, and an old run (no byte fallback) would drop them.

Each span becomes a placeholder the model copies: a number (numbers are what a translation
model copies most faithfully, and a number stands where a name or a quantity stood
without breaking the sentence), from a pool the caller gives (`realtext.placeholder_pool`:
the vocabulary's own one-piece numbers; `NUMBERS` by default). `restore` swaps each
placeholder back for its span exactly once; a span whose placeholder the model dropped
goes back at the place the caller's `Placement` gives, so no span is ever lost.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

import regex


@dataclass(frozen=True)
class SpanKind:
    name: str
    pattern: str
    example: str  # an English line holding one (tests translate it; docs show it)


# Trailing punctuation ends a sentence, not a URL or a path: "see https://x.org/a."
_TAIL = r"(?<![.,;:!?'\")\]])"
KINDS: tuple[SpanKind, ...] = (
    SpanKind("code", r"`[^`\n]+`", "Run `pip install transcli` first."),
    SpanKind("url", r"\b(?i:https?://|ftp://|www\.)[^\s<>\"'`]+" + _TAIL,
             "Visit https://example.com/docs/install?lang=en for details."),
    SpanKind("email", r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b", "Write to support@example.org today."),
    SpanKind("placeholder",
             r"\{\{\s*[\w.]+\s*\}\}|\{[\w.]*(?:![rsa])?(?::[^{}\s]*)?\}"
             r"|%\(\w+\)[-+#0]*\d*(?:\.\d+)?[sdifgeExXcr]|%[-+#0]*\d*(?:\.\d+)?[sdifgeExXc](?!\w)",
             "Hello {name}, you have %d new messages."),
    SpanKind("handle", r"(?<![\w@])@\w+", "Follow @transcli for news."),
    SpanKind("tag", r"(?<![\w#&])#\w+", "We call it #trees on the news."),
    SpanKind("path",
             r"(?<![\w/\\])(?:~|\.{1,2})?/(?:[\w.-]+/)*[\w.-]*[\w-]" + _TAIL
             + r"|\b[A-Za-z]:\\(?:[\w.-]+\\)*[\w.-]*\w"
             + r"|(?<![\w/])[\w-]+(?:/[\w.-]+)+\.[A-Za-z0-9]{1,5}\b",
             "The file is at /home/user/notes.txt now."),
    SpanKind("number",  # with a currency sign or a percent sign that goes with it
             r"(?<![\w.,$€£¥])[$€£¥]?\d+(?:[-.,:/'\u00a0\u202f]\d+)*"
             r"(?:\s?[%€£¥$](?!\w)|(?!\w))",
             "The price is $1,299.99 today."),
    SpanKind("emoji",
             r"(?:[\U0001F1E6-\U0001F1FF]{2}|[#*0-9]\uFE0F?\u20E3"
             r"|\p{Extended_Pictographic}[\uFE0F\U0001F3FB-\U0001F3FF]*"
             r"(?:\u200D\p{Extended_Pictographic}[\uFE0F\U0001F3FB-\U0001F3FF]*)*)+",
             "I love this 😀 so much."),
    SpanKind("script", r"(?V1)[\p{L}--\p{Latin}][\p{L}\p{M}--\p{Latin}]*",
             'The word "λόγος" means reason.'),
)
_PATTERN = regex.compile("|".join(f"(?P<{kind.name}>{kind.pattern})" for kind in KINDS),
                         flags=regex.V1)
# A run around a character the vocabulary lacks: the word it is in, or the run itself.
_WORD_CHAR = regex.compile(r"[\w\p{M}]")


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str
    text: str


def find_spans(text: str, unknown: Callable[[str], bool] = lambda char: False,
               kinds: Optional[frozenset[str]] = None) -> list[Span]:
    """The protected spans of `text`, in order, not overlapping: the matches of `KINDS`
    (all, or those named in `kinds`), then the runs of characters for which `unknown`
    is true, each widened to the word it is in."""
    spans = [Span(m.start(), m.end(), m.lastgroup, m.group()) for m in _PATTERN.finditer(text)
             if kinds is None or m.lastgroup in kinds]
    taken = [False] * len(text)
    for span in spans:
        taken[span.start:span.end] = [True] * (span.end - span.start)
    extra, i = [], 0
    while i < len(text):
        if taken[i] or text[i].isspace() or not unknown(text[i]):
            i += 1
            continue
        start, end = i, i + 1
        while start > 0 and not taken[start - 1] and _joins(text[start - 1], unknown):
            start -= 1
        while end < len(text) and not taken[end] and _joins(text[end], unknown):
            end += 1
        extra.append(Span(start, end, "unknown", text[start:end]))
        i = end
    return _merged(sorted(spans + extra, key=lambda span: span.start))


def _merged(spans: list[Span]) -> list[Span]:
    """Spans that touch made one (two placeholders side by side would read as one
    number), of the first one's kind."""
    merged: list[Span] = []
    for span in spans:
        if merged and merged[-1].end == span.start:
            last = merged[-1]
            merged[-1] = Span(last.start, span.end, last.kind, last.text + span.text)
        else:
            merged.append(span)
    return merged


def _joins(char: str, unknown: Callable[[str], bool]) -> bool:
    return not char.isspace() and (unknown(char) or bool(_WORD_CHAR.match(char)))


# Placeholders when no vocabulary chooses them (`Masked.pool`): numbers from 701 on.
NUMBERS = tuple(str(n) for n in range(701, 1000))


@functools.lru_cache(maxsize=256)
def _placeholder_pattern(placeholders: tuple[str, ...]) -> regex.Pattern[str]:
    """Any of `placeholders` standing alone (not part of a word or a longer number:
    "A701" is a road), with the space before it, if any."""
    return regex.compile(rf"( ?)(?<!\w)({'|'.join(map(regex.escape, placeholders))})(?!\w)")


@dataclass
class Masked:
    """A line with its spans replaced by placeholders: span i by `pool[i]`."""

    text: str
    spans: list[Span]
    pool: tuple[str, ...] = NUMBERS

    @property
    def placeholders(self) -> tuple[str, ...]:
        return self.pool[:len(self.spans)]

    def occurrences(self, text: str) -> Iterator[tuple[regex.Match[str], int]]:
        """The placeholders in `text` (a translation of this line, or a part of it): each
        match (group 1 the space before it, group 2 the placeholder) and its span's index."""
        if not self.spans:
            return
        index = {placeholder: i for i, placeholder in enumerate(self.placeholders)}
        for match in _placeholder_pattern(self.placeholders).finditer(text):
            yield match, index[match.group(2)]

    def missing(self, translation: str) -> bool:
        """Whether `translation` lacks one of the placeholders."""
        return len({i for _, i in self.occurrences(translation)}) < len(self.spans)

    def where(self, index: int) -> tuple[int, int]:
        """The characters of span `index`'s placeholder in `text`."""
        match = next(match for match, i in self.occurrences(self.text) if i == index)
        return match.start(2), match.end(2)

    def part(self, start: int, end: int) -> Masked:
        """`text[start:end]` as a line of its own: its spans numbered from 0."""
        text, spans, last = [], [], start
        for match, i in self.occurrences(self.text[start:end]):
            text += [self.text[last:start + match.start(2)], self.pool[len(spans)]]
            spans.append(self.spans[i])
            last = start + match.end(2)
        text.append(self.text[last:end])
        return Masked("".join(text), spans, self.pool)


def mask(text: str, spans: list[Span], pool: tuple[str, ...] = NUMBERS) -> Masked:
    """`text` with each of `spans` (in order, not overlapping; at most `len(pool)` of
    them: those after are left as they are) replaced by its placeholder from `pool`."""
    parts, last = [], 0
    spans = spans[:len(pool)]
    for placeholder, span in zip(pool, spans):
        parts += [text[last:span.start], placeholder]
        last = span.end
    parts.append(text[last:])
    return Masked("".join(parts), spans, pool)


# Where a span whose placeholder the model dropped goes: given the masked source, the
# translation and the span's index, a character offset into the translation.
Placement = Callable[[Masked, str, int], int]


def relative_place(masked: Masked, translation: str, index: int) -> int:
    """The word boundary of `translation` nearest the same share of its length as the
    placeholder's position in the masked source: the fallback when no alignment says
    better. The end of a sentence goes before its final punctuation."""
    at = masked.where(index)[0]
    share = at / max(1, len(masked.text) - len(masked.placeholders[index]))
    body = len(translation.rstrip().rstrip(".!?…"))
    target = round(share * body)
    boundaries = [i for i in range(body + 1)
                  if i == 0 or i == body or translation[i - 1].isspace()]
    return min(boundaries, key=lambda i: abs(i - target))


def restore(translation: str, masked: Masked, place: Placement = relative_place) -> str:
    """`translation` of `masked.text` with every span back: a placeholder the model
    dropped is first put back (in a number the model made of it, "199" for "19", or where
    `place` says on the translation as given), then the first copy of each placeholder
    becomes its span and further copies are removed. Every span appears exactly once."""
    if not masked.spans:
        return translation
    found = {i for _, i in masked.occurrences(translation)}
    edits: list[tuple[int, int, str]] = []  # (start, end, placeholder): in the given text
    for index, placeholder in enumerate(masked.placeholders):
        if index not in found:
            taken = {start for start, _, _ in edits}
            number = _mangled(translation, masked, placeholder, taken)
            at = place(masked, translation, index) if number is None else 0
            edits.append((*(number or (at, at)), placeholder))
    for start, end, placeholder in sorted(edits, key=lambda edit: edit[:2], reverse=True):
        translation = (translation[:start] + placeholder + translation[end:] if end > start
                       else _insert(translation, start, placeholder))
    seen: set[int] = set()
    parts, last = [], 0
    for match, index in masked.occurrences(translation):
        parts.append(translation[last:match.start()])
        if index not in seen:  # a copy too many goes, with the space before it
            parts += [match.group(1), masked.spans[index].text]
            seen.add(index)
        last = match.end()
    parts.append(translation[last:])
    return "".join(parts)


_NUMBER = regex.compile(r"(?<!\w)\d+(?!\w)")


def _mangled(translation: str, masked: Masked, placeholder: str, taken: set[int]
             ) -> Optional[tuple[int, int]]:
    """Where the first number of `translation` that holds `placeholder` is, unless it is a
    placeholder itself or `taken`: every number of the source is masked, so a number such
    as "199" where "19" went in is the model's copy gone wrong."""
    ours = set(masked.placeholders)
    for match in _NUMBER.finditer(translation):
        if (placeholder in match.group() and match.group() not in ours
                and match.start() not in taken):
            return match.start(), match.end()
    return None


_CLOSING = ".,;:!?…)]}»”’'\""


def _insert(text: str, at: int, piece: str) -> str:
    """`piece` inserted at offset `at` of `text`, a space on each side where words meet."""
    left, right = text[:at], text[at:]
    if left and not left[-1].isspace():
        piece = " " + piece
    if right and not right[0].isspace() and right[0] not in _CLOSING:
        piece += " "
    return left + piece + right
