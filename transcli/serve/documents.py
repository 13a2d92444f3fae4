"""Documents through the model: a request's HTML (`format: "html"`) and the files of every
format `translate` reads, by the document layer (`transcli.documents`).

A document is read (`documents.translating.Document`'s chunks: its markup kept, its text in
units) and written on a
thread of its own, never on the event loop, and between the two its lines go to the model
as one request, in the chunks `translate` would give them (`Batcher.translate`'s
`sizes`): a file comes back byte for byte as `transcli translate -i FILE -o OUT` writes
it, and its lines share model batches with other requests.

Requests' HTML and files have a thread each (`DocumentThread`), so that a large file never
holds up a request's few lines of HTML. Each thread reads one document at a time, from a
queue of at most `Limits.max_queue` (503 past it); a job whose request has stopped waiting
(its time is up) leaves the queue at once, never to start. The threads are daemons: a
stop never waits for a document being read. A Word file is checked before it is unpacked
(`check_archive`): a zip bomb is refused, not unpacked.
"""

from __future__ import annotations

import asyncio
import collections
import sys
import threading
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Optional, Sequence, TypeVar

from transcli.documents.docx import unpacked_size
from transcli.documents.formats import DocumentFormat
from transcli.documents.translating import Chunk, Document
from transcli.serve.batcher import QueueFull, settle
from transcli.serve.protocol import ApiError
from transcli.system.errors import UserError

T = TypeVar("T")
# Lines in, their translations out; `sizes`: the chunks `translate` would translate them in.
Translate = Callable[[list[str], Optional[Sequence[int]]], Awaitable[list[str]]]
# Lines and their translations in, per line its alignment (`Batcher.align`) or None.
Align = Callable[[list[str], list[str]], Awaitable[list[Any]]]
UNPACKED_PER_CHAR = 256  # a Word file unpacks to at most this many bytes per character allowed


@dataclass
class Opened:
    """A document read on its thread: its chunks, held between the model's calls."""

    document: Document
    chunks: list[Chunk]

    @property
    def lines(self) -> list[list[str]]:
        """What the model is given, chunk by chunk."""
        return [chunk.lines for chunk in self.chunks]

    @property
    def chars(self) -> int:
        """Characters of the document's text (each unit's, markup left out, as often as it
        comes): what the server counts against its limit."""
        return sum(len(unit.text) for chunk in self.chunks for unit in chunk.units)

    def to_align(self, translated: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
        return [pair for chunk, done in zip(self.chunks, translated)
                for pair in self.document.to_align(chunk, done)]

    def written(self, translated: Sequence[Sequence[str]], align: Any = None) -> bytes:
        """The document with `translated[k]`, chunk k's translations."""
        return b"".join(self.document.written(chunk, done, align) for chunk, done
                        in zip(self.chunks, translated)) + self.document.finished()


@dataclass(eq=False)
class _Job:
    work: Callable[[], Any]
    future: asyncio.Future[Any]
    loop: asyncio.AbstractEventLoop


class DocumentThread:
    """A daemon thread that runs document work (reading, writing) a job at a time."""

    def __init__(self, name: str, max_queue: int):
        self.max_queue = max_queue
        self._queue: collections.deque[_Job] = collections.deque()
        self._running = 0  # 1 while a job runs
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    @property
    def busy(self) -> int:
        """Jobs running or waiting to run (`GET /health` reports them as `documents`)."""
        return self._running + len(self._queue)

    async def run(self, work: Callable[[], T]) -> T:
        """`work()`'s result, run on the thread; `QueueFull` when `max_queue` jobs wait."""
        loop = asyncio.get_running_loop()
        job = _Job(work, loop.create_future(), loop)
        with self._cond:
            if len(self._queue) >= self.max_queue:
                raise QueueFull
            self._queue.append(job)
            self._cond.notify()
        try:
            return await job.future
        except asyncio.CancelledError:
            with self._cond:  # not started yet: it leaves the queue now (started: its
                if job in self._queue:  # result finds nobody waiting, `settle`)
                    self._queue.remove(job)
            raise

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                job = self._queue.popleft()
                self._running = 1
            try:
                result: Any = job.work()
            except BaseException as exc:  # UserError (a bad document) or a bug: the caller's
                result = exc
            self._running = 0
            settle(job.loop, job.future, result)


async def read_documents(thread: DocumentThread, given: Sequence[tuple[str | bytes, str]],
                         fmt: DocumentFormat, max_chars: int) -> list[Opened]:
    """The documents (each its text or bytes, and its name) read on `thread`, as one job;
    a bad one is 400, in the document layer's words (the name, the line, the problem)."""
    try:
        return await thread.run(lambda: [_read(data, fmt, name, max_chars)
                                         for data, name in given])
    except UserError as exc:
        raise ApiError(400, f"Invalid request: {exc}") from None
    except QueueFull:
        raise ApiError(503, f"Slowdown: {thread.max_queue} documents are waiting to be "
                            f"read; try again shortly") from None


def _read(data: str | bytes, fmt: DocumentFormat, name: str, max_chars: int) -> Opened:
    if fmt.binary:
        check_archive(data, name, UNPACKED_PER_CHAR * max_chars)
    document = Document(fmt, data, name)
    return Opened(document, list(document.chunks()))


def check_archive(data: str | bytes, name: str, limit: int) -> None:
    """A zip archive whose members unpack to at most `limit` bytes (not a zip: the
    document layer says so in its words)."""
    unpacked = unpacked_size(data) if isinstance(data, bytes) else None
    if unpacked is not None and unpacked > limit:
        raise UserError(f"{name}: unpacks to {unpacked} bytes, more than this server "
                        f"unpacks ({limit}, {UNPACKED_PER_CHAR} bytes per character of "
                        f"--max-file-chars)")


async def translated_documents(documents: Sequence[Opened], translate: Translate,
                               thread: DocumentThread, align: Optional[Align] = None
                               ) -> list[bytes]:
    """The documents with their lines translated by `translate`, as one request in their
    chunks, written on `thread`; their inline tags placed by the alignments `align` gives
    (one request for all; without it, by position). Each document's `counts` then says
    what became of its units; units repaired or kept in English are a line on stderr."""
    sizes = [len(lines) for document in documents for lines in document.lines]
    lines = [line for document in documents for chunk in document.lines for line in chunk]
    done = iter(await translate(lines, sizes) if lines else [])
    translated = [[[next(done) for _ in chunk] for chunk in document.lines]
                  for document in documents]
    placed = None if align is None else await _alignments(documents, translated, thread, align)
    written = await thread.run(lambda: [document.written(chunks, placed) for document, chunks
                                        in zip(documents, translated)])
    for opened in documents:  # units whose markup did not survive the model: said once
        if summary := opened.document.counts.summary():
            print(f"transcli: {opened.document.name}: {summary}", file=sys.stderr, flush=True)
    return written


async def _alignments(documents: Sequence[Opened], translated: list[list[list[str]]],
                      thread: DocumentThread, align: Align) -> Callable[..., list[Any]]:
    """The alignments the documents' tags are placed by, asked of `align` at once, as
    the document layer's `Align` (which looks them up)."""
    pairs = list(dict.fromkeys(await thread.run(lambda: [
        pair for document, chunks in zip(documents, translated)
        for pair in document.to_align(chunks)])))
    aligned = dict(zip(pairs, await align([text for text, _ in pairs],
                                          [done for _, done in pairs]) if pairs else []))

    def looked_up(texts: list[str], done: list[str]) -> list[Any]:
        return [aligned.get(pair) for pair in zip(texts, done)]

    return looked_up
