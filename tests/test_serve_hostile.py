"""`transcli serve` against clients that are slow, leave, or never finish: a real server
(`python -m transcli serve` on a free localhost port, the tiny run) and raw sockets.

Two servers: one with a short --read-timeout and a small --max-connections (slowloris,
the connection cap, a client leaving, the body cap, --docs, a file slow to read beside
HTML), a --req-limit (clients past it, told apart by the X-Forwarded-For a local proxy
sends), no CORS and no page (--no-web); one stopped by SIGTERM while a client holds an
unfinished body and a file is being read, with a long --read-timeout so that only
--drain-timeout ends it.
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

for extra in ("fastapi", "uvicorn"):  # `transcli serve` runs in every test
    pytest.importorskip(extra, reason="needs the serve extra (pip install 'transcli[serve]')")

READ_TIMEOUT = 3.0
MAX_CONNECTIONS = 8
REQ_LIMIT = 10  # a minute per client: more than this module's own from 127.0.0.1
SLOW_PAGE = 600_000  # characters: seconds to read on a fast machine, within the file timeout
HEAD = b"POST /translate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
BODY = b'{"q": "I like trees.", "source": "en", "target": "es"}'
BODY_FIELDS = json.loads(BODY)


def file_form() -> tuple[bytes, dict[str, str]]:
    body, kind = multipart({"source": "en", "target": "es"}, {"file": ("a.txt", b"x")})
    return body, {"Content-Type": kind, "X-Forwarded-For": "203.0.113.7"}


@pytest.fixture(scope="module")
def hostile(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    started = Server(run_dir, tmp_path_factory.mktemp("hostile"),
                     "--read-timeout", str(READ_TIMEOUT),
                     "--max-connections", str(MAX_CONNECTIONS), "--max-chars", "10000000",
                     "--max-file-chars", str(SLOW_PAGE),
                     "--docs", "--req-limit", str(REQ_LIMIT), "--no-web")
    yield started
    started.stop()


def connect(server: Server) -> socket.socket:
    return socket.create_connection((server.host, server.port), timeout=30)


def trickle(sock: socket.socket, data: bytes, seconds: float = 30) -> float:
    """Send `data` a byte every 0.1 s until the server answers (or `seconds` pass); the
    seconds it took."""
    start = time.monotonic()
    for byte in data:
        if select.select([sock], [], [], 0.1)[0] or time.monotonic() - start > seconds:
            break
        sock.sendall(bytes([byte]))
    select.select([sock], [], [], seconds)
    return time.monotonic() - start


def answer(sock: socket.socket) -> tuple[int, Any, bytes]:
    """(status, JSON body, head) of the raw answer, read until the server closes."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body) if body else None, head


def open_fds(server: Server) -> int:
    return len(os.listdir(f"/proc/{server.process.pid}/fd"))


def wait_for(server: Server, text: str, seconds: float = 10) -> str:
    deadline = time.monotonic() + seconds
    while text not in server.stderr():
        assert time.monotonic() < deadline, f"{text!r} not in the log:\n{server.stderr()}"
        time.sleep(0.05)
    return server.stderr()


# ----------------------------------------------------------------------------- slow clients


@pytest.mark.slow
def test_a_client_trickling_its_headers_is_dropped_with_408(hostile):
    with connect(hostile) as sock:
        seconds = trickle(sock, b"POST /translate HTTP/1.1\r\n" + b"X-Slow: a\r\n" * 100)
        status, body, _ = answer(sock)
    assert_error(status, body, 408)
    assert READ_TIMEOUT - 0.2 < seconds < READ_TIMEOUT + 5


@pytest.mark.slow
@pytest.mark.parametrize("path", ["/translate", "/translate_file"])
def test_a_client_trickling_its_body_is_dropped_with_408(hostile, path):
    head, body = HEAD, BODY
    if path == "/translate_file":
        body, kind = multipart({"source": "en", "target": "es"}, {"file": ("a.txt", b"x" * 50)})
        head = f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: {kind}\r\n".encode()
    with connect(hostile) as sock:
        sock.sendall(head + f"Content-Length: {len(body)}\r\n\r\n".encode())
        seconds = trickle(sock, body)
        status, answered, _ = answer(sock)
    assert_error(status, answered, 408)
    assert READ_TIMEOUT - 0.2 < seconds < READ_TIMEOUT + 5
    log = wait_for(hostile, f'"POST {path}" 408')
    assert "Traceback" not in log and "Exception in ASGI" not in log


def closed(sock: socket.socket, seconds: float = 5) -> bool:
    """Whether the server has ended the connection (an answer, the end, a reset)."""
    return bool(select.select([sock], [], [], seconds)[0])


