"""`transcli serve`: LibreTranslate's API over a real server (`python -m transcli serve` on
a free localhost port) with the tiny memorised run, checked against `transcli translate`
(translations, alternatives, files) and py3langid itself (detection).

Three servers: one shared by the module (answers, batching, HTML, files of every format,
the page's files, CORS, the error table), one with an API key and tight limits (403, 503,
504), one stopped by SIGTERM with requests in flight. The batcher's merging (sampling
seeds, split sentences, int8 alone, n-best alone, a document's chunks) is also checked in
process, where the model calls can be seen.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import http.client
import io
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import zipfile
from pathlib import Path
from typing import Any, Iterator, Optional
from urllib.parse import urlsplit

import pytest
from helpers import PAIRS, ROOT
from helpers.cli import one_error_line, run_cli
from helpers.memorised import UNSEEN
from helpers.server import ONE_THREAD, Server, assert_error, multipart
from helpers.waiting import DEADLINE, running, wait_until
from test_documents import docx_bytes

from transcli.cli.translate import translate_file
from transcli.inference.translator import load_translator
from transcli.rundir.run import open_run_dir
from transcli.serve.batcher import Batcher, nbest_decode
from transcli.serve.limits import Limits

for extra in ("fastapi", "uvicorn"):  # `transcli serve` runs in every test
    pytest.importorskip(extra, reason="needs the serve extra (pip install 'transcli[serve]')")
LibreTranslateAPI = pytest.importorskip(
    "libretranslatepy", reason="needs libretranslatepy, LibreTranslate's client (the dev "
    "extra)").LibreTranslateAPI

ENGLISH = [en for en, _ in PAIRS]
SPANISH = [es for _, es in PAIRS]
MULTI = f"{ENGLISH[0]} {ENGLISH[1]} {UNSEEN[1]}"  # three sentences on one line
LINES = [*ENGLISH, *UNSEEN, MULTI, ""]
TEXTS = LINES[:-1]  # libretranslatepy's texts: LibreTranslate refuses an empty q
MAX_CHARS = 2000
MAX_FILE_CHARS = 5000
ORIGIN = "https://app.example"  # the module server's --cors-origin
SAMPLES = ROOT / "tests" / "documents"
FRAGMENTS = [  # HTML as a client sends it with format "html"
    "<p>I <b>like</b> trees.</p>",
    '<h1 title="Where is the station?">Where is the station?</h1>',
    '<a href="/x?a=1&amp;b=2">The boy eats an apple.</a> <img alt="A cat">'
    "<p>&copy; 2024 &lt;&gt; &amp;</p>",
    (SAMPLES / "page.html").read_text(encoding="utf-8"),  # a whole page, as a fragment
]


def identified(text: str) -> list[dict[str, Any]]:
    """py3langid's own ranking of English and Spanish for `text`, in LibreTranslate's shape:
    what /detect must answer."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(["en", "es"])
    return [{"confidence": float(round(100 * p)), "language": code}
            for code, p in identifier.rank(text)]


@pytest.fixture(scope="module")
def offline(run_dir: Path) -> dict[str, str]:
    """`transcli translate`'s output for each of LINES (the run's own decode settings)."""
    result = run_cli("translate", "-m", run_dir, "--checkpoint", "last",
                     stdin="".join(line + "\n" for line in LINES))
    assert result.returncode == 0, result.stderr
    return dict(zip(LINES, result.stdout.split("\n")))


@pytest.fixture(scope="module")
def nbest(run_dir: Path) -> dict[str, list[str]]:
    """`transcli translate --n-best 4 --beam-size 4`'s hypotheses for each of LINES: what
    a request for 3 alternatives is answered from (the tiny run searches 2 beams)."""
    result = run_cli("translate", "-m", run_dir, "--checkpoint", "last", "--n-best", "4",
                     "--beam-size", "4", stdin="".join(line + "\n" for line in LINES))
    assert result.returncode == 0, result.stderr
    found: dict[str, list[str]] = {}
    for row in result.stdout.splitlines():
        index, text, _ = row.split("\t")
        found.setdefault(LINES[int(index)], []).append(text)
    return found


