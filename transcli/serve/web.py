"""The web page at `/`: a box to type English into and its Spanish translation as it is
typed, alternatives, copy, a character counter, file translation, the model's name.

Plain HTML, CSS and JavaScript shipped in the package (`web/`, package data): no build
step, and nothing is loaded from anywhere but this server, which the Content-Security-
Policy header holds the browser to. The page calls the API as any client does
(`/frontend/settings`, `/translate`, `/translate_file`), so it costs the API nothing:
its files are read once, when the server starts, and served from memory.
"""

from __future__ import annotations

from importlib import resources

from fastapi import FastAPI
from fastapi.responses import Response

from transcli.serve.protocol import ApiError

FILES = {  # the page's files, by name, and their media types
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
    "icon.svg": "image/svg+xml",
}
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                               "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def page_files() -> dict[str, bytes]:
    """The page's files as shipped in the package."""
    folder = resources.files("transcli.serve") / "web"
    return {name: (folder / name).read_bytes() for name in FILES}


def add_web_routes(app: FastAPI) -> None:
    """`GET /` (the page) and `GET /static/NAME` (its script, style and icon)."""
    files = page_files()

    def served(name: str) -> Response:
        return Response(files[name], media_type=FILES[name], headers=HEADERS)

    @app.get("/", include_in_schema=False)
    async def index() -> Response:
        return served("index.html")

    @app.get("/static/{name}", include_in_schema=False)
    async def static(name: str) -> Response:
        if name not in files or name == "index.html":
            raise ApiError(404, "Not Found")
        return served(name)
