"""`transcli translate` on documents with a real trained model: the tiny model that
memorised `PAIRS` (tests/conftest.py's `run_dir`), so that its sentences come back in
Spanish, in place, with their markup around the right words. The document layer's own
tests (round trip, what is kept) are in test_documents.py.

Inline tags go where the model's attention says their words went (`Translator.alignments`);
the memorised model's attention is no guide to that (it learnt 16 sentences by heart, not
which word gives which), so the tests of what is kept and where run with tags placed by
position (`by_position`: the fallback when there is no alignment), and those of the
attention's part give it alignments written by hand or check what holds whatever it says."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest
from helpers import ROOT
from helpers.cli import one_error_line, run_cli
from test_documents import docx_bytes

from transcli.cli.translate import translate_file
from transcli.inference.translator import Translator
from transcli.system.errors import UserError

SAMPLES = ROOT / "tests" / "documents"


@pytest.fixture
def by_position(monkeypatch: pytest.MonkeyPatch) -> None:
    """No alignment from the model: tags placed by position."""
    monkeypatch.setattr(Translator, "alignments", lambda self, lines, done: [None] * len(lines))


def translated(run_dir: Path, source: Path, out: Path, *sets: str, fmt: str | None = None
               ) -> str:
    translate_file(run_dir, "last", str(source), str(out), list(sets), "cpu", fmt=fmt)
    return out.read_bytes().decode("utf-8")


def test_html(run_dir, tmp_path, capsys, by_position):
    page = (SAMPLES / "page.html").read_text(encoding="utf-8")
    out = translated(run_dir, SAMPLES / "page.html", tmp_path / "page.es.html")
    assert re.search(r'<h1 title="[^"<>]*">¿Dónde está la estación\?</h1>', out)
    assert "<p>Me <b>gustan los</b> árboles.\n<p>" in out
    assert "<li>Mi hermana tiene <i><b>dos</b> gatos</i>.</li>" in out
    assert "<td>Está lloviendo en las montañas.</td><td>42</td>" in out
    for kept in ["<script>\n  if (a < b && c > d) { document.write(\"<p>I like trees.</p>\"); }",
                 "<!-- The page's comment: I like trees. -->", "<pre>keep    <b>this</b>",
                 "<code>make install</code>", '<img src="tree.png" alt="']:
        assert kept in out
    assert out.count("<") == page.count("<")  # every tag, comment and CDATA once
    progress = capsys.readouterr().err.replace("\r", "\n")
    # Units: the title, h1 and its title attribute, 5 paragraphs, 2 list items, a cell,
    # the form's input and button (their placeholder and aria-label inside).
    assert "12/12 [" in progress and "unit/s" in progress


def test_markdown(run_dir, tmp_path, by_position):
    out = translated(run_dir, SAMPLES / "readme.md", tmp_path / "readme.es.md",
                     "decode.split_sentences=true")
    assert "# ¿Dónde está la *estación*? #\n" in out
    assert "> Vivimos en un pueblo pequeño. Mi hermana tiene dos gatos.\n" in out
    assert "1. Está lloviendo en las montañas.\n" in out
    assert "| La tienda cierra a las ocho. | 8 |" in out
    assert '```python\nprint("I like trees.")\n```' in out
    assert out.startswith("\ufeff---\ntitle: I like trees.\n")


def test_subtitles(run_dir, tmp_path, by_position):
    srt = translated(run_dir, SAMPLES / "movie.srt", tmp_path / "movie.es.srt")
    assert srt == ("1\r\n00:00:01,000 --> 00:00:03,500\r\nMe gustan los <i>árboles</i>.\r\n\r\n"
                   "2\r\n00:00:04,000 --> 00:00:06,250\r\n{\\an8}¿Dónde está\r\nla estación?\r\n"
                   "\r\n3\r\n00:01:00,000 --> 00:01:02,000\r\n"
                   "<font color=\"#ff0000\">¡Qué día tan bonito!</font>\r\n\r\n"
                   "4\r\n00:01:03,000 --> 00:01:04,000\r\n42\r\n\r\n")
    vtt = translated(run_dir, SAMPLES / "movie.vtt", tmp_path / "movie.es.vtt")
    assert "00:04.000 --> 00:06.250\n¿Dónde está\nla estación?\n" in vtt
    assert "00:00:07.000 --> 00:00:08.000\n¡Qué <00:00:07.500>día tan bonito!\n" in vtt
    assert "NOTE This note stays as it is:\nI like trees.\n" in vtt


def test_po(run_dir, tmp_path, by_position):
    import polib

    out = translated(run_dir, SAMPLES / "app.po", tmp_path / "app.es.po")
    catalogue = polib.pofile(out)
    assert catalogue.find("I like trees.").msgstr == "Me gustan los árboles."
    assert catalogue.find("The boy eats an <b>apple</b>.", msgctxt="button").msgstr == \
        "El niño come una <b>manzana</b>."
    assert catalogue.find("We live in a small town.\n  What a beautiful day!\n").msgstr == \
        "Vivimos en un pueblo pequeño.\n  ¡Qué día tan bonito!\n"
    shop = catalogue.find("The shop closes at eight.")
    assert shop.msgstr == "La tienda cierra a las ocho." and shop.fuzzy
    assert catalogue.find("Where is the station?").msgstr == "¿Dónde está?"  # kept
    assert all(catalogue.find("One town").msgstr_plural.values())
    forced = tmp_path / "forced.po"
    translate_file(run_dir, "last", str(SAMPLES / "app.po"), str(forced), [], "cpu", force=True)
    assert polib.pofile(str(forced)).find("Where is the station?").msgstr == \
        "¿Dónde está la estación?"


def test_docx(run_dir, tmp_path, by_position):
    import docx

    source = tmp_path / "letter.docx"
    source.write_bytes(docx_bytes())
    translate_file(run_dir, "last", str(source), str(tmp_path / "carta.docx"), [], "cpu")
    document = docx.Document(str(tmp_path / "carta.docx"))
    runs = document.paragraphs[0].runs
    assert [(run.text, run.bold) for run in runs if run.text] == [
        ("Me ", None), ("gustan los", True), (" árboles.", None)]
    assert document.tables[0].cell(0, 0).text == "Está lloviendo en las montañas."
    assert document.sections[0].header.paragraphs[0].text == "Vivimos en un pueblo pequeño."
    assert [comment.text for comment in document.comments] == ["¿Dónde está la estación?"]


def test_a_pipe_is_text_unless_format_says_otherwise(run_dir, tmp_path, monkeypatch,
                                                    by_position):
    page = "<p>I <b>like</b> trees.</p>\n"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(page.encode())))
    out = translated(run_dir, Path("-"), tmp_path / "out.html", fmt="html")
    assert out == "<p>Me <b>gustan los</b> árboles.</p>\n"


def test_tags_go_where_the_alignment_says(run_dir, tmp_path, monkeypatch):
    """Given an alignment that says 'like' became 'árboles' (by hand: the memorised
    model's own says nothing that sure), the tag goes there, where position would not
    put it."""
    from transcli.inference.alignment import Alignment

    def alignments(self, lines, done):
        assert lines == ["I like trees."] and done == ["Me gustan los árboles."]
        # Source words I, like, trees, "."; target words Me, gustan, los, árboles, ".".
        return [Alignment([(0, 1), (2, 6), (7, 12), (12, 13)],
                          [(0, 2), (3, 9), (10, 13), (14, 21), (21, 22)], [0, 2, 2, 1, 3])]

    monkeypatch.setattr(Translator, "alignments", alignments)
    source = tmp_path / "page.html"
    source.write_text("<p>I <b>like</b> trees.</p>\n")
    assert translated(run_dir, source, tmp_path / "out.html") == \
        "<p>Me gustan los <b>árboles</b>.</p>\n"


def test_tags_placed_by_the_models_attention_hold_words_it_linked(run_dir, tmp_path):
    """With the memorised model's own attention: every tag comes back once, well-formed,
    around a stretch of the translation that holds a piece the model linked to the tag's
    words (or, where it linked none, placed by position: the translation unchanged)."""
    from transcli.inference.translator import load_translator
    from transcli.rundir.run import open_run_dir

    page = ("<p>I <b>like</b> trees.</p>\n<p>The boy eats an <a href=\"/x\">apple</a>.</p>\n"
            "<p>My sister has <i><b>two</b> cats</i>.</p>\n")
    source = tmp_path / "page.html"
    source.write_text(page)
    out = translated(run_dir, source, tmp_path / "out.html").splitlines()
    plain = [re.sub(r"<[^>]*>", "", line) for line in page.splitlines()]
    done = [re.sub(r"<[^>]*>", "", line) for line in out]
    assert done == ["Me gustan los árboles.", "El niño come una manzana.",
                    "Mi hermana tiene dos gatos."]
    assert [re.findall(r"<[^>]*>", line) for line in out] == \
        [re.findall(r"<[^>]*>", line) for line in page.splitlines()]
    translator = load_translator(open_run_dir(run_dir, []), "last", "cpu")
    for tagged, line, translation, alignment in zip(
            page.splitlines(), out, done, translator.alignments(plain, done)):
        start, end = _inner(tagged)
        held = _inner(line)
        assert held[0] < held[1]
        linked = [(b, e) for (b, e), k in zip(alignment.target, alignment.links)
                  if b < e and alignment.source[k][0] < end and alignment.source[k][1] > start]
        assert not linked or any(b < held[1] and e > held[0] for b, e in linked), \
            (tagged, line, [translation[b:e] for b, e in linked])


def test_word_runs_share_the_translation_by_the_attention(run_dir, tmp_path):
    """A Word file through the attention's path: its runs still hold the whole
    translation between them, the bold one some of it."""
    import docx

    source = tmp_path / "letter.docx"
    source.write_bytes(docx_bytes())
    translate_file(run_dir, "last", str(source), str(tmp_path / "carta.docx"), [], "cpu")
    runs = docx.Document(str(tmp_path / "carta.docx")).paragraphs[0].runs
    assert "".join(run.text for run in runs) == "Me gustan los árboles."
    assert [run.text.strip() != "" for run in runs if run.bold] == [True]


def _inner(line: str) -> tuple[int, int]:
    """Where the innermost first tag's words are in the line's text (tags removed)."""
    match = re.search(r"<(b|a)\b[^>]*>([^<]*)<", line)
    before = len(re.sub(r"<[^>]*>", "", line[:match.start(2)]))
    return before, before + len(match.group(2))


def test_output_rules_are_those_of_text(run_dir, tmp_path):
    """-o never names the input; a user's file is never replaced, transcli's own output
    is; bad input leaves no output file."""
    source = tmp_path / "page.html"
    shutil.copy(SAMPLES / "page.html", source)
    with pytest.raises(UserError, match="is also an input of this command"):
        translate_file(run_dir, "last", str(source), str(source), [], "cpu")
    mine = tmp_path / "mine.html"
    mine.write_text("my own page\n")
    with pytest.raises(UserError, match="exists and was not written by transcli"):
        translate_file(run_dir, "last", str(source), str(mine), [], "cpu")
    assert mine.read_text() == "my own page\n"
    out = tmp_path / "out.html"
    for _ in range(2):  # written, then replaced: it is transcli's
        translate_file(run_dir, "last", str(source), str(out), [], "cpu")
    broken = tmp_path / "broken.html"
    broken.write_text("<p>I like trees.</p>\n<p class='cut")
    with pytest.raises(UserError, match="broken.html: line 2, column 1: tag not closed"):
        translate_file(run_dir, "last", str(broken), str(tmp_path / "none.html"), [], "cpu")
    assert not (tmp_path / "none.html").exists()
    for missing, message in [(tmp_path / "gone.html", "gone.html: file not found"),
                             (tmp_path, "is a directory")]:
        with pytest.raises(UserError, match=message):
            translate_file(run_dir, "last", str(missing), "-", [], "cpu", fmt="html")
    with pytest.raises(UserError, match="--n-best works on plain text"):
        translate_file(run_dir, "last", str(source), "-", ["decode.n_best=2",
                                                           "decode.beam_size=2"], "cpu")


@pytest.mark.slow
def test_the_command_says_bad_input_in_one_line(run_dir, tmp_path):
    (tmp_path / "notes.odt").write_bytes(b"PK\x03\x04")
    (tmp_path / "bad.po").write_text('msgid "a"\nmsgstr "b"\nbogus\n')
    for source, message in [("notes.odt", "unknown file type '.odt'"),
                            ("bad.po", "bad.po: line 3: not a PO line: 'bogus'")]:
        result = run_cli("translate", "-m", run_dir, "--checkpoint", "last", "-i",
                         tmp_path / source, "-o", tmp_path / "out")
        assert message in one_error_line(result)
        assert not (tmp_path / "out").exists()
    result = run_cli("translate", "-m", run_dir, "--checkpoint", "last", "--format", "srt",
                     stdin="1\n00:00:01,000 --> 00:00:02,000\nI like trees.\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "1\n00:00:01,000 --> 00:00:02,000\nMe gustan los árboles.\n"
