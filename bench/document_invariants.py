"""What must hold between a document and its translation, per format, read from outside
transcli's documents layer, by each format's own reader: tags and attributes in order
(html.parser, markdown-it), link and image targets, code kept byte for byte, a
catalogue's placeholders (as msgfmt reads them, and msgfmt --check-format itself where gettext
is installed), cues, their timings and tags (srt, webvtt-py), a Word file's zip members,
hyperlinks and notes (zipfile, lxml).

`invariants(fmt, source, output)` gives each check's name and whether it holds; what is
translated (the words) is never compared. `bench.documents real` and
tests/test_documents_real.py use it.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import tempfile
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Callable

FOR_PEOPLE = frozenset({"alt", "title", "placeholder", "aria-label"})  # translated values
KEPT = frozenset({"pre", "code", "kbd", "samp", "script", "style", "textarea"})


def invariants(fmt: str, source: bytes, output: bytes) -> dict[str, bool]:
    """Each invariant of `fmt` and whether `output` keeps it of `source`."""
    return _CHECKS[fmt](source, output)


# ------------------------------------------------------------------ HTML


class _Markup(HTMLParser):
    """A page's tags (attributes for people blanked), comments, and the text of kept
    elements, in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple] = []
        self.targets: list[str] = []
        self.kept: list[str] = []
        self.inside: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(("start", tag, tuple((k, None if k in FOR_PEOPLE else v)
                                              for k, v in attrs)))
        self.targets += [v for k, v in attrs if k in ("href", "src")]
        if tag in KEPT:
            self.inside.append(tag)

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        self.handle_starttag(tag, attrs)
        if tag in KEPT:
            self.inside.pop()

    def handle_endtag(self, tag: str) -> None:
        self.tags.append(("end", tag))
        if tag in self.inside:
            del self.inside[self.inside.index(tag):]
        else:  # an element's end around a kept one ends it too, as browsers read it
            self.inside.clear()

    def handle_data(self, data: str) -> None:
        if self.inside:
            self.kept.append(data)

    def handle_comment(self, data: str) -> None:
        self.tags.append(("comment", data))


def _html(text: str) -> _Markup:
    parser = _Markup()
    parser.feed(text)
    parser.close()
    return parser


def html_invariants(source: bytes, output: bytes) -> dict[str, bool]:
    a, b = _html(source.decode()), _html(output.decode())
    return {"tags and attributes in order": a.tags == b.tags,
            "link and image targets": a.targets == b.targets,
            "code and scripts byte for byte": a.kept == b.kept}


# ------------------------------------------------------------------ Markdown


def _markdown_tokens(text: str) -> list[Any]:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    out = []
    for token in md.parse(text):
        out.append(token)
        out += [child for child in token.children or []]
    return out


def markdown_invariants(source: bytes, output: bytes) -> dict[str, bool]:
    a, b = (_markdown_tokens(text.decode()) for text in (source, output))

    def structure(tokens: list[Any]) -> list[tuple]:
        return [(t.type, t.tag, t.markup) for t in tokens
                if t.type not in ("text", "text_special", "softbreak", "inline")]

    def targets(tokens: list[Any]) -> list[str]:
        return [t.attrs.get("href") or t.attrs.get("src") for t in tokens
                if t.type in ("link_open", "image")]

    def code(tokens: list[Any]) -> list[str]:
        return [t.content for t in tokens if t.type in ("code_inline", "fence", "code_block")]

    def html(tokens: list[Any]) -> list[tuple]:
        return [tag for t in tokens if t.type in ("html_block", "html_inline")
                for tag in _html(t.content).tags]

    return {"blocks, emphasis, links, images in order": structure(a) == structure(b),
            "link and image targets": targets(a) == targets(b),
            "code spans and blocks byte for byte": code(a) == code(b),
            "HTML tags and attributes in order": html(a) == html(b)}


# ------------------------------------------------------------------ subtitles


def _tags(text: str) -> list[str]:
    return re.findall(r"<[^<>]*>|\{\\[^{}]*\}", text)


