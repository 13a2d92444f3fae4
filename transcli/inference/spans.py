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
goes back at the place the caller's `Placement` gives, so no span is ever lost. A span
may go back as another text than its own (`Span.replacement`: a glossary's Spanish form
for its English term, `glossary.py`), by the same steps.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import itertools
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Iterator, Optional

import regex

from transcli.inference.sentences import ABBREVIATIONS


@dataclass(frozen=True)
class SpanKind:
    name: str
    pattern: str
    example: str  # an English line holding one (tests translate it; docs show it)
    # Whether a match is one (None: every match is): the pattern finds a shape, this
    # decides; a match refused leaves its characters to the kinds after it.
    accept: Optional[Callable[[str], bool]] = None


# Trailing punctuation ends a sentence, not a URL or a path: "see https://x.org/a."
_TAIL = r"(?<![.,;:!?'\")\]])"
# Money: a currency sign (or a currency's code) with its amount, one span either way
# round: "US$5.40", "€5", "5 €", "£1.2bn", "EUR 20". The sign may have a country's
# letters before it (US$, A$, HK$, R$).
# (Atomic groups, `(?>...)`: a run of "1.1.1." is never read again from each of its
# dots, which made the line's reading quadratic.)
_AMOUNT = r"(?>\d+(?:[.,'\u00a0\u202f]\d+)*)(?:\s?(?:bn|mn|[kKMB])(?!\w))?"
_CODES = r"(?:USD|EUR|GBP|JPY|CHF|CAD|AUD|CNY|INR|MXN|BRL)"
_MONEY = (rf"(?=[\dA-Z\p{{Sc}}])(?<![\w.,$\p{{Sc}}])(?:(?:[A-Z]{{1,3}})?\p{{Sc}}\s?{_AMOUNT}"
          rf"(?:\s?{_CODES}(?!\w))?|{_CODES}\s?{_AMOUNT}|{_AMOUNT}\s?(?:\p{{Sc}}|{_CODES}(?!\w)))")
# An identifier: a token of letters and digits joined by . + # - (not starting after
# one: a scan starts only at a token's first character, so a line of "a.a.a." or
# "----" is read once), with a version and a model name after it ("iPhone 15 Pro").
# `identifier` decides which tokens of that shape are one.
_TOKEN = r"(?>\w+(?:[.+#-]\w+)*(?:(?:\+\+?|#)\d*)?)"
_IDENTIFIER = (rf"(?=\w)(?<![\w.+#@$/\\-])"
               rf"(?=(?>[a-z]*)[\w.+#-]*?(?:\d|(?<=\w)\.\w|(?<=\w)[+#]|(?<=\p{{Ll}})\p{{Lu}}"
               rf"|\p{{Lu}}{{2}}\p{{Ll}}{{2}}|\p{{L}}-\p{{Lu}}))"
               rf"(?=[\w.+#-]*\p{{L}}){_TOKEN}"
               r"(?:\ \d+(?:\.\d+)*(?![\w.+#-]\w|\w)(?:\ [A-Z][a-z]+(?!\w)){0,2})?"
               r"(?![\w@/\\])")
# ... or a capitalized name with a dotted version, inside a sentence ("You need Python
# 3.12 for it"; not "In 3.5 seconds" at a sentence's start).
_NAMED_VERSION = r"(?<=[\w,;:] )\p{Lu}\p{Ll}+ v?\d+(?:\.\d+)+(?![\w.+#-]\w|\w)"
_ORDINAL = regex.compile(r"\d+(?:st|nd|rd|th|s|'s)", regex.IGNORECASE)  # 3rd, 1990s
# iPhone, JavaScript, WPTRunner; not "Tom", "URLs" or "DVDs"
_MIXED_CASE = regex.compile(r"\p{Ll}\p{Lu}|\p{Lu}{2}\p{Ll}{2}")
_DOTTED = regex.compile(r"\p{L}\.\p{L}")
# Capitals with a one-letter part (USB-C, PCI-E), or short capitalized parts (Wi-Fi).
_HYPHENATED_NAME = regex.compile(r"\p{Lu}+(?:-\p{Lu}+)*-\p{Lu}(?:-\p{Lu}+)*"
                                 r"|\p{Lu}\p{Ll}{1,2}(?:-\p{Lu}\p{Ll}{1,2})+")
_LETTERS = regex.compile(r"\p{L}+")


