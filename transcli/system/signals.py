"""Stopping long work cleanly: signals that ask for a stop.

SIGINT (Ctrl-C), SIGTERM (kill, schedulers) and SIGHUP (a dropped SSH session) stop
every command at once (`interrupting`: the exception unwinds, so temp files and
scratch dirs are removed, no output is left half-written, and a stream of lines keeps
the whole lines written before the stop: `outputs.output_file`), except training,
which finishes its current update, saves and exits 0 (`StopSignals`); a second
signal stops it at once, except that a checkpoint being written is finished first
(weights without their state could not be resumed), and its last line says which
checkpoint is on disk. A signal that was ignored when transcli started (`nohup`) stays
ignored.
Long C code that would delay the signal until it returns runs in a thread the main
thread waits on (`wait_in_thread`). Ctrl-C at a terminal also kills the rest of the
pipeline (`transcli train 2>&1 | tee log`): a stderr that fails after that must not
abort the save (`streams.tolerant_stderr`).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Any, Callable, Iterator, Optional, TypeVar

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
T = TypeVar("T")


def _catchable(sig: int) -> bool:
    """Not ignored: `nohup` (SIGHUP) and `cmd &` in a script (SIGINT) ask for that."""
    return signal.getsignal(sig) is not signal.SIG_IGN


class Interrupted(KeyboardInterrupt):
    """A stop signal arrived; raised where the main thread is, so the stack unwinds."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def interrupting() -> Iterator[list[Interrupted]]:
    """Inside the block SIGINT, SIGTERM and SIGHUP raise `Interrupted` (a
    KeyboardInterrupt, so code that ends quietly on Ctrl-C does so on the others
    too); the yielded list holds the ones received. After the block a signal ends
    the process by its default action, with no traceback."""
    received: list[Interrupted] = []

    def handle(signum: int, frame: Any) -> None:
        received.append(Interrupted(signum))
        raise received[-1]

    caught = [sig for sig in STOP_SIGNALS if _catchable(sig)]
    if threading.current_thread() is threading.main_thread():
        for sig in caught:
            signal.signal(sig, handle)
    try:
        yield received
    finally:
        if threading.current_thread() is threading.main_thread():
            for sig in caught:
                signal.signal(sig, signal.SIG_DFL)


def wait_in_thread(function: Callable[[], T], name: str = "worker") -> T:
    """`function()`, run in a daemon thread while the main thread waits for it: long C
    code that releases the GIL (sentencepiece training) then cannot hold back a stop
    signal until it returns. An interrupted wait abandons the thread, which ends with
    the process."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = function()
        except BaseException as exc:  # handed to the waiting thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.2)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


class StoppedAtOnce(SystemExit):
    """A second stop signal: the work stops without finishing (exit status 128 + N)."""

    def __init__(self, signum: int):
        super().__init__(128 + signum)
        self.name = signal.Signals(signum).name


class StopSignals:
    """Records the first stop signal in `received`; a second one raises `StoppedAtOnce`
    where the main thread is, or, inside `finishing()` (a checkpoint being written), as
    soon as that block ends, so that a stop never leaves half a checkpoint. When that has
    unwound the block (temp files removed, the progress bar closed), its one line is the
    last thing said: `on_disk()`, read then, tells what is on disk and how to go on."""

    def __init__(self, what: str = "training",
                 on_disk: Callable[[], str] = lambda: "continue with --resume"):
        self.what, self.on_disk = what, on_disk
        self.received: Optional[str] = None
        self._previous: dict[int, Any] = {}
        self._finishing = False
        self._pending: Optional[int] = None  # a second signal that came while finishing

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in filter(_catchable, STOP_SIGNALS):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if not self.received:
            self.received = name
            print(f"transcli: {name} received: stopping {self.what} after this step, with a "
                  f"checkpoint (a second one stops at once)", file=sys.stderr)
        elif not self._finishing:
            raise StoppedAtOnce(signum)
        elif self._pending is None:
            self._pending = signum
            print(f"transcli: second {name}: stopping as soon as the checkpoint being "
                  f"written is whole", file=sys.stderr)

    @contextlib.contextmanager
    def finishing(self) -> Iterator[None]:
        """A block a second signal does not cut short: it stops the work when it ends."""
        self._finishing = True
        try:
            yield
        finally:
            self._finishing = False
        if self._pending is not None:
            raise StoppedAtOnce(self._pending)

    def __exit__(self, kind: Any, exc: Any, trace: Any) -> None:
        # Python wraps an exception raised while a class is made (in an import, as
        # matplotlib's first is when the curves are drawn) in a RuntimeError.
        stopped = exc if isinstance(exc, StoppedAtOnce) else getattr(exc, "__cause__", None)
        try:
            if isinstance(stopped, StoppedAtOnce):
                print(f"transcli: second {stopped.name}: {self.what} stopped; "
                      f"{self.on_disk()}", file=sys.stderr)
        finally:
            for sig, handler in self._previous.items():
                signal.signal(sig, handler)
        if isinstance(stopped, StoppedAtOnce) and stopped is not exc:
            raise stopped from None