@pytest.mark.slow
def test_past_the_cap_the_slowest_sender_is_closed_and_health_answers(hostile):
    """The cap's worth of connections that never finish their headers, then one more:
    the oldest is closed for it. Then a flood of three times the cap: the server holds
    at most the cap (plus the one it is refusing), and /health answers throughout."""
    before = open_fds(hostile)
    sockets: list[socket.socket] = []
    try:
        for _ in range(MAX_CONNECTIONS + 1):
            sockets.append(connect(hostile))
            sockets[-1].sendall(b"GET /health HTTP/1.1\r\n")
            time.sleep(0.05)  # read by the server, so no longer new and silent
        assert closed(sockets[0])
        assert not any(closed(sock, 0) for sock in sockets[1:])
        assert hostile.request("GET", "/health", timeout=10)[0] == 200
        assert closed(sockets[1])  # closed to make room for /health
        for _ in range(3 * MAX_CONNECTIONS):
            sockets.append(connect(hostile))
            sockets[-1].sendall(b"GET /health HTTP/1.1\r\n")
        time.sleep(0.3)  # the flood's first bytes are read: no longer new and silent
        for _ in range(3):
            assert hostile.request("GET", "/health", timeout=10)[0] == 200
        assert open_fds(hostile) <= before + MAX_CONNECTIONS + 1
        assert sum(not closed(sock, 0) for sock in sockets) <= MAX_CONNECTIONS
    finally:
        for sock in sockets:
            sock.close()


@pytest.mark.slow
def test_past_the_cap_a_new_connection_gets_503_when_none_can_be_closed(hostile):
    """Connections that have sent nothing yet are not closed for room in their first
    second (their request may be on its way): past the cap, the newcomer is refused."""
    sockets = [connect(hostile) for _ in range(MAX_CONNECTIONS + 1)]
    try:
        status, body, head = answer(sockets[-1])
        assert_error(status, body, 503)
        assert b"retry-after: 1" in head.lower()
    finally:
        for sock in sockets:
            sock.close()


def test_newcomers_past_the_cap_that_leave_at_once_log_no_traceback(hostile):
    """A newcomer refused past the cap that has closed already: its 503 cannot be ended
    (ENOTCONN), which asyncio printed as a traceback per connection."""
    sockets = [connect(hostile) for _ in range(MAX_CONNECTIONS)]
    try:
        for _ in range(10):
            with connect(hostile) as leaving:
                leaving.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        time.sleep(1)
        assert "Traceback" not in hostile.stderr() and "Exception" not in hostile.stderr()
    finally:
        for sock in sockets:
            sock.close()


@pytest.mark.slow
def test_a_client_leaving_mid_body_gives_one_short_line(hostile):
    with connect(hostile) as sock:
        sock.sendall(HEAD + b"Content-Length: 1000\r\n\r\n" + BODY[:10])
        time.sleep(0.3)
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
        "Content-Type": kind, "X-Forwarded-For": client}, timeout=120)
    return status, answer


@pytest.mark.slow
def test_a_file_being_read_holds_up_neither_html_nor_the_server(hostile):
    """While a slow file is read, a request's HTML is read on its own thread and answered,
    and /health answers; then the file is answered too."""
    client = "203.0.113.9"  # its own --req-limit allowance
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pending = pool.submit(upload, hostile, "slow.html", slow_page(), client)
        time.sleep(0.5)  # the file has reached its thread
        status, body, _ = hostile.request("POST", "/translate", {
            **BODY_FIELDS, "q": "<p>I like trees.</p>", "format": "html"},
            {"X-Forwarded-For": client})
        assert status == 200 and body["translatedText"].startswith("<p>"), body
        assert hostile.request("GET", "/health")[0] == 200
        assert not pending.done(), "the file was read before the HTML: make it slower"
        assert pending.result(timeout=120)[0] == 200


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
    the drain time: both get 503, and the server exits in time (the document's thread
    is no reason to wait)."""
    server = Server(run_dir, tmp_path, "--read-timeout", "60", "--drain-timeout", "1",
                    "--max-file-chars", str(SLOW_PAGE))
    held: Optional[socket.socket] = None
    try:
        held = connect(server)
        held.sendall(HEAD + b"Content-Length: 1000\r\n\r\n" + BODY[:10])
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            reading = pool.submit(upload, server, "slow.html", slow_page(), "-")
            time.sleep(1)  # both requests have reached the app; the file is being read
            start = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            assert server.process.wait(timeout=30) == 0
            assert time.monotonic() - start < 1 + 5
            status, body = reading.result(timeout=30)
        assert_error(status, body, 503)
        status, body, _ = answer(held)
        assert_error(status, body, 503)
        log = server.stderr()
        assert "SIGTERM: finishing" in log and log.rstrip().endswith("transcli: stopped")
        assert "Traceback" not in log
    finally:
        if held is not None:
            held.close()
        server.stop()
