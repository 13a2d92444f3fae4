"""The server's HTTP connections: uvicorn's h11 protocol with the two bounds uvicorn lacks.

- **A deadline to read each request.** Its headers and body must arrive within
  `Limits.read_timeout` seconds of the connection opening (or, on a kept-alive connection,
  of the previous answer); then the client gets 408 and the connection is closed. A client
  that trickles bytes (slowloris) holds a connection for that long, not for as long as it
  likes. Once a request is in, its time is `--timeout`'s.
- **A cap on open connections** (`Limits.max_connections`). Past it, the connection that
  has been sending its request for longest is closed at once to make room, so slow
  senders cannot lock prompt clients out. A connection that has sent nothing yet is left
  alone for `SILENT_GRACE` (a new client's request is on its way: under a flood, closing
  the oldest would otherwise close it before its first bytes are read). With no one to
  close, the new connection gets 503. Descriptors and buffers stay within the cap (plus
  the one refused).

408 and 503 are written here, as raw HTTP with the error shape, because the app may not
have seen the request yet; an app still waiting for the body then sees the client leave.
The connection then lingers (`LINGER`): closing it at once, with the client's last bytes
unread, would reset it and lose the answer. Lingering connections count against the cap
and are the first to go when room is needed.
"""

from __future__ import annotations

import asyncio
import json
import time
from http import HTTPStatus
from typing import Any, Optional

from uvicorn.protocols.http.h11_impl import H11Protocol

from transcli.serve.limits import Limits

CLOSED_WITH = "transcli.closed_with"  # the status a closed request got, in its scope's state
LINGER = 2.0  # seconds a closed connection waits for the client to read the answer and leave
SILENT_GRACE = 1.0  # seconds a connection that has sent nothing is safe from closing for room


class Connection(H11Protocol):
    """One client connection (module doc); made by uvicorn through
    `functools.partial(Connection, limits=...)`."""

    def __init__(self, *args: Any, limits: Limits, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.limits = limits
        self.reading_since: Optional[float] = None  # set while a request is awaited
        self.silent = True  # nothing of the awaited request has come yet
        self.lingering = False  # answered by `close_with`: what the client sends is dropped
        self._deadline: Optional[asyncio.TimerHandle] = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        self._await_request()
        held = [connection for connection in self.connections
                if isinstance(connection, Connection) and not connection.transport.is_closing()]
        if len(held) > self.limits.max_connections:
            self._make_room(held)

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self._stop_clock()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if not self.lingering:
            self.silent = False
            super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        cycle = self.cycle
        if cycle is not None and not cycle.more_body and not cycle.response_complete:
            self._stop_clock()  # the whole request is in: the app answers it

    def on_response_complete(self) -> None:
        self._await_request()  # the next request on this connection has its own deadline
        super().on_response_complete()

    def _await_request(self) -> None:
        self._stop_clock()
        self.reading_since, self.silent = time.monotonic(), True
        self._deadline = self.loop.call_later(
            self.limits.read_timeout, self.close_with, 408,
            f"the request did not arrive within {self.limits.read_timeout:g} s")

    def _stop_clock(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = None
        self.reading_since = None

    def _make_room(self, held: list[Connection]) -> None:
        """Over the cap: end lingering connections, then those that have been sending their
        request longest (module doc), until within it; else refuse this one with a 503."""
        now = time.monotonic()
        victims = sorted((connection for connection in held
                          if connection is not self and connection._closable(now)),
                         key=lambda connection: (not connection.lingering,
                                                 connection.reading_since or 0.0))
        excess = len(held) - self.limits.max_connections
        for victim in victims[:excess]:
            if not victim.lingering:
                victim._log_as(503)
            victim.transport.abort()
        if len(victims) < excess:
            self.close_with(503, f"Slowdown: {self.limits.max_connections} connections are "
                                 f"open; try again shortly")

    def _closable(self, now: float) -> bool:
        """Lingering, or awaiting a request: one it has begun to send, or none for longer
        than `SILENT_GRACE`."""
        since = self.reading_since
        return self.lingering or (
            since is not None and not (self.silent and now - since < SILENT_GRACE))

    def close_with(self, status: int, message: str) -> None:
        """Answer `status` and `{"error": message}` unless an answer was begun, then close."""
        self._stop_clock()
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is None or not cycle.response_started:
            body = json.dumps({"error": message}).encode()
            headers = ["content-type: application/json", f"content-length: {len(body)}",
                       "connection: close", *(["retry-after: 1"] if status == 503 else [])]
            head = "\r\n".join([f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", *headers])
            self.transport.write(f"{head}\r\n\r\n".encode() + body)
            self._log_as(status)
        if not self.transport.can_write_eof():
            self.transport.close()
            return
        self.lingering = True
        try:
            self.transport.write_eof()  # the client reads the answer, then the end
        except OSError:  # the client has gone already (ENOTCONN): nothing left to say
            self.transport.abort()
            return
        self.loop.call_later(LINGER, self.transport.abort)

    def _log_as(self, status: int) -> None:
        """The status the app's access line gives a request still waiting for its body."""
        if self.cycle is not None and not self.cycle.response_started:
            self.cycle.scope.setdefault("state", {})[CLOSED_WITH] = status
