"""`transcli serve` against clients that are slow, leave, or never finish: a real server
(`python -m transcli serve` on a free localhost port, the tiny run) and raw sockets.

Three servers: one with a short --read-timeout (slowloris, a client leaving, the body cap,
--docs, a file slow to read beside HTML), a --req-limit (clients past it, told apart by
the X-Forwarded-For a local proxy sends), no CORS and no page (--no-web); one with a small
--max-connections and a long --read-timeout, so that only the cap closes connections; one
stopped by SIGTERM while a client holds an unfinished body and a file is being read, with
a long --read-timeout so that only --drain-timeout ends it.

Nothing here waits a fixed time for the server to have done something: a test waits for
the event itself (the bytes it sent read by the server, its end of a connection closed, a
line in its log, a file being read in `/health`), so a busy machine only makes it slower.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import select
import signal
import socket
import time
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest
from helpers.server import Server, assert_error, multipart
from helpers.waiting import DEADLINE, connections, held, unread, wait_until

for extra in ("fastapi", "uvicorn"):  # `transcli serve` runs in every test
    pytest.importorskip(extra, reason="needs the serve extra (pip install 'transcli[serve]')")

READ_TIMEOUT = 3.0
STEP = 0.1  # seconds between two bytes of a client trickling its request
MAX_CONNECTIONS = 8
REQ_LIMIT = 10  # a minute per client: more than this module's own from 127.0.0.1
SLOW_PAGE = 600_000  # characters: seconds to read on a fast machine
TIMEOUT = "600"  # --timeout: a file read on a busy machine is slow, never refused for it
HEAD = b"POST /translate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
BODY = b'{"q": "I like trees.", "source": "en", "target": "es"}'
BODY_FIELDS = json.loads(BODY)


def file_form() -> tuple[bytes, dict[str, str]]:
    body, kind = multipart({"source": "en", "target": "es"}, {"file": ("a.txt", b"x")})
    return body, {"Content-Type": kind, "X-Forwarded-For": "203.0.113.7"}


@pytest.fixture(scope="module")
def hostile(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    started = Server(run_dir, tmp_path_factory.mktemp("hostile"),
                     "--read-timeout", str(READ_TIMEOUT), "--timeout", TIMEOUT,
                     "--max-chars", "10000000", "--max-file-chars", str(SLOW_PAGE),
                     "--docs", "--req-limit", str(REQ_LIMIT), "--no-web")
    yield started
    started.stop()


@pytest.fixture(scope="module")
def capped_server(run_dir: Path, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[tuple[Server, int]]:
    """The capped server, and its open descriptors when it holds no connection."""
    started = Server(run_dir, tmp_path_factory.mktemp("capped"), "--read-timeout", "600",
                     "--max-connections", str(MAX_CONNECTIONS), "--no-web")
    yield started, idle_fds(started)
    started.stop()


@pytest.fixture
def capped(capped_server: tuple[Server, int]) -> Server:
    """The capped server once it holds none of an earlier test's connections (closed by
    their client, each is closed by the server as it reads that)."""
    server, idle = capped_server
    wait_until(lambda: open_fds(server) <= idle, "earlier tests' connections closed",
               seen=lambda: f"{open_fds(server)} descriptors open, {idle} when idle")
    return server


def connect(server: Server) -> socket.socket:
    return socket.create_connection((server.host, server.port), timeout=DEADLINE)


def trickle(sock: socket.socket, data: bytes, started: float) -> tuple[float, int]:
    """Send `data` a byte every STEP seconds until the server answers, then wait for that
    answer; the seconds since `started` (taken before connecting) and the bytes sent."""
    sent = 0
    while sent < len(data) and not select.select([sock], [], [], STEP)[0]:
        sock.sendall(data[sent:sent + 1])
        sent += 1
    assert select.select([sock], [], [], DEADLINE)[0], f"no answer after all {sent} bytes"
    return time.monotonic() - started, sent


def assert_the_read_deadline_ended_it(seconds: float, sent: int) -> None:
    """Not before --read-timeout (counted from the connection, opened after `started`),
    and before the client had sent the bytes of twice that time: a busy machine makes it
    send fewer bytes in a given time, never more."""
    assert seconds > READ_TIMEOUT - 0.01
    assert sent < 2 * READ_TIMEOUT / STEP, f"{sent} bytes sent before the 408"


def answer(sock: socket.socket) -> tuple[int, Any, bytes]:
    """(status, JSON body, head) of the raw answer, read until the server closes."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body) if body else None, head


