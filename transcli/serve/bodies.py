"""Reading a request's body: a JSON object or a form (urlencoded or multipart), at most a
given number of bytes, every string in it text.

A body declared larger than its limit is refused (413) before it is read, and one that
grows larger as soon as it does. A form's field given twice is refused rather than half
ignored; its names and values must be UTF-8, as a JSON body must, and no string may hold
half of a UTF-16 pair (JSON's "\\ud800" escape). Only `/translate_file` takes a file part
(`files=1`); its bytes are the caller's to read.
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Optional
from urllib.parse import parse_qsl

from starlette.formparsers import MultiPartException, MultiPartParser, parse_options_header
from starlette.requests import Request

from transcli.serve.protocol import ApiError
from transcli.system.files import parse_json

MAX_FIELDS = 100  # form fields read before a body is refused
NOT_UTF8 = "Invalid request: the form is not UTF-8"


async def read_fields(request: Request, limit: int, files: int = 0) -> dict[str, Any]:
    """The fields of a JSON object or form body of at most `limit` bytes (413 above),
    every string in them text; a multipart form may hold `files` file parts."""
    body = await _read_body(request, limit)
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media == "application/json" or media.endswith("+json"):
        fields = _json_fields(body)
    elif media == "application/x-www-form-urlencoded":
        fields = _urlencoded_fields(body)
    elif media == "multipart/form-data":
        fields = await _multipart_fields(request, body, limit, files)
    else:
        shown = f"Content-Type {media}" if media else "no Content-Type"
        raise ApiError(400, f"Invalid request: {shown}; send a JSON object "
                            f"(application/json) or a form")
    _check_text(fields)
    return fields


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, read no further than `limit` bytes (a declared length is checked first)."""
    too_large = ApiError(413, f"Invalid request: the body exceeds {limit} bytes")
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise too_large
    return bytes(body)


def _json_fields(body: bytes) -> dict[str, Any]:
    try:
        fields = parse_json(body)
    except json.JSONDecodeError as exc:
        raise ApiError(400, f"Invalid request: malformed JSON ({exc.msg}: line "
                            f"{exc.lineno} column {exc.colno})") from None
    except UnicodeDecodeError:
        raise ApiError(400, "Invalid request: malformed JSON (not UTF-8)") from None
    if not isinstance(fields, dict):
        raise ApiError(400, "Invalid JSON format: the body must be a JSON object")
    return fields


def _urlencoded_fields(body: bytes) -> dict[str, Any]:
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, errors="strict",
                          max_num_fields=MAX_FIELDS)
    except UnicodeDecodeError:
        raise ApiError(400, NOT_UTF8) from None
    except ValueError:
        raise ApiError(400, f"Invalid request: more than {MAX_FIELDS} form fields") from None
    return _single_fields(pairs)


async def _multipart_fields(request: Request, body: bytes, limit: int,
                            files: int) -> dict[str, Any]:
    async def stream() -> AsyncIterator[bytes]:
        yield body

    parser = _StrictMultiPart(request.headers, stream(), max_files=files, max_fields=MAX_FIELDS,
                              max_part_size=limit)
    try:
        form = await parser.parse()
    except MultiPartException as exc:
        raise ApiError(400, f"Invalid request: {exc.message}") from None
    return _single_fields(form.multi_items())


class _StrictMultiPart(MultiPartParser):
    """Starlette's multipart parser, but a field's name or value that is not UTF-8 is
    refused (Starlette reads it as Latin-1), as in an urlencoded form."""

    def on_headers_finished(self) -> None:
        _, options = parse_options_header(self._current_part.content_disposition)
        _utf8(options.get(b"name", b""))
        super().on_headers_finished()

    def on_part_end(self) -> None:
        if self._current_part.file is None:
            _utf8(self._current_part.data)
        super().on_part_end()


def _utf8(raw: bytes | bytearray) -> None:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(400, NOT_UTF8) from None


def _single_fields(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A form's fields; one given twice is refused rather than half ignored."""
    fields: dict[str, Any] = {}
    for name, value in pairs:
        if name in fields:
            raise ApiError(400, f"Invalid request: {name} given more than once")
        fields[name] = value
    return fields


def _check_text(fields: dict[str, Any]) -> None:
    """Every string of the body, names and nested items included, must be text: JSON's
    "\\ud800" escape decodes to half a UTF-16 pair, which no answer (not even an error
    naming it) could hold. A bad `api_key` is an invalid key (403)."""
    for name, value in fields.items():
        half = _half_pair(name) or _half_pair(value)
        if half is None:
            continue
        if name == "api_key":
            raise ApiError(403, "Invalid API key")
        raise ApiError(400, f"Invalid request: field {name!a} holds {half!a}, half of a "
                            f"UTF-16 pair, not text")


def _half_pair(value: Any) -> Optional[str]:
    """A lone surrogate in a string, or in the strings nested in lists and objects (walked
    without recursion: JSON may nest as deep as its parser allows)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                return item[exc.start]
        elif isinstance(item, list):
            pending += item
        elif isinstance(item, dict):
            pending += [*item, *item.values()]
    return None
