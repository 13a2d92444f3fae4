"""From a checked request to its answer: each text's language (with source "auto"), the
model's translations of the texts that need it, and alternatives (an n-best search).

A text whose language is the target (a Spanish text for an en -> es server) is answered
as it is, without a model call, as LibreTranslate answers it. Alternatives are a text's
2nd to (N+1)th translations, line by line (`Batcher.translate_nbest`), without the best
one, empty ones or repeats, as LibreTranslate filters them: a text may get fewer than N.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, TypeVar

from transcli.serve.batcher import Batcher, QueueFull, TranslationFailed
from transcli.serve.detection import Detector
from transcli.serve.protocol import (
    AUTO,
    ApiError,
    TranslateAnswer,
    TranslateRequest,
    check_pair,
    join_lines,
    split_lines,
)

T = TypeVar("T")


async def answer(request: TranslateRequest, batcher: Batcher,
                 detector: Detector) -> TranslateAnswer:
    """The answer to a checked `POST /translate`."""
    texts = request.texts
    detected = await detector.detect_each(texts) if request.source == AUTO else None
    sources = [found["language"] for found in detected] if detected else \
        [request.source] * len(texts)
    for source in set(sources):
        check_pair(source, request.target)
    todo = [index for index, source in enumerate(sources) if source != request.target]
    translations = list(texts)  # as they are, unless translated below
    alternatives: list[list[str]] | None = [[] for _ in texts] if request.alternatives else None
    if todo:
        lines, counts = split_lines([texts[index] for index in todo])
        best, others = await _translations(batcher, lines, request.alternatives)
        other_texts = [join_lines(other, counts) for other in others]
        for position, (index, text) in enumerate(zip(todo, join_lines(best, counts))):
            translations[index] = text
            if alternatives is not None:
                alternatives[index] = _unique([other[position] for other in other_texts], text)
    return TranslateAnswer(request, translations, detected, alternatives)


async def _translations(batcher: Batcher, lines: list[str], alternatives: int
                        ) -> tuple[list[str], list[list[str]]]:
    """Each line's best translation, and its next `alternatives` ones (one list per rank,
    a translation per line)."""
    if not alternatives:
        return await model_call(batcher, batcher.translate(lines)), []
    found = await model_call(batcher, batcher.translate_nbest(lines, alternatives + 1))
    ranks = [[hyps[min(rank, len(hyps) - 1)] for hyps in found]
             for rank in range(alternatives + 1)]
    return ranks[0], ranks[1:]


def _unique(texts: list[str], best: str) -> list[str]:
    """`texts` without `best`, empty texts and repeats, in order."""
    seen = {best, ""}
    return [text for text in texts if not (text in seen or seen.add(text))]


async def translate_file_lines(lines: list[str], source: str, target: str, batcher: Batcher,
                               detector: Detector) -> list[str]:
    """A file's lines translated (as they are when the file's language is the target: with
    source "auto", the language of its text as a whole)."""
    if source == AUTO:
        source = (await detector.detect_each(["\n".join(lines)]))[0]["language"]
        check_pair(source, target)
    if source == target or not lines:
        return lines
    return await model_call(batcher, batcher.translate(lines))


async def model_call(batcher: Batcher, call: Awaitable[T]) -> T:
    """The model's answer to `call` (one of `batcher`'s); its refusals as errors."""
    limits = batcher.limits
    try:
        return await call
    except QueueFull:
        raise ApiError(503, f"Slowdown: {limits.max_queue} requests are waiting; "
                            f"try again shortly") from None
    except asyncio.TimeoutError:
        raise ApiError(504, f"not translated within {limits.timeout:g} s: the server "
                            f"is busy; try again later") from None
    except TranslationFailed as exc:
        raise ApiError(500, f"Cannot translate text: {exc}") from None
