"""The API's endpoints, LibreTranslate's: what each takes and answers (`protocol.py` has
the fields, `translating.py` the work). Endpoints that translate or detect check the API
key and count against `--req-limit`; the others answer anyone at once."""

from __future__ import annotations

import asyncio
from typing import Any, Optional

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from transcli.serve.batcher import Batcher
from transcli.serve.bodies import read_fields
from transcli.serve.detection import Detector
from transcli.serve.documents import DocumentThread
from transcli.serve.files import (
    FILES_AT_ONCE,
    FORMATS,
    FileStore,
    disposition,
    file_format,
    safe_name,
    translated_file,
    translated_name,
)
from transcli.serve.limits import Limits
from transcli.serve.models import Models
from transcli.serve.protocol import (
    AUTO,
    ApiError,
    Detection,
    ErrorResponse,
    FileAnswer,
    Language,
    TranslateRequest,
    TranslateResponse,
    check_api_key,
    detect_request,
    file_request,
    translate_request,
)
from transcli.serve.ratelimit import RateLimit
from transcli.serve.settings import Settings, frontend_settings
from transcli.serve.translating import answer, model_call, translate_file_lines, within_timeout

ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": meaning} for status, meaning in (
        (400, "Invalid request (fields, types, languages, format, size)"),
        (403, "Invalid API key"),
        (413, "A body larger than the server reads"),
        (429, "More requests than --req-limit a minute from this client (Retry-After)"),
        (500, "The model failed (the server log has the traceback)"),
        (503, "Too many requests waiting (--max-queue); try again shortly"),
        (504, "Not translated within --timeout seconds"))}


