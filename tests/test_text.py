"""The one rule for reading text lines (`transcli.system.text`), which prepare, translate,
score, evaluate and validation share, on real files: plain, compressed, corrupt."""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path

import pytest

from transcli.system.errors import UserError
from transcli.system.text import count_lines, read_text_file

TEXT = "a\r\n\nb\u2028c\x0cd\re\n".encode()  # CRLF, an empty line, odd characters inside
LINES = ["a", "", "b\u2028c\x0cd\re"]


def test_only_newline_ends_a_line(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(TEXT)
    assert read_text_file(path) == LINES and count_lines(path) == 3
    path.write_bytes(b"\n")
    assert read_text_file(path) == [""] and count_lines(path) == 1
    path.write_bytes(b"no newline at the end")
    assert read_text_file(path) == ["no newline at the end"] and count_lines(path) == 1
    path.write_bytes(b"")
    assert read_text_file(path) == [] and count_lines(path) == 0


def test_a_byte_order_mark_is_dropped_on_the_first_line_only(tmp_path: Path) -> None:
    path = tmp_path / "bom.txt"
    path.write_bytes("\ufeffuno\n\ufeffdos\n".encode())
    assert read_text_file(path) == ["uno", "\ufeffdos"]


@pytest.mark.parametrize("suffix, compress", [(".gz", gzip.compress), (".bz2", bz2.compress),
                                              (".xz", lzma.compress)])
def test_compressed_files_read_as_their_text(tmp_path: Path, suffix: str, compress) -> None:
    path = tmp_path / f"f.txt{suffix}"
    path.write_bytes(compress(TEXT))
    assert read_text_file(path) == LINES
    assert count_lines(path) is None  # it would have to be read twice


@pytest.mark.parametrize("suffix, compress", [(".gz", gzip.compress), (".xz", lzma.compress)])
def test_corrupt_compressed_data_is_one_line_naming_the_file(tmp_path: Path, suffix: str,
                                                             compress) -> None:
    path = tmp_path / f"broken{suffix}"
    data = compress(TEXT * 100)
    path.write_bytes(data[:len(data) // 2])  # truncated
    with pytest.raises(UserError, match=rf"broken{suffix}: cannot read"):
        read_text_file(path)


def test_invalid_utf8_names_the_file_line_and_byte(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("bien\nel año\n".encode("latin-1"))
    with pytest.raises(UserError, match=r"latin1.txt: line 2 is not valid UTF-8 "
                                        r"\(byte 0xf1 at byte 5 of the line\)"):
        read_text_file(path)


@pytest.mark.parametrize("encoding, bom", [("utf-16-le", b"\xff\xfe"),
                                           ("utf-16-be", b"\xfe\xff")])
def test_utf16_is_named_with_what_to_do(tmp_path: Path, encoding: str, bom: bytes) -> None:
    path = tmp_path / "windows.txt"
    path.write_bytes(bom + "I like trees.\n".encode(encoding))
    with pytest.raises(UserError) as error:
        read_text_file(path)
    assert str(error.value) == (
        f"{path}: line 1 is not valid UTF-8 (byte 0x{bom[:1].hex()} at byte 1 of the line); "
        f"it looks like UTF-16 (convert it: iconv -f UTF-16 -t UTF-8)")


def test_a_limit_reads_no_further(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"one\ntwo\n\xff\n")  # the bad line lies past the limit
    assert read_text_file(path, 2) == ["one", "two"]
