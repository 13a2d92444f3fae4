"""The standard streams when they are closed or cannot be written.

`transcli ... >&-` starts with no stdout, `<&-` with no stdin, `2>&-` with no
stderr; `> /dev/full` fails only when the output is flushed; `| head` stops
reading half-way. Two dangers besides tracebacks: a closed descriptor 0, 1 or 2
is handed to the next file opened, which C libraries writing to "stderr" would
then overwrite; and `print` into a missing stdout silently does nothing, so a
command would exit 0 having printed nothing. `guard_std_streams` plugs closed
descriptors with /dev/null and makes using a closed stdin/stdout a one-line error;
`finish_stdout` flushes stdout while an error can still be reported.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
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


class ClosedStream:
    """Stands for a standard stream whose descriptor was closed when transcli started:
    reading or writing it is a one-line error, flushing it does nothing."""

    def __init__(self, name: str):
        self.name = name

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise UserError(f"{self.name} is closed ({_FIXES[self.name]})")

    write = writelines = read = readline = readlines = __next__ = fileno = _refuse

    @property
    def buffer(self) -> ClosedStream:
        return self

    def __iter__(self) -> ClosedStream:
        return self

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def close(self) -> None:
        pass

    @property
    def closed(self) -> bool:
        return False


class CheckedStdout:
    """sys.stdout whose failed writes are one line naming stdout (`> /dev/full`), and
    whose reader leaving (`| head`) ends the command quietly with status 0."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        with _checked():
            return self.stream.write(text)

    def flush(self) -> None:
        with _checked():
            self.stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextlib.contextmanager
def _checked() -> Iterator[None]:
    try:
        yield
    except BrokenPipeError:
        silence_stdout()
        raise SystemExit(0) from None
    except OSError as exc:
        silence_stdout()
        raise UserError(f"stdout: cannot write ({exc.strerror or type(exc).__name__})") from None


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def guard_std_streams() -> None:
    """Plug closed descriptors 0-2 with /dev/null (so no file opened later takes their
    place), stand a `ClosedStream` for a closed stdin or stdout (a closed stderr just
    discards what is written to it), and check every write to an open stdout."""
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
        if name == "stderr":
            sys.stderr = open(os.devnull, "w", encoding="utf-8")
        else:
            setattr(sys, name, ClosedStream(name))
    if not isinstance(sys.stdout, (ClosedStream, CheckedStdout)):
        sys.stdout = CheckedStdout(sys.stdout)  # type: ignore[assignment]


_OUTPUT_ON_STDOUT: list[str] = []  # what a command writes to stdout as its output, if any


def output_on_stdout(what: str) -> None:
    """Note that the command's `what` goes to stdout (for the line a signal's stop says)."""
    _OUTPUT_ON_STDOUT.append(what)


def stdout_output_in_a_file() -> Optional[str]:
    """The output being written to stdout when stdout is a regular file (`> out.txt`, the
    shell's file, written as lines come), else None."""
    try:
        in_a_file = stat.S_ISREG(os.fstat(1).st_mode)
    except OSError:
        return None
    return _OUTPUT_ON_STDOUT[-1] if _OUTPUT_ON_STDOUT and in_a_file else None


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
    return getattr(sys.stdout, "stream", sys.stdout)


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
