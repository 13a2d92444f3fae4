"""Stopping long work cleanly: signals that ask for a stop, and a stderr that may die.

SIGINT (Ctrl-C), SIGTERM (kill, schedulers) and SIGHUP (a dropped SSH session) ask
the running job to finish its current unit of work, save, and exit 0; a second one
stops at once (files are written atomically, so nothing is torn either way).

Ctrl-C at a terminal also kills the rest of the pipeline (`transcli train 2>&1 | tee
log`), and a hung-up terminal fails every write: after that a progress bar or a
message must not abort the save, so `tolerant_stderr` drops output it cannot write.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Any, Iterator, Optional, TextIO

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopSignals:
    """Records the first stop signal in `received`; a second one raises SystemExit."""

    def __init__(self, what: str = "training"):
        self.what = what
        self.received: Optional[str] = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.received:
            print(f"transcli: second {name}: stopping {self.what} now; the latest "
                  f"checkpoint is intact (continue with --resume)", file=sys.stderr)
            raise SystemExit(128 + signum)
        self.received = name

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


class TolerantStream:
    """A text stream whose failed writes (closed pipe, hung-up terminal, `2>&-`) are
    dropped, with every later write, instead of raising into the caller."""

    def __init__(self, stream: Optional[TextIO]):
        self.stream = stream
        self.broken = stream is None

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                self.stream.write(text)  # type: ignore[union-attr]
            except (OSError, ValueError):
                self.broken = True
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self.stream.flush()  # type: ignore[union-attr]
            except (OSError, ValueError):
                self.broken = True

    def isatty(self) -> bool:
        return not self.broken and self.stream.isatty()  # type: ignore[union-attr]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextlib.contextmanager
def tolerant_stderr() -> Iterator[TextIO]:
    """sys.stderr as a `TolerantStream` inside the block (progress bars included)."""
    saved = sys.stderr
    sys.stderr = TolerantStream(saved)  # type: ignore[assignment]
    try:
        yield sys.stderr
    finally:
        sys.stderr = saved
