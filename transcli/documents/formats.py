"""The document formats: the one table of what `translate --format` takes, the file
extensions that choose each, and the module that reads and writes it.

A text format's module has `pieces(chunks, name, force)`: the document, read as it
streams, as pieces of markup kept as it is and units to translate (`units.py`). Word
documents are zip archives, read and written whole (`docx.py`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import PurePath
from types import ModuleType
from typing import Optional

from transcli.system.errors import UserError


@dataclass(frozen=True)
class DocumentFormat:
    name: str  # what --format takes
    title: str  # what messages call it
    extensions: tuple[str, ...]
    module: str  # transcli.documents.MODULE reads and writes it
    reader: str = "pieces"  # the module's function that reads it
    needs: tuple[str, ...] = ()  # the packages it imports (the documents extra's)

    def load(self) -> ModuleType:
        return importlib.import_module(f"transcli.documents.{self.module}")

    @property
    def binary(self) -> bool:
        return self.name == "docx"


FORMATS = {fmt.name: fmt for fmt in [
    DocumentFormat("text", "plain text", (".txt", ".text"), "text"),
    DocumentFormat("html", "HTML", (".html", ".htm", ".xhtml"), "html"),
    DocumentFormat("markdown", "Markdown", (".md", ".markdown"), "markdown",
                   needs=("markdown_it",)),
    DocumentFormat("srt", "SubRip subtitles", (".srt",), "subtitles", "srt_pieces", ("srt",)),
    DocumentFormat("vtt", "WebVTT subtitles", (".vtt",), "subtitles", "vtt_pieces",
                   ("webvtt",)),
    DocumentFormat("po", "gettext catalogue", (".po", ".pot"), "po", needs=("polib",)),
    DocumentFormat("docx", "Word document", (".docx",), "docx", needs=("docx", "lxml")),
]}
# Plain text also under the names translation corpora take: no extension, a language
# code (news.en), the usual corpus suffixes, or compressed.
TEXT_SUFFIXES = frozenset({"", ".src", ".tgt", ".ref", ".hyp", ".tok", ".gz", ".bz2", ".xz"})


def by_extension(path: str) -> Optional[DocumentFormat]:
    """The format a file name's extension names; None for an extension no format has."""
    suffix = PurePath(path).suffix.lower()
    named = next((fmt for fmt in FORMATS.values() if suffix in fmt.extensions), None)
    if named is None and (suffix in TEXT_SUFFIXES or (len(suffix) == 3 and suffix[1:].isalpha())):
        return FORMATS["text"]
    return named


def document_format(input: str, output: str, given: Optional[str]) -> DocumentFormat:
    """The format of `translate`'s input: `--format` if given, else the input file's
    extension (text for stdin); the output must not name another format."""
    if given is not None:
        if given not in FORMATS:
            raise UserError(f"--format {given}: not a format transcli translates (one of: "
                            f"{', '.join(FORMATS)})")
        fmt = FORMATS[given]
    elif input == "-":
        fmt = FORMATS["text"]
    elif (fmt := by_extension(input)) is None:
        raise UserError(f"{input}: unknown file type '{PurePath(input).suffix}': transcli "
                        f"translates {_extensions()}; --format text reads any file as "
                        "plain lines")
    named = by_extension(output) if output != "-" else None
    if named is not None and named.name not in (fmt.name, "text"):
        raise UserError(f"{output}: the output is {fmt.title}, as the input, but its name "
                        f"says {named.title}: name it {fmt.extensions[0]}")
    return fmt


def _extensions() -> str:
    return ", ".join(ext for fmt in FORMATS.values() for ext in fmt.extensions)
