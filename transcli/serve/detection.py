"""Which of the server's languages a text is in, for `POST /detect` and `source: "auto"`.

py3langid (a naive Bayes classifier over byte n-grams, its model in the package: it works
offline) chooses among the languages of the server's models only (English and Spanish), as
LibreTranslate chooses among the languages it has models for. It was chosen by `python -m
bench.language_id`: on the dev sets' lines of three words or more it identified 99.96% of
both sides, in under 0.1 ms a line at p95 (docs/SERVE.md has the table). A text in a third
language is reported as the nearest of them.

Identification runs on a thread of its own, one text after another, so a request of many
texts never holds the event loop; each text is read up to `READ_CHARS` characters, enough
to tell the two apart, so a request's cost is bounded whatever it holds. The identifier's
model (about 90 MB in memory, half a second to load) is loaded there at the first
detection: a server whose clients never detect does not pay for it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any

from transcli.system.extras import require

READ_CHARS = 2000  # characters of a text the identifier reads


class Detector:
    """py3langid's identifier, restricted to the server's languages (`codes`, the first
    what a text without evidence is said to be: LibreTranslate's answer), and its thread."""

    def __init__(self, codes: list[str]) -> None:
        self.codes = codes
        self._langid = require("py3langid.langid", "serve")  # missing: one line, at start
        self._identifier: Any = None
        self._loading = threading.Lock()
        self._thread = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="transcli-detect")

    def _loaded(self) -> Any:
        with self._loading:
            if self._identifier is None:
                identifier = self._langid.LanguageIdentifier.from_model_file(
                    self._langid.MODEL_FILE, norm_probs=True)
                identifier.set_languages(self.codes)
                self._identifier = identifier
        return self._identifier

    def detect(self, text: str) -> list[dict[str, Any]]:
        """The server's languages, most likely first, each with a confidence in percent
        (LibreTranslate's shape); a text without letters gives the first language alone,
        with a confidence of 0."""
        unknown = [{"confidence": 0.0, "language": self.codes[0]}]
        text = text[:READ_CHARS]
        if not any(char.isalpha() for char in text):
            return unknown
        ranked = self._loaded().rank(text)
        if ranked[0][1] == ranked[1][1]:  # no feature of either language: no evidence
            return unknown
        return [{"confidence": float(round(100 * probability)), "language": language}
                for language, probability in ranked]

    async def detect_each(self, texts: list[str]) -> list[dict[str, Any]]:
        """The most likely language of each text, identified on the detection thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._thread, lambda: [self.detect(text)[0] for text in texts])

    async def detect_all(self, text: str) -> list[dict[str, Any]]:
        """`detect(text)` on the detection thread."""
        return await asyncio.get_running_loop().run_in_executor(self._thread, self.detect, text)

    def close(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)
