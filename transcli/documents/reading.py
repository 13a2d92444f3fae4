"""Reading a document's text: UTF-8 in blocks, as it streams.

A document is decoded a block at a time (never split inside a character), with every
character kept as it is (line ends, a byte-order mark), since the document is written
back byte for byte. Bytes that are not UTF-8 are one line naming the file, the line and
the byte, in the words `system.text` uses for text files.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO, Iterator

from transcli.system.errors import UserError
from transcli.system.text import invalid_utf8, reading

BLOCK = 1 << 20


def decoded_chunks(handle: BinaryIO, name: str | Path, block: int = BLOCK) -> Iterator[str]:
    """The text of `handle`, a block at a time."""
    lines = 0  # line ends before `pending`
    column = 0  # bytes of the current line before `pending`
    pending = b""
    with reading(name):
        while data := handle.read(block):
            data = pending + data
            cut = _complete(data)
            text = _decode(data[:cut], name, lines, column)
            pending = data[cut:]
            newlines = data.count(b"\n", 0, cut)
            lines += newlines
            column = cut - data.rfind(b"\n", 0, cut) - 1 if newlines else column + cut
            yield text
    if pending:
        _decode(pending, name, lines, column)  # raises: a character cut at the end


def _complete(data: bytes) -> int:
    """Where the last whole UTF-8 character of `data` ends (a multi-byte character
    that the block cut is left for the next)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return len(data)
        if byte >= 0xC0:  # a lead byte: is its character whole?
            size = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return len(data) if back >= size else len(data) - back
    return len(data)


def _decode(data: bytes, name: str | Path, lines: int, column: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        end = data.find(b"\n", exc.start)
        number = lines + data.count(b"\n", 0, exc.start) + 1
        raise UserError(invalid_utf8(data[start:end if end >= 0 else len(data)], name, number,
                                     column if start == 0 else 0)) from None
