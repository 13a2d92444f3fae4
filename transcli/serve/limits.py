"""What one server accepts and how long it waits: the limits `transcli serve` takes as
flags, checked in one place."""

from __future__ import annotations

from dataclasses import dataclass

from transcli.system.errors import UserError


@dataclass(frozen=True)
class Limits:
    max_chars: int = 10_000  # characters per request, all its texts together (413 above)
    max_queue: int = 64  # requests waiting for the model; one more is refused (503)
    timeout: float = 30.0  # seconds a request may wait and be translated (504 after)
    max_batch_wait: float = 0.005  # seconds a lone request waits for others to join it
    batching: bool = True  # False: every request is a model call of its own

    def __post_init__(self) -> None:
        if self.max_chars < 1:
            raise UserError(f"--max-chars {self.max_chars}: must be at least 1")
        if self.max_queue < 1:
            raise UserError(f"--max-queue {self.max_queue}: must be at least 1")
        if not self.timeout > 0:
            raise UserError(f"--timeout {self.timeout}: must be > 0 seconds")
        if not 0 <= self.max_batch_wait <= 1:
            raise UserError(f"--max-batch-wait {self.max_batch_wait * 1000:g}: must be in "
                            f"[0, 1000] milliseconds")

    def body_bytes(self) -> int:
        """The largest request body read: `max_chars` characters escaped at worst (12 bytes
        each: a 4-byte character %-encoded in a form), plus room for the other fields."""
        return 12 * self.max_chars + 64 * 1024
