"""`--req-limit N`: at most N requests per client per minute to the endpoints that work
(translate, detect, translate a file); more get 429 with Retry-After.

The rule is the generic cell rate algorithm: a client may send N requests at once, then
one every 60/N seconds; a client that waits a minute has its N back. One number per
client (when its allowance is next whole), so memory stays small; clients whose
allowance is whole again are forgotten as the table grows. A client is its address (the
proxy's `X-Forwarded-For` where uvicorn trusts it: docs/SERVE.md).
"""

from __future__ import annotations

import math
import time
from typing import Callable, Optional

from transcli.serve.protocol import ApiError

WINDOW = 60.0  # seconds


class RateLimit:
    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic):
        self.per_minute = per_minute
        self._interval = WINDOW / per_minute
        self._clock = clock
        self._due: dict[str, float] = {}  # client -> when its allowance is whole again
        self._prune_at = 1024  # table size at which whole allowances are forgotten

    def wait(self, client: str) -> Optional[float]:
        """None when `client` may send one more request now (it is counted), else the
        seconds until it may."""
        now = self._clock()
        due = max(self._due.get(client, now), now)
        early = due + self._interval - WINDOW - now  # > 0: past the allowance
        if early > 0:
            return early
        self._due[client] = due + self._interval
        if len(self._due) >= self._prune_at:
            self._prune(now)
        return None

    def check(self, client: str) -> None:
        """Count a request from `client`, or refuse it (429, in LibreTranslate's words)."""
        early = self.wait(client)
        if early is not None:
            raise RateLimited(self.per_minute, math.ceil(early))

    def _prune(self, now: float) -> None:
        self._due = {client: due for client, due in self._due.items() if due > now}
        self._prune_at = max(1024, 2 * len(self._due))


class RateLimited(ApiError):
    """429: the client is past its allowance; `retry_after` seconds until it is not."""

    def __init__(self, per_minute: int, retry_after: int):
        super().__init__(429, f"Slowdown: {per_minute} per 1 minute")
        self.retry_after = max(1, retry_after)