def identifier(text: str) -> bool:
    """Whether a token of `_IDENTIFIER`'s shape is a name a translation keeps as it is
    (`Node.js`, `C++`, `COVID-19`, `iPhone`, `v1.4.2-rc1`, `3x`, `H2O`): it has a digit
    (an ordinal or a decade, "3rd", "1990s", is a word), a `.` between letters (unless
    it is an abbreviation of single letters or a known one: "e.g.", "U.S.", "p.m.",
    "Ph.D."), a `+` or `#` after letters, or mixed case inside a word (a capital after
    a small letter, or two capitals before two small letters: "WPTRunner"), or it is
    a name of hyphenated capitals with a one-letter part (`USB-C`) or of short
    capitalized parts (`Wi-Fi`). A hyphen alone makes none: "well-known" is a word."""
    if regex.fullmatch(_NAMED_VERSION.removeprefix(r"(?<=[\w,;:] )"), text):
        return True
    head = text.split(" ", 1)[0]
    if any(char.isdigit() for char in head):
        return not _ORDINAL.fullmatch(head)
    if _DOTTED.search(head):
        parts = _LETTERS.findall(head)
        return not (all(len(part) == 1 for part in parts) or head.lower() in ABBREVIATIONS)
    return bool(regex.search(r"\p{L}[+#]", head) or _MIXED_CASE.search(head)
                or _HYPHENATED_NAME.fullmatch(head))


KINDS: tuple[SpanKind, ...] = (
    SpanKind("code", r"`[^`\n]+`", "Run `pip install transcli` first."),
    SpanKind("url", r"\b(?i:https?://|ftp://|www\.)[^\s<>\"'`]+" + _TAIL,
             "Visit https://example.com/docs/install?lang=en for details."),
    SpanKind("email", r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b",
             "Write to support@example.org today."),
    SpanKind("placeholder",
             r"\{\{\s*[\w.]+\s*\}\}|\{[\w.]*(?:![rsa])?(?::[^{}\s]*)?\}"
             r"|%\(\w+\)[-+#0]*\d*(?:\.\d+)?[sdifgeExXcr]|%[-+#0]*\d*(?:\.\d+)?[sdifgeExXc](?!\w)",
             "Hello {name}, you have %d new messages."),
    SpanKind("handle", r"(?<![\w@])@\w+", "Follow @transcli for news."),
    SpanKind("tag", r"(?<![\w#&])#\w+", "We call it #trees on the news."),
    SpanKind("path",
             r"(?<![\w/\\])(?:~|\.{1,2})?/(?:[\w.-]+/)*[\w.-]*[\w-]" + _TAIL
             + r"|\b[A-Za-z]:\\(?:[\w.-]+\\)*[\w.-]*\w"
             + r"|(?<![\w/-])[\w-]+(?:/[\w.-]+)+\.[A-Za-z0-9]{1,5}\b",
             "The file is at /home/user/notes.txt now."),
    SpanKind("money", _MONEY, "It costs €5 or about US$5.40."),
    SpanKind("identifier", f"{_NAMED_VERSION}|{_IDENTIFIER}",
             "Node.js 20 and C++ are both used here.", identifier),
    SpanKind("number",  # with a percent sign, or a.m. or p.m., that goes with it
             r"(?<![\w.,$€£¥])(?>\d+(?:[-.,:/'\u00a0\u202f]\d+)*)"
             r"(?:\s?%(?!\w)|\s?(?i:[ap]\.m\.|[ap]m(?!\w))|(?!\w))",
             "The price is 1,299.99 today."),
    SpanKind("symbols",  # a run of code's or maths' signs standing alone: </>, ->, <=
             r"(?<![^\s(\[\"'])(?=\S{2})[-!:]*[<>/\\=|&^~*+][-!:<>/\\=|&^~*+]*"
             r"(?=$|[\s.,;?)\]\"'])",
             "Close it with </> and go on."),
    SpanKind("emoji",
             r"(?:[\U0001F1E6-\U0001F1FF]{2}|[#*0-9]\uFE0F?\u20E3"
             r"|\p{Extended_Pictographic}[\uFE0F\U0001F3FB-\U0001F3FF]*"
             r"(?:\u200D\p{Extended_Pictographic}[\uFE0F\U0001F3FB-\U0001F3FF]*)*)+",
             "I love this 😀 so much."),
    SpanKind("script", r"(?V1)[\p{L}--\p{Latin}][\p{L}\p{M}--\p{Latin}]*",
             'The word "λόγος" means reason.'),
)
# Kinds taken out of the sentence the model reads rather than replaced by a placeholder,
# and put back where the attention says: an emoji is seldom part of the grammar, and a
# placeholder where it stood cost the translation around it (bench.robustness).
TAKEN_OUT = frozenset({"emoji"})
_PATTERNS = [regex.compile(kind.pattern, flags=regex.V1) for kind in KINDS]
# A run around a character the vocabulary lacks: the word it is in, or the run itself.
_WORD_CHAR = regex.compile(r"[\w\p{M}]")


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str
    text: str
    replacement: Optional[str] = None  # what goes back instead of `text` (a glossary's)

    @property
    def output(self) -> str:
        """What the translation gets where the span was."""
        return self.text if self.replacement is None else self.replacement


