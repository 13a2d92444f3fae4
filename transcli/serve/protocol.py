"""LibreTranslate's API as this server speaks it: the fields of each request, their checks
and errors, and the answers' shapes.

`POST /translate` takes (a JSON object or a form, `bodies.py` reads it)

- `q`: the text, a string; or (JSON) a list of strings, answered by a list;
- `source`: a language code the server translates from ("en"), or "auto" (each text's
  language is detected: `detection.py`);
- `target`: a language code it translates that source to ("es");
- `format`: "text" (the default), or "html": each text is an HTML fragment, its markup
  kept and its text translated (`translating.py`); anything else is refused;
- `api_key`: the server's key, when it was started with `--api-key`;
- `alternatives`: how many other translations to give besides the best (at most
  `--max-alternatives`);
- `glossary` (a transcli extension, JSON only): {source: target} terms for this request,
  besides (and before) the server's `--glossary`; at most `MAX_GLOSSARY_ENTRIES` entries
  and `MAX_GLOSSARY_CHARS` characters.

Other fields are ignored, as LibreTranslate ignores them. The server's languages are its
models' directions (`Pairs`): a pair it has no model for is LibreTranslate's 400. A text
whose source language is its target (`source: "es"` with `target: "es"`, or a Spanish text
with `source: "auto"` and `target: "es"`) is answered as it is, as LibreTranslate answers
it. `POST /detect` takes `q` (and `api_key`); `POST /translate_file` a multipart form with
`file`, `source`, `target` (and `api_key`, and `glossary` as the JSON text of the same
object). Every refusal is an `ApiError`: a status and one line, sent as `{"error": "..."}`,
in LibreTranslate's words where it has them.

A text is translated line by line, as `transcli translate` reads a file: only "\\n" ends a
line and a "\\r" before it is dropped; the translated lines are joined by "\\n".
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass
from typing import Any, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from transcli.inference.glossary import problem
from transcli.system.files import parse_json
from transcli.system.text import lines_of

NAMES = {"en": "English", "es": "Spanish"}  # languages by code; another is named by its code
AUTO = "auto"
# A request's own glossary: enough for a document's terms, small enough that matching
# it (a regex compiled per request) costs nothing beside the model.
MAX_GLOSSARY_ENTRIES = 100
MAX_GLOSSARY_CHARS = 5000


def name(code: str) -> str:
    return NAMES.get(code, code)


class ApiError(Exception):
    """A refused request: its HTTP status and a one-line reason."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Pairs:
    """The (source, target) languages a server translates, its first the page's default."""

    pairs: tuple[tuple[str, str], ...]

    @property
    def codes(self) -> list[str]:
        """Every language of the pairs, in the order they first appear."""
        return list(dict.fromkeys(code for pair in self.pairs for code in pair))

    def listing(self) -> list[dict[str, Any]]:
        """`GET /languages`: LibreTranslate's shape, each language with its targets."""
        return [{"code": code, "name": name(code),
                 "targets": [target for source, target in self.pairs if source == code]}
                for code in self.codes]

    def check(self, source: Any, target: Any) -> None:
        """Codes this server knows, and a pair it translates (a language into itself is
        answered as it is); `source` may be "auto"."""
        for code, known in ((source, (*self.codes, AUTO)), (target, self.codes)):
            if code not in known:
                raise ApiError(400, f"{code} is not supported")
        if source != AUTO:
            self.check_pair(source, target)

    def check_pair(self, source: str, target: str) -> None:
        if source != target and (source, target) not in self.pairs:
            raise ApiError(400, f"{name(target)} ({target}) is not available as a target "
                                f"language from {name(source)} ({source})")


