"""`transcli serve`'s web page in a real browser: the system's headless Chromium driven by
playwright (no browser is downloaded), against a real server with the tiny memorised run.

What a person does: type and see the translation follow (the time from the last keystroke
is measured in the page and reported), pick an alternative with the keyboard, copy, see
the counter refuse too long a text, detect Spanish, translate a file and download it,
use the page at a phone's width and by keyboard alone, and read errors in words (the
network gone, then --req-limit's 429). What the page shows is held to what the API
answers the same request. One server and one browser for the module; the rate limit is
spent last.
"""

from __future__ import annotations

import re
import shutil
import threading
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit

import pytest
from helpers import PAIRS
from helpers.memorised import UNSEEN
from helpers.server import Server
from helpers.waiting import DEADLINE

from bench.page_latency import browser, chromium, type_and_time

HOW = ("needs Chromium and playwright: apt-get install chromium chromium-driver (Debian; "
       ".ci/run does it), and the dev extra (pip install -e '.[dev]')")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(chromium() is None, reason=HOW)]
for needed in ("fastapi", "uvicorn", "playwright"):
    pytest.importorskip(needed, reason=HOW)

ENGLISH = [en for en, _ in PAIRS]
SPANISH = [es for _, es in PAIRS]
MAX_CHARS = 300
REQ_LIMIT = 40  # a minute: more than the page's requests before the last test spends it