# More spans (a glossary's terms) in a text, none from `start` to `end` where
# `crossed(start, end)`: a protected span reaches across those edges.
Terms = Callable[[str, Callable[[int, int], bool]], list[Span]]


def find_spans(text: str, unknown: Callable[[str], bool] = lambda char: False,
               kinds: Optional[frozenset[str]] = None, terms: Optional[Terms] = None
               ) -> list[Span]:
    """The protected spans of `text`, in order, not overlapping: the matches of `KINDS`
    (all, or those named in `kinds`), then what `terms` finds (a glossary's terms,
    `glossary.Glossary.find`: one may hold spans of those kinds, "Form 1040", which it
    replaces, never cut one), then the runs of characters for which `unknown` is true,
    each widened to the word it is in."""
    spans = [span for span in _kind_spans(text) if kinds is None or span.kind in kinds]
    if terms is not None:
        spans = _with_terms(text, spans, terms)
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


def _kind_spans(text: str) -> Iterator[Span]:
    """The matches of `KINDS` in `text`, left to right, not overlapping: at each place
    the first kind in the table that matches there (and `accept`s the match: else the
    next kind's), as one pattern of all the kinds would find them. Each kind is scanned
    by its own pattern (several times faster than one of them all), and scanned again
    only from where a span chosen before ends inside its match, or it refused one."""
    scans = [pattern.finditer(text) for pattern in _PATTERNS]
    ahead = [(match.start(), i, match) for i, scan in enumerate(scans)
             if (match := next(scan, None)) is not None]
    heapq.heapify(ahead)  # each kind's next match, the first (then the first kind) on top
    at = 0
    while ahead:
        start, i, match = heapq.heappop(ahead)
        if start >= at and (KINDS[i].accept is None or KINDS[i].accept(match.group())):
            yield Span(start, match.end(), KINDS[i].name, match.group())
            at = match.end()
        elif start >= at or at < match.end():  # refused, or reaching past a span's end
            scans[i] = _PATTERNS[i].finditer(text, max(at, start + 1))
        if (found := next(scans[i], None)) is not None:
            heapq.heappush(ahead, (found.start(), i, found))


def _with_terms(text: str, spans: list[Span], terms: Terms) -> list[Span]:
    """`spans` and the terms found in `text`: a term is found where no span reaches
    across its edges (a URL holding the term's word wins), and replaces the spans
    inside it (`24/7`, `Form 1040`: the user's entry wins)."""
    owner: list[Optional[Span]] = [None] * len(text)
    for span in spans:
        owner[span.start:span.end] = [span] * (span.end - span.start)

    def crossed(start: int, end: int) -> bool:
        first, last = owner[start], owner[end - 1]
        return bool(first and first.start < start) or bool(last and last.end > end)

    found = terms(text, crossed)
    inside = {id(span) for term in found for span in owner[term.start:term.end] if span}
    return [span for span in spans if id(span) not in inside] + found


def _merged(spans: list[Span]) -> list[Span]:
    """Spans that touch made one (two placeholders side by side would read as one
    number), of the first one's kind, going back as both would."""
    merged: list[Span] = []
    for span in spans:
        if merged and merged[-1].end == span.start:
            last = merged[-1]
            replaced = last.replacement is not None or span.replacement is not None
            merged[-1] = Span(last.start, span.end, last.kind, last.text + span.text,
                              last.output + span.output if replaced else None)
        else:
            merged.append(span)
    return merged


def _joins(char: str, unknown: Callable[[str], bool]) -> bool:
    return not char.isspace() and (unknown(char) or bool(_WORD_CHAR.match(char)))


# Placeholders when no vocabulary chooses them (`mask`'s pool): numbers from 701 on.
NUMBERS = tuple(str(n) for n in range(701, 1000))
# A number standing alone (not part of a word or a longer number: "A701" is a road),
# with the space before it, if any: where a placeholder can be in a translation.
_STANDING = regex.compile(r"( ?)(?<!\w)(\d+)(?!\w)")


