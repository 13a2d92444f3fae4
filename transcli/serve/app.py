"""The HTTP routes: LibreTranslate's `POST /translate` and `GET /languages`, `GET /health`,
and the pages FastAPI makes of them (`/docs`, `/openapi.json`).

Every error is `{"error": "one line"}` with a 4xx or 5xx status (LibreTranslate's shape),
unknown paths and wrong methods included; a request never sees a traceback. One
access-log line per request goes to stderr (`AccessLog`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from typing import Any, Optional
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from transcli import __version__
from transcli.serve.batcher import Batcher, QueueFull, TranslationFailed
from transcli.serve.connections import CLOSED_WITH
from transcli.serve.limits import Limits
from transcli.serve.protocol import (
    LANGUAGES,
    ApiError,
    ErrorResponse,
    Language,
    TranslateAnswer,
    TranslateRequest,
    TranslateResponse,
    check_api_key,
    join_lines,
    read_fields,
    split_lines,
    translate_request,
)

ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": meaning} for status, meaning in (
        (400, "Invalid request (fields, types, languages, format)"),
        (403, "Invalid API key"),
        (413, "More characters than --max-chars"),
        (500, "The model failed (the server log has the traceback)"),
        (503, "Too many requests waiting (--max-queue); try again shortly"),
        (504, "Not translated within --timeout seconds"))}

# The body's two encodings, both described by the one model.
REQUEST_BODY = {"requestBody": {"required": True, "content": {
    media: {"schema": TranslateRequest.model_json_schema()}
    for media in ("application/json", "application/x-www-form-urlencoded")}}}


def create_app(batcher: Batcher, limits: Limits, api_key: Optional[str], model_name: str,
               docs: bool = False) -> ASGIApp:
    """The routes over `batcher`'s model, wrapped in the access log; `/docs` (Swagger UI,
    which the browser loads from a CDN) only with `docs`."""
    app = FastAPI(title="transcli", version=__version__,
                  description=f"English to Spanish with the transcli model {model_name}, "
                  "through LibreTranslate's API.", docs_url="/docs" if docs else None,
                  redoc_url=None, redirect_slashes=False, exception_handlers=ERROR_HANDLERS)

    @app.post("/translate", response_model=TranslateResponse, responses=ERRORS,
              openapi_extra=REQUEST_BODY)
    async def translate(request: Request) -> JSONResponse:
        """Translate English text (or a list of texts) to Spanish, line by line."""
        fields = await read_fields(request, limits.body_bytes())
        check_api_key(fields, api_key)
        checked = translate_request(fields, limits.max_chars)
        lines, counts = split_lines(checked.texts)
        translated = await translations(batcher, lines)
        return JSONResponse(TranslateAnswer(checked, join_lines(translated, counts)).body())

    @app.get("/languages", response_model=list[Language])
    async def languages() -> JSONResponse:
        """The languages, each with the targets it translates to (LibreTranslate's shape)."""
        return JSONResponse(LANGUAGES)

    @app.get("/health")
    async def health() -> JSONResponse:
        """Up means ready (the server listens only once the model is loaded) and its model
        worker alive (else 503, for a supervisor to restart it); the model (its run dir as
        given to `serve`), requests waiting for it, and requests answered in how many
        model calls."""
        alive = batcher.alive
        return JSONResponse({"status": "ok" if alive else "model worker stopped",
                             "model": model_name, "waiting": batcher.waiting,
                             "answered": batcher.answered, "model_calls": batcher.model_calls},
                            status_code=200 if alive else 503)

    # HEAD, a load balancer's probe, as its own route: one route for both methods would
    # give them one operationId in the OpenAPI spec, which FastAPI warns about
    app.add_api_route("/health", health, methods=["HEAD"], include_in_schema=False)
    return AccessLog(without_trailing_slash(app))


async def translations(batcher: Batcher, lines: list[str]) -> list[str]:
    """The model's translations of a request's lines; the batcher's refusals as errors."""
    limits = batcher.limits
    try:
        return await batcher.translate(lines)
    except QueueFull:
        raise ApiError(503, f"Slowdown: {limits.max_queue} requests are waiting; "
                            f"try again shortly") from None
    except asyncio.TimeoutError:
        raise ApiError(504, f"not translated within {limits.timeout:g} s: the server "
                            f"is busy; try again later") from None
    except TranslationFailed as exc:
        raise ApiError(500, f"Cannot translate text: {exc}") from None


class ErrorJSON(JSONResponse):
    """`{"error": "one line"}`, as ASCII JSON: whatever a message quotes, it can be sent."""

    def __init__(self, message: str, status: int, headers: Optional[dict[str, str]] = None):
        super().__init__({"error": message}, status, headers=headers)

    def render(self, content: Any) -> bytes:
        return json.dumps(content).encode("ascii")


async def refused(request: Request, exc: ApiError) -> Response:
    # A full queue clears within moments: say when to come back.
    return ErrorJSON(exc.message, exc.status,
                     headers={"Retry-After": "1"} if exc.status == 503 else None)


async def http_error(request: Request, exc: HTTPException) -> Response:
    return ErrorJSON(str(exc.detail), exc.status_code, headers=exc.headers)


async def invalid(request: Request, exc: RequestValidationError) -> Response:
    return ErrorJSON("Invalid request", 400)


async def client_left(request: Request, exc: ClientDisconnect) -> Response:
    """The client went away (or `connections.py` closed it) before its body was in. No one
    reads this answer: its status is for the access log, 499 (nginx's "client closed
    request") or what the connection was closed with."""
    return Response(status_code=request.scope.get("state", {}).get(CLOSED_WITH, 499))


async def bug(request: Request, exc: Exception) -> Response:
    # A bug: the client gets the error shape; uvicorn logs the traceback on stderr.
    return ErrorJSON("Internal server error", 500)


ERROR_HANDLERS: dict[Any, Any] = {
    ApiError: refused, HTTPException: http_error, RequestValidationError: invalid,
    ClientDisconnect: client_left, Exception: bug}


def without_trailing_slash(app: ASGIApp) -> ASGIApp:
    """`/translate/` is served as `/translate`, not redirected: Starlette's redirect names
    the request's own Host header in its Location (an open redirect)."""
    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and len(path) > 1 and path.endswith("/"):
            scope = {**scope, "path": path.rstrip("/") or "/"}
        await app(scope, receive, send)

    return route


class AccessLog:
    """ASGI middleware: one line per request on stderr (time, client, request line,
    status, milliseconds), written when the answer has been sent."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500  # what the client gets if the app fails before answering
        started = False

        async def logged(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                status, started = message["status"], True
            await send(message)

        try:
            await self.app(scope, receive, logged)
        except asyncio.CancelledError:
            # A stop's drain time ran out and uvicorn cancels what still runs: say so to a
            # client still waiting, and end here rather than in uvicorn's traceback.
            if not started:
                status = 503
                with contextlib.suppress(asyncio.CancelledError, OSError):
                    await ErrorJSON("the server is stopping", 503)(scope, receive, send)
        finally:
            print(access_line(scope, status, time.perf_counter() - start), file=sys.stderr,
                  flush=True)


MAX_CLIENT_CHARS = 100  # an address is at most 45 characters; the rest is a forged header


def access_line(scope: Scope, status: int, seconds: float) -> str:
    """`2025-01-31 12:00:00 127.0.0.1 "POST /translate" 200 12.3 ms`; the path as sent,
    still %-encoded, so it cannot break the line."""
    client = scope.get("client")
    # uvicorn takes the client from X-Forwarded-For when it comes from a trusted proxy
    # (loopback): whatever a client sends there must not add fields to the line.
    host = quote(str(client[0]), safe=":.[]")[:MAX_CLIENT_CHARS] if client else "-"
    raw = scope.get("raw_path")
    path = raw.decode("ascii", "backslashreplace") if raw else scope["path"]
    when = time.strftime("%Y-%m-%d %H:%M:%S")
    return f'{when} {host} "{scope["method"]} {path}" {status} {seconds * 1000:.1f} ms'
