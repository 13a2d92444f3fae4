"""`/translate_file` and `/download_file`: the file formats the server translates, and the
translated files kept until they are downloaded.

`FORMATS` maps a file name's suffix to its format: every format `transcli translate`
reads, each translated as `transcli translate -i FILE -o OUT` translates it. Plain text
(.txt) goes line by line (`text.py`'s rule: UTF-8, a byte-order mark and CRLF dropped;
one line out per line in); HTML, Markdown, subtitles, PO catalogues and Word documents go
through the document layer (`documents.py`), their markup kept and only their text
translated. A file's characters are counted on that text (the markup left out) against
`--max-file-chars`.

`FileStore` keeps the translated files in a private temporary folder (mode 0700), each
under a name of 128 random bits, which the download URL holds: nobody can guess another
client's file. It holds at most `MAX_FILES` files and `MAX_BYTES` bytes (the oldest go
first to make room), none longer than `KEEP_SECONDS`, and the folder is removed when the
server stops.
"""

from __future__ import annotations

import collections
import io
import re
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import quote

from transcli.documents.formats import FORMATS as DOCUMENTS
from transcli.documents.formats import DocumentFormat
from transcli.serve.documents import (
    Align,
    DocumentThread,
    Translate,
    read_documents,
    translated_documents,
)
from transcli.serve.protocol import ApiError, check_chars, check_size
from transcli.system.errors import UserError
from transcli.system.text import text_lines

MAX_FILES = 100  # translated files kept at once
MAX_BYTES = 256 << 20  # ... and bytes
KEEP_SECONDS = 1800.0  # a translated file is kept 30 minutes (LibreTranslate's time)
MAX_NAME_CHARS = 100  # a file name's characters kept in the download's name
TOKEN_BYTES = 16  # 128 random bits name a stored file
FOLDER_PREFIX = "transcli-serve-"
FILES_AT_ONCE = 4  # files being translated at once: a document read holds tens of bytes
# per byte of its file in memory; the others wait their turn within --timeout
MEDIA_TYPES = {  # the download's Content-Type, by format
    "text": "text/plain; charset=utf-8",
    "html": "text/html; charset=utf-8",
    "markdown": "text/markdown; charset=utf-8",
    "srt": "application/x-subrip; charset=utf-8",
    "vtt": "text/vtt; charset=utf-8",
    "po": "text/x-gettext-translation; charset=utf-8",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}


@dataclass(frozen=True)
class FileFormat:
    """A kind of file the server translates: the document format (plain text is read
    line by line, as `translate` reads a .txt) and the translated file's media type."""

    document: DocumentFormat

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES[self.document.name]


FORMATS = {suffix: FileFormat(fmt) for fmt in DOCUMENTS.values() for suffix in fmt.extensions}


def file_format(name: str) -> FileFormat:
    """The format of a file by its name's suffix (400 for one the server does not read)."""
    found = FORMATS.get(Path(name).suffix.lower())
    if found is None:
        raise ApiError(400, f"Invalid request: file format not supported (this server "
                            f"translates {', '.join(FORMATS)} files)")
    return found


async def translated_file(found: FileFormat, data: bytes, name: str, translate: Translate,
                          thread: DocumentThread, max_chars: int,
                          align: Optional[Align] = None) -> bytes:
    """The file translated into the same format (`translate` gives lines' translations,
    `align` the alignments its inline tags are placed by; documents are read and written
    on `thread`)."""
    if found.document.name == "text":
        return await translated_plain_text(data, name, translate, max_chars)
    documents = await read_documents(thread, [(data, name)], found.document, max_chars)
    check_chars(documents[0].chars, max_chars, "file")
    return (await translated_documents(documents, translate, thread, align))[0]


async def translated_plain_text(data: bytes, name: str, translate: Translate,
                                max_chars: int) -> bytes:
    """A UTF-8 text file translated as `transcli translate` translates it."""
    try:
        lines = list(text_lines(io.BytesIO(data), name))
    except UserError as exc:
        raise ApiError(400, f"Invalid request: {exc}") from None
    check_size(lines, max_chars, "file")
    return "".join(line + "\n" for line in await translate(lines, None)).encode()


