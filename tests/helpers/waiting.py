"""Waiting for an event, never for a fixed time: a machine busy with other work (`make
test-busy`) outlasts any sleep, so a test waits for what it needs to have happened (a log
line, a file, a process's state or output, bytes a server has read) with a generous
deadline, and a deadline hit fails saying what was seen then.

`wait_until` is the one wait; `Collected` gathers a process's output as it comes, to wait
for a line in it. The connection states are the kernel's (`/proc/net/tcp`, Linux): what a
server process has read of a connection, and whether it still holds it, seen from
outside the server.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from typing import IO, Any, Callable, Optional, TypeVar

T = TypeVar("T")
DEADLINE = 120.0  # seconds: far more than any event takes, even beside busy loops
POLL = 0.02  # seconds between two looks

ESTABLISHED, CLOSE_WAIT = "01", "08"  # /proc/net/tcp's states of a connection held open


def wait_until(found: Callable[[], T], what: str, seen: Optional[Callable[[], Any]] = None,
               deadline: float = DEADLINE) -> T:
    """`found()`'s first truthy value, looked for every POLL s. Past `deadline` seconds,
    an AssertionError naming `what` and what `seen()` shows then (without `seen`, the
    last value). `found` may itself fail at once (a process that ended early: `running`)."""
    end = time.monotonic() + deadline
    while True:
        value = found()
        if value:
            return value
        if time.monotonic() > end:
            shown = seen() if seen is not None else value
            shown = shown if isinstance(shown, str) else repr(shown)
            raise AssertionError(f"{what}: not within {deadline:g} s; seen:\n{shown}")
        time.sleep(POLL)


def running(process: subprocess.Popen, seen: Callable[[], Any]) -> bool:
    """True while `process` runs; once it has ended, an AssertionError with its exit
    status and what `seen()` shows (its output), for a wait that can end no other way."""
    if process.poll() is not None:
        raise AssertionError(f"ended early (exit {process.returncode}):\n{seen()}")
    return True


class Collected:
    """Everything a process writes to a pipe, collected by a thread as it comes (tqdm ends
    its lines with '\\r': nothing waits for a whole line)."""

    def __init__(self, process: subprocess.Popen, stream: IO[Any]):
        self.process = process
        self._chunks: list[bytes] = []
        self._pump = threading.Thread(target=self._read, args=(stream.fileno(),), daemon=True)
        self._pump.start()

    def _read(self, fd: int) -> None:
        while chunk := os.read(fd, 4096):
            self._chunks.append(chunk)

    def text(self) -> str:
        return b"".join(self._chunks).decode(errors="replace")

    def wait_for(self, pattern: str) -> re.Match[str]:
        """The first match of the regular expression `pattern` in what has come, once it
        has; failing at once if the process ends without it."""
        def found() -> Optional[re.Match[str]]:
            ended = self.process.poll() is not None
            if ended:
                self._pump.join(DEADLINE)  # the rest of what it wrote
            match = re.search(pattern, self.text())
            if match is None and ended:
                running(self.process, self.text)
            return match

        return wait_until(found, f"{pattern!r} from the process", seen=self.text)

    def whole(self) -> str:
        """All of it, once the pipe has ended (the process exited)."""
        self._pump.join(DEADLINE)
        assert not self._pump.is_alive(), f"the pipe never ended:\n{self.text()}"
        return self.text()


def _hex_address(address: tuple[str, int]) -> str:
    """An IPv4 (host, port) as /proc/net/tcp writes it."""
    host = int.from_bytes(socket.inet_aton(address[0]), sys.byteorder)
    return f"{host:08X}:{address[1]:04X}"


def _tcp_sockets() -> dict[tuple[str, str], tuple[str, int, int]]:
    """The machine's IPv4 TCP sockets: (local, remote) -> (state, bytes sent and not yet
    acknowledged, bytes received and not yet read by the process holding it)."""
    found = {}
    with open("/proc/net/tcp", encoding="ascii") as table:
        next(table)
        for line in table:
            fields = line.split()
            sent, received = (int(queue, 16) for queue in fields[4].split(":"))
            found[fields[1], fields[2]] = (fields[3], sent, received)
    return found


def unread(*socks: socket.socket) -> int:
    """Bytes sent on the client sockets `socks` that the server process has not read yet:
    those in flight, and those waiting in its end's receive queue (none once its end is
    gone)."""
    table, count = _tcp_sockets(), 0
    for sock in socks:
        try:
            here, there = _hex_address(sock.getsockname()), _hex_address(sock.getpeername())
        except OSError:  # reset by the server: nothing of it is left to read
            continue
        mine, theirs = table.get((here, there)), table.get((there, here))
        count += (mine[1] if mine else 0) + (theirs[2] if theirs else 0)
    return count


def connections(server: tuple[str, int]) -> int:
    """Connections to the listening address `server` that are still open at its end
    (accepted or waiting to be)."""
    here = _hex_address(server)
    return sum(local == here and state in (ESTABLISHED, CLOSE_WAIT)
               for (local, _), (state, _, _) in _tcp_sockets().items())


def held(client: tuple[str, int], server: tuple[str, int]) -> bool:
    """Whether the server process still holds open its end of the connection from the
    address `client` (it has not closed it, whatever the client did)."""
    end = _tcp_sockets().get((_hex_address(server), _hex_address(client)))
    return end is not None and end[0] in (ESTABLISHED, CLOSE_WAIT)
