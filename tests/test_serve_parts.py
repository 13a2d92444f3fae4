"""`transcli serve`'s parts that need no server, in this process: the per-client rate
limit, the store of translated files, the file formats, the documents' thread and the
zip check, language detection, the n-best settings, the checks of the new flags. Each
is held to hand-computed values or to the library it wraps."""

from __future__ import annotations

import asyncio
import io
import os
import stat
import threading
import zipfile
from dataclasses import replace

import pytest
from helpers.waiting import DEADLINE

from transcli.config.schema import DecodeConfig
from transcli.serve.limits import Limits
from transcli.system.errors import UserError

pytest.importorskip("fastapi", reason="needs the serve extra (pip install 'transcli[serve]')")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# ----------------------------------------------------------------------------- rate limit


def test_a_client_may_send_n_at_once_then_one_every_60_over_n_seconds():
    from transcli.serve.ratelimit import RateLimit, RateLimited

    clock = Clock()
    limit = RateLimit(3, clock)
    assert [limit.wait("a") for _ in range(3)] == [None, None, None]
    assert limit.wait("a") == pytest.approx(20.0)  # 60 / 3 s until one is back
    assert limit.wait("b") is None  # another client has its own allowance
    clock.now += 19.5
    assert limit.wait("a") == pytest.approx(0.5)
    clock.now += 0.5
    assert limit.wait("a") is None and limit.wait("a") == pytest.approx(20.0)
    clock.now += 60  # a minute's rest: all three back
    assert [limit.wait("a") for _ in range(4)][:3] == [None] * 3
    with pytest.raises(RateLimited) as refused:
        limit.check("a")
    assert refused.value.status == 429 and refused.value.retry_after == 20
    assert refused.value.message == "Slowdown: 3 per 1 minute"  # LibreTranslate's words


def test_clients_whose_allowance_is_whole_are_forgotten():
    """The table is pruned as it doubles: clients whose allowance is whole again go."""
    from transcli.serve.ratelimit import RateLimit

    clock = Clock()
    limit = RateLimit(60, clock)  # one request takes a second of a client's allowance
    for number in range(1500):
        assert limit.wait(f"a{number}") is None
    assert len(limit._due) == 1500  # pruned at 1024, but every one was still counting
    clock.now += 2
    for number in range(548):  # the 2048th entry prunes: the a's are whole again
        assert limit.wait(f"b{number}") is None
    assert len(limit._due) == 548 and "a0" not in limit._due


# ----------------------------------------------------------------------------- files


def test_the_file_store_is_bounded_in_count_bytes_and_age(monkeypatch):
    from transcli.serve import files

    monkeypatch.setattr(files, "MAX_FILES", 3)
    monkeypatch.setattr(files, "MAX_BYTES", 100)
    clock = Clock()
    store = files.FileStore(clock)
    try:
        assert stat.S_IMODE(os.stat(store.folder).st_mode) == 0o700  # the server's alone
        keys = [store.put(bytes([n]) * 10, f"f{n}.es.txt", "text/plain") for n in range(4)]
        assert len(set(keys)) == 4 and all(len(key.split(".")[0]) >= 22 for key in keys)
        assert store.get(keys[0]) is None  # the oldest went to make room for the 4th
        stored, data = store.get(keys[3])
        assert data == bytes([3]) * 10 and stored.name == "f3.es.txt"
        assert len(os.listdir(store.folder)) == 3
        big = store.put(b"x" * 90, "big.txt", "text/plain")  # 100 bytes: two must go
        assert [store.get(key) is not None for key in keys[1:]] == [False, False, True]
        clock.now += files.KEEP_SECONDS + 1
        assert store.get(big) is None and os.listdir(store.folder) == []
        assert store.get("../../etc/passwd") is None
    finally:
        store.close()
    assert not store.folder.exists()


