"""From a checked request to its answer: each text's language (with source "auto"), the
model's translations of the texts that need it, and alternatives (an n-best search).

Each text goes to the model of its (source, target) pair (`Models`); one whose language
is the target (a Spanish text with target "es") is answered as it is, without a model
call, as LibreTranslate answers it. Alternatives are a text's
2nd to (N+1)th translations, line by line (`Batcher.translate_lines`), without the best
one, empty ones or repeats, as LibreTranslate filters them: a text may get fewer than N.

With `format: "html"` each text is an HTML fragment, translated as `transcli translate
--format html` translates a page (`documents.py`): its markup kept byte for byte, its text
and the attribute values people read translated, all the request's lines in one model
request. Its language is detected on its text, not its markup; it has no alternatives
(LibreTranslate gives none for HTML either: an empty list each).

A request's own `glossary` ({source: target} terms) extends the server's (`terms_glossary`)
for its texts, HTML or not, and its alternatives; so does a file's.

Where the run has a confidence calibration, each text (not HTML) gets its confidence and
each alternative its own: a text's is its lines', each weighing as many characters as it
has; a text answered as it is gets 1.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Optional, Sequence, TypeVar

from transcli.documents.formats import FORMATS as DOCUMENTS
from transcli.inference.confidence import SURE, Line, joined
from transcli.inference.glossary import Glossary
from transcli.serve.batcher import Batcher, QueueFull, TranslationFailed
from transcli.serve.detection import Detector
from transcli.serve.documents import DocumentThread, read_documents, translated_documents
from transcli.serve.limits import Limits
from transcli.serve.models import Models
from transcli.serve.protocol import (
    AUTO,
    ApiError,
    TranslateAnswer,
    TranslateRequest,
    join_lines,
    split_lines,
)

T = TypeVar("T")
Sure = tuple[Optional[float], list[Optional[float]]]  # a text's confidence, its alternatives'


async def answer(request: TranslateRequest, models: Models, detector: Detector,
                 thread: DocumentThread) -> TranslateAnswer:
    """The answer to a checked `POST /translate` (HTML's read and written on `thread`)."""
    if request.format == "html":
        return await within_timeout(models.limits,
                                    _html_answer(request, models, detector, thread))
    texts = request.texts
    detected, groups = await _languages(request, texts, models, detector)
    translations = list(texts)  # as they are, unless translated below
    alternatives: list[list[str]] | None = [[] for _ in texts] if request.alternatives else None
    sure: list[Sure] = [(SURE, [])] * len(texts)  # a text answered as it is
    found = await asyncio.gather(*(_ranks(request, batcher, [texts[i] for i in todo])
                                   for batcher, todo in groups))
    for (_, todo), ranks in zip(groups, found):
        for position, index in enumerate(todo):
            (translations[index], best), *others = [rank[position] for rank in ranks]
            kept = _unique([text for text, _ in others], translations[index])
            if alternatives is not None:
                alternatives[index] = kept
            sure[index] = (best, [dict(others)[text] for text in kept])
    calibrated = models.calibrated([batcher for batcher, _ in groups])
    return TranslateAnswer(request, translations, detected, alternatives,
                           sure if calibrated else None)


async def _ranks(request: TranslateRequest, batcher: Batcher, texts: list[str]
                 ) -> list[list[tuple[str, Optional[float]]]]:
    """Each rank's (best first, then the alternatives') translation of each of `texts`,
    with its confidence."""
    lines, counts = split_lines(texts)
    found = await model_call(batcher, batcher.translate_lines(
        lines, request.alternatives + 1, terms_glossary(request.glossary, batcher)))
    return [_texts([_ranked(line, rank) for line in found], counts)
            for rank in range(request.alternatives + 1)]


def _ranked(line: Line, rank: int) -> tuple[str, Optional[float]]:
    """A line's translation of `rank` (its last when it has fewer) and its confidence."""
    at = min(rank, len(line.hypotheses) - 1)
    confidences = (line.confidence, *line.others)
    return line.hypotheses[at][0], (confidences[at] if at < len(confidences) else None)


def _texts(lines: list[tuple[str, Optional[float]]], counts: list[int]
           ) -> list[tuple[str, Optional[float]]]:
    """Lines back into the texts they were split from (`join_lines`), each text's
    confidence that of its lines, each weighing as many characters as it has."""
    texts = join_lines([text for text, _ in lines], counts)
    found, start = [], 0
    for text, count in zip(texts, counts):
        part = lines[start:start + count]
        found.append((text, joined([value for _, value in part], [line for line, _ in part])))
        start += count
    return found


async def _languages(request: TranslateRequest, texts: list[str], models: Models,
                     detector: Detector
                     ) -> tuple[Optional[list[dict[str, Any]]], list[tuple[Batcher, list[int]]]]:
    """With source "auto", each text's language as detected; and the texts to translate
    (those not in the target language already), by the batcher of their pair."""
    detected = await detector.detect_each(texts) if request.source == AUTO else None
    sources = [found["language"] for found in detected] if detected else \
        [request.source] * len(texts)
    groups: dict[str, list[int]] = {}
    for index, source in enumerate(sources):
        if source != request.target:
            groups.setdefault(source, []).append(index)
    return detected, [(models.batcher(source, request.target), todo)
                      for source, todo in groups.items()]


async def _html_answer(request: TranslateRequest, models: Models, detector: Detector,
                       thread: DocumentThread) -> TranslateAnswer:
    """The answer to a request of HTML fragments (module doc)."""
    names = [f"q[{index}]" for index in range(len(request.texts))] \
        if isinstance(request.q, list) else ["q"]
    documents = await read_documents(thread, list(zip(request.texts, names)),
                                     DOCUMENTS["html"], models.limits.max_chars)
    detected, groups = await _languages(
        request, ["\n".join(line for chunk in document.lines for line in chunk)
                  for document in documents], models, detector)
    translations = list(request.texts)
    for batcher, todo in groups:
        written = await _html_written([documents[index] for index in todo], batcher,
                                      terms_glossary(request.glossary, batcher), thread)
        for index, data in zip(todo, written):
            translations[index] = data.decode()
    alternatives = [[] for _ in translations] if request.alternatives else None
    return TranslateAnswer(request, translations, detected, alternatives)


async def _html_written(documents: list[Any], batcher: Batcher, glossary: Optional[Glossary],
                        thread: DocumentThread) -> list[bytes]:
    """HTML fragments of one language translated by `batcher`, written on `thread`."""
    return await translated_documents(
        documents,
        lambda lines, sizes: model_call(batcher, batcher.translate(lines, sizes, glossary)),
        thread, lambda lines, done: model_call(batcher, batcher.align(lines, done)))


def terms_glossary(terms: Optional[dict[str, str]], batcher: Batcher) -> Optional[Glossary]:
    """The server's glossary with a request's own `terms` (None without them: the
    server's alone, which the translator holds)."""
    if not terms:
        return None
    assert batcher.translator is not None  # the server listens once it has loaded
    return (batcher.translator.preparer.glossary or Glossary([])).extended(terms)


def _unique(texts: list[str], best: str) -> list[str]:
    """`texts` without `best`, empty texts and repeats, in order."""
    seen = {best, ""}
    return [text for text in texts if not (text in seen or seen.add(text))]


async def translate_file_lines(lines: list[str], sizes: Optional[Sequence[int]], source: str,
                               target: str, models: Models, detector: Detector,
                               terms: Optional[dict[str, str]] = None,
                               used: Optional[list[tuple[str, Batcher]]] = None) -> list[str]:
    """A file's lines translated (`sizes`: a document's chunks; `terms`: the request's
    glossary, `terms_glossary`), or as they are when the file's language is the target
    (with source "auto": of its text as a whole). Its source language and the batcher of
    its pair are appended to `used` (for its name and the alignments of its tags)."""
    if source == AUTO:
        source = (await detector.detect_each(["\n".join(lines)]))[0]["language"]
    if source == target or not lines:
        return lines
    batcher = models.batcher(source, target)
    if used is not None:
        used.append((source, batcher))
    glossary = terms_glossary(terms, batcher)
    return await model_call(batcher, batcher.translate(lines, sizes, glossary))


async def model_call(batcher: Batcher, call: Awaitable[T]) -> T:
    """The model's answer to `call` (one of `batcher`'s); its refusals as errors."""
    limits = batcher.limits
    try:
        return await call
    except QueueFull:
        raise ApiError(503, f"Slowdown: {limits.max_queue} requests are waiting; "
                            f"try again shortly") from None
    except asyncio.TimeoutError:
        raise _too_late(limits) from None
    except TranslationFailed as exc:
        raise ApiError(500, f"Cannot translate text: {exc}") from None


async def within_timeout(limits: Limits, work: Awaitable[T]) -> T:
    """`work`'s result, or 504 once `Limits.timeout` seconds have passed (a document's
    reading and writing count, besides its wait for the model)."""
    try:
        return await asyncio.wait_for(work, limits.timeout)
    except asyncio.TimeoutError:
        raise _too_late(limits) from None


def _too_late(limits: Limits) -> ApiError:
    return ApiError(504, f"not translated within {limits.timeout:g} s: the server is busy; "
                         f"try again later")
