"""`transcli serve`: LibreTranslate's API over a real server (`python -m transcli serve` on
a free localhost port) with the tiny memorised run, checked against `transcli translate`.

Three servers: one shared by the module (answers, batching, the error table), one with an
API key and tight limits (403, 503, 504), one stopped by SIGTERM with requests in flight.
The batcher's merging (sampling seeds, split sentences, int8 alone) is also checked in
process, where the number of model calls can be seen.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import http.client
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
from pathlib import Path
from typing import Any, Iterator

import pytest
from helpers import PAIRS, ROOT
from helpers.cli import one_error_line, run_cli
from helpers.memorised import UNSEEN
from helpers.server import ONE_THREAD, Server, assert_error

from transcli.inference.translator import load_translator
from transcli.rundir.run import open_run_dir
from transcli.serve.batcher import Batcher
from transcli.serve.limits import Limits

for extra in ("fastapi", "uvicorn"):  # `transcli serve` runs in every test
    pytest.importorskip(extra, reason="needs the serve extra (pip install 'transcli[serve]')")
LibreTranslateAPI = pytest.importorskip(
    "libretranslatepy", reason="needs libretranslatepy, LibreTranslate's client (the dev "
    "extra)").LibreTranslateAPI

ENGLISH = [en for en, _ in PAIRS]
MULTI = f"{ENGLISH[0]} {ENGLISH[1]} {UNSEEN[1]}"  # three sentences on one line
LINES = [*ENGLISH, *UNSEEN, MULTI, ""]
TEXTS = LINES[:-1]  # libretranslatepy's texts: LibreTranslate refuses an empty q
MAX_CHARS = 2000


@pytest.fixture(scope="module")
def offline(run_dir: Path) -> dict[str, str]:
    """`transcli translate`'s output for each of LINES (the run's own decode settings)."""
    result = run_cli("translate", "-m", run_dir, "--checkpoint", "last",
                     stdin="".join(line + "\n" for line in LINES))
    assert result.returncode == 0, result.stderr
    return dict(zip(LINES, result.stdout.split("\n")))


@pytest.fixture(scope="module")
def server(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The module's server: the run's decode settings, --max-chars MAX_CHARS."""
    started = Server(run_dir, tmp_path_factory.mktemp("serve"), "--max-chars", str(MAX_CHARS))
    yield started
    started.stop()


# ----------------------------------------------------------------------------- answers


@pytest.mark.slow
def test_libretranslatepy_gets_translates_output(server, offline):
    client = LibreTranslateAPI(server.url)
    assert [client.translate(text, "en", "es") for text in TEXTS] == \
        [offline[text] for text in TEXTS]
    assert client.languages() == [{"code": "en", "name": "English", "targets": ["es"]},
                                  {"code": "es", "name": "Spanish", "targets": []}]


@pytest.mark.slow
def test_lists_lines_and_auto_source(server, offline):
    """A list gets a list; a text's lines are translated apart and joined by newlines
    (CRLF as LF, as `translate` reads a file); "auto" is English, said as LibreTranslate
    says what it detected."""
    status, body = server.translate([ENGLISH[2], f"{ENGLISH[3]}\r\n\n{UNSEEN[0]}", ""])
    assert status == 200
    assert body == {"translatedText": [
        offline[ENGLISH[2]], f"{offline[ENGLISH[3]]}\n\n{offline[UNSEEN[0]]}", ""]}
    status, body = server.translate(ENGLISH[4], source="auto")
    assert status == 200
    assert body == {"translatedText": offline[ENGLISH[4]],
                    "detectedLanguage": {"confidence": 100.0, "language": "en"}}
    status, body = server.translate([ENGLISH[4]], source="auto", format="text")
    assert body["detectedLanguage"] == [{"confidence": 100.0, "language": "en"}]