def form_body(*media: str, schema: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """An endpoint's body in the OpenAPI spec: `schema` (the translate request's by
    default) in each of the `media` types."""
    schema = schema or TranslateRequest.model_json_schema()
    return {"requestBody": {"required": True, "content": {
        kind: {"schema": schema} for kind in media}}}


FORMS = ("application/json", "application/x-www-form-urlencoded", "multipart/form-data")
DETECT_BODY = {"type": "object", "required": ["q"], "properties": {
    "q": {"type": "string", "description": "The text."},
    "api_key": {"type": "string", "description": "The key the server was started with."}}}
FILE_BODY = {"type": "object", "required": ["file", "source", "target"], "properties": {
    "file": {"type": "string", "format": "binary",
             "description": f"A file: {', '.join(FORMATS)}."},
    "source": {"type": "string", "example": "en"}, "target": {"type": "string", "example": "es"},
    "api_key": {"type": "string", "description": "The key the server was started with."},
    "glossary": {"type": "string", "example": '{"station": "terminal"}',
                 "description": "A transcli extension: the JSON text of an object of source "
                                "terms to target ones, for this file besides the server's "
                                "--glossary."}}}


class Routes:
    """The endpoints over one server's models, detector and file store."""

    def __init__(self, models: Models, detector: Detector, store: FileStore,
                 settings: Settings):
        self.models, self.detector, self.store = models, detector, store
        self.limits: Limits = models.limits
        self.settings = settings
        self.rate = RateLimit(self.limits.req_limit) if self.limits.req_limit else None
        # Requests' HTML and files are read on threads of their own (documents.py), and
        # at most FILES_AT_ONCE files are being translated at once (the others wait).
        self.html = DocumentThread("transcli-html", self.limits.max_queue)
        self.documents = DocumentThread("transcli-files", self.limits.max_queue)
        self.file_places = asyncio.Semaphore(FILES_AT_ONCE)

    def add_to(self, app: FastAPI) -> None:
        post, get = ["POST"], ["GET"]
        app.add_api_route("/translate", self.translate, methods=post, responses=ERRORS,
                          response_model=TranslateResponse, openapi_extra=form_body(*FORMS))
        app.add_api_route("/detect", self.detect, methods=post, responses=ERRORS,
                          response_model=list[Detection],
                          openapi_extra=form_body(*FORMS, schema=DETECT_BODY))
        app.add_api_route("/translate_file", self.translate_file, methods=post,
                          responses=ERRORS, response_model=FileAnswer,
                          openapi_extra=form_body("multipart/form-data", schema=FILE_BODY))
        app.add_api_route("/download_file/{key}", self.download_file, methods=get,
                          name="download_file", responses={404: ERRORS[400]})
        app.add_api_route("/languages", self.languages, methods=get,
                          response_model=list[Language])
        app.add_api_route("/frontend/settings", self.frontend_settings, methods=get)
        app.add_api_route("/suggest", self.suggest, methods=post, responses={403: ERRORS[403]})
        app.add_api_route("/health", self.health, methods=get)
        # HEAD, a load balancer's probe, as its own route: one route for both methods
        # would give them one operationId in the OpenAPI spec, which FastAPI warns about
        app.add_api_route("/health", self.health, methods=["HEAD"], include_in_schema=False)
        app.add_api_route("/spec", lambda: JSONResponse(app.openapi()), methods=get,
                          include_in_schema=False)

    async def _fields(self, request: Request, limit: int, files: int = 0) -> dict[str, Any]:
        """A working request's fields, once its client is within --req-limit and its key
        is the server's."""
        if self.rate is not None:
            self.rate.check(request.client.host if request.client else "-")
        fields = await read_fields(request, limit, files)
        check_api_key(fields, self.settings.api_key)
        return fields

    async def translate(self, request: Request) -> JSONResponse:
        """Translate a text (or a list of texts; with format "html", HTML fragments) from
        the source language to the target, line by line."""
        fields = await self._fields(request, self.limits.body_bytes())
        checked = translate_request(fields, self.limits.max_chars,
                                    self.limits.max_alternatives, self.models.pairs)
        found = await answer(checked, self.models, self.detector, self.html)
        return JSONResponse(found.body())

    async def detect(self, request: Request) -> JSONResponse:
        """The language of a text, among the server's, most likely first, with a
        confidence in percent."""
        fields = await self._fields(request, self.limits.body_bytes())
        text = detect_request(fields, self.limits.max_chars)
        return JSONResponse(await self.detector.detect_all(text))

    async def translate_file(self, request: Request) -> JSONResponse:
        """Translate a file (multipart form: file, source, target); the answer is the URL
        of the translated file, kept for 30 minutes."""
        fields = await self._fields(request, self.limits.file_body_bytes(), files=1)
        checked = file_request(fields, self.models.pairs)
        if problem := self.store.problem():  # said before the work, not after it
            raise ApiError(503, f"The server cannot keep translated files: {problem}")
        upload, source, target = checked.upload, checked.source, checked.target
        found = file_format(upload.filename)
        try:
            data = await upload.read()
        finally:
            await upload.close()  # a large part was spooled to a temporary file
        used: list[tuple[str, Batcher]] = []  # its language and pair's batcher, once known

        async def translate(lines: list[str], sizes: Optional[list[int]]) -> list[str]:
            return await translate_file_lines(lines, sizes, source, target, self.models,
                                              self.detector, checked.glossary, used)

        async def align(lines: list[str], done: list[str]) -> list[Any]:
            batcher = used[0][1]
            return await model_call(batcher, batcher.align(lines, done))

        async def work() -> bytes:
            async with self.file_places:
                return await translated_file(
                    found, data, safe_name(upload.filename), translate, self.documents,
                    self.limits.max_file_chars, align)

        translated = await within_timeout(self.limits, work())
        named = used[0][0] if used else source  # (a file in its target language: as sent)
        key = self.store.put(translated, translated_name(
            upload.filename, target, *([named] if named != AUTO else [])), found.media_type)
        return JSONResponse({"translatedFileUrl": str(request.url_for("download_file",
                                                                      key=key))})

    async def download_file(self, key: str) -> Response:
        """A translated file, by the URL /translate_file gave."""
        found = self.store.get(key)
        if found is None:
            raise ApiError(404, "Invalid filename: no such file (a translated file is kept "
                                "for 30 minutes)")
        stored, data = found
        # A download, never a page of this origin (a translated HTML file is a client's
        # markup): the browser saves it, and would run nothing in it if it showed it.
        return Response(data, media_type=stored.media_type, headers={
            "Content-Disposition": disposition(stored.name),
            "Content-Security-Policy": "sandbox", "X-Content-Type-Options": "nosniff"})

    async def languages(self) -> JSONResponse:
        """The languages, each with the targets it translates to (LibreTranslate's shape)."""
        return JSONResponse(self.models.pairs.listing())

    async def frontend_settings(self) -> JSONResponse:
        """What a client shows: the character limit, the languages, whether a key is
        needed, the file formats (LibreTranslate's fields), and the model."""
        return JSONResponse(frontend_settings(self.settings, self.limits, self.models.pairs))

    async def suggest(self) -> JSONResponse:
        """Suggestions are not taken (as a LibreTranslate server without --suggestions)."""
        raise ApiError(403, "Suggestions are disabled on this server.")

    async def health(self) -> JSONResponse:
        """Up means ready (the server listens only once the model is loaded), its model
        worker alive and a folder for translated files (else 503, for a supervisor to
        restart it); the model (its run's name), requests waiting for it, requests
        answered in how many model calls, documents (files, requests' HTML) being read or
        written or waiting to, and sentences whose translation failed its check
        (`inference/checks.py`)."""
        models = self.models
        files = self.store.problem()
        status = ("model worker stopped" if not models.alive else
                  f"cannot keep translated files: {files}" if files else "ok")
        return JSONResponse({"status": status,
                             "model": self.settings.model, "waiting": models.waiting,
                             "answered": models.answered, "model_calls": models.model_calls,
                             "documents": self.html.busy + self.documents.busy,
                             "checks_failed": models.checks_failed},
                            status_code=200 if status == "ok" else 503)