class TranslateRequest(BaseModel):
    """The fields of `POST /translate` (the module doc says what each may hold)."""

    model_config = ConfigDict(extra="ignore")

    q: Union[str, list[str]] = Field(
        description="The text, or (JSON) a list of texts.", examples=["Hello!"])
    source: str = Field(description='The text\'s language ("en"), or "auto" (detected, '
                        'text by text).', examples=["en"])
    target: str = Field(description='The language to translate to ("es").', examples=["es"])
    format: Optional[str] = Field("text", description='"text", or "html": the text is an '
                                  'HTML fragment, its markup kept and its text translated.')
    api_key: Optional[str] = Field(None, description="The key the server was started with.")
    alternatives: int = Field(0, description="Other translations to give besides the best "
                              "(at most the server's --max-alternatives).")
    glossary: Optional[dict[str, str]] = Field(
        None, description="transcli's extension: {source: target} terms to use in this "
        "request's translations, besides the server's --glossary.",
        examples=[{"station": "estación de tren"}])

    @property
    def texts(self) -> list[str]:
        return self.q if isinstance(self.q, list) else [self.q]


class Detection(BaseModel):
    """A language and how sure the identifier is, in percent (LibreTranslate's shape)."""

    confidence: float
    language: str


class TranslateResponse(BaseModel):
    """The answer to `POST /translate` (for the OpenAPI page)."""

    translatedText: Union[str, list[str]]
    detectedLanguage: Optional[Union[Detection, list[Detection]]] = Field(
        None, description='With source "auto" only: each text\'s language.')
    alternatives: Optional[Union[list[str], list[list[str]]]] = Field(
        None, description="With alternatives > 0 only: other translations of each text.")


class FileAnswer(BaseModel):
    """The answer to `POST /translate_file` (for the OpenAPI page)."""

    translatedFileUrl: str


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
    """The answer's body, as LibreTranslate gives it: a string or a list as `q` was."""

    request: TranslateRequest
    translations: list[str]  # one per text
    detected: Optional[list[dict[str, Any]]] = None  # with source "auto": one per text
    alternatives: Optional[list[list[str]]] = None  # with alternatives > 0: one per text
    # transcli's: each text's confidence and its alternatives' (a calibrated run)
    confidence: Optional[list[tuple[Optional[float], list[Optional[float]]]]] = None

    def body(self) -> dict[str, Any]:
        def shaped(values: list[Any]) -> Any:
            return values if isinstance(self.request.q, list) else values[0]

        body: dict[str, Any] = {"translatedText": shaped(self.translations)}
        if self.detected is not None:
            body["detectedLanguage"] = shaped(self.detected)
        if self.alternatives is not None:
            body["alternatives"] = shaped(self.alternatives)
        if self.confidence is not None:
            body["confidence"] = shaped([_rounded(sure) for sure, _ in self.confidence])
            if self.alternatives is not None:
                body["alternativesConfidence"] = shaped(
                    [[_rounded(value) for value in others] for _, others in self.confidence])
        return body


def _rounded(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 3)


# ----------------------------------------------------------------------------- checking


def check_api_key(fields: dict[str, Any], key: Optional[str]) -> None:
    """With a server key, the request's `api_key` must be it (403 as LibreTranslate)."""
    if key is None:
        return
    given = fields.get("api_key")
    if not isinstance(given, str) or not hmac.compare_digest(given.encode(), key.encode()):
        raise ApiError(403, "Invalid API key")


def translate_request(fields: dict[str, Any], max_chars: int, max_alternatives: int,
                      pairs: Pairs) -> TranslateRequest:
    """The checked request, in LibreTranslate's order: missing fields, types, alternatives,
    size, then languages and format."""
    _require(fields, "q", "source", "target")
    try:
        request = TranslateRequest.model_validate(fields)
    except ValidationError as exc:
        raise ApiError(400, _one_line(exc)) from None
    request.alternatives = max(0, request.alternatives)
    if request.alternatives > max_alternatives:
        raise ApiError(400, f"Invalid request: alternatives parameter must be <= "
                            f"{max_alternatives}")
    check_size(request.texts, max_chars)
    check_glossary(request.glossary)
    pairs.check(request.source, request.target)
    if request.format not in (None, "", "text", "html"):
        raise ApiError(400, f"{request.format} format is not supported")
    request.format = request.format or "text"
    return request


def detect_request(fields: dict[str, Any], max_chars: int) -> str:
    """The text of a checked `POST /detect` (a list's texts are taken as one, a line
    each)."""
    _require(fields, "q")
    q = fields["q"]
    if isinstance(q, list) and all(isinstance(text, str) for text in q):
        q = "\n".join(q)
    if not isinstance(q, str):
        raise ApiError(400, "Invalid request: q must be a string or a list of strings")
    check_size([q], max_chars)
    return q


