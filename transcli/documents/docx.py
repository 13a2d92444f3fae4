"""Word documents (.docx): each paragraph's text translated, every run keeping its
formatting.

The file is opened by python-docx; the paragraphs of the body (tables and text boxes
included), the headers, the footers, the footnotes, the endnotes and the comments are
units. A paragraph's text is the text of its runs (tabs and line breaks part its
words); each run's text element is a tag over its part of that text, so `place_tags`
gives each run, with its formatting (bold, italic, a hyperlink around it, a style, a
tracked insertion), its share of the translation. Text a tracked change deleted
(`<w:delText>`) and field codes are kept as they are.

Nothing but the text of `<w:t>` elements changes, and the file is written member for
member: the zip's members (folder entries among them) in their order, with their dates
and compression, every member byte for byte but the XML parts whose text was
translated (written again by lxml, so equal to the source as XML). A paragraph whose
hyperlink would be left without text is placed again by position, or kept as it is.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any, Iterator, Mapping, Optional

from transcli.documents.checks import Counts
from transcli.documents.units import (
    UNALIGNED,
    Aligns,
    Close,
    Item,
    Open,
    Text,
    Unit,
    inline_unit,
    place_tags,
)
from transcli.system.errors import UserError
from transcli.system.extras import require

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
_SEPARATORS = {f"{_W}tab", f"{_W}br", f"{_W}cr"}
_PARTS = ("document.main+xml", "header+xml", "footer+xml", "comments+xml", "footnotes+xml",
          "endnotes+xml")
MAX_UNPACKED = 1 << 30  # bytes a Word file's parts may unpack to: past it, a zip bomb


def unpacked_size(data: bytes) -> int | None:
    """The bytes a zip archive's members unpack to (zipfile stops reading a member at its
    declared size, so the declared sizes bound what is unpacked); None if not a zip."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return sum(member.file_size for member in archive.infolist())
    except (zipfile.BadZipFile, ValueError, EOFError):
        return None


class Document:
    """A Word file read whole: `units`, one per paragraph with words, and `written`."""

    def __init__(self, data: bytes, name: str):
        self.data = data
        document = _opened(data, name)
        etree = require("lxml.etree", "documents")
        self.parts: dict[str, Any] = {}  # the zip member of each part with units: its XML
        self.paragraphs: list[tuple[Unit, list[Any], str]] = []  # unit, <w:t>s, member
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for part in document.part.package.iter_parts():
                if part.content_type.endswith(_PARTS):
                    member = str(part.partname).lstrip("/")  # read as it is (python-docx
                    root = etree.fromstring(archive.read(member))  # drops blank text)
                    self.parts[member] = root
                    for paragraph in root.iter(f"{_W}p"):
                        self._read(paragraph, member)
        self.units = [unit for unit, _, _ in self.paragraphs]

    def _read(self, paragraph: Any, member: str) -> None:
        texts = list(_texts(paragraph))
        items: list[Item] = []
        for i, element in enumerate(texts):
            if element.tag in _SEPARATORS:
                items.append(Text(" ", ""))
            else:
                items += [Open(str(i), ()), Text(element.text or "", element.text or ""),
                          Close(str(i), "")]
        parts = inline_unit(items)
        units = [part for part in parts if isinstance(part, Unit)]
        if units:
            self.paragraphs.append((units[0], [t for t in texts if t.tag == f"{_W}t"], member))

    def written(self, translations: Mapping[str, str], aligned: Aligns = UNALIGNED,
                counts: Optional[Counts] = None) -> bytes:
        """The document with each changed paragraph's runs given their share of its
        translation (placed by `aligned[text]` where there is one, as `place_tags`
        places tags; by position where that would leave a hyperlink without text, and
        kept as it is where that would too); what became of them added to `counts`."""
        counts = Counts() if counts is None else counts
        changed: set[str] = set()
        for unit, elements, member in self.paragraphs:
            target = translations.get(unit.text, unit.text)
            if target == unit.text:
                continue
            alignment = aligned.get(unit.text)
            tries = [alignment] if alignment is None else [alignment, None]  # then by position
            for repaired, alignment in enumerate(tries):
                texts = _shares(unit, elements, target, alignment)
                if _links_kept(elements, texts):
                    for element, text in zip(elements, texts):
                        _set_text(element, text)
                    counts.translated += not repaired
                    counts.repaired += repaired
                    changed.add(member)
                    break
            else:
                counts.kept += 1
        return self._zipped(changed)

    def _zipped(self, changed: set[str]) -> bytes:
        """The file's zip again, member for member, the `changed` parts' XML new."""
        etree = require("lxml.etree", "documents")
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(self.data)) as source, \
                zipfile.ZipFile(out, "w") as target:
            for member in source.infolist():
                if member.filename in changed:
                    data = etree.tostring(self.parts[member.filename], encoding="UTF-8",
                                          standalone=True)
                else:
                    data = source.read(member)
                target.writestr(member, data, compress_type=member.compress_type)
        return out.getvalue()


def _opened(data: bytes, name: str) -> Any:
    """The file as python-docx opens it, or one line saying why it is not a Word file."""
    docx = require("docx", "documents")
    etree = require("lxml.etree", "documents")
    opc = require("docx.opc.exceptions", "documents")
    if (unpacked := unpacked_size(data) or 0) > MAX_UNPACKED:
        raise UserError(f"{name}: unpacks to {unpacked:,} bytes, more than a Word "
                        f"document transcli reads ({MAX_UNPACKED:,}): not a document")
    try:
        return docx.Document(io.BytesIO(data))
    except (zipfile.BadZipFile, opc.PackageNotFoundError, KeyError, ValueError,
            etree.XMLSyntaxError) as exc:
        reason = "not a zip archive" if not zipfile.is_zipfile(io.BytesIO(data)) else str(exc)
        raise UserError(f"{name}: not a Word document (.docx): {reason}") from None


def _shares(unit: Unit, elements: list[Any], target: str, alignment: Any) -> list[str]:
    """Each run's share of `target`, the paragraph's translation, by where `place_tags`
    puts its tag (by `alignment`, or by position without one): the space between two
    runs goes to the one that had it in the source."""
    placed = place_tags(unit.text, [(tag.start, tag.end) for tag in unit.tags], target,
                        alignment)
    starts = [0] + [placed[k - 1][1] if (elements[k].text or "")[:1].isspace()
                    else placed[k][0] for k in range(1, len(elements))] + [len(target)]
    return [target[start:max(start, end)] for start, end in zip(starts, starts[1:])]


def _links_kept(elements: list[Any], texts: list[str]) -> bool:
    """Whether every hyperlink whose runs had text in the source still has some."""
    held: dict[Any, list[bool]] = {}
    for element, text in zip(elements, texts):
        link = next(element.iterancestors(f"{_W}hyperlink"), None)
        if link is not None and (element.text or "").strip():
            held.setdefault(link, []).append(bool(text.strip()))
    return all(any(kept) for kept in held.values())


def _texts(paragraph: Any) -> Iterator[Any]:
    """The paragraph's own text elements and separators, in order (not those of a
    paragraph inside it, as in a text box)."""
    for element in paragraph.iter(f"{_W}t", *_SEPARATORS):
        if next(element.iterancestors(f"{_W}p")) is paragraph:
            yield element


def _set_text(element: Any, text: str) -> None:
    element.text = text
    if text != text.strip():
        element.set(_XML_SPACE, "preserve")