# HTML elements (a catalogue's "<no view>" is words, shown as they are)
_ELEMENTS = re.compile(r"</?(?:a|abbr|b|big|blockquote|br|cite|code|dd|del|div|dl|dt|em|font"
                       r"|h[1-6]|hr|i|img|ins|kbd|li|mark|ol|p|pre|q|s|samp|small|span|strike"
                       r"|strong|sub|sup|table|td|th|time|tr|tt|u|ul|var)(?=[\s/>])[^<>]*>",
                       re.IGNORECASE)


def srt_invariants(source: bytes, output: bytes) -> dict[str, bool]:
    import srt

    a, b = (list(srt.parse(text.decode())) for text in (source, output))
    return _cue_invariants([(c.index, c.start, c.end, c.content) for c in a],
                           [(c.index, c.start, c.end, c.content) for c in b])


def vtt_invariants(source: bytes, output: bytes) -> dict[str, bool]:
    import webvtt

    a, b = (webvtt.from_buffer(io.StringIO(text.decode())) for text in (source, output))
    return _cue_invariants([(c.identifier, c.start, c.end, c.raw_text) for c in a],
                           [(c.identifier, c.start, c.end, c.raw_text) for c in b])


def _cue_invariants(a: list[tuple], b: list[tuple]) -> dict[str, bool]:
    return {"cue count": len(a) == len(b),
            "identifiers and timings": [c[:3] for c in a] == [c[:3] for c in b],
            "tags in each cue": [_tags(c[3]) for c in a] == [_tags(c[3]) for c in b],
            "no cue empty": all(c[3].strip() for c in b) or not all(c[3].strip() for c in a)}


# ------------------------------------------------------------------ PO


def po_invariants(source: bytes, output: bytes) -> dict[str, bool]:
    import polib

    from transcli.documents.formatstrings import signature

    a, b = (polib.pofile(text.decode()) for text in (source, output))
    placeholders = all(
        signature(text, entry.flags) == signature(original, entry.flags)
        for entry in b for text, original in _strings(entry) if text)
    found = {"same entries": [e.msgid for e in a] == [e.msgid for e in b],
             "placeholders as msgfmt reads them": placeholders,
             "tags in each message": all(
                 _ELEMENTS.findall(text) == _ELEMENTS.findall(original)
                 for entry in b for text, original in _strings(entry) if text)}
    if shutil.which("msgfmt"):
        found["msgfmt --check-format"] = msgfmt_accepts(output)
    return found


def _strings(entry: Any) -> list[tuple[str, str]]:
    """(translation, what it translates) of each of an entry's strings."""
    if entry.msgid_plural:
        return [(text, entry.msgid if n == 0 else entry.msgid_plural)
                for n, text in sorted(entry.msgstr_plural.items())]
    return [(entry.msgstr, entry.msgid)]


def msgfmt_accepts(catalogue: bytes) -> bool:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "check.po"
        path.write_bytes(catalogue)
        return subprocess.run(["msgfmt", "--check-format", "-o", "/dev/null", str(path)],
                              capture_output=True).returncode == 0


# ------------------------------------------------------------------ Word


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _word(data: bytes) -> dict[str, Any]:
    from lxml import etree

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = [m.filename for m in archive.infolist()]
        parts = {name: etree.fromstring(archive.read(name)) for name in members
                 if name.startswith("word/") and name.endswith(".xml")}
    links = [bool("".join(link.itertext()).strip()) for root in parts.values()
             for link in root.iter(f"{_W}hyperlink")]
    for root in parts.values():  # the XML with the text of <w:t> left out
        for element in root.iter(f"{_W}t"):
            element.text = ""
    shapes = {name: etree.tostring(root, method="c14n") for name, root in parts.items()}
    return {"members": members, "links": links, "shapes": shapes}


def docx_invariants(source: bytes, output: bytes) -> dict[str, bool]:
    a, b = _word(source), _word(output)
    return {"zip members in order": a["members"] == b["members"],
            "XML but the text of <w:t> unchanged": a["shapes"] == b["shapes"],
            "every hyperlink keeps text": len(a["links"]) == len(b["links"])
            and all(kept or not had for had, kept in zip(a["links"], b["links"]))}


_CHECKS: dict[str, Callable[[bytes, bytes], dict[str, bool]]] = {
    "html": html_invariants, "markdown": markdown_invariants, "srt": srt_invariants,
    "vtt": vtt_invariants, "po": po_invariants, "docx": docx_invariants}