def open_fds(server: Server) -> int:
    return len(os.listdir(f"/proc/{server.process.pid}/fd"))


def idle_fds(server: Server) -> int:
    """The server's open descriptors once it holds no connection."""
    wait_until(lambda: connections((server.host, server.port)) == 0, "no connection held",
               seen=lambda: f"{connections((server.host, server.port))} held")
    return open_fds(server)


def wait_for(server: Server, text: str) -> str:
    """The server's log once it holds `text`."""
    return wait_until(lambda: text in server.stderr() and server.stderr(),
                      f"{text!r} in the log", seen=server.stderr)


def read(*socks: socket.socket) -> None:
    """Until the server has read every byte sent on `socks` (or closed them)."""
    wait_until(lambda: unread(*socks) == 0, "the server reading what was sent",
               seen=lambda: f"{unread(*socks)} bytes unread")


# ----------------------------------------------------------------------------- slow clients


@pytest.mark.slow
def test_a_client_trickling_its_headers_is_dropped_with_408(hostile):
    started = time.monotonic()
    with connect(hostile) as sock:
        seconds, sent = trickle(sock, b"POST /translate HTTP/1.1\r\n" + b"X-Slow: a\r\n" * 100,
                                started)
        status, body, _ = answer(sock)
    assert_error(status, body, 408)
    assert_the_read_deadline_ended_it(seconds, sent)


@pytest.mark.slow
@pytest.mark.parametrize("path", ["/translate", "/translate_file"])
def test_a_client_trickling_its_body_is_dropped_with_408(hostile, path):
    head, body = HEAD, BODY
    if path == "/translate_file":
        body, kind = multipart({"source": "en", "target": "es"}, {"file": ("a.txt", b"x" * 50)})
        head = f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: {kind}\r\n".encode()
    started = time.monotonic()
    with connect(hostile) as sock:
        sock.sendall(head + f"Content-Length: {len(body)}\r\n\r\n".encode())
        seconds, sent = trickle(sock, body, started)
        status, answered, _ = answer(sock)
    assert_error(status, answered, 408)
    assert_the_read_deadline_ended_it(seconds, sent)
    log = wait_for(hostile, f'"POST {path}" 408')
    assert "Traceback" not in log and "Exception in ASGI" not in log


def closed(sock: socket.socket, seconds: float = DEADLINE) -> bool:
    """Whether the server ends the connection (an answer, the end, a reset) within
    `seconds` (0: has ended it)."""
    return bool(select.select([sock], [], [], seconds)[0])


@pytest.mark.slow
def test_past_the_cap_the_slowest_sender_is_closed_and_health_answers(capped):
    """The cap's worth of connections that never finish their headers, then one more:
    the oldest is closed for it. Then a flood of three times the cap: the server holds
    at most the cap (plus the one it is refusing), and /health answers throughout."""
    before = open_fds(capped)
    sockets: list[socket.socket] = []
    try:
        for _ in range(MAX_CONNECTIONS + 1):
            sockets.append(connect(capped))
            sockets[-1].sendall(b"GET /health HTTP/1.1\r\n")
            read(sockets[-1])  # so no longer new and silent
        assert closed(sockets[0])
        assert not any(closed(sock, 0) for sock in sockets[1:])
        assert capped.request("GET", "/health")[0] == 200
        assert closed(sockets[1])  # closed to make room for /health
        for _ in range(3 * MAX_CONNECTIONS):
            sockets.append(connect(capped))
            sockets[-1].sendall(b"GET /health HTTP/1.1\r\n")
        read(*sockets)  # the flood's first bytes: no longer new and silent
        for _ in range(3):
            assert capped.request("GET", "/health")[0] == 200
        assert open_fds(capped) <= before + MAX_CONNECTIONS + 1
        assert sum(not closed(sock, 0) for sock in sockets) <= MAX_CONNECTIONS
    finally:
        for sock in sockets:
            sock.close()


@pytest.mark.slow
def test_past_the_cap_a_new_connection_gets_503_when_none_can_be_closed(capped):
    """Connections that have sent nothing yet are not closed for room in their first
    second (their request may be on its way): past the cap, the newcomer is refused.
    (The one test here that needs the server to do something in time: to take the
    connections, made at once, within that second of one another.)"""
    sockets = [connect(capped) for _ in range(MAX_CONNECTIONS + 1)]
    try:
        status, body, head = answer(sockets[-1])
        assert_error(status, body, 503)
        assert b"retry-after: 1" in head.lower()
    finally:
        for sock in sockets:
            sock.close()