@dataclass
class Masked:
    """A line with its spans masked: span i replaced by `placeholders[i]`, or taken out
    (None: the model reads the line without it), at `at[i]` in `text`."""

    text: str
    spans: list[Span]
    placeholders: tuple[Optional[str], ...]
    at: tuple[int, ...]

    def occurrences(self, text: str) -> Iterator[tuple[regex.Match[str], int]]:
        """The placeholders in `text` (a translation of this line, or a part of it): each
        match (group 1 the space before it, group 2 the placeholder) and its span's index."""
        index = self._index
        if not index:
            return
        for match in _STANDING.finditer(text):
            if match.group(2) in index:
                yield match, index[match.group(2)]

    @functools.cached_property
    def _index(self) -> dict[str, int]:
        return {placeholder: i for i, placeholder in enumerate(self.placeholders)
                if placeholder is not None}

    def missing(self, translation: str) -> bool:
        """Whether `translation` lacks a placeholder (or the line has a span taken out)."""
        return len({i for _, i in self.occurrences(translation)}) < len(self.spans)

    def without(self, text: str) -> str:
        """`text` (this line, or a translation of it) without its placeholders."""
        index = self._index
        return _STANDING.sub(lambda m: "" if m.group(2) in index else m.group(), text) \
            if index else text

    def where(self, index: int) -> tuple[int, int]:
        """The characters of span `index`'s placeholder in `text` (empty: taken out)."""
        placeholder = self.placeholders[index]
        return self.at[index], self.at[index] + len(placeholder or "")

    def part(self, start: int, end: int) -> Masked:
        """`text[start:end]` as a line of its own, with the spans in it (a span taken out
        at a sentence's end goes with that sentence)."""
        # The spans are in order: only those from `start` on are looked at (each
        # sentence of a line of thousands looked at all of them: quadratic).
        first, last = bisect.bisect_left(self.at, start), bisect.bisect_right(self.at, end)
        inside = [i for i in range(first, last)
                  if self.at[i] + len(self.placeholders[i] or "") <= end]
        return Masked(self.text[start:end], [self.spans[i] for i in inside],
                      tuple(self.placeholders[i] for i in inside),
                      tuple(self.at[i] - start for i in inside))

    def replaced(self, change: Callable[[str], str]) -> Masked:
        """This line with `change` applied to what its spans go back as, where that is a
        replacement (a glossary's form takes the case of the line's translation)."""
        spans = [span if span.replacement is None else replace(
            span, replacement=change(span.replacement)) for span in self.spans]
        return replace(self, spans=spans)

    def original(self) -> str:
        """The line as it was written: its spans' own text back, not their replacements."""
        own = [replace(span, replacement=None) for span in self.spans]
        return restore(self.text, replace(self, spans=own))


def mask(text: str, spans: list[Span], pool: tuple[str, ...] = NUMBERS,
         avoid: Iterable[str] = (), numbers_stay: bool = True) -> Masked:
    """`text` with each of `spans` (in order, not overlapping) masked: a span of a kind
    `TAKEN_OUT` is taken out with a space beside it; a plain number of up to four digits
    stands for itself when `numbers_stay` (the model copies it, and "5 o'clock" stays 5
    o'clock); any other span becomes the next placeholder of `pool` that is no number of
    the line nor of `avoid` (what else goes into the translation: a glossary's forms),
    then of the numbers after the pool's, so that every span is masked however many."""
    # No placeholder is a number standing alone anywhere in the line (as `occurrences`
    # finds placeholders): a plain number stands for itself.
    own = set(_NUMBER.findall(text)).union(*(_NUMBER.findall(text) for text in avoid))
    free = _placeholders(pool, own)
    parts: list[str] = []
    kept: list[Span] = []
    placeholders: list[Optional[str]] = []
    at: list[int] = []
    last, length = 0, 0
    for span in spans:
        if span.kind in TAKEN_OUT:
            placeholder = None
        elif numbers_stay and _plain_number(span) and span.text not in placeholders:
            placeholder = span.text
        else:
            placeholder = next(free)
        before, last = text[last:span.start], span.end
        if placeholder is None:  # taken out: no doubled space, none before punctuation
            rest = _BLANKS.match(text, span.end).end()  # not a copy of the rest per span
            if rest == len(text) or text[rest] in _CLOSING:
                before, last = before.rstrip(" "), rest
            elif not before or before[-1].isspace():
                last = rest
        parts += [before, placeholder or ""]
        kept.append(span)
        placeholders.append(placeholder)
        at.append(length + len(before))
        length += len(before) + len(placeholder or "")
    parts.append(text[last:])
    return Masked("".join(parts), kept, tuple(placeholders), tuple(at))