@pytest.mark.parametrize("name, safe, translated", [
    ("notes.txt", "notes.txt", "notes.es.txt"),
    ("../../etc/passwd.txt", "passwd.txt", "passwd.es.txt"),
    ("C:\\Users\\me\\my notes.TXT", "my_notes.TXT", "my_notes.es.TXT"),
    (".hidden.txt", "hidden.txt", "hidden.es.txt"),
    ("año ñ.txt", "año_ñ.txt", "año_ñ.es.txt"),
    ("x" * 300 + ".txt", "x" * 96 + ".txt", "x" * 96 + ".es.txt"),
    # "..txt" came back as "txt.es", "日本語.txt" as "___.es.txt", "x.en.vtt" as "x.en.es.vtt"
    ("..txt", "file.txt", "file.es.txt"),
    ("日本語.txt", "日本語.txt", "日本語.es.txt"),
    ("talk.en.vtt", "talk.en.vtt", "talk.es.vtt"),
    ("a\u202eb\x00c.srt", "a_b_c.srt", "a_b_c.es.srt"),
])
def test_file_names_are_made_plain(name, safe, translated):
    from transcli.serve.files import safe_name, translated_name

    assert safe_name(name) == safe and translated_name(name, "es") == translated


def test_a_download_name_outside_ascii_is_given_both_ways():
    from transcli.serve.files import disposition

    assert disposition("notes.es.txt") == 'attachment; filename="notes.es.txt"'
    assert disposition("日本語.es.txt") == ("attachment; filename=\"___.es.txt\"; "
                                          "filename*=UTF-8''%E6%97%A5%E6%9C%AC%E8%AA%9E.es.txt")


def test_every_format_translate_reads_is_taken_by_its_extensions():
    """The table /translate_file takes files by, and /frontend/settings lists: the
    document layer's formats and their extensions, each with its media type."""
    from transcli.documents.formats import FORMATS as DOCUMENTS
    from transcli.documents.formats import by_extension
    from transcli.serve.files import FORMATS, file_format
    from transcli.serve.protocol import ApiError

    assert {fmt.document.name for fmt in FORMATS.values()} == set(DOCUMENTS) == {
        "text", "html", "markdown", "srt", "vtt", "po", "docx"}
    for suffix, fmt in FORMATS.items():
        assert by_extension(f"a{suffix}") is fmt.document  # as `translate -i` reads it
        assert file_format(f"A{suffix.upper()}") is fmt
    assert FORMATS[".docx"].media_type.startswith("application/vnd.openxmlformats")
    assert FORMATS[".htm"].media_type == "text/html; charset=utf-8"
    for name in ("notes.odt", "notes", "notes.txt.gz", "notes.en"):  # translate reads the last 3
        with pytest.raises(ApiError, match="file format not supported") as refused:
            file_format(name)
        assert refused.value.status == 400