@pytest.fixture(scope="module")
def calibrated_run(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The memorised run with a confidence fitted on its sentences and unseen ones (sure
    of the first, not of the others), as `transcli calibrate` fits it."""
    from test_confidence import UNSEEN_SPANISH

    from transcli.inference.calibrate import calibrate
    from transcli.inference.translator import load_translator
    from transcli.rundir.run import open_run_dir

    run = tmp_path_factory.mktemp("calibrated") / run_dir.name
    shutil.copytree(run_dir, run)
    translator = load_translator(open_run_dir(run), "last", "cpu")
    calibrate(translator, ENGLISH + UNSEEN, SPANISH + UNSEEN_SPANISH).save(run)
    return run


@pytest.fixture(scope="module")
def server(calibrated_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    started = Server(calibrated_run, tmp_path_factory.mktemp("page"), "--max-chars",
                     str(MAX_CHARS), "--req-limit", str(REQ_LIMIT))
    yield started
    started.stop()


@pytest.fixture(scope="module")
def context() -> Iterator[Any]:
    with browser() as opened:
        yield opened


@pytest.fixture
def page(context: Any, server: Server) -> Iterator[Any]:
    """The page, loaded, its settings read; console errors (a CSP violation, a script
    error) fail the test."""
    opened = context.new_page()
    errors: list[str] = []
    opened.on("console", lambda message: errors.append(message.text)
              if message.type == "error" else None)
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.goto(server.url + "/")
    opened.wait_for_selector("#model:has-text('checkpoint')")
    yield opened
    opened.close()
    assert not [error for error in errors if "429" not in error and "ERR_FAILED" not in error]


def typed(page: Any, text: str) -> float:
    """`type_and_time`, waiting for the translation as long as a busy machine needs."""
    return type_and_time(page, text, timeout_ms=DEADLINE * 1000)


def api(server: Server, text: str, **fields: Any) -> dict[str, Any]:
    """What the API answers the page's request for `text`."""
    status, body = server.translate(text, alternatives=3, format="text", **fields)
    assert status == 200, body
    return body


def test_the_translation_follows_the_typing(page, server, calibrated_run, record_property):
    assert page.inner_text("#model") == f"Model: {calibrated_run.name} · checkpoint last " \
                                        f"(step-0000200.safetensors)"
    milliseconds = typed(page, ENGLISH[1])  # how soon: bench.page_latency measures it
    record_property("first_translation_ms", round(milliseconds, 1))
    print(f"first translation {milliseconds:.1f} ms after the last keystroke")
    assert page.inner_text("#translation") == api(server, ENGLISH[1])["translatedText"]
    assert page.inner_text("#counter") == f"{len(ENGLISH[1])} / {MAX_CHARS} characters"
    page.fill("#source", "")  # an empty box: nothing to translate, nothing shown
    assert page.inner_text("#translation") == "" and page.is_disabled("#copy")


def test_a_translation_the_model_is_unsure_of_is_said_in_words(page, server):
    """The API's confidence, in words beside the translation when it is low; none for a
    sentence the model knows by heart."""
    typed(page, ENGLISH[2])
    assert api(server, ENGLISH[2])["confidence"] > 0.9 and page.is_hidden("#trust")
    typed(page, UNSEEN[2])
    confidence = api(server, UNSEEN[2])["confidence"]
    assert confidence < 0.55, confidence  # fitted on it: an unseen line is not trusted
    page.wait_for_selector("#trust:visible")
    words = "Likely wrong" if confidence < 0.35 else "Rough: parts"
    assert page.inner_text("#trust").startswith(words)


def test_an_alternative_is_picked_by_keyboard_and_copied(page, server, context):
    typed(page, UNSEEN[0])
    answer = api(server, UNSEEN[0])
    choices = page.locator("#alternatives button")
    assert choices.all_inner_texts() == answer["alternatives"] and answer["alternatives"]
    for _ in range(20):  # Tab from the box to the first alternative
        if page.evaluate("document.activeElement.parentElement.parentElement.id") == \
                "alternatives":
            break
        page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    assert page.inner_text("#translation") == answer["alternatives"][0]
    assert choices.all_inner_texts()[0] == answer["translatedText"]  # swapped into the list
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    page.click("#copy")
    page.wait_for_selector("#copied:has-text('Copied.')")
    assert page.evaluate("navigator.clipboard.readText()") == answer["alternatives"][0]


def test_the_counter_refuses_too_long_a_text(page):
    page.fill("#source", "x" * (MAX_CHARS + 1))
    assert page.inner_text("#counter") == f"{MAX_CHARS + 1} / {MAX_CHARS} characters"
    assert "over" in page.get_attribute("#counter", "class")
    error = page.locator("#error")
    error.wait_for()
    assert error.get_attribute("role") == "alert"
    assert error.inner_text() == f"The text is longer than this server translates at once " \
                                 f"({MAX_CHARS} characters): shorten it, or translate it as a file."
    page.fill("#source", ENGLISH[2])
    page.wait_for_selector("#error", state="hidden")


def test_spanish_is_detected_and_shown_as_it_is(page, server):
    page.select_option("#source-language", "auto")
    typed(page, SPANISH[3])
    answer = api(server, SPANISH[3], source="auto")
    assert page.inner_text("#translation") == SPANISH[3] == answer["translatedText"]
    found = answer["detectedLanguage"]
    assert page.inner_text("#detected") == \
        f"Detected: Spanish ({found['confidence']:g}%), shown as it is"


def test_a_file_is_translated_and_downloaded(page, server):
    """Subtitles: the picker offers the formats the server lists, the download is what the
    API gives for the same file, its timings kept and its text in Spanish."""
    formats = server.request("GET", "/frontend/settings")[1]["supportedFilesFormat"]
    assert ".srt" in formats and page.get_attribute("#file", "accept") == ",".join(formats)
    assert page.inner_text("#formats") == f"({', '.join(formats)})"
    data = f"1\n00:00:01,000 --> 00:00:02,500\n{ENGLISH[4]}\n\n" \
           f"2\n00:00:03,000 --> 00:00:04,000\n{ENGLISH[5]}\n".encode()
    page.set_input_files("#file", files=[{"name": "notes.srt", "mimeType": "application/x-subrip",
                                         "buffer": data}])
    page.focus("#file")
    page.keyboard.press("Tab")  # to the button, and press it by keyboard
    assert page.evaluate("document.activeElement.id") == "file-button"
    page.keyboard.press("Enter")
    link = page.locator("#download")
    link.wait_for()
    assert link.inner_text() == "Download notes.es.srt"
    with page.expect_download() as download:
        link.click()
    assert download.value.suggested_filename == "notes.es.srt"
    status, body, _ = server.upload("notes.srt", data, source="en", target="es")
    expected = server.request("GET", urlsplit(body["translatedFileUrl"]).path, raw=True)[1]
    assert Path(download.value.path()).read_bytes() == expected
    assert expected.startswith(b"1\n00:00:01,000 --> 00:00:02,500\n") and SPANISH[4].encode() \
        in expected


def test_every_control_is_reached_by_keyboard(page):
    typed(page, ENGLISH[6])
    page.locator("#alternatives button").first.wait_for()
    page.focus("#source-language")  # the first control; then Tab alone
    reached = ["source-language"]
    for _ in range(12):
        page.keyboard.press("Tab")
        reached.append(page.evaluate(
            "(e => e.id || e.tagName.toLowerCase() + (e.closest('#alternatives') ? "
            "'@alternatives' : ''))(document.activeElement)"))
    order = ["source-language", "source", "copy", "button@alternatives", "file",
             "file-button", "a"]  # the footer's settings link
    positions = [reached.index(name) for name in order]
    assert positions == sorted(positions), reached


def test_the_page_fits_a_phones_width(context, server):
    phone = context.new_page()
    try:
        phone.set_viewport_size({"width": 360, "height": 740})
        phone.goto(server.url + "/")
        phone.wait_for_selector("#model:has-text('checkpoint')")
        typed(phone, ENGLISH[7])
        assert phone.evaluate("document.documentElement.scrollWidth") <= 360
        source = phone.locator("#source").bounding_box()
        translation = phone.locator("#translation").bounding_box()
        assert translation["y"] >= source["y"] + source["height"]  # one under the other
        assert source["width"] >= 280  # a usable width, not squeezed beside the other
    finally:
        phone.close()


def test_errors_are_said_in_words(page, server):
    """The server unreachable (the page's request fails), then past --req-limit (429)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.route("**/translate", lambda route: route.abort())
    page.fill("#source", ENGLISH[8])
    error = page.locator("#error")
    error.wait_for()
    assert re.match(r"Cannot reach the server at 127\.0\.0\.1:\d+: is transcli serve still "
                    r"running\?", error.inner_text())
    page.unroute("**/translate")
    for _ in range(REQ_LIMIT + 1):  # spend this client's allowance
        if server.request("POST", "/detect", {"q": "x"})[0] == 429:
            break
    else:
        raise AssertionError("never limited")
    spent = threading.Event()  # keep it spent: a request comes back every 60/REQ_LIMIT s,
    keeper = threading.Thread(target=_keep_spending, args=(server, spent))  # a slow page
    keeper.start()  # would otherwise get it
    try:  # on a loaded machine the page may still get a request back before the keeper:
        for text in ENGLISH[9:13]:  # then it asks again, with another text
            page.fill("#source", text)
            try:
                page.wait_for_selector("#error:has-text('Too many')", timeout=10_000)
                break
            except PlaywrightTimeout:
                continue
        else:
            raise AssertionError("the page never said it was limited")
    finally:
        spent.set()
        keeper.join()
    assert re.fullmatch(rf"Too many requests from this address \(Slowdown: {REQ_LIMIT} per 1 "
                        rf"minute\): try again in \d+ seconds\.", error.inner_text())


def _keep_spending(server: Server, done: threading.Event) -> None:
    """Ask until `done`, faster than the allowance comes back."""
    while not done.wait(0.2):
        server.request("POST", "/detect", {"q": "x"})
