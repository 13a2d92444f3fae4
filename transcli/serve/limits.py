"""What one server accepts and how long it waits: the limits `transcli serve` takes as
flags, checked in one place."""

from __future__ import annotations

from dataclasses import dataclass

from transcli.system.errors import UserError

MAX_BODY_BYTES = 2 << 20  # a request body is never read past 2 MiB, whatever --max-chars
MAX_SECONDS = 86_400.0  # a day: the longest wait a flag may set (threads' waits overflow at ~1e9)


@dataclass(frozen=True)
class Limits:
    max_chars: int = 10_000  # characters per request, all its texts together (413 above)
    max_queue: int = 64  # requests waiting for the model; one more is refused (503)
    timeout: float = 30.0  # seconds a request may wait and be translated (504 after)
    max_batch_wait: float = 0.005  # seconds a lone request waits for others to join it
    batching: bool = True  # False: every request is a model call of its own
    read_timeout: float = 10.0  # seconds to receive a request's headers and body (408 after)
    max_connections: int = 1000  # open connections (past it, the slowest sender is closed)
    drain_timeout: float = 30.0  # seconds a stop waits for requests in flight, then closes

    def __post_init__(self) -> None:
        for flag, value, least in (("--max-chars", self.max_chars, 1),
                                   ("--max-queue", self.max_queue, 1),
                                   ("--max-connections", self.max_connections, 1)):
            if value < least:
                raise UserError(f"{flag} {value}: must be at least {least}")
        for flag, seconds in (("--timeout", self.timeout), ("--read-timeout", self.read_timeout),
                              ("--drain-timeout", self.drain_timeout)):
            if not 0 < seconds <= MAX_SECONDS:
                raise UserError(f"{flag} {seconds}: must be in (0, {MAX_SECONDS:g}] seconds")
        if not 0 <= self.max_batch_wait <= 1:
            raise UserError(f"--max-batch-wait {self.max_batch_wait * 1000:g}: must be in "
                            f"[0, 1000] milliseconds")

    def body_bytes(self) -> int:
        """The largest request body read: `max_chars` characters escaped at worst (12 bytes
        each: a 4-byte character %-encoded in a form), plus room for the other fields, and
        never more than `MAX_BODY_BYTES`."""
        return min(12 * self.max_chars + 64 * 1024, MAX_BODY_BYTES)