@pytest.mark.slow
def test_form_bodies(server, offline):
    status, body, _ = server.request(
        "POST", "/translate", f"q={ENGLISH[5]}&source=en&target=es".encode(),
        {"Content-Type": "application/x-www-form-urlencoded"})
    assert (status, body) == (200, {"translatedText": offline[ENGLISH[5]]})
    boundary = "transcli-test"
    parts = "".join(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
                    f"{value}\r\n" for name, value in
                    (("q", ENGLISH[6]), ("source", "en"), ("target", "es")))
    status, body, _ = server.request(
        "POST", "/translate", f"{parts}--{boundary}--\r\n".encode(),
        {"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert (status, body) == (200, {"translatedText": offline[ENGLISH[6]]})


@pytest.mark.slow
def test_32_concurrent_clients_get_offline_translations(server, offline):
    """32 threads at once, each with its own lines (strings through libretranslatepy,
    lists as JSON): every answer is the offline one, and the server merged requests."""
    before = server.request("GET", "/health")[1]
    start = threading.Barrier(32)

    def client(number: int) -> list[tuple[Any, Any]]:
        mine = [TEXTS[(number + k) % len(TEXTS)] for k in range(3)]
        start.wait()
        if number % 2:
            lt = LibreTranslateAPI(server.url)
            return [(lt.translate(line), offline[line]) for line in mine]
        return [(server.translate(mine)[1]["translatedText"], [offline[m] for m in mine])]

    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        answers = [pair for pairs in pool.map(client, range(32)) for pair in pairs]
    assert all(got == expected for got, expected in answers)
    after = server.request("GET", "/health")[1]
    requests = after["answered"] - before["answered"]
    assert requests == 16 * 3 + 16
    assert after["model_calls"] - before["model_calls"] < requests


@pytest.mark.slow
def test_health_languages_and_openapi(server, run_dir):
    status, health, _ = server.request("GET", "/health")
    assert status == 200 and health["status"] == "ok" and health["waiting"] == 0
    assert health["model"] == str(run_dir)  # as given to -m, not its last folder
    connection = http.client.HTTPConnection(server.host, server.port, timeout=60)
    connection.request("HEAD", "/health")  # a load balancer's probe: the status, no body
    response = connection.getresponse()
    assert (response.status, response.read()) == (200, b"")
    assert response.getheader("Content-Type") == "application/json"
    connection.close()
    status, spec, _ = server.request("GET", "/openapi.json")
    assert status == 200 and {"/translate", "/languages", "/health"} <= set(spec["paths"])
    assert set(spec["paths"]["/health"]) == {"get"}  # HEAD is not part of the API
    for page in ("/docs", "/redoc"):  # Swagger UI and ReDoc load from a CDN: off by default
        assert_error(*server.request("GET", page)[:2], 404)


@pytest.mark.slow
def test_a_trailing_slash_is_served_not_redirected(server, offline):
    """Starlette's redirect to /translate would name the forged Host in its Location."""
    status, body, headers = server.request(
        "POST", "/translate/", {**GOOD, "q": ENGLISH[7]}, {"Host": "evil.example"})
    assert (status, body) == (200, {"translatedText": offline[ENGLISH[7]]})
    assert "location" not in {name.lower() for name in headers}
    assert server.request("GET", "/health/", headers={"Host": "evil.example"})[0] == 200


# ----------------------------------------------------------------------------- refusals

GOOD = {"q": "x", "source": "en", "target": "es"}
JSON = {"Content-Type": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
BAD_REQUESTS = [  # (method, path, body, headers, status)
    ("POST", "/translate", b'{"q": "x", "sour', JSON, 400),  # malformed JSON
    ("POST", "/translate", b'["x"]', JSON, 400),  # not an object
    ("POST", "/translate", b'{"q": "\xff", "source": "en", "target": "es"}', JSON, 400),
    ("POST", "/translate", b"[" * 100_000, JSON, 413),  # over the body limit
    ("POST", "/translate", b"[" * 50_000, JSON, 400),  # nested too deeply
    ("POST", "/translate", b'{"q": "\\ud800 half", "source": "en", "target": "es"}', JSON,
     400),  # a lone surrogate: used to stop the model worker for good
    ("POST", "/translate", b'{"q": "x", "source": "en", "target": "es", "n": '
     + b"9" * 5000 + b"}", JSON, 400),  # an integer too long for Python
    ("POST", "/translate", {"source": "en", "target": "es"}, None, 400),
    ("POST", "/translate", {**GOOD, "q": ""}, None, 400),
    ("POST", "/translate", {**GOOD, "q": []}, None, 400),
    ("POST", "/translate", {"q": "x", "target": "es"}, None, 400),
    ("POST", "/translate", {"q": "x", "source": "en"}, None, 400),
    ("POST", "/translate", {**GOOD, "q": 3}, None, 400),
    ("POST", "/translate", {**GOOD, "q": ["a", 3]}, None, 400),
    ("POST", "/translate", {**GOOD, "q": {"text": "a"}}, None, 400),
    ("POST", "/translate", {**GOOD, "source": "fr"}, None, 400),
    ("POST", "/translate", {**GOOD, "source": 7}, None, 400),
    ("POST", "/translate", {**GOOD, "target": "de"}, None, 400),
    ("POST", "/translate", {**GOOD, "target": "en"}, None, 400),
    ("POST", "/translate", {**GOOD, "format": "html"}, None, 400),
    ("POST", "/translate", {**GOOD, "format": "markdown"}, None, 400),
    ("POST", "/translate", {**GOOD, "alternatives": 3}, None, 400),
    ("POST", "/translate", {**GOOD, "alternatives": "many"}, None, 400),
    ("POST", "/translate", {**GOOD, "q": "x" * (MAX_CHARS + 1)}, None, 413),
    ("POST", "/translate", {**GOOD, "q": ["x" * 1000] * 3}, None, 413),
    ("POST", "/translate", b"q=x&q=y&source=en&target=es", FORM, 400),
    ("POST", "/translate", b"q=%FF&source=en&target=es", FORM, 400),
    ("POST", "/translate", b"q=x&source=en&target=es", {"Content-Type": "text/plain"}, 400),
    ("POST", "/translate", b"q=x&source=en&target=es", None, 400),  # no Content-Type
    ("POST", "/translate", b"--b\r\nContent-Disposition: form-data; name=\"q\"; "
     b"filename=\"a.txt\"\r\n\r\nx\r\n--b--\r\n",
     {"Content-Type": "multipart/form-data; boundary=b"}, 400),  # a file
    ("POST", "/translate", b"--b\r\nContent-Disposition: form-data; name=\"q\"\r\n\r\n"
     b"caf\xe9\r\n--b--\r\n", {"Content-Type": "multipart/form-data; boundary=b"},
     400),  # Latin-1, not UTF-8
    ("POST", "/translate", b"--b\r\nContent-Disposition: form-data; name=\"q\xff\"\r\n\r\n"
     b"x\r\n--b--\r\n", {"Content-Type": "multipart/form-data; boundary=b"}, 400),
    ("POST", "/translate", b"q=x&source=%ED%A0%80&target=es", FORM, 400),  # a UTF-8 surrogate
    # A lone surrogate (JSON's "\ud800" escape) in any string: used to be a 500 and a
    # traceback where an error message quoted it.
    *[("POST", "/translate", body, None, 400) for body in (
        {**GOOD, "source": "\ud800"}, {**GOOD, "target": "e\ud800s"},
        {**GOOD, "format": "\udfff"}, {**GOOD, "q": ["x", "\ud800"]},
        {**GOOD, "extra": {"deep": ["\ud800"]}}, {**GOOD, "\ud800": 1})],
    ("GET", "/translate", None, None, 405),
    ("GET", "/nowhere", None, None, 404),
]


@pytest.mark.slow
def test_bad_requests_get_one_line_json_errors(server):
    for method, path, body, headers, expected in BAD_REQUESTS:
        status, answer, _ = server.request(method, path, body, headers)
        assert_error(status, answer, expected)
    assert server.translate("x")[0] == 200  # still serving
    assert server.request("GET", "/health")[0] == 200  # its model worker too


@pytest.mark.slow
def test_the_access_log_has_one_line_per_request_and_no_traceback(server):
    before = server.stderr().count('"POST /translate"')
    for _ in range(3):
        server.translate("x")
    server.request("GET", "/nowhere")
    deadline = time.monotonic() + 10
    while server.stderr().count('"POST /translate"') < before + 3:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    log = server.stderr()
    assert "Traceback" not in log and " 500 " not in log
    assert "warning" not in log  # listening on 127.0.0.1 without a key is fine
    assert re.search(r'^\S+ \S+ 127\.0\.0\.1 "POST /translate" 200 [\d.]+ ms$', log, re.M)
    assert re.search(r'^\S+ \S+ 127\.0\.0\.1 "GET /nowhere" 404 [\d.]+ ms$', log, re.M)


# ----------------------------------------------------------------------------- limits


def _answered_in_time(client: LibreTranslateAPI, line: str) -> str:
    """`client`'s translation of `line`, asked again while it is a 504: on a loaded
    machine one line can take longer than a test server's short --timeout."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return client.translate(line)
        except urllib.error.HTTPError as exc:
            if exc.code != 504 or time.monotonic() > deadline:
                raise


@pytest.mark.slow
def test_api_key_queue_and_timeout(run_dir, tmp_path, offline):
    """--api-key: a missing or wrong key is 403 "Invalid API key". Then long requests
    at once on a server that translates one at a time: one is translated, one waits (the
    queue holds 1), the others are refused at once with 503; the first two run past
    --timeout and get 504. Then the server answers again."""
    key = "s3cret"
    server = Server(run_dir, tmp_path, "--api-key", key, "--no-batching", "--max-queue", "1",
                    "--timeout", "0.3", "--max-chars", "100000")
    try:
        for fields in ({}, {"api_key": "wrong"}, {"api_key": ""}, {"api_key": 1},
                       {"api_key": "s3\ud800"}):
            assert_error(*server.translate("x", **fields), 403)
        assert server.translate("x", api_key="wrong")[1] == {"error": "Invalid API key"}
        with pytest.raises(urllib.error.HTTPError) as refused:
            LibreTranslateAPI(server.url).translate(ENGLISH[0])
        assert refused.value.code == 403
        assert _answered_in_time(LibreTranslateAPI(server.url, api_key=key), ENGLISH[0]) == \
            offline[ENGLISH[0]]

        long = ENGLISH * 80  # 1280 lines: seconds of work for the model
        start = threading.Barrier(6)

        def send(_: int) -> tuple[int, Any, dict[str, str]]:
            start.wait()
            return server.request("POST", "/translate",
                                  {"q": "\n".join(long), "source": "en", "target": "es",
                                   "api_key": key})

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(send, range(6)))
        for status, body, _ in answers:
            assert status in (503, 504), (status, body)
            assert_error(status, body, status)
        statuses = sorted(status for status, _, _ in answers)
        assert statuses[0] == 503 and statuses[-1] == 504
        assert all(headers.get("retry-after") == "1" for status, _, headers in answers
                   if status == 503)
        deadline = time.monotonic() + 60  # the abandoned work ends, then it answers again
        while server.translate(ENGLISH[1], api_key=key)[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert "Traceback" not in server.stderr()
    finally:
        server.stop()


@pytest.mark.slow
def test_sigterm_finishes_requests_in_flight_then_exits_0(run_dir, tmp_path, offline):
    server = Server(run_dir, tmp_path)
    try:
        lines = ENGLISH * 20  # 320 lines per request: a model call each

        def send(_: int) -> tuple[int, Any]:
            return server.translate("\n".join(lines))

        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            pending = [pool.submit(send, n) for n in range(3)]
            deadline = time.monotonic() + 30
            while server.request("GET", "/health")[1]["waiting"] < 1:  # one runs, one waits
                assert time.monotonic() < deadline, "the requests never queued"
                time.sleep(0.01)
            server.process.send_signal(signal.SIGTERM)
            answers = [future.result(timeout=120) for future in pending]
        assert server.process.wait(timeout=60) == 0
        expected = "\n".join(offline[line] for line in lines)
        assert answers == [(200, {"translatedText": expected})] * 3
        log = server.stderr()
        assert "SIGTERM: finishing" in log and log.rstrip().endswith("transcli: stopped")
        assert "Traceback" not in log
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((server.host, server.port), timeout=5).close()
    finally:
        server.stop()


# ----------------------------------------------------------------------------- startup


@pytest.mark.slow
def test_bad_startup_is_one_error_line(run_dir, tmp_path):
    error = one_error_line(run_cli("serve", "-m", tmp_path / "nowhere"))
    assert "nowhere: run directory not found; `transcli train` makes one" in error
    error = one_error_line(run_cli("serve", "-m", run_dir, "--host", "no.such.host.invalid"))
    assert "--host no.such.host.invalid" in error
    error = one_error_line(run_cli("serve", "-m", run_dir, "--host", "192.0.2.1"))
    assert error.startswith("transcli: error: cannot listen on 192.0.2.1 port 5000")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        error = one_error_line(run_cli("serve", "-m", run_dir, "--port", port))
    assert error.endswith("address already in use: another server has this port")
    error = one_error_line(run_cli("serve", "-m", run_dir, "--beam-size", "3",
                                   "--set", "decode.n_best=2"))
    assert "decode.n_best=2" in error
    error = one_error_line(run_cli("serve", "-m", run_dir, "--engine", "ct2", "--strategy",
                                   "sample", "--set", "decode.word_reward=0"))
    assert "decode.strategy=sample with --engine ct2" in error
    error = one_error_line(run_cli("serve", "-m", run_dir, "--timeout", "0"))
    assert "--timeout" in error
    for flag in ("--drain-timeout", "--read-timeout", "--timeout"):  # a stop's wait would
        error = one_error_line(run_cli("serve", "-m", run_dir, flag, "inf"))  # overflow
        assert error.endswith(f"{flag} inf: must be in (0, 86400] seconds"), error
    error = one_error_line(run_cli("serve", "-m", run_dir,
                                   env={**os.environ, "TRANSCLI_API_KEY": ""}))
    assert error.endswith("TRANSCLI_API_KEY is set but empty: give it a key, or unset it to "
                          "serve without one")
    error = one_error_line(run_cli("serve", "-m", run_dir, "--api-key", ""))
    assert "--api-key is empty" in error
    error = one_error_line(run_cli("serve", "-m", run_dir,  # the byte 0xff, from the environment
                                   env={"TRANSCLI_API_KEY": "k\udcff"}))
    assert "TRANSCLI_API_KEY) is not UTF-8 text" in error
    error = one_error_line(subprocess.run(  # a cap the process's open-file limit cannot hold
        [sys.executable, "-m", "transcli", "serve", "-m", str(run_dir), "--max-connections",
         "1000"], capture_output=True, text=True, cwd=ROOT, env=ONE_THREAD, timeout=120,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (300, 300))))
    assert "--max-connections 1000 needs about" in error and "ulimit -Hn" in error
    error = one_error_line(run_cli("serve", "-m", run_dir, "--checkpoint", "999", "--port", "0"))
    assert "999" in error  # raised while the worker thread loads the model


@pytest.mark.slow
def test_listening_beyond_loopback_without_a_key_is_warned(run_dir, tmp_path):
    """The warning comes as the port is taken, before the model loads (the server is
    stopped before it listens)."""
    log = tmp_path / "serve.log"
    with open(log, "wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "transcli", "serve", "-m", str(run_dir), "--host",
             "0.0.0.0", "--port", "0"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=stderr, cwd=ROOT, env=ONE_THREAD)
    try:
        deadline = time.monotonic() + 60
        while "warning" not in log.read_text():
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
    finally:
        process.kill()
        process.wait()
    assert log.read_text().splitlines()[0] == (
        "transcli: warning: listening on 0.0.0.0 without --api-key: anyone who can reach "
        "this port can use the model (docs/SERVE.md)")


def test_serve_takes_translates_decoding_options():
    """The decoding group is shared with `translate` (`options.with_decoding`)."""
    from transcli.cli.options import DECODING

    text = run_cli("serve", "--help", env={"COLUMNS": "250"}).stdout
    flags = [f"--{parameter.name.replace('_', '-')}" for parameter in DECODING]
    assert {"--engine", "--int8", "--greedy", "--beam-size"} <= set(flags)
    for flag in [*flags, "--checkpoint", "--device", "--set"]:
        assert re.search(rf"^\s+(-\w, )?{flag}\b", text, re.M), flag


# ----------------------------------------------------------------------------- the batcher


def batched(run_dir: Path, overrides: list[str], requests: list[list[str]],
            wait: float = 0.5) -> tuple[list[list[str]], list[list[str]], Batcher]:
    """The requests sent at once through a `Batcher` (in this process), and each request
    translated alone by the same translator, as `transcli translate` would."""
    batcher = Batcher(lambda: load_translator(open_run_dir(run_dir, overrides), "last", "cpu"),
                      Limits(max_batch_wait=wait))
    batcher.start()

    async def send_all() -> list[list[str]]:
        return list(await asyncio.gather(*(batcher.translate(lines) for lines in requests)))

    try:
        answers = asyncio.run(send_all())
    finally:
        batcher.stop()
    assert batcher.translator is not None
    alone = [batcher.translator.translate(lines, 0) for lines in requests]
    return answers, alone, batcher


REQUESTS = [[ENGLISH[0], "", UNSEEN[2]], [MULTI, ENGLISH[3]], [UNSEEN[0]], ENGLISH[5:9]]


@pytest.mark.parametrize("overrides", [
    ["decode.strategy=sample", "decode.temperature=2.0"],  # seeds: a line's index
    ["decode.split_sentences=true"],
    ["decode.strategy=greedy"],
], ids=["sample", "split-sentences", "greedy"])
def test_merged_requests_are_answered_as_alone(run_dir, overrides):
    answers, alone, batcher = batched(run_dir, overrides, REQUESTS)
    assert batcher.merging and batcher.model_calls == 1 and batcher.answered == 4
    assert answers == alone


CT2 = ["decode.engine=ct2", "decode.word_reward=0"]


@pytest.fixture(scope="module")
def ct2_run(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the run (its CTranslate2 export is cached in the run dir)."""
    return Path(shutil.copytree(run_dir, tmp_path_factory.mktemp("ct2") / "run"))


@pytest.mark.parametrize("overrides", [[*CT2, "decode.strategy=greedy"],
                                       [*CT2, "decode.strategy=beam", "decode.beam_size=3"]],
                         ids=["greedy", "beam"])
def test_ct2_float32_requests_are_merged(ct2_run, overrides):
    answers, alone, batcher = batched(ct2_run, overrides, REQUESTS)
    assert batcher.merging and batcher.model_calls == 1 and batcher.answered == 4
    assert answers == alone


def test_int8_translates_each_request_alone(run_dir):
    answers, alone, batcher = batched(run_dir, ["decode.quantize=int8"], REQUESTS)
    assert not batcher.merging and batcher.model_calls == 4
    assert answers == alone



def test_the_access_line_keeps_a_forwarded_client_in_one_field():
    """uvicorn takes the client address from X-Forwarded-For when a loopback proxy sends
    it: a forged one cannot add fields to the log line."""
    from transcli.serve.app import access_line

    scope = {"client": ('a b" x', 0), "method": "GET", "path": "/health",
             "raw_path": b"/health"}
    line = access_line(scope, 200, 0.001)
    assert line.split()[2] == "a%20b%22%20x" and line.endswith('"GET /health" 200 1.0 ms')
    for forged in ("x" * 100_000, "é" * 100):  # cut once quoted: %C3%A9 is 6 characters
        scope["client"] = (forged, 0)
        assert len(access_line(scope, 200, 0.001).split()[2]) == 100
    scope["client"] = ("::1", 5000)
    assert access_line(scope, 200, 0.001).split()[2] == "::1"
