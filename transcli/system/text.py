"""Reading text lines: the one rule every command keeps (prepare, translate, score,
evaluate, validation).

- A file ending in .gz, .bz2 or .xz is decompressed as it is read (`open_text`); corrupt
  or truncated compressed data is one line naming the file.
- Only '\\n' ends a line. A '\\r' before it (CRLF) and a byte-order mark at the start of
  the first line are dropped; any other character (a lone '\\r', U+2028, a form feed)
  stays inside its line, so a line never splits and two files' lines stay aligned.
- A line that is not UTF-8 is a one-line error naming the file, the line and the byte
  (`text_lines`); readers that may skip such lines (prepare's `--skip-invalid`) get None
  for it from `decoded` and say the same with `invalid_utf8`.
- A line longer than `MAX_LINE_BYTES` is cut there as it is read (`raw_lines` yields
  its start as a `CutLine` and reads past the rest), so memory stays bounded whatever one
  line holds; `text_lines` says so on stderr, and each command says what it does with it.
- Line counts (`count_lines`, for progress bars) come from plain files only: a pipe or a
  compressed file would have to be read twice.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import itertools
import lzma
import stat
import sys
import zlib
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator, Optional

from transcli.system.errors import UserError
from transcli.system.files import BLOCK, describe_os_error, open_checked

BOM = "\ufeff"
MAX_LINE_BYTES = 4 << 20  # beyond any sentence a model takes (65,536 positions at most)
DECOMPRESSORS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_READ_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error)


def is_compressed(path: Path) -> bool:
    return path.suffix.lower() in DECOMPRESSORS


@contextlib.contextmanager
def open_text(path: Path) -> Iterator[BinaryIO]:
    """A text file as bytes, decompressed by its suffix; OS errors name the file."""
    with open_checked(path, "rb", buffering=BLOCK) as handle:
        opener = DECOMPRESSORS.get(path.suffix.lower())
        if opener is None:
            yield handle
            return
        with opener(handle, "rb") as unpacked:
            yield unpacked


@contextlib.contextmanager
def reading(name: str | Path) -> Iterator[None]:
    """Turns a read or decompression error (a truncated .gz) into one line naming the file."""
    try:
        yield
    except _READ_ERRORS as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise UserError(f"{name}: cannot read ({reason or type(exc).__name__})") from None


class CutLine(bytes):
    """The first `MAX_LINE_BYTES` of a longer line; the rest was read past, never held."""


def raw_lines(handle: BinaryIO | Iterable[bytes], name: str | Path,
              limit: Optional[int] = None) -> Iterator[bytes]:
    """The handle's lines as bytes, each at most `limit` long (a longer one comes as its
    start, a `CutLine`; `MAX_LINE_BYTES` by default); read errors reported by `reading`.
    Lines that come already split (typed at a terminal) are taken as they are."""
    limit = limit or MAX_LINE_BYTES
    with reading(name):
        if not hasattr(handle, "readline"):
            yield from handle
            return
        while line := handle.readline(limit):
            if len(line) < limit or line.endswith(b"\n"):
                yield line
                continue
            while (rest := handle.readline(limit)) and not rest.endswith(b"\n"):
                pass
            yield CutLine(line)


def decoded(raw: bytes, first: bool = False) -> Optional[str]:
    """A raw line's text without its line end (and, on the `first` line, without a
    byte-order mark); None if it is not UTF-8. A `CutLine` may end inside a character,
    whose bytes are left out."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not isinstance(raw, CutLine) or exc.start < len(raw) - 3:
            return None
        text = raw[:exc.start].decode("utf-8")
    if first:
        text = text.removeprefix(BOM)
    return text.removesuffix("\n").removesuffix("\r")


def lines_of(text: str) -> list[str]:
    """The lines of a text given whole (a command-line argument, a request field) by the
    module's rule: only "\\n" ends a line and a "\\r" before it is dropped; "" is one
    empty line and a final "\\n" starts one more, so every text has at least one line."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def invalid_utf8(raw: bytes, name: str | Path, number: int, before: int = 0) -> str:
    """The message for line `number` of `name`, which is not UTF-8: where the bad byte is
    (`raw` is the line, or its part after its first `before` bytes)."""
    try:
        raw.decode("utf-8")
        column = 0
    except UnicodeDecodeError as exc:
        column = exc.start
    byte = raw[column:column + 1].hex()
    message = (f"{name}: line {number} is not valid UTF-8 (byte 0x{byte} at byte "
               f"{before + column + 1} of the line)")
    if number == 1 and not before and raw[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16's BOMs
        message += "; it looks like UTF-16 (convert it: iconv -f UTF-16 -t UTF-8)"
    return message


def text_lines(handle: BinaryIO | Iterable[bytes], name: str | Path, keep_bom: bool = False
               ) -> Iterator[str]:
    """The lines of a binary handle by the module's rule; bad UTF-8 is a `UserError`.
    `keep_bom`: a first-line byte-order mark stays (as the `sacrebleu` command reads it)."""
    for number, raw in enumerate(raw_lines(handle, name), start=1):
        line = decoded(raw, number == 1 and not keep_bom)
        if line is None:
            raise UserError(invalid_utf8(raw, name, number))
        if isinstance(raw, CutLine):  # never a line shortened without a word
            print(f"transcli: warning: {name}: line {number} is longer than "
                  f"{MAX_LINE_BYTES >> 20} MiB: only its first {MAX_LINE_BYTES >> 20} MiB "
                  f"were read", file=sys.stderr)
        yield line


def read_text_file(path: Path, limit: Optional[int] = None, keep_bom: bool = False
                   ) -> list[str]:
    """The lines of a text file (at most `limit`), by the module's rule."""
    with open_text(path) as handle:
        return list(itertools.islice(text_lines(handle, path, keep_bom), limit))


def count_lines(path: Path) -> Optional[int]:
    """Lines in a plain file, a last line without newline included (fast: byte counting);
    None for a pipe, a device or a compressed file, which must not be read twice."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise UserError(f"{path}: file not found") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({describe_os_error(exc)})") from None
    if stat.S_ISDIR(mode):
        raise UserError(f"{path}: is a directory, not a file")
    if not stat.S_ISREG(mode):
        return None
    if is_compressed(path):
        open_checked(path).close()  # readable: say so now, not once the work is under way
        return None
    count, last = 0, b"\n"
    with open_checked(path, "rb", buffering=BLOCK) as handle, reading(path):
        for block in iter(lambda: handle.read(BLOCK), b""):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")