def _placeholders(pool: tuple[str, ...], own: set[str]) -> Iterator[str]:
    """`pool`, then the numbers from 1000 on that it lacks, none of them in `own`."""
    yield from (placeholder for placeholder in pool if placeholder not in own)
    given = set(pool)
    yield from (str(n) for n in itertools.count(1000)
                if str(n) not in own and str(n) not in given)


def _plain_number(span: Span) -> bool:
    return span.kind == "number" and span.text.isdigit() and len(span.text) <= 4


# Where a span whose placeholder the model dropped goes: given the masked source, the
# translation and the span's index, a character offset into the translation.
Placement = Callable[[Masked, str, int], int]


def relative_place(masked: Masked, translation: str, index: int) -> int:
    """The word boundary of `translation` nearest the same share of its length as the
    placeholder's position in the masked source: the fallback when no alignment says
    better. The end of a sentence goes before its final punctuation, unless it came after
    it."""
    start, end = masked.where(index)
    if start >= len(masked.text.rstrip()):  # after the sentence's last mark: after its too
        return len(translation.rstrip())
    share = start / max(1, len(masked.text) - (end - start))
    body = len(translation.rstrip().rstrip(".!?…"))
    target = round(share * body)
    boundaries = _word_starts(translation, body)
    after = bisect.bisect_left(boundaries, target)
    return min(boundaries[max(0, after - 1):after + 1], key=lambda i: abs(i - target))


@functools.lru_cache(maxsize=4)
def _word_starts(translation: str, body: int) -> list[int]:
    """The word boundaries of `translation[:body]`, in order: computed once per text, as
    a line of thousands of emoji asks for a place for each (once each: quadratic)."""
    return [i for i in range(body + 1) if i == 0 or i == body or translation[i - 1].isspace()]


def restore(translation: str, masked: Masked, place: Placement = relative_place) -> str:
    """`translation` of `masked.text` with every span back: a placeholder the model
    dropped is first put back (in a number the model made of it, "199" for "19", or where
    `place` says on the translation as given), and so is a span taken out; then the first
    copy of each placeholder becomes its span and further copies are removed. Every span
    appears exactly once, as its `output`."""
    if not masked.spans:
        return translation
    found = {i for _, i in masked.occurrences(translation)}
    edits: list[tuple[int, int, str]] = []  # (start, end, what goes there): in the given text
    taken: set[int] = set()
    for index, placeholder in enumerate(masked.placeholders):
        if index not in found:
            number = placeholder and _mangled(translation, masked, placeholder, taken)
            at = place(masked, translation, index) if not number else 0
            edits.append((*(number or (at, at)), placeholder or masked.spans[index].output))
            taken.add(edits[-1][0])
    translation = _edited(translation, sorted(edits, key=lambda edit: edit[:2], reverse=True))
    seen: set[int] = set()
    parts, last = [], 0
    for match, index in masked.occurrences(translation):
        parts.append(translation[last:match.start()])
        last = match.end()
        if index not in seen:  # a copy too many goes, with the space before it
            output = masked.spans[index].output
            parts += [match.group(1), output]
            seen.add(index)
            # "at 5 p.m." ends its sentence with its own full stop: not one more
            last += output.endswith(".") and translation.startswith(".", last)
    parts.append(translation[last:])
    return "".join(parts)


_NUMBER = regex.compile(r"(?<!\w)\d+(?!\w)")
_BLANKS = regex.compile(" *")


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


def _edited(text: str, edits: list[tuple[int, int, str]]) -> str:
    """`text` with `edits` (start, end, piece: from the last place to the first) made in
    one pass, each as if made alone on the text the ones before it left: a piece put at
    an offset (start == end) gets a space on each side where words meet. (Made one at a
    time, a line of thousands of spans copied the line once per span.)"""
    built: list[str] = []  # what comes after `cursor`, back to front
    cursor = len(text)
    for start, end, piece in edits:
        end = min(end, cursor)
        start = min(start, end)
        built.append(text[end:cursor])
        if end == start:
            after = next((part[0] for part in reversed(built) if part), "")
            if start and not text[start - 1].isspace():
                piece = " " + piece
            if after and not after.isspace() and after not in _CLOSING:
                piece += " "
        built.append(piece)
        cursor = start
    built.append(text[:cursor])
    return "".join(reversed(built))