def test_newcomers_past_the_cap_that_leave_at_once_log_no_traceback(capped):
    """A newcomer refused past the cap that has closed already: its 503 cannot be ended
    (ENOTCONN), which asyncio printed as a traceback per connection."""
    sockets = [connect(capped) for _ in range(MAX_CONNECTIONS)]
    address, left = (capped.host, capped.port), []
    try:
        for _ in range(10):
            with connect(capped) as leaving:
                leaving.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
                left.append(leaving.getsockname())
        wait_until(lambda: not any(held(client, address) for client in left),
                   "the server done with the clients that left", seen=capped.stderr)
        assert "Traceback" not in capped.stderr() and "Exception" not in capped.stderr()
    finally:
        for sock in sockets:
            sock.close()


@pytest.mark.slow
def test_a_client_leaving_mid_body_gives_one_short_line(hostile):
    with connect(hostile) as sock:
        sock.sendall(HEAD + b"Content-Length: 1000\r\n\r\n" + BODY[:10])
        read(sock)  # the app has the request and waits for the rest of its body
    log = wait_for(hostile, '"POST /translate" 499')
    assert log.count('"POST /translate" 499') == 1
    assert "Traceback" not in log and "Exception in ASGI" not in log
    assert "ClientDisconnect" not in log


@pytest.mark.slow
def test_the_body_limit_has_a_cap_whatever_max_chars(hostile):
    """--max-chars 10000000 would allow 120 MB bodies at 12 bytes a character: a declared
    3 MiB is refused before it is sent, naming the 2 MiB cap."""
    with connect(hostile) as sock:
        sock.sendall(HEAD + f"Content-Length: {3 << 20}\r\nConnection: close\r\n\r\n".encode())
        status, body, _ = answer(sock)
    assert_error(status, body, 413)
    assert str(2 << 20) in body["error"]


@pytest.mark.slow
def test_a_files_body_has_its_own_cap(hostile):
    """16 bytes per --max-file-chars character, plus 64 KiB."""
    cap = 16 * SLOW_PAGE + 64 * 1024
    with connect(hostile) as sock:
        sock.sendall(b"POST /translate_file HTTP/1.1\r\nHost: localhost\r\nContent-Type: multipart/"
                     b"form-data; boundary=b\r\nContent-Length: %d\r\nConnection: "
                     b"close\r\n\r\n" % (cap + 1))
        status, body, _ = answer(sock)
    assert_error(status, body, 413)
    assert str(cap) in body["error"]


@pytest.mark.slow
def test_past_req_limit_a_client_gets_429_and_others_are_served(hostile):
    """--req-limit counts each client apart (here the address a local proxy forwards), on
    the endpoints that work; /languages, /frontend/settings and /health are not counted.
    A client may send REQ_LIMIT at once (more, if its requests are slow: one comes back
    every 60/REQ_LIMIT s)."""
    first, other = {"X-Forwarded-For": "203.0.113.7"}, {"X-Forwarded-For": "203.0.113.8"}
    assert hostile.request("POST", "/detect", {"q": "x"}, other)[0] == 200  # loads py3langid
    answered = 0
    while (reply := hostile.request("POST", "/detect", {"q": "Hi."}, first))[0] == 200:
        answered += 1
        assert answered < 3 * REQ_LIMIT, "never limited"
    status, body, headers = reply
    assert answered >= REQ_LIMIT
    assert_error(status, body, 429)
    assert body == {"error": f"Slowdown: {REQ_LIMIT} per 1 minute"}  # LibreTranslate's words
    assert 1 <= int(headers["retry-after"]) <= 60 / REQ_LIMIT + 1
    assert hostile.request("POST", "/translate", BODY_FIELDS, first)[0] == 429
    assert_error(*hostile.request("POST", "/translate_file", *file_form())[:2], 429)
    for path in ("/languages", "/frontend/settings", "/health"):
        assert hostile.request("GET", path, headers=first)[0] == 200
    assert hostile.request("POST", "/translate", BODY_FIELDS, other)[0] == 200
    assert wait_for(hostile, '203.0.113.7 "POST /translate" 429')


