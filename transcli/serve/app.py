"""The HTTP application: LibreTranslate's endpoints (`routes.py`), the web page (`web.py`),
the error shape, CORS, and the access log.

Every error is `{"error": "one line"}` with a 4xx or 5xx status (LibreTranslate's shape),
unknown paths and wrong methods included; a request never sees a traceback. One
access-log line per request goes to stderr (`AccessLog`). With `--cors-origin`, pages of
that origin ("*": any) may call the API from a browser (Starlette's CORS middleware
answers their preflight requests); without it no CORS header is sent. A request whose
Host header is no host name is refused, and so is, on a server listening on a loopback
address, one naming a host other than its own names (`host_checked`: a page a browser
reaches through DNS rebinding names its own host) or those `--allow-host` adds.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import re
import sys
import time
from typing import Any, Optional
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from transcli import __version__
from transcli.serve.connections import CLOSED_WITH
from transcli.serve.detection import Detector
from transcli.serve.files import FileStore
from transcli.serve.models import Models
from transcli.serve.protocol import ApiError, Pairs, name
from transcli.serve.ratelimit import RateLimited
from transcli.serve.routes import Routes
from transcli.serve.settings import Settings
from transcli.serve.web import add_web_routes

CORS_MAX_AGE = 86_400  # seconds a browser may keep a preflight's answer


def create_app(models: Models, detector: Detector, store: FileStore,
               settings: Settings) -> ASGIApp:
    """The routes over the `models`, the page unless `settings.web` is off, wrapped in
    the access log (and CORS with `settings.cors_origin`); `/docs` (Swagger UI, which the
    browser loads from a CDN) only with `settings.docs`."""
    app = FastAPI(title="transcli", version=__version__,
                  description=f"{directions(models.pairs)} with the transcli model "
                  f"{settings.model}, through LibreTranslate's API.",
                  docs_url="/docs" if settings.docs else None,
                  redoc_url=None, redirect_slashes=False, exception_handlers=ERROR_HANDLERS)
    Routes(models, detector, store, settings).add_to(app)
    if settings.web:
        add_web_routes(app)
    routed = host_checked(without_trailing_slash(app), settings)
    if settings.cors_origin is not None:
        routed = Cors(routed, allow_origins=[settings.cors_origin],
                      allow_methods=["GET", "POST"],
                      allow_headers=["Authorization", "Content-Type"], max_age=CORS_MAX_AGE)
    return AccessLog(routed)


def directions(pairs: Pairs) -> str:
    """"English to Spanish and Spanish to English"."""
    return " and ".join(f"{name(source)} to {name(target)}" for source, target in pairs.pairs)


class Cors(CORSMiddleware):
    """Starlette's CORS middleware, its refused preflight in the error shape."""

    def preflight_response(self, request_headers: Any) -> Response:
        answer = super().preflight_response(request_headers)
        if answer.status_code < 400:
            return answer
        headers = {name: value for name, value in answer.headers.items()
                   if name.startswith("access-control-")}
        return ErrorJSON(bytes(answer.body).decode(), answer.status_code, headers)


class ErrorJSON(JSONResponse):
    """`{"error": "one line"}`, as ASCII JSON: whatever a message quotes, it can be sent."""

    def __init__(self, message: str, status: int, headers: Optional[dict[str, str]] = None):
        super().__init__({"error": message}, status, headers=headers)

    def render(self, content: Any) -> bytes:
        return json.dumps(content).encode("ascii")


async def refused(request: Request, exc: ApiError) -> Response:
    """The error; with when to come back for a full queue (it clears within moments) and
    for a client past --req-limit."""
    retry = (exc.retry_after if isinstance(exc, RateLimited)
             else 1 if exc.status == 503 else None)
    return ErrorJSON(exc.message, exc.status,
                     headers={"Retry-After": str(retry)} if retry is not None else None)


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


# A host name or an address, and a port: what a Host header may hold.
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9])?)"
                   r"(?::[0-9]{1,5})?")


def host_checked(app: ASGIApp, settings: Settings) -> ASGIApp:
    """Requests with a Host header the server answers to (`host_problem`); others get a
    400 in the error shape, before any route: the answers that name the Host (the URL of
    a translated file) never hold another."""
    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw = dict(scope.get("headers", [])).get(b"host", b"")
            if problem := host_problem(raw, settings):
                await JSONResponse({"error": problem}, 400)(scope, receive, send)
                return
        await app(scope, receive, send)

    return route


def host_problem(raw: bytes, settings: Settings) -> Optional[str]:
    """Why a request with Host header `raw` is refused (None: it is not): not a host
    name and port, or on a server listening on a loopback address, not one of its names
    (localhost, a loopback address) or of `settings.hosts`. No Host (HTTP/1.0) is fine."""
    host = raw.decode("latin-1")
    match = _HOST.fullmatch(host)
    if not host:
        return None
    if match is None:
        return "Invalid request: the Host header is not a host name"
    name = match.group(1).strip("[]").lower()
    if settings.local_only and not (_loopback(name) or name in settings.hosts):
        shown = name if len(name) <= 64 else name[:64] + "..."
        return (f"Invalid request: this server listens on a loopback address and answers "
                f"to localhost, not to {shown} (serve --allow-host adds a name)")
    return None


def _loopback(name: str) -> bool:
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


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
