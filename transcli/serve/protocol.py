"""LibreTranslate's API as this server speaks it: the request body, its checks and their
errors, and the answer.

`POST /translate` takes a JSON object or a form (urlencoded or multipart) with

- `q`: the text, a string; or (JSON) a list of strings, answered by a list;
- `source`: "en", or "auto" (taken as English: the model reads nothing else);
- `target`: "es";
- `format`: "text" (the default); "html" is refused, as is anything else;
- `api_key`: the server's key, when it was started with `--api-key`;
- `alternatives`: 0 (more is refused: the server gives one translation per text).

Other fields are ignored, as LibreTranslate ignores them. The answer is
`{"translatedText": ...}`, a string or a list as `q` was; with source "auto" it also
holds `detectedLanguage` ({"confidence": 100.0, "language": "en"}, one per text for a
list), the shape LibreTranslate gives. Every refusal is an `ApiError`: a status and one
line, sent as `{"error": "..."}` with LibreTranslate's wording where it has one.

A text is translated line by line, as `transcli translate` reads a file: only "\\n" ends a
line and a "\\r" before it is dropped; the translated lines are joined by "\\n".
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass
from typing import Any, AsyncIterator, Optional, Union
from urllib.parse import parse_qsl

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.formparsers import MultiPartException, MultiPartParser, parse_options_header
from starlette.requests import Request

from transcli.system.files import parse_json
from transcli.system.text import lines_of

SOURCE, TARGET = "en", "es"
LANGUAGES = [  # GET /languages: LibreTranslate's shape, one entry per language
    {"code": SOURCE, "name": "English", "targets": [TARGET]},
    {"code": TARGET, "name": "Spanish", "targets": []},
]
DETECTED = {"confidence": 100.0, "language": SOURCE}  # what source "auto" is taken as
MAX_FIELDS = 100  # form fields read before a body is refused
NOT_UTF8 = "Invalid request: the form is not UTF-8"


class ApiError(Exception):
    """A refused request: its HTTP status and a one-line reason."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class TranslateRequest(BaseModel):
    """The fields of `POST /translate` (the module doc says what each may hold)."""

    model_config = ConfigDict(extra="ignore")

    q: Union[str, list[str]] = Field(
        description="The English text, or (JSON) a list of texts.", examples=["Hello!"])
    source: str = Field(description='"en", or "auto" (taken as English).', examples=["en"])
    target: str = Field(description='"es".', examples=["es"])
    format: Optional[str] = Field("text", description='"text" (html is not supported).')
    api_key: Optional[str] = Field(None, description="The key the server was started with.")
    alternatives: int = Field(0, description="0: one translation per text.")

    @property
    def texts(self) -> list[str]:
        return self.q if isinstance(self.q, list) else [self.q]


class TranslateResponse(BaseModel):
    """The answer to `POST /translate` (for the OpenAPI page)."""

    translatedText: Union[str, list[str]]
    detectedLanguage: Optional[Union[dict[str, Any], list[dict[str, Any]]]] = Field(
        None, description='With source "auto" only: {"confidence": 100.0, "language": "en"}.')


class ErrorResponse(BaseModel):
    """Every refusal's body (for the OpenAPI page)."""

    error: str


class Language(BaseModel):
    """An entry of `GET /languages` (for the OpenAPI page)."""

    code: str
    name: str
    targets: list[str]


@dataclass(frozen=True)
class TranslateAnswer:
    """The answer's body, as LibreTranslate gives it."""

    request: TranslateRequest
    translations: list[str]  # one per text

    def body(self) -> dict[str, Any]:
        batch = isinstance(self.request.q, list)
        body: dict[str, Any] = {
            "translatedText": self.translations if batch else self.translations[0]}
        if self.request.source == "auto":
            body["detectedLanguage"] = [DETECTED] * len(self.translations) if batch else DETECTED
        return body


# ----------------------------------------------------------------------------- reading


async def read_fields(request: Request, limit: int) -> dict[str, Any]:
    """The fields of a JSON object or form body of at most `limit` bytes (413 above),
    every string in them text."""
    body = await _read_body(request, limit)
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media == "application/json" or media.endswith("+json"):
        fields = _json_fields(body)
    elif media == "application/x-www-form-urlencoded":
        fields = _urlencoded_fields(body)
    elif media == "multipart/form-data":
        fields = await _multipart_fields(request, body, limit)
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


async def _multipart_fields(request: Request, body: bytes, limit: int) -> dict[str, Any]:
    async def stream() -> AsyncIterator[bytes]:
        yield body

    parser = _StrictMultiPart(request.headers, stream(), max_files=0, max_fields=MAX_FIELDS,
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


# ----------------------------------------------------------------------------- checking


def check_api_key(fields: dict[str, Any], key: Optional[str]) -> None:
    """With a server key, the request's `api_key` must be it (403 as LibreTranslate)."""
    if key is None:
        return
    given = fields.get("api_key")
    if not isinstance(given, str) or not hmac.compare_digest(given.encode(), key.encode()):
        raise ApiError(403, "Invalid API key")


def translate_request(fields: dict[str, Any], max_chars: int) -> TranslateRequest:
    """The checked request, in LibreTranslate's order: missing fields, types, size, then
    languages and format."""
    for name in ("q", "source", "target"):
        if fields.get(name) in (None, "", []):
            raise ApiError(400, f"Invalid request: missing {name} parameter")
    try:
        request = TranslateRequest.model_validate(fields)
    except ValidationError as exc:
        raise ApiError(400, _one_line(exc)) from None
    chars = sum(map(len, request.texts))
    if chars > max_chars:
        raise ApiError(413, f"Invalid request: request ({chars} characters) exceeds the "
                            f"limit ({max_chars})")
    for name, value, allowed in (("source", request.source, (SOURCE, "auto")),
                                 ("target", request.target, (TARGET,))):
        if value not in allowed:
            raise ApiError(400, f"{value} is not supported as {name} (this server "
                                f"translates {SOURCE} to {TARGET})")
    if request.format not in (None, "", "text"):
        raise ApiError(400, f"{request.format} format is not supported (text only)")
    if request.alternatives > 0:
        raise ApiError(400, "Invalid request: alternatives are not supported (one "
                            "translation per text)")
    return request


def _one_line(error: ValidationError) -> str:
    """The first problem pydantic found, as one line naming the field."""
    first = error.errors()[0]
    field = str(first["loc"][0]) if first["loc"] else "body"
    if field == "q":
        return "Invalid request: q must be a string or a list of strings"
    return f"Invalid request: {field}: {first['msg']}"


# ----------------------------------------------------------------------------- lines


def split_lines(texts: list[str]) -> tuple[list[str], list[int]]:
    """All lines of `texts` in order, and how many each text has."""
    per_text = [lines_of(text) for text in texts]
    return [line for lines in per_text for line in lines], [len(lines) for lines in per_text]


def join_lines(lines: list[str], counts: list[int]) -> list[str]:
    """`split_lines` undone: each text's (translated) lines joined by "\\n"."""
    texts, start = [], 0
    for count in counts:
        texts.append("\n".join(lines[start:start + count]))
        start += count
    return texts
