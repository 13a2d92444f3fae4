"""`transcli serve` with a run per direction: English to Spanish and Spanish to English
from one server, as LibreTranslate serves both directions of a pair. The runs are the tiny
memorised model and the same sentences memorised the other way (`reverse_run`, its
config's data.src_lang es); the client is LibreTranslate's own Python client where it
has the call."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

import pytest
from helpers import PAIRS, ROOT, TINY_CONFIG
from helpers.server import Server

for needed in ("fastapi", "uvicorn", "libretranslatepy"):
    pytest.importorskip(needed, reason="the serve extra and the dev extra")
pytestmark = pytest.mark.slow

ENGLISH = [en for en, _ in PAIRS]
SPANISH = [es for _, es in PAIRS]


@pytest.fixture(scope="module")
def both(run_dir: Path, reverse_run: Path, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[Server]:
    started = Server(run_dir, tmp_path_factory.mktemp("both"), "-m", str(reverse_run),
                     "--max-alternatives", "2")
    yield started
    started.stop()


def test_languages_lists_each_direction_as_libretranslate_does(both):
    from libretranslatepy import LibreTranslateAPI

    assert LibreTranslateAPI(both.url + "/").languages() == [
        {"code": "en", "name": "English", "targets": ["es"]},
        {"code": "es", "name": "Spanish", "targets": ["en"]}]
    assert "(en to es, es to en; " in both.stderr()


def test_each_direction_is_translated_by_its_run(both):
    from libretranslatepy import LibreTranslateAPI

    client = LibreTranslateAPI(both.url + "/")
    assert client.translate(ENGLISH[0], "en", "es") == SPANISH[0]
    assert client.translate(SPANISH[0], "es", "en") == ENGLISH[0]
    assert client.translate(ENGLISH[1], "en", "en") == ENGLISH[1]  # its own target
    status, body = both.translate([SPANISH[2], SPANISH[3]], source="es", target="en",
                                  alternatives=2)
    assert status == 200 and body["translatedText"] == [ENGLISH[2], ENGLISH[3]]
    # each text's other translations, by the es -> en run's n-best search, never the best
    assert [len(others) for others in body["alternatives"]] == [2, 2]
    for best, others in zip(body["translatedText"], body["alternatives"]):
        assert best not in others and all(others)


def test_auto_routes_each_text_by_its_language(both):
    """A Spanish text with source "auto" and target "en" is translated, not echoed; in a
    list, each text goes to the model of its own language."""
    status, body = both.translate(SPANISH[4], source="auto", target="en")
    assert status == 200 and body["translatedText"] == ENGLISH[4]
    assert body["detectedLanguage"]["language"] == "es"
    status, body = both.translate([SPANISH[5], ENGLISH[5]], source="auto", target="es")
    assert status == 200 and body["translatedText"] == [SPANISH[5], SPANISH[5]]
    assert [found["language"] for found in body["detectedLanguage"]] == ["es", "en"]


def test_a_list_in_two_source_languages_is_one_answer_from_two_runs(
        run_dir: Path, tmp_path: Path, tiny_spm: Path) -> None:
    """A server of English, and French (a third run memorising two French sentences), to
    Spanish: a list of texts in both with source "auto" is translated by both runs at
    once, each text by its own, in one answer (in this process, through `answer`)."""
    import asyncio

    from helpers.memorised import memorised_model

    from transcli.config.loading import load_config, save_config
    from transcli.data.tokenizer import TOKENIZER_FILE
    from transcli.inference.translator import load_translator
    from transcli.rundir.checkpoints import save_weights
    from transcli.rundir.layout import CONFIG_FILE, step_path
    from transcli.rundir.run import open_run_dir
    from transcli.serve.batcher import Batcher
    from transcli.serve.detection import Detector
    from transcli.serve.documents import DocumentThread
    from transcli.serve.limits import Limits
    from transcli.serve.models import Models
    from transcli.serve.protocol import translate_request
    from transcli.serve.translating import answer

    french = [("Nous aimons beaucoup les arbres.", SPANISH[0]),  # (letters of the tiny
              ("Ou est la gare, s'il vous plait ?", SPANISH[1])]  # vocabulary only)
    fr_run = tmp_path / "run-fr-es"
    fr_run.mkdir()
    save_config(load_config(TINY_CONFIG, ["data.src_lang=fr"]), fr_run / CONFIG_FILE)
    (fr_run / TOKENIZER_FILE).write_bytes(tiny_spm.read_bytes())
    save_weights(memorised_model(tiny_spm, tuple(french)), step_path(fr_run, 200))

    def batcher(run: Path) -> Batcher:
        return Batcher(lambda: load_translator(open_run_dir(run), "last", "cpu"), Limits())

    models = Models({("en", "es"): batcher(run_dir), ("fr", "es"): batcher(fr_run)})
    models.start()
    detector, thread = Detector(models.pairs.codes), DocumentThread("test-html", 4)
    try:
        request = translate_request(
            {"q": [french[0][0], ENGLISH[3], french[1][0], SPANISH[4]], "source": "auto",
             "target": "es", "alternatives": 1}, 10_000, 3, models.pairs)
        found = asyncio.run(answer(request, models, detector, thread)).body()
    finally:
        models.stop(wait=30)
        detector.close()
    assert found["translatedText"] == [SPANISH[0], SPANISH[3], SPANISH[1], SPANISH[4]]
    assert [d["language"] for d in found["detectedLanguage"]] == ["fr", "en", "fr", "es"]
    assert [len(others) for others in found["alternatives"]] == [1, 1, 1, 0]
    assert [batcher.answered for batcher in models.all] == [1, 1]  # one request each


def test_html_and_files_go_to_their_direction(both):
    status, body = both.translate(f"<p><b>{SPANISH[6]}</b></p>", source="es", target="en",
                                  format="html")
    assert status == 200 and body["translatedText"] == f"<p><b>{ENGLISH[6]}</b></p>"
    data = f"1\n00:00:01,000 --> 00:00:02,000\n{SPANISH[7]}\n".encode()
    status, answer, _ = both.upload("notas.es.srt", data, source="es", target="en")
    assert status == 200
    url = urlsplit(answer["translatedFileUrl"]).path
    assert url.endswith("notas.en.srt")
    assert both.request("GET", url, raw=True)[1] == \
        f"1\n00:00:01,000 --> 00:00:02,000\n{ENGLISH[7]}\n".encode()
    status, answer, _ = both.upload("notas.es.txt", SPANISH[8].encode(), source="auto",
                                    target="en")
    assert status == 200
    url = urlsplit(answer["translatedFileUrl"]).path
    assert url.endswith("notas.en.txt")  # the language detected, named as a given one
    assert both.request("GET", url, raw=True)[1] == f"{ENGLISH[8]}\n".encode()
    # a tag placed by the es -> en run's alignment of its own translation
    page = "<p>Me <b>gustan</b> los árboles.</p>\n".encode()
    status, answer, _ = both.upload("pagina.html", page, source="es", target="en")
    assert status == 200
    written = both.request("GET", urlsplit(answer["translatedFileUrl"]).path, raw=True)[1]
    assert written.count(b"<b>") == written.count(b"</b>") == 1
    assert re.sub(rb"</?b>", b"", written) == f"<p>{ENGLISH[0]}</p>\n".encode()


def test_two_runs_of_one_direction_or_one_glossary_for_both_are_one_line(
        run_dir: Path, reverse_run: Path, tmp_path: Path) -> None:
    def refusal(*flags: str | Path) -> str:
        done = subprocess.run([sys.executable, "-m", "transcli", "serve", *map(str, flags),
                               "--port", "0"], capture_output=True, text=True, cwd=ROOT,
                              timeout=120)
        assert done.returncode != 0 and done.stdout == ""
        return done.stderr.strip()

    assert refusal("-m", run_dir, "-m", run_dir) == \
        f"transcli: error: --model {run_dir} and --model {run_dir} both translate en to es: " \
        f"give one run per direction"
    terms = tmp_path / "terms.tsv"
    terms.write_text("station\tterminal\n", encoding="utf-8")
    assert refusal("-m", run_dir, "-m", reverse_run, "--glossary", terms) == \
        "transcli: error: --glossary with two runs: a glossary's terms are one direction's; " \
        "set decode.glossary in each run's config.yaml instead"


# ----------------------------------------------------------------------------- the page


def test_the_page_translates_both_ways_and_swaps(both, tmp_path: Path) -> None:
    """In Chromium: Spanish typed with the language detected comes out in English; the
    swap button turns the pair round (the translation becomes the text); a Spanish file
    comes back in English."""
    from bench.page_latency import browser, chromium, type_and_time

    if chromium() is None:
        pytest.skip("needs Chromium: apt-get install chromium chromium-driver")
    pytest.importorskip("playwright", reason="the dev extra")
    with browser() as context:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(both.url + "/")
        page.wait_for_selector("#model:has-text('checkpoint')")
        assert page.inner_text("#pair") == "English → Spanish"
        assert page.eval_on_selector_all("#source-language option", "o => o.map(e => e.value)") \
            == ["en", "es", "auto"]
        page.select_option("#source-language", "auto")
        page.select_option("#target-language", "en")
        type_and_time(page, SPANISH[1], timeout_ms=120_000)
        assert page.inner_text("#translation") == ENGLISH[1]
        assert page.inner_text("#detected").startswith("Detected: Spanish (")
        page.click("#swap")  # English to Spanish now, the English the text
        assert page.input_value("#source-language") == "en"
        assert page.input_value("#target-language") == "es"
        assert page.input_value("#source") == ENGLISH[1]
        page.wait_for_selector(f"#translation:has-text('{SPANISH[1]}')")
        page.select_option("#source-language", "es")
        assert page.input_value("#target-language") == "en"
        page.set_input_files("#file", files=[{"name": "notas.txt", "mimeType": "text/plain",
                                             "buffer": SPANISH[9].encode()}])
        page.click("#file-button")
        link = page.locator("#download")
        link.wait_for()
        with page.expect_download() as download:
            link.click()
        assert download.value.suggested_filename == "notas.en.txt"
        assert Path(download.value.path()).read_bytes() == f"{ENGLISH[9]}\n".encode()
        assert not errors
