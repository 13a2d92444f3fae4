"""Word documents (.docx): each paragraph's text translated, every run keeping its
formatting.

The file is opened by python-docx; the paragraphs of the body (tables and text boxes
included), the headers, the footers and the comments are units. A paragraph's text is
the text of its runs (tabs and line breaks part its words); each run's text element is
a tag over its part of that text, so `place_tags` gives each run, with its formatting
(bold, italic, a hyperlink around it, a style), its share of the translation. Nothing
but the text of `<w:t>` elements changes: the XML parts are otherwise the ones read
(python-docx writes them again, so equal as XML, not byte for byte). Footnotes and
endnotes are kept untranslated.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any, Iterator, Mapping

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
_PARTS = ("document.main+xml", "header+xml", "footer+xml", "comments+xml")
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
        docx = require("docx", "documents")
        etree = require("lxml.etree", "documents")
        opc = require("docx.opc.exceptions", "documents")
        if (unpacked := unpacked_size(data) or 0) > MAX_UNPACKED:
            raise UserError(f"{name}: unpacks to {unpacked:,} bytes, more than a Word "
                            f"document transcli reads ({MAX_UNPACKED:,}): not a document")
        try:
            self.document = docx.Document(io.BytesIO(data))
        except (zipfile.BadZipFile, opc.PackageNotFoundError, KeyError, ValueError,
                etree.XMLSyntaxError) as exc:
            reason = "not a zip archive" if not zipfile.is_zipfile(io.BytesIO(data)) else str(exc)
            raise UserError(f"{name}: not a Word document (.docx): {reason}") from None
        self.paragraphs: list[tuple[Unit, list[Any]]] = []
        for part in self.document.part.package.iter_parts():
            if part.content_type.endswith(_PARTS) and hasattr(part, "element"):
                for paragraph in part.element.iter(f"{_W}p"):
                    self._read(paragraph)
        self.units = [unit for unit, _ in self.paragraphs]

    def _read(self, paragraph: Any) -> None:
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
            self.paragraphs.append((units[0], [t for t in texts if t.tag == f"{_W}t"]))

    def written(self, translations: Mapping[str, str], aligned: Aligns = UNALIGNED) -> bytes:
        """The document with each changed paragraph's runs given their share of its
        translation (placed by `aligned[text]` where there is one, as `place_tags`
        places tags)."""
        for unit, elements in self.paragraphs:
            target = translations.get(unit.text, unit.text)
            if target == unit.text:
                continue
            placed = place_tags(unit.text, [(tag.start, tag.end) for tag in unit.tags], target,
                                aligned.get(unit.text))
            # The space between two runs goes to the one that had it in the source.
            starts = [0] + [placed[k - 1][1] if (elements[k].text or "")[:1].isspace()
                            else placed[k][0] for k in range(1, len(elements))] + [len(target)]
            for element, start, end in zip(elements, starts, starts[1:]):
                _set_text(element, target[start:max(start, end)])
        out = io.BytesIO()
        self.document.save(out)
        return out.getvalue()


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