@dataclass
class FileRequest:
    """A checked `POST /translate_file`."""

    upload: Any  # the file part
    source: str
    target: str
    glossary: Optional[dict[str, str]]  # the request's own terms (a form field of JSON)


def file_request(fields: dict[str, Any], pairs: Pairs) -> FileRequest:
    """The file part, languages and glossary of a checked `POST /translate_file`."""
    _require(fields, "file", "source", "target")
    upload, source, target = fields["file"], fields["source"], fields["target"]
    if isinstance(upload, str) or not getattr(upload, "filename", None):
        raise ApiError(400, "Invalid request: file must be a file part of a multipart form, "
                            "with a file name")
    glossary = _form_glossary(fields.get("glossary"))
    pairs.check(source, target)
    return FileRequest(upload, source, target, glossary)


def _form_glossary(given: Any) -> Optional[dict[str, str]]:
    """A form's `glossary` field: the JSON text of an object of source terms to target
    ones, as /translate's `glossary` (400 for anything else, or past its bounds)."""
    if given in (None, ""):
        return None
    try:  # the bounded parser: nesting too deep is a 400, never a RecursionError
        terms = parse_json(given) if isinstance(given, str) else None
    except ValueError:
        terms = None
    if not isinstance(terms, dict) or not all(
            isinstance(english, str) and isinstance(spanish, str)
            and _text(english) and _text(spanish) for english, spanish in terms.items()):
        raise ApiError(400, "Invalid request: glossary must be the JSON text of an object of "
                            "source terms to target ones")
    check_glossary(terms)
    return terms


def _text(value: str) -> bool:
    """Whether `value` is text (JSON's "\\ud800" escape gives half a UTF-16 pair)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _require(fields: dict[str, Any], *names: str) -> None:
    for name in names:
        if fields.get(name) in (None, "", []):
            raise ApiError(400, f"Invalid request: missing {name} parameter")


def check_size(texts: list[str], max_chars: int, what: str = "request") -> None:
    """At most `max_chars` characters in all (400, in LibreTranslate's words)."""
    check_chars(sum(map(len, texts)), max_chars, what)


def check_chars(chars: int, max_chars: int, what: str) -> None:
    if chars > max_chars:
        raise ApiError(400, f"Invalid request: {what} ({chars}) exceeds text limit "
                            f"({max_chars})")


def check_glossary(glossary: Optional[dict[str, str]]) -> None:
    """A request's glossary within its bounds, every entry with two sides (400)."""
    if not glossary:
        return
    if len(glossary) > MAX_GLOSSARY_ENTRIES:
        raise ApiError(400, f"Invalid request: glossary has {len(glossary)} entries "
                            f"(at most {MAX_GLOSSARY_ENTRIES})")
    chars = sum(len(english) + len(spanish) for english, spanish in glossary.items())
    if chars > MAX_GLOSSARY_CHARS:
        raise ApiError(400, f"Invalid request: glossary ({chars} characters) exceeds its "
                            f"limit ({MAX_GLOSSARY_CHARS})")
    if not all(english.strip() and spanish.strip() for english, spanish in glossary.items()):
        raise ApiError(400, "Invalid request: glossary: every entry needs a source and a "
                            "target side")
    for english, spanish in glossary.items():
        for side, text in (("source", english), ("target", spanish)):
            if why := problem(text):
                raise ApiError(400, f"Invalid request: glossary: {json.dumps(english)}: "
                                    f"its {side} side {why}")


def _one_line(error: ValidationError) -> str:
    """The first problem pydantic found, as one line naming the field."""
    first = error.errors()[0]
    field = str(first["loc"][0]) if first["loc"] else "body"
    if field == "q":
        return "Invalid request: q must be a string or a list of strings"
    if field == "alternatives":
        return "Invalid request: alternatives parameter is not a number"
    if field == "glossary":
        return "Invalid request: glossary must be an object of source terms to target ones"
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
