"""The model's one worker thread, and the queue that merges requests into model batches.

torch must not run one model from several threads at once, and the event loop must stay
free to take requests, so a single worker thread owns the `Translator`: it loads it
(torch's thread count is set per thread, so the loading thread is the one that
translates), then takes jobs, one request's lines each, from a queue.

Batching. When the worker is free it takes the oldest job and, for up to
`Limits.max_batch_wait` after that job arrived, every job that joins the queue, while
their source tokens stay within `decode.batch_tokens` (a larger job goes alone); what
was waiting while the model ran is taken at once. The merged lines are one
`Translator.search_lines` call, which cuts them into token-budget batches as
`translate` does.

Batching never changes a translation. A line's index, which seeds sampling, is its
index in its own request, so a request is answered as `transcli translate` answers a
file of its lines. Requests are merged only where a line's translation does not depend
on its batch-mates (`batch_invariant`); elsewhere (int8, CTranslate2's
sampler), as with `batching=False`, each request is translated alone, in `translate`'s
chunks (a document's: the chunks `translate` cuts that document in, `sizes`).

A request for alternatives (`translate_lines` with n > 1) is a search of its own, never merged: each
line's n best translations, as `transcli translate --n-best n` gives them with the
server's settings (`nbest_decode`: greedy search becomes a beam search of n beams). So is
a request with a glossary of its own (the server's and its terms: `Translator.derived`), as
`transcli translate --glossary` gives it, and a document's request for the alignments that
place its inline tags (`align`).
"""

from __future__ import annotations

import asyncio
import collections
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Optional, Sequence

from transcli.config.schema import DecodeConfig
from transcli.inference.checks import Tally
from transcli.inference.confidence import Line
from transcli.inference.glossary import Glossary
from transcli.inference.streaming import chunked
from transcli.inference.translator import Translator
from transcli.serve.limits import Limits
from transcli.system.errors import first_line

WARM_UP = ["Hello."]  # translated once after loading: the first request is not slower


class QueueFull(Exception):
    """More requests are waiting than `Limits.max_queue`."""


class TranslationFailed(Exception):
    """The model call of a request raised (a bug, or out of memory); the worker printed
    the traceback and goes on with the next requests."""


@dataclass(eq=False)
class Job:
    """One request's lines, and where its translations go."""

    lines: list[str]
    future: asyncio.Future[list[Any]]
    loop: asyncio.AbstractEventLoop
    n_best: int = 1  # > 1: each line's n best translations, by a search of its own
    sizes: Optional[Sequence[int]] = None  # translated alone: in calls of these many lines
    glossary: Optional[Glossary] = None  # the request's own, in place of the server's
    done: Optional[list[str]] = None  # the lines' translations: a job for their alignments
    arrived: float = field(default_factory=time.monotonic)

    @property
    def alone(self) -> bool:
        """Whether the job needs a model call of its own (module doc)."""
        return self.n_best > 1 or self.glossary is not None or self.done is not None

    def settle(self, result: list[Any] | BaseException) -> None:
        settle(self.loop, self.future, result)


def settle(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], result: Any) -> None:
    """Hand a worker thread's result (or error) to the request waiting on `future`, from
    any thread; a request that timed out meanwhile has stopped waiting and gets nothing."""
    def deliver() -> None:
        if future.done():
            return
        if isinstance(result, BaseException):
            future.set_exception(result)
        else:
            future.set_result(result)

    try:
        loop.call_soon_threadsafe(deliver)
    except RuntimeError:  # the event loop has closed: the server was stopped at once
        pass


