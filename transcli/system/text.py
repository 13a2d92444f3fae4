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
import zlib
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator, Optional

from transcli.system.errors import UserError
from transcli.system.files import BLOCK, describe_os_error, open_checked

BOM = "\ufeff"
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


def raw_lines(handle: Iterable[bytes], name: str | Path) -> Iterator[bytes]:
    """The handle's lines as bytes, read errors reported by `reading`."""
    with reading(name):
        yield from handle


def decoded(raw: bytes, first: bool = False) -> Optional[str]:
    """A raw line's text without its line end (and, on the `first` line, without a
    byte-order mark); None if it is not UTF-8."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if first:
        text = text.removeprefix(BOM)
    return text.removesuffix("\n").removesuffix("\r")


def invalid_utf8(raw: bytes, name: str | Path, number: int) -> str:
    """The message for line `number` of `name`, which is not UTF-8: where the bad byte is."""
    try:
        raw.decode("utf-8")
        column = 0
    except UnicodeDecodeError as exc:
        column = exc.start
    byte = raw[column:column + 1].hex()
    return (f"{name}: line {number} is not valid UTF-8 (byte 0x{byte} at byte {column + 1} "
            f"of the line)")


def text_lines(handle: Iterable[bytes], name: str | Path, keep_bom: bool = False
               ) -> Iterator[str]:
    """The lines of a binary handle by the module's rule; bad UTF-8 is a `UserError`.
    `keep_bom`: a first-line byte-order mark stays (as the `sacrebleu` command reads it)."""
    for number, raw in enumerate(raw_lines(handle, name), start=1):
        line = decoded(raw, number == 1 and not keep_bom)
        if line is None:
            raise UserError(invalid_utf8(raw, name, number))
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
