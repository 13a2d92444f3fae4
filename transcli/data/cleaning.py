"""Raw parallel text in, clean pairs out: the rules every input format shares.

`normalise` puts each side in one canonical form; `Cleaner` names the first rule
a pair breaks (its drop reason, counted in the manifest). Below them, the helpers
the readers in `transcli.data.sources` use on raw bytes: files are opened as binary
(compressed ones transparently) so that invalid UTF-8 can be located by line.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
import math
import re
import sys
import unicodedata
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Iterable, Iterator, Optional

from transcli.system.errors import UserError
from transcli.system.files import BLOCK, count_lines, open_checked

if TYPE_CHECKING:  # config imports the source formats, which import this module
    from transcli.config.schema import DataConfig

Pair = tuple[str, str]

# Drop reasons, in the order the manifest lists them.
INVALID_UTF8 = "invalid_utf8"
NO_TAB = "no_tab"
MALFORMED = "malformed"  # a record that is not a pair: bad JSON, a side missing
EMPTY = "empty"
TOO_LONG_CHARS = "too_long_chars"
TOO_LONG_TOKENS = "too_long_tokens"
RATIO = "ratio"
DUPLICATE = "duplicate"
DECONTAMINATED = "decontaminated"
DROP_REASONS = (INVALID_UTF8, NO_TAB, MALFORMED, EMPTY, TOO_LONG_CHARS, TOO_LONG_TOKENS, RATIO,
                DUPLICATE, DECONTAMINATED)

# C0/C1 controls and byte-order marks (also mid-file, from concatenated files): spaces.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ufeff]")
# Compressed corpora are read as they are: `train.en.gz`, `pairs.tsv.xz`.
DECOMPRESSORS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_READ_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error)


# ----------------------------------------------------------------------------- cleaning


def normalise(text: str) -> str:
    """NFC, control characters and BOMs as spaces, whitespace runs collapsed to one space,
    trimmed.

    Dedup, decontamination and the tokenizer all see this form, so two spellings
    of one sentence (composed/decomposed accents, stray spaces) count as one.
    """
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    if not text.isprintable():
        text = _CONTROL.sub(" ", text)
    return " ".join(text.split())


@dataclass(frozen=True)
class Cleaner:
    """The per-pair rules: empty sides, length limits, length ratio."""

    max_chars: int
    max_tokens: int
    max_ratio: float

    @classmethod
    def from_config(cls, data: DataConfig) -> Cleaner:
        return cls(data.max_chars, data.max_tokens, data.max_ratio)

    @classmethod
    def held_out(cls) -> Cleaner:
        """For given valid/test sets: kept whole (a test set's scores are comparable only
        if every line is scored), except pairs with an empty side, which are no pair."""
        return cls(sys.maxsize, sys.maxsize, math.inf)

    def reason(self, src: str, tgt: str) -> Optional[str]:
        """The drop reason of a normalised pair, or None to keep it."""
        if not src or not tgt:
            return EMPTY
        if len(src) > self.max_chars or len(tgt) > self.max_chars:
            return TOO_LONG_CHARS
        src_words = src.count(" ") + 1  # normalised: exactly one space between words
        tgt_words = tgt.count(" ") + 1
        if src_words > self.max_tokens or tgt_words > self.max_tokens:
            return TOO_LONG_TOKENS
        if max(src_words, tgt_words) > self.max_ratio * min(src_words, tgt_words):
            return RATIO
        return None


# ----------------------------------------------------------------------------- raw lines


def is_compressed(path: Path) -> bool:
    return path.suffix.lower() in DECOMPRESSORS


@contextlib.contextmanager
def open_raw(path: Path) -> Iterator[BinaryIO]:
    """A corpus file as binary, decompressed by its suffix; OS errors name the file."""
    with open_checked(path, "rb", buffering=BLOCK) as handle:
        opener = DECOMPRESSORS.get(path.suffix.lower())
        if opener is None:
            yield handle
            return
        with opener(handle, "rb") as unpacked:
            yield unpacked


@contextlib.contextmanager
def reading(path: Path) -> Iterator[None]:
    """Turns a read or decompression error (a truncated .gz) into one line naming the file."""
    try:
        yield
    except _READ_ERRORS as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise UserError(f"{path}: cannot read ({reason or type(exc).__name__})") from None


def raw_lines(handle: Iterable[bytes], path: Path) -> Iterator[bytes]:
    """The handle's lines, read errors reported by `reading`."""
    with reading(path):
        yield from handle


def line_count(path: Path) -> Optional[int]:
    """Lines in a plain file (checking that it exists); None for a pipe or a compressed
    file, which would have to be read twice."""
    if is_compressed(path):
        open_checked(path, "rb").close()
        return None
    return count_lines(path)


def decode_line(raw: bytes) -> Optional[str]:
    """The line's text without its line ending; None if not UTF-8."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text.rstrip("\r\n")


def invalid_utf8_message(raw: bytes, path: Path, number: int) -> str:
    try:
        raw.decode("utf-8")
        column = 0
    except UnicodeDecodeError as exc:
        column = exc.start
    byte = raw[column:column + 1].hex()
    return f"{path}:{number}: invalid UTF-8 (byte 0x{byte} at byte {column + 1} of the line)"