def safe_name(name: str) -> str:
    """A client's file name as a plain one: its last path part, letters (of any script),
    digits and `._-` only (others become `_`), no leading dot ("file" where nothing is
    left but its extension), at most `MAX_NAME_CHARS`."""
    last = re.split(r"[/\\]", name)[-1]
    suffix = re.sub(r"[^\w.-]", "_", Path(last).suffix)
    stem = re.sub(r"[^\w.-]", "_", last[:len(last) - len(suffix)]).lstrip(".") or "file"
    return stem[:MAX_NAME_CHARS - len(suffix)] + suffix


def translated_name(name: str, target: str, source: str = "en") -> str:
    """`notes.txt` -> `notes.es.txt`, `talk.en.vtt` -> `talk.es.vtt`: the download's name
    (a name that says its language says the target's instead)."""
    path = Path(safe_name(name))
    stem = path.stem.removesuffix(f".{source}").removesuffix(f".{target}")
    return f"{stem}.{target}{path.suffix}"


def disposition(name: str) -> str:
    """The Content-Disposition of a download named `name`: an ASCII `filename` for old
    clients, and the name itself as RFC 6266's `filename*` where it is not ASCII."""
    plain = name.encode("ascii", "replace").decode().replace("?", "_")
    if plain == name:
        return f'attachment; filename="{name}"'
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(name, safe='')}"


@dataclass(frozen=True)
class Stored:
    path: Path
    name: str  # the name the download gives it
    media_type: str
    size: int
    stored: float  # when it was stored (the store's clock, seconds)


class FileStore:
    """Translated files awaiting download (module doc); made once per server. A folder
    removed behind the server's back (a cleaner of /tmp) is replaced by a new one, its
    files gone; one that cannot be made is said by `problem` (and /health)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))
        self._clock = clock
        self._files: collections.OrderedDict[str, Stored] = collections.OrderedDict()
        self._bytes = 0

    def problem(self) -> Optional[str]:
        """Why no file can be kept now (None: one can), the folder made again if it was
        removed: checked before a file is translated, as a write would fail after."""
        if self.folder.is_dir():
            return None
        self._files.clear()
        self._bytes = 0
        try:  # a new folder of its own: the old name may be anyone's now
            self.folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))
        except OSError as exc:
            return f"no folder for translated files ({exc.strerror or exc})"
        return None

    def put(self, data: bytes, name: str, media_type: str) -> str:
        """Keep `data` to be downloaded as `name`; its key (for the download URL). An
        OSError where the folder cannot take it (`problem` was checked before)."""
        self._make_room(len(data))
        token = secrets.token_urlsafe(TOKEN_BYTES)
        path = self.folder / token
        with open(path, "xb") as handle:
            handle.write(data)
        key = f"{token}.{name}"
        self._files[key] = Stored(path, name, media_type, len(data), self._clock())
        self._bytes += len(data)
        return key

    def get(self, key: str) -> Optional[tuple[Stored, bytes]]:
        """The file stored under `key` and its bytes, if it is still kept."""
        self._expire()
        found = self._files.get(key)
        if found is None:
            return None
        try:
            return found, found.path.read_bytes()
        except OSError:  # removed behind the server's back
            return None

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def _make_room(self, size: int) -> None:
        self._expire()
        while self._files and (len(self._files) >= MAX_FILES
                               or self._bytes + size > MAX_BYTES):
            self._drop(next(iter(self._files)))

    def _expire(self) -> None:
        deadline = self._clock() - KEEP_SECONDS
        while self._files and next(iter(self._files.values())).stored < deadline:
            self._drop(next(iter(self._files)))

    def _drop(self, key: str) -> None:
        stored = self._files.pop(key)
        self._bytes -= stored.size
        stored.path.unlink(missing_ok=True)
