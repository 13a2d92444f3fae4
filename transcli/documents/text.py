"""Plain text as a document: each line a unit, its line end and the whitespace around
it kept as they are (what `serve` and `/translate_file` take for .txt)."""

from __future__ import annotations

from typing import Iterable, Iterator

from transcli.documents.units import Part, Text, inline_unit


def pieces(chunks: Iterable[str], name: str, force: bool = False) -> Iterator[list[Part]]:
    rest = ""
    for chunk in chunks:
        *lines, rest = (rest + chunk).split("\n")
        for line in lines:
            yield _line(line, "\n")
    if rest:
        yield _line(rest, "")


def _line(line: str, end: str) -> list[Part]:
    body = line.removesuffix("\r")
    return [*inline_unit([Text(body, body)]), line[len(body):] + end]