def slow_page(size: int = SLOW_PAGE) -> bytes:
    """An HTML file of `size` "<" characters: html.parser reads it a character at a time
    (several microseconds each, as the server reads it), and nothing in it is translated."""
    return b"<" * size


def upload(server: Server, name: str, data: bytes, client: str) -> tuple[int, Any]:
    body, kind = multipart({"source": "en", "target": "es"}, {"file": (name, data)})
    status, answer, _ = server.request("POST", "/translate_file", body, {
        "Content-Type": kind, "X-Forwarded-For": client}, timeout=DEADLINE)
    return status, answer


def reading(server: Server) -> None:
    """Until /health shows a document being read (the file just sent: nothing else is)."""
    wait_until(lambda: server.request("GET", "/health")[1]["documents"] >= 1,
               "the file being read", seen=server.stderr)


@pytest.mark.slow
def test_a_file_being_read_holds_up_neither_html_nor_the_server(hostile):
    """While a slow file is read, a request's HTML is read on its own thread and answered,
    and /health answers; then the file is answered too."""
    client = "203.0.113.9"  # its own --req-limit allowance
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pending = pool.submit(upload, hostile, "slow.html", slow_page(), client)
        reading(hostile)
        status, body, _ = hostile.request("POST", "/translate", {
            **BODY_FIELDS, "q": "<p>I like trees.</p>", "format": "html"},
            {"X-Forwarded-For": client})
        assert status == 200 and body["translatedText"].startswith("<p>"), body
        assert hostile.request("GET", "/health")[0] == 200
        assert not pending.done(), "the file was read before the HTML: make it slower"
        assert pending.result(timeout=DEADLINE)[0] == 200


@pytest.mark.slow
def test_without_the_page_or_cors_the_api_stays(hostile):
    """--no-web: / and the page's files are 404; no --cors-origin: no CORS header, and a
    preflight is a method the server does not take."""
    for path in ("/", "/static/app.js"):
        assert_error(*hostile.request("GET", path)[:2], 404)
    status, _, headers = hostile.request("POST", "/translate", BODY_FIELDS,
                                         {"Origin": "https://app.example"})
    assert status == 200 and not any(name.startswith("access-control") for name in headers)
    assert_error(*hostile.request("OPTIONS", "/translate", headers={
        "Origin": "https://app.example", "Access-Control-Request-Method": "POST"})[:2], 405)


@pytest.mark.slow
def test_docs_is_served_when_asked_for(hostile):
    with connect(hostile) as sock:
        sock.sendall(b"GET /docs HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 200 ") and b"swagger-ui" in data


# ----------------------------------------------------------------------------- stopping


@pytest.mark.slow
def test_sigterm_stops_within_the_drain_time_while_a_body_is_held(run_dir, tmp_path):
    """A client holding an unfinished body, and a file being read for far longer than
    the drain time: both get 503, and the server exits in less than half the time that
    file takes to read (the document's thread is no reason to wait), measured first on
    a page a quarter its size."""
    server = Server(run_dir, tmp_path, "--read-timeout", "600", "--drain-timeout", "1",
                    "--timeout", TIMEOUT, "--max-file-chars", str(4 * SLOW_PAGE))
    held_body: Optional[socket.socket] = None
    try:
        started = time.monotonic()
        assert upload(server, "quarter.html", slow_page(), "-")[0] == 200
        quarter = time.monotonic() - started
        held_body = connect(server)
        held_body.sendall(HEAD + b"Content-Length: 1000\r\n\r\n" + BODY[:10])
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pending = pool.submit(upload, server, "slow.html", slow_page(4 * SLOW_PAGE), "-")
            read(held_body)  # the app has that request and waits for the rest of its body
            reading(server)
            start = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            assert server.process.wait(timeout=DEADLINE) == 0
            stopped = time.monotonic() - start
            assert stopped < 2 * quarter, f"stopped in {stopped:.1f} s; a quarter of the " \
                                          f"file was read in {quarter:.1f} s"
            status, body = pending.result(timeout=DEADLINE)
        assert_error(status, body, 503)
        status, body, _ = answer(held_body)
        assert_error(status, body, 503)
        log = server.stderr()
        assert "SIGTERM: finishing" in log and log.rstrip().endswith("transcli: stopped")
        assert "Traceback" not in log
    finally:
        if held_body is not None:
            held_body.close()
        server.stop()