@pytest.fixture(scope="module")
def documents(run_dir: Path, tmp_path_factory: pytest.TempPathFactory
              ) -> dict[str, tuple[bytes, bytes]]:
    """Each document sample, a Word file and each of FRAGMENTS (as a file), and what
    `transcli translate -i FILE -o OUT` (its function, in this process) writes for it."""
    folder = tmp_path_factory.mktemp("documents")
    sources = {name: (SAMPLES / name).read_bytes()
               for name in ("page.html", "readme.md", "movie.srt", "movie.vtt", "app.po")}
    sources["letter.docx"] = docx_bytes()
    sources.update({f"fragment{k}.html": text.encode() for k, text in enumerate(FRAGMENTS)})
    found = {}
    for name, data in sources.items():
        (folder / name).write_bytes(data)
        translate_file(run_dir, "last", str(folder / name), str(folder / f"es-{name}"), [],
                       "cpu")
        found[name] = (data, (folder / f"es-{name}").read_bytes())
    return found


@pytest.fixture(scope="module")
def server(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The module's server: the run's decode settings, --max-chars MAX_CHARS,
    --max-file-chars MAX_FILE_CHARS, --cors-origin ORIGIN; its files under a TMPDIR of
    its own (`Server.kept_files`)."""
    folder = tmp_path_factory.mktemp("serve")
    (folder / "tmp").mkdir()
    started = Server(run_dir, folder, "--max-chars", str(MAX_CHARS), "--max-file-chars",
                     str(MAX_FILE_CHARS), "--cors-origin", ORIGIN,
                     env={"TMPDIR": str(folder / "tmp")})
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
    for text in (SPANISH[1], ENGLISH[2], MULTI):
        assert client.detect(text) == identified(text)
    assert client.detect(SPANISH[3])[0]["language"] == "es"
    assert client.detect(ENGLISH[3])[0]["language"] == "en"
    assert client.detect("12345 :-)") == [{"confidence": 0.0, "language": "en"}]


@pytest.mark.slow
def test_lists_lines_and_auto_source(server, offline):
    """A list gets a list; a text's lines are translated apart and joined by newlines
    (CRLF as LF, as `translate` reads a file). With "auto" each text's language is
    detected: English is translated, Spanish answered as it is (LibreTranslate's way)."""
    status, body = server.translate([ENGLISH[2], f"{ENGLISH[3]}\r\n\n{UNSEEN[0]}", ""])
    assert status == 200
    assert body == {"translatedText": [
        offline[ENGLISH[2]], f"{offline[ENGLISH[3]]}\n\n{offline[UNSEEN[0]]}", ""]}
    status, body = server.translate(ENGLISH[4], source="auto")
    assert status == 200
    assert body == {"translatedText": offline[ENGLISH[4]],
                    "detectedLanguage": identified(ENGLISH[4])[0]}
    assert body["detectedLanguage"]["language"] == "en"
    status, body = server.translate([SPANISH[5], ENGLISH[5]], source="auto", format="text")
    assert status == 200
    assert body == {"translatedText": [SPANISH[5], offline[ENGLISH[5]]],
                    "detectedLanguage": [identified(SPANISH[5])[0], identified(ENGLISH[5])[0]]}
    assert [found["language"] for found in body["detectedLanguage"]] == ["es", "en"]


@pytest.mark.slow
def test_a_language_into_itself_is_answered_as_it_is(server):
    """As LibreTranslate answers en -> en; es -> en is a pair this server lacks."""
    assert server.translate(ENGLISH[0], target="en") == (200, {"translatedText": ENGLISH[0]})
    assert server.translate(SPANISH[0], source="es") == (200, {"translatedText": SPANISH[0]})
    status, body = server.translate(SPANISH[0], source="es", target="en")
    assert_error(status, body, 400)
    assert body["error"] == "English (en) is not available as a target language from " \
                            "Spanish (es)"
    status, body = server.translate(SPANISH[0], source="auto", target="en")
    assert_error(status, body, 400)


@pytest.mark.slow
def test_alternatives_are_translates_n_best(server, nbest, offline):
    """alternatives: N is answered from `translate --n-best N+1` with the server's beam
    (raised to N+1): the best first, then the others without repeats, line by line."""
    def others(hyps: list[str], best: str) -> list[str]:
        return [text for i, text in enumerate(hyps[1:], 1)
                if text not in ("", best, *hyps[1:i])]

    for text in (ENGLISH[1], UNSEEN[0]):
        status, body = server.translate(text, alternatives=3)
        assert status == 200
        assert body == {"translatedText": nbest[text][0],
                        "alternatives": others(nbest[text], nbest[text][0])}
    two = f"{ENGLISH[2]}\n{ENGLISH[6]}"
    status, body = server.translate([two, SPANISH[0]], source="auto", alternatives="3")
    assert status == 200
    ranks = [f"{nbest[ENGLISH[2]][k]}\n{nbest[ENGLISH[6]][k]}" for k in range(4)]
    assert body["translatedText"] == [ranks[0], SPANISH[0]]
    assert body["alternatives"] == [others(ranks, ranks[0]), []]
    # LibreTranslate takes a negative count as 0: no alternatives, no such field
    assert server.translate(ENGLISH[1], alternatives=-2) == \
        (200, {"translatedText": offline[ENGLISH[1]]})


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
    assert set(health) == {"status", "model", "waiting", "answered", "model_calls", "documents",
                           "checks_failed"}
    assert health["model"] == run_dir.name  # the run's name, not the server's path to it
    connection = http.client.HTTPConnection(server.host, server.port, timeout=60)
    connection.request("HEAD", "/health")  # a load balancer's probe: the status, no body
    response = connection.getresponse()
    assert (response.status, response.read()) == (200, b"")
    assert response.getheader("Content-Type") == "application/json"
    connection.close()
    status, spec, _ = server.request("GET", "/openapi.json")
    assert status == 200 and {"/translate", "/languages", "/health", "/detect",
                              "/translate_file", "/frontend/settings"} <= set(spec["paths"])
    assert set(spec["paths"]["/health"]) == {"get"}  # HEAD is not part of the API
    assert server.request("GET", "/spec")[:2] == (200, spec)  # LibreTranslate's name for it
    for page in ("/docs", "/redoc"):  # Swagger UI and ReDoc load from a CDN: off by default
        assert_error(*server.request("GET", page)[:2], 404)


@pytest.mark.slow
def test_frontend_settings_have_libretranslates_fields(server, run_dir):
    """The fields Dialect and LibreTranslate's page read at start-up, then the model."""
    status, settings, _ = server.request("GET", "/frontend/settings")
    assert status == 200
    assert settings == {
        "charLimit": MAX_CHARS, "frontendTimeout": 150, "apiKeys": False,
        "keyRequired": False, "suggestions": False, "filesTranslation": True,
        "supportedFilesFormat": [".txt", ".text", ".html", ".htm", ".xhtml", ".md",
                                 ".markdown", ".srt", ".vtt", ".po", ".pot", ".docx"],
        "language": {"source": {"code": "en", "name": "English"},
                     "target": {"code": "es", "name": "Spanish"}},
        "model": {"name": run_dir.name, "checkpoint": "last",
                  "checkpointFile": "step-0000200.safetensors"},
        "alternativesLimit": 3, "fileCharLimit": MAX_FILE_CHARS, "reqLimit": 0}
    status, body, _ = server.request("POST", "/suggest", {"q": "a", "s": "b"})
    assert_error(status, body, 403)
    assert body["error"] == "Suggestions are disabled on this server."


@pytest.mark.slow
def test_the_page_and_its_files_come_from_the_server_alone(server):
    """`/` and its script and style, from the package; the Content-Security-Policy keeps
    the browser from loading anything from elsewhere, and the files name no other site."""
    from transcli.serve.web import FILES, page_files

    shipped = page_files()
    for path, name in (("/", "index.html"), *((f"/static/{n}", n) for n in FILES
                                              if n != "index.html")):
        status, data, headers = server.request("GET", path, raw=True)
        assert (status, data) == (200, shipped[name])
        assert headers["content-type"] == FILES[name]
        assert headers["content-security-policy"].startswith("default-src 'self'")
        named = data.replace(b'xmlns="http://www.w3.org/2000/svg"', b"")  # a name, not a load
        assert not re.search(rb"(https?:)?//[\w.-]+\.\w", named), name  # no other site
    for path in ("/static/nothing.js", "/static/index.html", "/static/../app.js"):
        assert_error(*server.request("GET", path)[:2], 404)


@pytest.mark.slow
def test_cors_only_for_the_origin_given(server):
    """--cors-origin ORIGIN: its pages may call the API (preflight included); others get no
    CORS header, and a refused preflight is a JSON error."""
    status, _, headers = server.request("POST", "/translate", GOOD, {"Origin": ORIGIN})
    assert status == 200 and headers["access-control-allow-origin"] == ORIGIN
    status, _, headers = server.request("OPTIONS", "/translate", headers={
        "Origin": ORIGIN, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"}, raw=True)
    assert status == 200 and headers["access-control-allow-origin"] == ORIGIN
    assert "POST" in headers["access-control-allow-methods"]
    status, _, headers = server.request("POST", "/translate", GOOD,
                                        {"Origin": "https://evil.example"})
    assert status == 200 and "access-control-allow-origin" not in headers
    status, body, _ = server.request("OPTIONS", "/translate", headers={
        "Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
    assert_error(status, body, 400)


@pytest.mark.slow
def test_a_trailing_slash_is_served_not_redirected(server, offline):
    """Starlette's redirect to /translate would name the forged Host in its Location; and
    a server listening on a loopback address answers to its own names only (a page that
    reached it by DNS rebinding names another host)."""
    status, body, headers = server.request(
        "POST", "/translate/", {**GOOD, "q": ENGLISH[7]}, {"Host": "localhost"})
    assert (status, body) == (200, {"translatedText": offline[ENGLISH[7]]})
    assert "location" not in {name.lower() for name in headers}
    assert server.request("GET", "/health/", headers={"Host": "localhost"})[0] == 200
    for path in ("/frontend/settings", "/health", "/translate_file"):
        status, body, headers = server.request("GET", path, headers={"Host": "evil.example"})
        assert status == 400 and "not to evil.example" in body["error"]


# ----------------------------------------------------------------------------- files


@pytest.mark.slow
def test_a_text_file_is_translated_as_translate_translates_it(server, run_dir, tmp_path):
    """A .txt file with a byte-order mark, CRLF, an empty line and no final newline: the
    download is byte for byte `transcli translate -i FILE`'s output, under its own name,
    at an unguessable URL; a Spanish file with source "auto" comes back as it is."""
    data = ("\ufeff" + f"{ENGLISH[0]}\r\n{MULTI}\n\n{UNSEEN[0]}").encode()
    (tmp_path / "notes.txt").write_bytes(data)
    result = run_cli("translate", "-m", run_dir, "--checkpoint", "last",
                     "-i", tmp_path / "notes.txt", "-o", tmp_path / "notes.es")
    assert result.returncode == 0, result.stderr
    urls = []
    for _ in range(2):
        status, body, _ = server.upload("../my notes.txt", data, source="en", target="es")
        assert status == 200 and list(body) == ["translatedFileUrl"], body
        urls.append(body["translatedFileUrl"])
    assert urls[0] != urls[1]
    for url in urls:
        parts = urlsplit(url)
        assert f"{parts.scheme}://{parts.netloc}" == server.url
        token, _, name = parts.path.removeprefix("/download_file/").partition(".")
        assert name == "my_notes.es.txt" and re.fullmatch(r"[\w-]{22,}", token)  # 128 bits
        status, got, headers = server.request("GET", parts.path, raw=True)
        assert (status, got) == (200, (tmp_path / "notes.es").read_bytes())
        assert headers["content-disposition"] == 'attachment; filename="my_notes.es.txt"'
        assert headers["content-type"] == "text/plain; charset=utf-8"
        assert_error(*server.request("GET", parts.path.replace(name, "other.txt"))[:2], 404)
    spanish = "\n".join(SPANISH[:3]).encode()
    status, body, _ = server.upload("nota.txt", spanish + b"\n", source="auto", target="es")
    url = urlsplit(body["translatedFileUrl"]).path
    assert url.endswith(".nota.es.txt")
    assert server.request("GET", url, raw=True)[1] == spanish + b"\n"


def zip_members(data: bytes) -> dict[str, bytes]:
    """A zip's members, name -> bytes (a Word file written twice differs only in the
    archive's timestamps)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


@pytest.mark.slow
def test_every_document_format_is_translated_as_translate_translates_it(server, documents):
    """HTML, Markdown, SubRip, WebVTT, PO and Word files: the download is byte for byte
    `transcli translate -i FILE -o OUT`'s file (a Word file member for member), with its
    format's media type, as a download that runs nothing."""
    from transcli.serve.files import FORMATS

    for name, (data, expected) in documents.items():
        status, body, _ = server.upload(name, data, source="en", target="es")
        assert status == 200, (name, body)
        path = urlsplit(body["translatedFileUrl"]).path
        stem, suffix = name.rsplit(".", 1)
        assert path.endswith(f".{stem}.es.{suffix}")
        status, got, headers = server.request("GET", path, raw=True)
        assert status == 200 and got != data, name
        if suffix == "docx":
            assert zip_members(got) == zip_members(expected)
        else:
            assert got == expected, name
        assert headers["content-type"] == FORMATS[f".{suffix}"].media_type
        assert headers["content-security-policy"] == "sandbox"
        assert headers["x-content-type-options"] == "nosniff"
    subtitles = "1\n00:00:01,000 --> 00:00:02,000\n" + "\n".join(SPANISH[:2]) + "\n"
    status, body, _ = server.upload("pelicula.srt", subtitles.encode(), source="auto",
                                    target="es")
    assert status == 200, body
    path = urlsplit(body["translatedFileUrl"]).path
    assert server.request("GET", path, raw=True)[1] == subtitles.encode()  # Spanish: as it is


@pytest.mark.slow
def test_a_files_characters_are_those_of_its_text(server, documents):
    """--max-file-chars counts the text the model is given, not the markup around it."""
    heavy = f'<p class="{"c" * 20 * MAX_FILE_CHARS}">I like trees.</p>'.encode()
    assert server.upload("heavy.html", heavy, source="en", target="es")[0] == 200
    status, body, _ = server.upload("long.html", f"<p>{'a' * (MAX_FILE_CHARS + 1)}</p>".encode(),
                                    source="en", target="es")
    assert_error(status, body, 400)
    assert body["error"] == f"Invalid request: file ({MAX_FILE_CHARS + 1}) exceeds text limit " \
                            f"({MAX_FILE_CHARS})"


def zip_bomb() -> bytes:
    """A small zip whose member unpacks to 2 MB: more than 256 bytes per allowed character."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"\0" * (2 << 20))
    return out.getvalue()


BAD_FILES = [  # (file name, bytes, the error's words)
    ("bad.po", b'msgid "a"\nmsgstr "b"\nbogus\n', "bad.po: line 3: not a PO line: 'bogus'"),
    ("letter.docx", b"PK\x03\x04 cut", "letter.docx: not a Word document (.docx): not a zip"),
    ("movie.srt", b"1\n00:00:05,000 --> 00:00:01,000\nI like trees.\n",
     "movie.srt: line 2: subtitle 1 ends (00:00:01,000) before it starts"),
    ("movie.vtt", b"WEBVTT\n\n00:05.000 --> 00:01.000\nI like trees.\n",
     "movie.vtt: line 3: cue ends (00:00:01.000) before it starts"),
    ("page.html", b"<p>I like trees.</p>\n<p class='cut", "page.html: line 2, column 1: tag "
     "not closed at the end of the file"),
    ("readme.md", b"# Caf\xe9\n", "readme.md: line 1 is not valid UTF-8"),
    ("notes.odt", b"PK\x03\x04", "file format not supported"),
    ("bomb.docx", zip_bomb(), "bomb.docx: unpacks to 2097152 bytes, more than this server "
     f"unpacks ({256 * MAX_FILE_CHARS}"),
]


@pytest.mark.slow
def test_bad_files_are_one_line_and_nothing_is_kept(server):
    before = server.kept_files()
    for name, data, words in BAD_FILES:
        status, body, _ = server.upload(name, data, source="en", target="es")
        assert_error(status, body, 400)
        assert words in body["error"], body
    assert server.kept_files() == before
    assert server.translate("x")[0] == 200 and "Traceback" not in server.stderr()


@pytest.mark.slow
def test_html_is_translated_as_translate_format_html_translates_it(server, documents):
    """format "html" (what wagtail-localize sends, and LibreTranslate's page for HTML): each
    fragment is `translate --format html`'s output for it, markup and entities as sent;
    a list with "auto" keeps a Spanish fragment as it is; alternatives are none."""
    expected = [documents[f"fragment{k}.html"][1].decode() for k in range(len(FRAGMENTS))]
    for fragment, translated in zip(FRAGMENTS, expected):
        assert server.translate(fragment, format="html") == (200, {"translatedText": translated})
    assert 'href="/x?a=1&amp;b=2"' in expected[2]  # markup and entities as sent
    assert "<p>&copy; 2024 &lt;&gt; &amp;</p>" in expected[2]
    spanish = f"<p>{SPANISH[3]} <i>{SPANISH[4]}</i></p>"
    status, body = server.translate([FRAGMENTS[0], spanish, FRAGMENTS[2]], source="auto",
                                    format="html", alternatives=2)
    assert status == 200
    assert body["translatedText"] == [expected[0], spanish, expected[2]]
    assert [found["language"] for found in body["detectedLanguage"]] == ["en", "es", "en"]
    assert body["alternatives"] == [[], [], []]
    form, kind = multipart({"q": FRAGMENTS[1], "source": "en", "target": "es",
                            "format": "html", "alternatives": "3"}, {})
    status, body, _ = server.request("POST", "/translate", form, {"Content-Type": kind})
    assert (status, body) == (200, {"translatedText": expected[1], "alternatives": []})
    status, body = server.translate(["<p>fine</p>", "<p>I like <b"], format="html")
    assert_error(status, body, 400)
    assert body["error"] == "Invalid request: q[1]: line 1, column 11: tag not closed at the " \
                            "end of the file ('<b'...): is the file complete?"


# ----------------------------------------------------------------------------- refusals

def _form(fields: dict[str, str], files: dict[str, tuple[str, bytes]]
          ) -> tuple[bytes, dict[str, str]]:
    body, kind = multipart(fields, files)
    return body, {"Content-Type": kind}


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
    ("POST", "/translate", {**GOOD, "target": "auto"}, None, 400),
    ("POST", "/translate", {**GOOD, "source": "es", "target": "en"}, None, 400),
    ("POST", "/translate", {**GOOD, "format": "HTML"}, None, 400),
    ("POST", "/translate", {**GOOD, "format": "markdown"}, None, 400),
    ("POST", "/translate", {**GOOD, "format": "html", "q": "<p>\ud800</p>"}, None, 400),
    ("POST", "/translate", {**GOOD, "alternatives": 4}, None, 400),  # > --max-alternatives
    ("POST", "/translate", {**GOOD, "alternatives": "many"}, None, 400),
    ("POST", "/translate", {**GOOD, "alternatives": [1]}, None, 400),
    ("POST", "/translate", {**GOOD, "q": "x" * (MAX_CHARS + 1)}, None, 400),
    ("POST", "/translate", {**GOOD, "q": ["x" * 1000] * 3}, None, 400),
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
    # /detect: LibreTranslate's fields, the same limits
    ("POST", "/detect", {}, None, 400),
    ("POST", "/detect", {"q": ""}, None, 400),
    ("POST", "/detect", {"q": 3}, None, 400),
    ("POST", "/detect", {"q": ["a", 3]}, None, 400),
    ("POST", "/detect", {"q": "x" * (MAX_CHARS + 1)}, None, 400),
    ("POST", "/detect", {"q": "half \ud800"}, None, 400),
    ("POST", "/detect", b'{"q": "x', JSON, 400),
    ("POST", "/detect", b"q=%FF", FORM, 400),
    ("POST", "/detect", b"[" * 100_000, JSON, 413),
    ("GET", "/detect", None, None, 405),
    # /translate_file: a multipart form with one file
    ("POST", "/translate_file", {"source": "en", "target": "es"}, None, 400),
    ("POST", "/translate_file", b"source=en&target=es&file=a", FORM, 400),
    *[("POST", "/translate_file", *_form(fields, files), 400) for fields, files in (
        ({"source": "en", "target": "es"}, {}),  # no file
        ({"source": "en", "target": "es"}, {"file": ("", b"x")}),  # no file name
        ({"source": "en", "target": "es"}, {"file": ("a.pdf", b"x")}),  # not a format read
        ({"source": "en", "target": "es"}, {"file": ("a.txt", b"ok\n\xff\n")}),  # not UTF-8
        ({"source": "en", "target": "es"}, {"file": ("a.txt", b"x" * (MAX_FILE_CHARS + 1))}),
        ({"target": "es"}, {"file": ("a.txt", b"x")}),
        ({"source": "fr", "target": "es"}, {"file": ("a.txt", b"x")}),
        ({"source": "es", "target": "en"}, {"file": ("a.txt", b"x")}),
        ({"source": "en", "target": "es"}, {"file": ("a.txt", b"x"), "q": ("b.txt", b"y")}))],
    ("POST", "/translate_file", *_form({"source": "en", "target": "es", "x": "caf\xe9"},
                                       {"file": ("a.txt", b"x")}), 200),
    ("POST", "/translate_file", b"x" * 200_000,  # over 16 bytes per --max-file-chars
     {"Content-Type": "multipart/form-data; boundary=b"}, 413),
    ("GET", "/translate_file", None, None, 405),
    ("GET", "/download_file/nothing.txt", None, None, 404),
    ("POST", "/download_file/nothing.txt", None, None, 405),
    ("POST", "/spec", None, None, 405),
    ("POST", "/languages", None, None, 405),
    ("POST", "/frontend/settings", None, None, 405),
    ("GET", "/suggest", None, None, 405),
]


@pytest.mark.slow
def test_bad_requests_get_one_line_json_errors(server):
    for method, path, body, headers, expected in BAD_REQUESTS:
        status, answer, _ = server.request(method, path, body, headers)
        if expected == 200:  # a control: the same form, well made
            assert status == 200, answer
            continue
        assert_error(status, answer, expected)
    assert server.translate("x")[0] == 200  # still serving
    assert server.request("GET", "/health")[0] == 200  # its model worker too


@pytest.mark.slow
def test_errors_clients_match_are_in_libretranslates_words(server):
    for fields, expected in (
            ({"source": "en", "target": "es"}, "Invalid request: missing q parameter"),
            ({**GOOD, "target": "zz"}, "zz is not supported"),
            ({**GOOD, "q": "x" * (MAX_CHARS + 1)},
             f"Invalid request: request ({MAX_CHARS + 1}) exceeds text limit ({MAX_CHARS})"),
            ({**GOOD, "alternatives": 4}, "Invalid request: alternatives parameter must be <= 3"),
            ({**GOOD, "alternatives": "x"},
             "Invalid request: alternatives parameter is not a number"),
            ({**GOOD, "format": "markdown"}, "markdown format is not supported")):
        assert server.request("POST", "/translate", fields)[1] == {"error": expected}
    assert server.request("POST", "/detect", {"api": 1})[1] == \
        {"error": "Invalid request: missing q parameter"}
    status, body, _ = server.upload("notes.odt", b"x", source="en", target="es")
    assert body["error"].startswith("Invalid request: file format not supported")


@pytest.mark.slow
def test_the_access_log_has_one_line_per_request_and_no_traceback(server):
    before = server.stderr().count('"POST /translate"')
    for _ in range(3):
        server.translate("x")
    server.request("GET", "/nowhere")
    log = wait_until(lambda: server.stderr().count('"POST /translate"') >= before + 3
                     and server.stderr(), "three more access lines", seen=server.stderr)
    assert "Traceback" not in log and " 500 " not in log
    assert "without --api-key" not in log  # listening on 127.0.0.1 without a key is fine
    assert re.search(r'^\S+ \S+ 127\.0\.0\.1 "POST /translate" 200 [\d.]+ ms$', log, re.M)
    assert re.search(r'^\S+ \S+ 127\.0\.0\.1 "GET /nowhere" 404 [\d.]+ ms$', log, re.M)


# ----------------------------------------------------------------------------- limits


def _answered_in_time(client: LibreTranslateAPI, line: str) -> str:
    """`client`'s translation of `line`, asked again while it is a 504: on a loaded
    machine one line can take longer than a test server's short --timeout."""
    def answered() -> Optional[str]:
        try:
            return client.translate(line)
        except urllib.error.HTTPError as exc:
            if exc.code != 504:
                raise
            return None

    return wait_until(answered, f"{line!r} translated within --timeout")


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
        for path, fields in (("/detect", {"q": "x"}), ("/detect", {"q": "x", "api_key": "no"})):
            assert_error(*server.request("POST", path, fields)[:2], 403)
        assert_error(*server.upload("a.txt", b"x", source="en", target="es")[:2], 403)
        assert_error(*server.upload("a.srt", b"x", source="en", target="es")[:2], 403)
        assert_error(*server.translate("<p>x</p>", format="html")[:2], 403)
        assert server.request("POST", "/detect", {"q": SPANISH[0], "api_key": key})[0] == 200
        assert server.request("GET", "/frontend/settings")[1]["keyRequired"] is True

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
        wait_until(lambda: server.translate(ENGLISH[1], api_key=key)[0] == 200,
                   "an answer once the abandoned work has ended", seen=server.stderr)
        status, body, _ = server.upload("long.txt", "\n".join(long).encode(), source="en",
                                        target="es", api_key=key)
        assert_error(status, body, 504)  # a file's translation has --timeout's time too
        status, body, _ = server.upload("slow.html", b"<" * 100_000, source="en",
                                        target="es", api_key=key)
        assert_error(status, body, 504)  # ... reading it included (seconds: 100,000 tokens)
        assert "Traceback" not in server.stderr()
    finally:
        server.stop()


@pytest.mark.slow
def test_sigterm_finishes_requests_in_flight_then_exits_0(run_dir, tmp_path, offline):
    """Translations and a document's in flight are answered; the translated files' folder
    (in the server's TMPDIR) is removed."""
    (tmp_path / "tmp").mkdir()
    server = Server(run_dir, tmp_path, env={"TMPDIR": str(tmp_path / "tmp")})
    try:
        lines = ENGLISH * 20  # 320 lines per request: a model call each

        def send(number: int) -> tuple[int, Any]:
            if number < 2:
                return server.translate("\n".join(lines))
            page = "".join(f"<p>{line}</p>\n" for line in lines)
            status, body, _ = server.upload("f.html", page.encode(), source="en", target="es")
            return status, list(body)  # its download is gone with the server

        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            pending = [pool.submit(send, n) for n in range(3)]
            wait_until(lambda: server.request("GET", "/health")[1]["waiting"] >= 1,
                       "one request translated, one waiting", seen=server.stderr)
            assert len(list((tmp_path / "tmp").glob("transcli-serve-*"))) == 1
            server.process.send_signal(signal.SIGTERM)
            answers = [future.result(timeout=DEADLINE) for future in pending]
        assert server.process.wait(timeout=DEADLINE) == 0
        expected = "\n".join(offline[line] for line in lines)
        assert answers == [(200, {"translatedText": expected})] * 2 + \
            [(200, ["translatedFileUrl"])]
        assert not list((tmp_path / "tmp").iterdir())
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
    assert "999" in error  # raised before the model loads
    error = one_error_line(run_cli("serve", "-m", run_dir, "--cors-origin", "example.org"))
    assert "--cors-origin 'example.org': give an origin such as https://example.org" in error


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
        wait_until(lambda: running(process, log.read_text) and "warning" in log.read_text(),
                   "the warning", seen=log.read_text)
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


def test_alternatives_are_a_search_of_their_own(run_dir):
    """A request for alternatives is never merged: the plain requests around it are
    model calls of their own (the queue keeps its order), each answered as alone."""
    batcher = Batcher(lambda: load_translator(open_run_dir(run_dir, []), "last", "cpu"),
                      Limits(max_batch_wait=0.5))
    batcher.start()

    async def send_all() -> list[Any]:
        return list(await asyncio.gather(batcher.translate(REQUESTS[0]),
                                         batcher.translate_lines(REQUESTS[1], 3),
                                         batcher.translate(REQUESTS[2])))

    try:
        first, alternatives, last = asyncio.run(send_all())
    finally:
        batcher.stop()
    translator = batcher.translator
    assert translator is not None and batcher.model_calls == 3
    assert [first, last] == [translator.translate(REQUESTS[0]), translator.translate(REQUESTS[2])]
    asked = translator.derived(nbest_decode(translator.decode, 3))
    expected = [[text for text, _ in line.hypotheses]
                for line in asked.translate_lines(REQUESTS[1])]
    assert [[text for text, _ in line.hypotheses] for line in alternatives] == expected
    assert all(len(hyps) == 3 for hyps in expected)
    assert translator.decode.n_best == 1  # the server's own settings again


def test_int8_translates_each_request_alone(run_dir):
    answers, alone, batcher = batched(run_dir, ["decode.quantize=int8"], REQUESTS)
    assert not batcher.merging and batcher.model_calls == 4
    assert answers == alone


@pytest.mark.parametrize("overrides", [
    ["decode.strategy=sample", "decode.temperature=2.0"],  # merged; seeds: each line's index
    ["decode.quantize=int8", "decode.strategy=greedy"],  # alone, in translate's calls
], ids=["sample-merged", "int8-alone"])
def test_a_document_of_two_chunks_is_answered_as_translate_writes_it(run_dir, tmp_path,
                                                                      overrides):
    """1,200 paragraphs cycling through ENGLISH: `translate` reads them in two chunks
    (1,000 pieces, then 200), gives the model each chunk's distinct lines once, numbered on
    from the first chunk's, so that with sampling the second chunk's lines get draws of
    their own. The server's way (the document read whole, one request with its chunks as
    `sizes`, beside another request) writes the same file."""
    from transcli.documents.formats import FORMATS as DOCUMENTS
    from transcli.serve.documents import DocumentThread, read_documents, translated_documents

    page = "".join(f"<p>{ENGLISH[k % len(ENGLISH)]}</p>\n" for k in range(1200)).encode()
    (tmp_path / "page.html").write_bytes(page)
    translate_file(run_dir, "last", str(tmp_path / "page.html"), str(tmp_path / "out.html"),
                   overrides, "cpu")
    batcher = Batcher(lambda: load_translator(open_run_dir(run_dir, overrides), "last", "cpu"),
                      Limits(max_batch_wait=0.2))
    batcher.start()
    thread = DocumentThread("transcli-test", 4)

    async def send() -> tuple[Any, bytes]:
        [document] = await read_documents(thread, [(page, "page.html")], DOCUMENTS["html"],
                                          10**6)
        [written], _ = await asyncio.gather(
            translated_documents([document], batcher.translate, thread),
            batcher.translate(REQUESTS[0]))
        return document, written

    try:
        document, written = asyncio.run(send())
    finally:
        batcher.stop()
    assert [len(lines) for lines in document.lines] == [len(ENGLISH)] * 2
    assert written == (tmp_path / "out.html").read_bytes()
    assert batcher.model_calls == (1 if batcher.merging else 2)



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
