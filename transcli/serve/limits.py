"""What one server accepts and how long it waits: the limits `transcli serve` takes as
flags, checked in one place."""

from __future__ import annotations

from dataclasses import dataclass

from transcli.system.errors import UserError

MAX_BODY_BYTES = 2 << 20  # a request body is never read past 2 MiB, whatever --max-chars
MAX_SECONDS = 86_400.0  # a day: the longest wait a flag may set (threads' waits overflow at ~1e9)
MAX_ALTERNATIVES = 16  # --max-alternatives: an n-best search of 17 beams at most
MAX_FILE_BODY_BYTES = 32 << 20  # an uploaded file is never read past 32 MiB


@dataclass(frozen=True)
class Limits:
    max_chars: int = 10_000  # characters per request, all its texts together (400 above)
    max_queue: int = 64  # requests waiting for the model; one more is refused (503)
    timeout: float = 30.0  # seconds a request may wait and be translated (504 after)
    max_batch_wait: float = 0.005  # seconds a lone request waits for others to join it
    batching: bool = True  # False: every request is a model call of its own
    read_timeout: float = 10.0  # seconds to receive a request's headers and body (408 after)
    max_connections: int = 1000  # open connections (past it, the slowest sender is closed)
    drain_timeout: float = 30.0  # seconds a stop waits for requests in flight, then closes
    max_alternatives: int = 3  # alternative translations a request may ask for (400 above)
    req_limit: int = 0  # requests per client per minute to the endpoints that work (0: none)
    max_file_chars: int = 100_000  # characters of text in an uploaded file (400 above)

    def __post_init__(self) -> None:
        for flag, value, least in (("--max-chars", self.max_chars, 1),
                                   ("--max-queue", self.max_queue, 1),
                                   ("--max-connections", self.max_connections, 1),
                                   ("--max-file-chars", self.max_file_chars, 1),
                                   ("--req-limit", self.req_limit, 0)):
            if value < least:
                raise UserError(f"{flag} {value}: must be at least {least}")
        if not 0 <= self.max_alternatives <= MAX_ALTERNATIVES:
            raise UserError(f"--max-alternatives {self.max_alternatives}: must be in "
                            f"[0, {MAX_ALTERNATIVES}]")
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

    def file_body_bytes(self) -> int:
        """The largest `/translate_file` body read: 16 bytes per `max_file_chars` character
        (a file's text with its markup, or as it is stored) plus room for the other fields,
        and never more than `MAX_FILE_BODY_BYTES`."""
        return min(16 * self.max_file_chars + 64 * 1024, MAX_FILE_BODY_BYTES)