class Batcher:
    """The worker thread and its queue: `start`, then `translate` from the event loop,
    then `stop`."""

    def __init__(self, load: Callable[[], Translator], limits: Limits):
        self._load = load
        self.limits = limits
        self.translator: Translator | None = None
        self._queue: collections.deque[Job] = collections.deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._ready = threading.Event()
        self._load_error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name="transcli-model", daemon=True)
        self.merging = False  # set once the translator is loaded
        self.answered = 0  # requests translated so far
        self.model_calls = 0  # ... in this many model calls (fewer: batching at work)

    # ------------------------------------------------------------------ the event loop's side

    def start(self) -> None:
        """Load the model in the worker thread and wait until it has translated once; a
        loading error (a `UserError`) is raised here. The wait stays interruptible."""
        self._thread.start()
        while not self._ready.wait(0.2):
            pass
        if self._load_error is not None:
            raise self._load_error

    @property
    def alive(self) -> bool:
        """Whether the model worker still runs."""
        return self._thread.is_alive()

    @property
    def waiting(self) -> int:
        """Requests queued for the model (not counting those it is translating)."""
        return len(self._queue)

    async def translate(self, lines: list[str], sizes: Optional[Sequence[int]] = None,
                        glossary: Optional[Glossary] = None) -> list[str]:
        """The translations of one request's lines. Raises `QueueFull` when
        `Limits.max_queue` requests are waiting, and `TimeoutError` after `Limits.timeout`
        seconds (the job then leaves the queue, or its result is dropped). `sizes`: the
        lines are those of `translate`'s calls of these many lines each (a document's
        chunks), which a request translated alone keeps. `glossary`: the request's."""
        return [line.best for line in await self._queued(lines, 1, sizes, glossary)]

    async def translate_lines(self, lines: list[str], n: int = 1,
                              glossary: Optional[Glossary] = None) -> list[Line]:
        """Each line's translation (`Translator.translate_lines`): its `n` best, best
        first (module doc), and their confidences; raises as `translate` does."""
        return await self._queued(lines, n, glossary=glossary)

    async def align(self, lines: list[str], done: list[str]) -> list[Any]:
        """The alignment of each line and its translation in `done`
        (`Translator.alignments`), a job of its own; raises as `translate` does."""
        return await self._queued(lines, 1, done=done)

    async def _queued(self, lines: list[str], n_best: int, sizes: Optional[Sequence[int]] = None,
                      glossary: Optional[Glossary] = None, done: Optional[list[str]] = None
                      ) -> list[Any]:
        loop = asyncio.get_running_loop()
        job = Job(lines, loop.create_future(), loop, n_best, sizes, glossary, done)
        with self._cond:
            if len(self._queue) >= self.limits.max_queue:
                raise QueueFull
            self._queue.append(job)
            self._cond.notify()
        try:
            return await asyncio.wait_for(job.future, self.limits.timeout)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            self._withdraw(job)
            raise

    def finish(self) -> None:
        """Tell the worker to end once it has translated what is queued (`stop` waits)."""
        with self._cond:
            self._stopping = True
            self._cond.notify()

    def stop(self, wait: float | None = None) -> bool:
        """Translate what is queued, then end the worker, waiting for it at most `wait`
        seconds; whether it ended (a worker still loading the model, when a signal stopped
        `start`, or still translating, is left to end with the process)."""
        self.finish()
        if self._ready.is_set():
            self._thread.join(wait)
        if self._thread.is_alive():
            return False
        if self.translator is not None:
            self.translator.tally.report()
        return True

    def _withdraw(self, job: Job) -> None:
        with self._cond:
            try:
                self._queue.remove(job)
            except ValueError:  # already taken by the worker
                pass

    # ------------------------------------------------------------------ the worker thread

    def _work(self) -> None:
        try:
            self.translator = self._load()
            self.translator.translate(WARM_UP)
            self.merging = self.limits.batching and batch_invariant(self.translator.decode)
        except BaseException as exc:  # handed to `start`, in the main thread
            self._load_error = exc
            return
        finally:
            self._ready.set()
        while (jobs := self._next_jobs()) is not None:
            self._run(jobs)  # settles every job, even when the model call fails

    def _next_jobs(self) -> list[Job] | None:
        """The next model call's jobs (module doc); None once stopping with none left."""
        with self._cond:
            while not self._queue and not self._stopping:
                self._cond.wait()
            if not self._queue:
                return None
            first = self._queue.popleft()
        if not self.merging or first.alone:
            return [first]
        jobs, tokens = [first], _tokens(self.translator, first)
        budget = self.translator.decode.batch_tokens  # type: ignore[union-attr]
        deadline = first.arrived + self.limits.max_batch_wait
        while True:
            with self._cond:
                while not self._queue and not self._stopping and time.monotonic() < deadline:
                    self._cond.wait(deadline - time.monotonic())
                if not self._queue or self._queue[0].alone:
                    return jobs
                job = self._queue[0]
            # outside the lock: requests keep arriving meanwhile
            cost = _tokens(self.translator, job)
            if tokens + cost > budget:
                return jobs
            with self._cond:
                if self._queue and self._queue[0] is job:  # not withdrawn meanwhile
                    self._queue.popleft()
                    jobs.append(job)
                    tokens += cost

    def _run(self, jobs: list[Job]) -> None:
        """Translate the jobs and settle each; an error fails these jobs, not the server.
        Sentences whose translation failed its check are said in the log."""
        assert self.translator is not None
        before = replace(self.translator.tally)
        try:
            merged = self.merging and not jobs[0].alone
            results = self._merged(jobs) if merged else [self._alone(jobs[0])]
            _log_checks(before, self.translator.tally)
        except Exception as exc:  # a bug or out of memory: say it, answer 500, go on
            traceback.print_exc(file=sys.stderr)
            for job in jobs:
                job.settle(TranslationFailed(f"{type(exc).__name__}: {first_line(exc)}"))
            return
        self.model_calls += 1
        self.answered += len(jobs)
        for job, result in zip(jobs, results):
            job.settle(result)

    def _alone(self, job: Job) -> list[Any]:
        """One request as `transcli translate` runs a file of its lines: in its chunks
        (with `--n-best` for a job that asks for it)."""
        translator = self.translator
        assert translator is not None
        if job.done is not None:
            return translator.alignments(job.lines, job.done)
        asked = translator.derived(nbest_decode(translator.decode, job.n_best)
                                   if job.n_best > 1 else None, job.glossary)
        found: list[Line] = []
        for chunk in _calls(job):
            found += asked.translate_lines(chunk, len(found))
        return found

    def _merged(self, jobs: list[Job]) -> list[list[Line]]:
        """All jobs' lines in one `Translator.translate_lines` call, each line seeded by
        its index in its own request."""
        translator = self.translator
        assert translator is not None
        lines = [line for job in jobs for line in job.lines]
        indices = [index for job in jobs for index in range(len(job.lines))]
        found = iter(translator.translate_lines(lines, indices=indices))
        return [[next(found) for _ in job.lines] for job in jobs]