def _zip(members: dict[str, int]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, size in members.items():
            archive.writestr(name, b"a" * size)
    return out.getvalue()


def test_a_zip_is_refused_past_what_it_may_unpack_to():
    from transcli.serve.documents import check_archive

    data = _zip({"a.xml": 600, "b.xml": 400})  # 1,000 bytes unpacked, far fewer packed
    assert len(data) < 1000
    check_archive(data, "x.docx", 1000)
    with pytest.raises(UserError, match=r"^x.docx: unpacks to 1000 bytes, more than this "
                                        r"server unpacks \(999, 256 bytes per character"):
        check_archive(data, "x.docx", 999)
    check_archive(b"not a zip", "x.docx", 0)  # the document layer says what it is


def test_the_documents_thread_runs_one_job_at_a_time_and_drops_abandoned_ones():
    """Results and errors come back to the waiting request; past its queue a job is
    refused at once; a job whose request stopped waiting before it started never runs and
    frees its place in the queue at once. `busy` counts the jobs running and queued.
    (A task's first step, up to its first wait, runs at the event loop's next turn:
    `sleep(0)`.)"""
    from transcli.serve.batcher import QueueFull
    from transcli.serve.documents import DocumentThread

    thread = DocumentThread("transcli-test", max_queue=1)
    started, release, ran = threading.Event(), threading.Event(), []

    def held() -> str:
        started.set()
        release.wait(DEADLINE)
        ran.append("held")
        return "held"

    def fails() -> None:
        raise UserError("bad document")

    async def scenario() -> None:
        first = asyncio.create_task(thread.run(held))
        assert await asyncio.to_thread(started.wait, DEADLINE), "the first job never started"
        assert thread.busy == 1  # taken by the thread: the queue is empty again
        second = asyncio.create_task(thread.run(lambda: ran.append("dropped")))
        await asyncio.sleep(0)
        assert thread.busy == 2  # the second is queued
        with pytest.raises(QueueFull):  # the queue holds one
            await thread.run(lambda: None)
        second.cancel()  # its request stopped waiting
        with pytest.raises(asyncio.CancelledError):  # ... and has seen that it did
            await second
        assert thread.busy == 1  # the cancelled job's place is free at once
        third = asyncio.create_task(thread.run(lambda: ran.append("third")))
        await asyncio.sleep(0)
        assert thread.busy == 2 and not third.done()  # queued, not refused
        release.set()
        assert await first == "held"
        await third
        with pytest.raises(UserError, match="bad document"):
            await thread.run(fails)
        assert await thread.run(lambda: 42) == 42
        assert thread.busy == 0

    asyncio.run(scenario())
    assert ran == ["held", "third"]


def test_a_document_alone_goes_to_the_model_in_its_chunks():
    from transcli.serve.batcher import Job, _calls

    lines = [f"l{k}" for k in range(2500)]
    job = Job(lines[:6], None, None, sizes=[2, 0, 4])  # type: ignore[arg-type]
    assert list(_calls(job)) == [lines[:2], lines[2:6]]
    assert [len(chunk) for chunk in _calls(Job(lines, None, None))] == [1000, 1000, 500]  # type: ignore[arg-type]


def test_a_document_whose_units_were_kept_says_so_on_stderr(capsys):
    """A catalogue whose placeholder the "model" drops: the unit is repaired or kept, and
    the server says how many, naming the document (as `translate` does)."""
    from transcli.documents.formats import FORMATS
    from transcli.serve.documents import DocumentThread, read_documents, translated_documents

    catalogue = ('#, python-format\nmsgid "%(count)d files in %(name)s"\nmsgstr ""\n\n'
                 'msgid "I like trees."\nmsgstr ""\n')

    async def translate(lines, sizes):
        return ["archivos en" if "files" in line else "Me gustan los árboles." for line in lines]

    async def scenario():
        thread = DocumentThread("documents", 4)
        documents = await read_documents(thread, [(catalogue, "app.po")], FORMATS["po"], 10_000)
        return (await translated_documents(documents, translate, thread))[0], \
            documents[0].document

    written, document = asyncio.run(scenario())
    assert 'msgstr "Me gustan los árboles."' in written.decode()
    assert document.counts.translated == 1 and document.counts.repaired + document.counts.kept == 1
    assert f"transcli: app.po: {document.counts.summary()}" in capsys.readouterr().err


# ----------------------------------------------------------------------------- detection


def test_detection_is_py3langids_between_english_and_spanish():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    from transcli.serve.detection import READ_CHARS, Detector

    reference = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    reference.set_languages(["en", "es"])
    detector = Detector(["en", "es"])
    try:
        for text in ("Where is the station?", "¿Dónde está la estación?", "Bonjour à tous",
                     "The dog sleeps under the table.\nEl perro duerme."):
            assert detector.detect(text) == [
                {"confidence": float(round(100 * p)), "language": code}
                for code, p in reference.rank(text)]
        for text in ("", "12345 :-)", "🙂🙂"):  # nothing to go by: LibreTranslate's answer
            assert detector.detect(text) == [{"confidence": 0.0, "language": "en"}]
        spanish = "La profesora abrió la ventana. " * 100
        assert detector.detect(spanish[:READ_CHARS] + "I like trees. " * 1000)[0][
            "language"] == "es"  # only the start is read
        assert asyncio.run(detector.detect_each(["I like trees.", "Me gustan los árboles."])) \
            == [detector.detect("I like trees.")[0], detector.detect("Me gustan los árboles.")[0]]
    finally:
        detector.close()


# ----------------------------------------------------------------------------- settings


@pytest.mark.parametrize("decode, strategy, beams, n_best", [
    (DecodeConfig(strategy="greedy"), "beam", 4, 4),  # greedy has one hypothesis
    (DecodeConfig(strategy="beam", beam_size=2), "beam", 4, 4),
    (DecodeConfig(strategy="beam", beam_size=6), "beam", 6, 4),
    (DecodeConfig(strategy="sample", beam_size=2), "sample", 2, 4),  # 4 samples
])
def test_alternatives_search_as_translate_n_best(decode, strategy, beams, n_best):
    from transcli.serve.batcher import nbest_decode

    found = nbest_decode(decode, 4)
    assert (found.strategy, found.beam_size, found.n_best) == (strategy, beams, n_best)
    found.validate()  # settings `translate --n-best 4` accepts
    assert found == replace(decode, strategy=strategy, beam_size=beams, n_best=n_best)


def test_the_new_flags_are_checked():
    from transcli.serve.server import check_cors_origin

    for value in (-1, 17):
        with pytest.raises(UserError, match=rf"--max-alternatives {value}: must be in \[0, 16\]"):
            Limits(max_alternatives=value)
    with pytest.raises(UserError, match="--req-limit -1: must be at least 0"):
        Limits(req_limit=-1)
    with pytest.raises(UserError, match="--max-file-chars 0: must be at least 1"):
        Limits(max_file_chars=0)
    assert Limits(max_file_chars=10).file_body_bytes() == 160 + 64 * 1024
    assert Limits(max_file_chars=10**9).file_body_bytes() == 32 << 20
    for origin in (None, "*", "https://example.org", "http://localhost:8080"):
        check_cors_origin(origin)
    for origin in ("example.org", "https://example.org/", "https://a.org/x", "ftp://a.org",
                   "https://a b"):
        with pytest.raises(UserError, match="--cors-origin"):
            check_cors_origin(origin)


def test_a_removed_file_folder_is_made_again_or_said(monkeypatch, tmp_path):
    """A cleaner of /tmp removed the folder: every /translate_file answered 500 from then
    on, after translating the file, while /health said ok."""
    import shutil
    import tempfile

    from transcli.serve.files import FileStore

    store = FileStore()
    try:
        shutil.rmtree(store.folder)
        assert store.problem() is None and store.folder.is_dir()
        assert store.get(store.put(b"hola", "a.es.txt", "text/plain"))[1] == b"hola"
        shutil.rmtree(store.folder)
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
        assert "no folder for translated files" in store.problem()
    finally:
        store.close()


@pytest.mark.parametrize("host, local, problem", [
    (b"127.0.0.1:5000", True, None), (b"localhost", True, None), (b"[::1]:80", True, None),
    (b"", True, None), (b"evil.example", True, "answers to localhost, not to evil.example"),
    (b"evil.example:5000", False, None), (b"translate.example.org", True, None),
    (b"evil.example/x?y", False, "not a host name"), (b"a b", False, "not a host name"),
])
def test_the_host_header_names_a_host_the_server_answers_to(host, local, problem):
    """A page of another site that a browser reaches by DNS rebinding names its own
    host: a server listening on a loopback address refuses it (unless --allow-host names
    it); a Host that is no host name never reaches the URL of a translated file."""
    from transcli.serve.app import host_problem
    from transcli.serve.settings import Settings

    settings = Settings("run", "last", "step-1.safetensors", local_only=local,
                        hosts=("translate.example.org",))
    found = host_problem(host, settings)
    assert (found is None) if problem is None else (problem in found)
