"""Streaming input through the model: `translate`, `evaluate` and `score` share one loop.

The input is read a chunk at a time (at most `CHUNK_LINES` items and about `CHUNK_CHARS`
characters of them), each chunk goes through the model, and its output lines are
written before more input is read: memory stays bounded however long the input, the
output keeps the input's order, a pipe into `head` stops the work early, and an output
file appears whole when the stream ends, or, when a signal stops it, with the whole
lines written before the stop (`system.outputs.output_file`).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator, Optional, Sequence, TypeVar

from tqdm import tqdm

from transcli.system.outputs import output_file

T = TypeVar("T")
CHUNK_LINES = 1000  # items read, run and written at a time...
CHUNK_CHARS = 1 << 23  # ... and at most about this many characters of them


def chunked(items: Iterable[T], cost: Callable[[T], int] = len,
            lines: int = CHUNK_LINES) -> Iterator[list[T]]:
    """`items` in lists of `lines`, or fewer when they reach `CHUNK_CHARS` by `cost`: a
    chunk of long lines stays small in memory."""
    chunk: list[T] = []
    chars = 0
    for item in items:
        chunk.append(item)
        chars += cost(item)
        if len(chunk) == lines or chars >= CHUNK_CHARS:
            yield chunk
            chunk, chars = [], 0
    if chunk:
        yield chunk


class Output:
    """Where a stream's lines go: a file or stdout ("-"), and what may not be it.
    `streamed`: a stop signal keeps the lines written so far (not for a document, which
    is whole or nothing)."""

    def __init__(self, name: str | Path, inputs: Sequence[str | Path], what: str,
                 streamed: bool = True):
        self.name, self.inputs, self.what, self.streamed = name, inputs, what, streamed

    def open(self) -> contextlib.AbstractContextManager[BinaryIO]:
        return output_file(self.name, self.what, inputs=self.inputs, streamed=self.streamed,
                           stdout=sys.stdout.buffer if str(self.name) == "-" else None)


def stream(items: Iterable[T], work: Callable[[list[T], int], list[str]],
           output: Optional[Output] = None, *, total: Optional[int] = None,
           progress: bool = True, unit: str = "line", cost: Callable[[T], int] = len,
           lines: int = CHUNK_LINES, end: str = "\n",
           count: Callable[[list[T]], int] = len) -> Iterator[str]:
    """Run `work(chunk, index of its first item)` over `items` a chunk at a time and
    yield the output lines it returns, in order, after writing them to `output` (each
    followed by `end`, flushed per chunk; a document's pieces have "" there). A progress
    bar on stderr counts the items (or what `count` finds in each chunk; of `total` when it
    is known). A consumer that stops early leaves no output file behind; a stop signal
    leaves the lines written before it."""
    with (output.open() if output is not None else contextlib.nullcontext()) as out, \
            tqdm(total=total, unit=unit, file=sys.stderr, disable=not progress) as bar:
        first = 0
        for chunk in chunked(items, cost, lines):
            results = work(chunk, first)
            if out is not None:
                out.write("".join(line + end for line in results).encode())
                out.flush()
            first += len(chunk)
            bar.update(count(chunk))
            yield from results


def drain(lines: Iterator[str]) -> None:
    """Run a stream to its end for the output it writes."""
    for _ in lines:
        pass
