"""What a server is and offers besides its limits (its model, its key, the web page, CORS),
and what it tells clients of itself: LibreTranslate's `GET /frontend/settings`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from transcli.serve.files import FORMATS
from transcli.serve.limits import Limits
from transcli.serve.protocol import Pairs, name

FRONTEND_TIMEOUT_MS = 150  # the page waits this long after a keystroke before translating


@dataclass(frozen=True)
class Settings:
    model: str  # the runs' names (their folders'), never the server's paths to them
    checkpoint: str  # as given to --checkpoint
    checkpoint_file: str  # the name of the weights file it names
    api_key: Optional[str] = None
    docs: bool = False  # /docs, Swagger UI (loaded by the browser from a CDN)
    web: bool = True  # the page at /
    cors_origin: Optional[str] = None  # the origin whose pages may call the API ("*": any)
    local_only: bool = False  # listening on a loopback address: answers to its names only
    hosts: tuple[str, ...] = ()  # more names it answers to (--allow-host), lower case


def frontend_settings(settings: Settings, limits: Limits, pairs: Pairs) -> dict[str, Any]:
    """LibreTranslate's fields (Dialect and LibreTranslate's page read them at start-up;
    `language` is the pair shown first), then transcli's own: the model, and the limits
    the page shows."""
    source, target = pairs.pairs[0]
    return {
        "charLimit": limits.max_chars,
        "frontendTimeout": FRONTEND_TIMEOUT_MS,
        "apiKeys": settings.api_key is not None,
        "keyRequired": settings.api_key is not None,
        "suggestions": False,
        "filesTranslation": True,
        "supportedFilesFormat": list(FORMATS),
        "language": {"source": {"code": source, "name": name(source)},
                     "target": {"code": target, "name": name(target)}},
        "model": {"name": settings.model, "checkpoint": settings.checkpoint,
                  "checkpointFile": settings.checkpoint_file},
        "alternativesLimit": limits.max_alternatives,
        "fileCharLimit": limits.max_file_chars,
        "reqLimit": limits.req_limit,
    }