def batch_invariant(decode: DecodeConfig) -> bool:
    """Whether a line's translation is the same whatever lines share its batch, so that
    requests may be merged: float32 search is, on both engines (tested); int8 products
    are not (their rounding depends on the batch), nor is CTranslate2's sampler (one
    random stream per process)."""
    if decode.quantize != "none":
        return False
    return decode.engine == "torch" or decode.strategy != "sample"


def _tokens(translator: Optional[Translator], job: Job) -> int:
    """Source tokens of a job's lines, EOS included, each line cut to the model's
    positions (as `Translator` counts them)."""
    assert translator is not None
    room = translator.engine.max_positions - 1
    try:
        return sum(min(len(ids), room) + 1
                   for ids in translator.tokenizer.encode(job.lines) if ids)
    except Exception:  # text the tokenizer refuses: the model call says why, in _run
        return 1


def _log_checks(before: Tally, after: Tally) -> None:
    """One line on stderr for the sentences of a model call whose translation failed
    its check, and how they ended (`checks.Tally`)."""
    if after.failed > before.failed:
        print(f"transcli serve: warning: {after.failed - before.failed} sentence(s) failed "
              f"the check of their translation: {after.repaired - before.repaired} "
              f"translated again another way, {after.untranslated - before.untranslated} "
              f"sent back as their English source ({after.failed} so far)", file=sys.stderr)


def _calls(job: Job) -> Iterator[list[str]]:
    """A job's lines as `translate` gives them to the model: in its `sizes`, or in
    chunks of a text file's lines."""
    if job.sizes is None:
        yield from chunked(iter(job.lines))
        return
    start = 0
    for size in job.sizes:
        if size:
            yield job.lines[start:start + size]
        start += size


def nbest_decode(decode: DecodeConfig, n: int) -> DecodeConfig:
    """The settings of `translate --n-best n` with the server's: sampling draws n samples,
    beam search keeps at least n beams, and greedy search (one hypothesis) becomes a beam
    search of n beams."""
    if decode.strategy == "sample":
        return replace(decode, n_best=n)
    beams = decode.beam_size if decode.strategy == "beam" else 1
    return replace(decode, strategy="beam", n_best=n, beam_size=max(beams, n))
