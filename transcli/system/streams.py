"""The standard streams when they are closed or cannot be written.

`transcli ... >&-` starts with no stdout, `<&-` with no stdin, `2>&-` with no
stderr; `> /dev/full` fails only when the output is flushed; `| head` stops
reading half-way; a hung-up terminal fails every write. Two dangers besides
tracebacks: a closed descriptor 0, 1 or 2 is handed to the next file opened, which
C libraries writing to "stderr" would then overwrite; and `print` into a missing
stdout silently does nothing, so a command would exit 0 having printed nothing.
`guard_std_streams` plugs closed descriptors with /dev/null and stands a `StdStream`
for each stream that needs one; `finish_stdout` flushes stdout while an error can
still be reported.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from typing import Any, Iterator, NoReturn, Optional, TextIO

from transcli.system.errors import UserError

_FIXES = {"stdin": "there is nothing to read; give an input file instead",
          "stdout": "nothing can be written to it; give an output file, or leave stdout open",
          "stderr": "nothing can be written to it; give an output file, or leave stderr open"}
STD_NAMES = ("stdin", "stdout", "stderr")
PLUGGED: set[int] = set()  # descriptors 0-2 closed when transcli started, now /dev/null
_FD_PATH = re.compile(r"/dev/(?:(stdin|stdout|stderr)|fd/(\d+))"
                      r"|/proc/(?:self|thread-self|\d+(?:/task/\d+)?)/fd/(\d+)")
_MAX_HOPS = 40  # the kernel's own limit on symbolic links followed in one path


class StdStream:
    """A standard stream that fails as its role asks, instead of with a traceback:
    - stdin or stdout closed when transcli started (`stream` None): reading or writing
      it is a one-line error, flushing does nothing;
    - stdout: a failed write is one line naming it (`> /dev/full`), and a reader that
      leaves (`| head`) ends the command quietly with status 0;
    - stderr: a failed write (closed pipe, hung-up terminal, `2>&-`) is dropped, with
      every later one, so that a progress bar or a message never aborts a save."""

    def __init__(self, name: str, stream: Optional[TextIO] = None):
        self.name, self.stream = name, stream
        self.broken = stream is None and name == "stderr"  # its writes are dropped

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise UserError(f"{self.name} is closed ({_FIXES[self.name]})")

    def write(self, text: str) -> int:
        if not self.broken:
            with self._failing():
                self._open().write(text)
        return len(text)

    def flush(self) -> None:
        if not self.broken and self.stream is not None:
            with self._failing():
                self.stream.flush()

    def _open(self) -> TextIO:
        if self.stream is None:
            self._refuse()
        return self.stream

    @contextlib.contextmanager
    def _failing(self) -> Iterator[None]:
        try:
            yield
        except (OSError, ValueError) as exc:
            if self.name == "stderr":
                self.broken = True
                return
            if not isinstance(exc, OSError):
                raise
            silence_stdout()
            if isinstance(exc, BrokenPipeError):
                raise SystemExit(0) from None
            raise UserError(f"stdout: cannot write ({exc.strerror or type(exc).__name__})"
                            ) from None

    def isatty(self) -> bool:
        return not self.broken and self.stream is not None and self.stream.isatty()

    @property
    def buffer(self) -> Any:
        return self if self.stream is None else self.stream.buffer

    @property
    def closed(self) -> bool:
        return self.stream is not None and self.stream.closed

    def __iter__(self) -> Iterator[str]:
        return iter(self._open())

    def __next__(self) -> str:
        return next(self._open())

    def __getattr__(self, name: str) -> Any:
        if self.stream is not None:
            return getattr(self.stream, name)
        if name == "close":
            return lambda: None
        if name in ("writelines", "read", "readline", "readlines", "fileno"):
            return self._refuse
        raise AttributeError(name)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def guard_std_streams() -> None:
    """Plug closed descriptors 0-2 with /dev/null (so no file opened later takes their
    place), stand a closed `StdStream` for a closed standard stream, and check every
    write to an open stdout."""
    for fd, name, flags in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY),
                            (2, "stderr", os.O_WRONLY)):
        if getattr(sys, name) is not None and _is_open(fd):
            continue
        if not _is_open(fd):
            PLUGGED.add(fd)
            plug = os.open(os.devnull, flags)
            if plug != fd:
                os.dup2(plug, fd)
                os.close(plug)
        stream = open(os.devnull, "w", encoding="utf-8") if name == "stderr" else None
        setattr(sys, name, StdStream(name, stream))
    if not isinstance(sys.stdout, StdStream):
        sys.stdout = StdStream("stdout", sys.stdout)  # type: ignore[assignment]


@contextlib.contextmanager
def tolerant_stderr() -> Iterator[TextIO]:
    """sys.stderr as a `StdStream` inside the block (progress bars included): after a
    hung-up terminal, a message cannot abort the work it reports on."""
    saved = sys.stderr
    if not isinstance(saved, StdStream):
        sys.stderr = StdStream("stderr", saved)  # type: ignore[assignment]
    try:
        yield sys.stderr
    finally:
        sys.stderr = saved


def descriptor_named(path: str | os.PathLike) -> Optional[int]:
    """The descriptor `path` names through /dev/stdin..stderr, /dev/fd/N or /proc/.../fd/N,
    directly or by symbolic links to one of those; None for any other path."""
    name = os.path.abspath(os.fspath(path))
    for _ in range(_MAX_HOPS):
        name = os.path.normpath("/" + name.lstrip("/"))  # normpath keeps a leading "//"
        match = _FD_PATH.fullmatch(name)
        if match:
            return STD_NAMES.index(match[1]) if match[1] else int(match[2] or match[3])
        try:
            target = os.readlink(name)
        except OSError:  # not a link (or not there): an ordinary path
            return None
        name = os.path.join(os.path.dirname(name), target)
    return None


def check_not_closed(path: str | os.PathLike) -> None:
    """A path to one of this process's standard descriptors that was closed at start would
    read or write the /dev/null that plugs it: refused in one line, as `-` is."""
    fd = descriptor_named(path) if PLUGGED else None
    if fd in PLUGGED:
        name = STD_NAMES[fd]
        raise UserError(f"{os.fspath(path)}: {name} is closed ({_FIXES[name]})")


def _raw_stdout() -> Any:
    stream = sys.stdout
    return stream.stream or stream if isinstance(stream, StdStream) else stream


def silence_stdout() -> None:
    """Point descriptor 1 at /dev/null: what is still buffered for a reader that left
    (or a full disk) is dropped at exit instead of failing there with a traceback."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    with contextlib.suppress(OSError, ValueError):
        _raw_stdout().flush()  # what a failed flush kept now goes to /dev/null


def finish_stdout() -> Optional[str]:
    """Flush stdout now; the reason it failed (a full disk, an I/O error), or None.
    A reader that left (`| head`) is not a failure: it asked for no more."""
    try:
        _raw_stdout().flush()
        return None
    except BrokenPipeError:
        silence_stdout()
        return None
    except OSError as exc:
        silence_stdout()
        return exc.strerror or type(exc).__name__
    except ValueError:  # closed by the command itself
        return None
