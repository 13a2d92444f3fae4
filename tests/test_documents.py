"""The document layer (transcli/documents) with stand-ins for the model: the identity
(the round trip: a document comes back byte for byte) and upper-casing (what is
translated and what is kept shows in the output). The real model's side is in
test_documents_cli.py. The sample documents in tests/documents/ were written for these
tests."""

from __future__ import annotations

import html
import io
import random
import re
from html.parser import HTMLParser
from typing import Iterator

import pytest
from helpers import ROOT

from transcli.documents.formats import FORMATS, by_extension, document_format
from transcli.documents.html import events
from transcli.documents.translating import (
    Document,
    aligned_texts,
    read_pieces,
    translate_bytes,
    translate_text,
)
from transcli.documents.units import Tag, Unit, place_tags, render
from transcli.inference.alignment import Alignment
from transcli.system.errors import UserError

SAMPLES = ROOT / "tests" / "documents"
TEXT_SAMPLES = {"html": "page.html", "markdown": "readme.md", "srt": "movie.srt",
                "vtt": "movie.vtt", "po": "app.po"}


def identity(lines: list[str], first: int) -> list[str]:
    return list(lines)


def upper(lines: list[str], first: int) -> list[str]:
    return [line.upper() for line in lines]


def sample(name: str) -> str:
    return (SAMPLES / name).read_bytes().decode("utf-8")


def docx_bytes() -> bytes:
    """A Word document written for the tests: formatted runs, a hyperlink, a table, a
    header and a footer, a comment, a tab and a line break."""
    import docx
    from docx.oxml.ns import qn
    from docx.oxml.parser import OxmlElement

    document = docx.Document()
    document.sections[0].header.paragraphs[0].text = "We live in a small town."
    document.sections[0].footer.paragraphs[0].text = "Page 1"
    paragraph = document.add_paragraph("I ")
    paragraph.add_run("like").bold = True
    paragraph.add_run(" trees.")
    document.add_comment(paragraph.runs, text="Where is the station?", author="A reader")
    link = OxmlElement("w:hyperlink")
    link.set(qn("r:id"), document.part.relate_to(
        "https://example.com", "http://schemas.openxmlformats.org/officeDocument/2006/"
        "relationships/hyperlink", is_external=True))
    run = document.add_paragraph("See ")._p
    inner = OxmlElement("w:r")
    text = OxmlElement("w:t")
    text.text = "the station"
    inner.append(text)
    link.append(inner)
    run.append(link)
    mixed = document.add_paragraph()
    mixed.add_run("Name:\tMy sister").italic = True
    mixed.add_run().add_break()
    mixed.add_run("has two cats.")
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "It is raining in the mountains."
    table.cell(0, 1).text = "42"
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


# ------------------------------------------------------------------ the round trip


@pytest.mark.parametrize("fmt", ["html", "markdown", "srt", "vtt"])
def test_identity_gives_the_file_back_byte_for_byte(fmt):
    text = sample(TEXT_SAMPLES[fmt])
    assert translate_text(text, FORMATS[fmt], identity) == text
    # read as it streams: blocks of any size give the same pieces
    pieces = list(read_pieces(FORMATS[fmt], [text[i:i + 5] for i in range(0, len(text), 5)],
                              "x"))
    assert "".join(render(piece, {}) for piece in pieces) == text


def test_identity_on_plain_text_keeps_line_ends_and_spaces():
    text = "I like trees.\r\n\n  Where is the station?  \nno final newline"
    assert translate_text(text, FORMATS["text"], identity) == text
    assert translate_text(text, FORMATS["text"], upper) == (
        "I LIKE TREES.\r\n\n  WHERE IS THE STATION?  \nNO FINAL NEWLINE")


def test_a_translated_catalogue_comes_back_byte_for_byte():
    """Every message translated (or obsolete): nothing to fill, the file as it was."""
    text = sample("app.po")
    filled = translate_text(text, FORMATS["po"], identity)
    assert translate_text(filled, FORMATS["po"], upper) == filled
    assert translate_bytes(filled.encode(), FORMATS["po"], upper, "x.po") == filled.encode()


def test_identity_fills_each_empty_msgstr_with_its_msgid_and_changes_nothing_else():
    text = sample("app.po")
    expected = (text.replace('msgid "I like trees."\nmsgstr ""',
                             'msgid "I like trees."\nmsgstr "I like trees."')
                .replace('eats an <b>apple</b>."\nmsgstr ""',
                         'eats an <b>apple</b>."\nmsgstr "The boy eats an <b>apple</b>."')
                .replace('msgstr[0] ""\nmsgstr[1] ""',
                         'msgstr[0] "One town"\nmsgstr[1] "%d towns"')
                .replace('"  What a beautiful day!\\n"\nmsgstr ""',
                         '"  What a beautiful day!\\n"\nmsgstr ""\n"We live in a small town.\\n"\n'
                         '"  What a beautiful day!\\n"')
                .replace('closes at eight."\nmsgstr ""',
                         'closes at eight."\nmsgstr "The shop closes at eight."'))
    assert expected != text
    assert translate_text(text, FORMATS["po"], identity) == expected


def _canonical_parts(data: bytes) -> dict[str, bytes]:
    """Each part of a zip: XML parts in canonical form, others as they are."""
    import zipfile

    from lxml import etree

    parts = {}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for name in archive.namelist():
            raw = archive.read(name)
            parts[name] = (etree.tostring(etree.fromstring(raw), method="c14n")
                           if name.endswith((".xml", ".rels")) else raw)
    return parts


def test_identity_gives_a_word_document_with_equal_xml_parts():
    data = docx_bytes()
    assert _canonical_parts(translate_bytes(data, FORMATS["docx"], identity, "x.docx")) == \
        _canonical_parts(data)


# ------------------------------------------------------------------ what is translated


def test_html_text_and_attributes_for_people_are_translated_markup_is_kept():
    page = sample("page.html")
    out = translate_text(page, FORMATS["html"], upper)
    kept = ["<!DOCTYPE html>", '<html lang="en">',
            "p > b { color: #333; } /* <p>I like trees.</p> */",
            'document.write("<p>I like trees.</p>")',
            "<!-- The page's comment: I like trees. -->",
            '<a href="/apple?x=1&amp;y=2" title="AN APPLE">APPLE</a>',
            "<code>make install</code>",
            '<svg width="10" height="10"><title>Icon</title><path d="M0 0L10 10"/>'
            "<![CDATA[ x < y ]]></svg>", "<pre>keep    <b>this</b> as it is</pre>"]
    for piece in kept:
        assert piece in out, piece
    for translated in ["<title>TREES &amp; TOWNS</title>",
                       '<h1 title="THE MAIN TITLE">WHERE IS THE STATION?</h1>',
                       "<p>I <b>LIKE</b> TREES.\n<p>",  # an unclosed <p> ends at the next
                       "CAFÉ MENU © 2024 © &lt;TAGS&gt;<br> WE LIVE IN A SMALL TOWN.</p>",
                       "<li>MY SISTER HAS <i><b>TWO</b> CATS</i>.</li>",
                       '<img src="tree.png" alt="A TALL TREE">',
                       "<td>IT IS RAINING IN THE MOUNTAINS.</td><td>42</td>",
                       'placeholder="SEARCH THE SITE"', 'aria-label="CLOSE THE MENU">X</button>',
                       "<p>STRAY </i> END TAG AND <em>AN OPEN ONE\n</body>"]:
        assert translated in out, translated
    for_people = re.compile(r'((?:alt|title|placeholder|aria-label)=")([^"]*)"')
    assert _tags(out) == [for_people.sub(lambda m: f'{m[1]}{m[2].upper()}"', tag)
                          for tag in _tags(page)]


def _tags(page: str) -> list[str]:
    """Every start and end tag of a page, in order."""
    return [event.raw for event in events([page], "x") if event.kind in ("start", "end",
                                                                          "startend")]


def test_markdown_keeps_code_targets_and_front_matter():
    out = translate_text(sample("readme.md"), FORMATS["markdown"], upper)
    for kept in ["\ufeff---\ntitle: I like trees.\ntags: [a, b]\n---\n",
                 '```python\nprint("I like trees.")\n```', "    indented code: I like trees.",
                 "(https://example.com/read \"A book\")", "`make install`",
                 "<https://example.com/docs>", "[ref]: https://example.com/ref \"The reference\"",
                 "|---------|------:|"]:
        assert kept in out, kept
    for translated in ["# WHERE IS THE *STATION*? #",
                       "THE BOY EATS **AN APPLE** AND [READS](https://example.com/read "
                       "\"A book\") A LONG BOOK.",
                       "> WE LIVE IN A SMALL TOWN. MY SISTER HAS TWO CATS.\n",
                       "![A TALL TREE](tree.png)", "1. IT IS RAINING IN THE MOUNTAINS.",
                       "| THE SHOP CLOSES AT EIGHT. | 8 |", "| A \\| PIPE | 9 |",
                       '<div align="center">PLEASE SPEAK <b>MORE</b> SLOWLY.</div>',
                       "SETEXT HEADING HERE\n-------------------",
                       "[REFERENCE LINK][ref], AN ESCAPED \\* STAR & AN ENTITY.  \n"]:
        assert translated in out, translated


def test_subtitles_keep_numbers_timings_and_line_count():
    srt = translate_text(sample("movie.srt"), FORMATS["srt"], upper)
    assert srt == ("1\r\n00:00:01,000 --> 00:00:03,500\r\nI LIKE <i>TREES</i>.\r\n\r\n"
                   "2\r\n00:00:04,000 --> 00:00:06,250\r\n{\\an8}WHERE IS\r\nTHE STATION?\r\n\r\n"
                   "3\r\n00:01:00,000 --> 00:01:02,000\r\n"
                   "<font color=\"#ff0000\">WHAT A BEAUTIFUL DAY!</font>\r\n\r\n"
                   "4\r\n00:01:03,000 --> 00:01:04,000\r\n42\r\n\r\n")
    vtt = translate_text(sample("movie.vtt"), FORMATS["vtt"], upper)
    source = sample("movie.vtt")
    assert vtt.split("\n")[:10] == source.split("\n")[:10]  # header, NOTE, STYLE, timings
    assert "<v Roger>I LIKE <b>TREES</b> &amp; TOWNS.\n" in vtt
    assert "00:04.000 --> 00:06.250\n" in vtt and vtt.count("STATION?") == 1
    assert len(vtt.split("\n")) == len(source.split("\n"))  # a cue of 2 lines stays 2
    assert "WHAT A <00:00:07.500>BEAUTIFUL DAY!" in vtt


def test_po_fills_empty_msgstrs_keeps_the_rest_and_force_redoes_them():
    out = translate_text(sample("app.po"), FORMATS["po"], upper)
    assert 'msgid "I like trees."\nmsgstr "I LIKE TREES."' in out
    assert '#, fuzzy\nmsgid "Where is the station?"\nmsgstr "¿Dónde está?"' in out
    assert 'msgstr "Mi hermana tiene dos gatos."' in out
    assert 'msgctxt "button"\nmsgid "The boy eats an <b>apple</b>."\nmsgstr "THE BOY EATS AN ' \
           '<b>APPLE</b>."' in out
    assert 'msgstr[0] "ONE TOWN"\nmsgstr[1] "%D TOWNS"' in out
    assert '#~ msgstr "Por favor, habla más despacio."' in out
    forced = translate_text(sample("app.po"), FORMATS["po"], upper, force=True)
    assert '#, fuzzy\nmsgid "Where is the station?"\nmsgstr "WHERE IS THE STATION?"' in forced
    assert 'msgstr "MY SISTER HAS TWO CATS."' in forced
    assert 'msgid ""\nmsgstr ""\n"Project-Id-Version' in forced  # the header, never
    import polib

    catalogue = polib.pofile(out)  # what gettext tools read
    assert catalogue.find("We live in a small town.\n  What a beautiful day!\n").msgstr == \
        "WE LIVE IN A SMALL TOWN.\n  WHAT A BEAUTIFUL DAY!\n"
    assert catalogue.find("Where is the station?").fuzzy


def test_word_runs_keep_their_formatting():
    import docx

    out = docx.Document(io.BytesIO(translate_bytes(docx_bytes(), FORMATS["docx"], upper,
                                                   "x.docx")))
    first = out.paragraphs[0].runs
    assert [(run.text, run.bold) for run in first if run.text] == [
        ("I ", None), ("LIKE", True), (" TREES.", None)]
    assert out.paragraphs[1]._p.xpath("string(.//w:hyperlink)") == "THE STATION"
    assert out.paragraphs[1].text.startswith("SEE ")
    assert out.paragraphs[2].runs[0].italic and "\t" in out.paragraphs[2].text
    assert out.tables[0].cell(0, 0).text == "IT IS RAINING IN THE MOUNTAINS."
    assert out.sections[0].header.paragraphs[0].text == "WE LIVE IN A SMALL TOWN."
    assert [comment.text for comment in out.comments] == ["WHERE IS THE STATION?"]


# ------------------------------------------------------------------ tags in place


def test_tags_go_where_their_words_go_by_position():
    """Hand-computed: 'I like trees.' has 4 tokens, the target 5; the ends of a tag over
    tokens [1, 2) scale to 1.25 and 2.5, rounded to 1 and 3."""
    assert place_tags("I like trees.", [(2, 6)], "Me gustan los árboles.") == [(3, 13)]
    assert place_tags("I like trees.", [(7, 12)], "Me gustan los árboles.") == [(14, 21)]
    assert place_tags("same", [(0, 2)], "same") == [(0, 2)]  # unchanged: as it was


def test_tags_come_back_well_formed_whatever_the_translation():
    """Random nestings of tags over random sentences, translated into random words:
    every tag comes back once, nested as it was."""
    rng = random.Random(7)
    words = ["tree", "the", "a", "station", ",", ".", "day", "is", "big", "!"]
    for _ in range(300):
        source_words = [rng.choice(words) for _ in range(rng.randint(1, 9))]
        page = _random_markup(rng, source_words)
        target = " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
        pieces = list(read_pieces(FORMATS["html"], [f"<p>{page}</p>"], "x"))
        units = [u for piece in pieces for u in piece if isinstance(u, Unit)]
        out = "".join(render(piece, {u.text: target for u in units}) for piece in pieces)
        assert _balanced(out), (page, target, out)
        assert sorted(_tags(out)) == sorted(_tags(f"<p>{page}</p>"))


def _random_markup(rng: random.Random, words: list[str]) -> str:
    out, stack = [], []
    for word in words:
        if rng.random() < 0.3:
            name = rng.choice(["b", "i", "a", "em"])
            out.append(f"<{name}>")
            stack.append(name)
        out.append(word + " ")
        if rng.random() < 0.15:
            out.append("<br>")
        if stack and rng.random() < 0.4:
            out.append(f"</{stack.pop()}>")
    out.extend(f"</{name}>" for name in reversed(stack))
    return "".join(out)


def _balanced(page: str) -> bool:
    """Start and end tags nest (void elements aside), as an HTML parser reads them."""
    stack: list[str] = []
    ok = [True]

    class Check(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag != "br":
                stack.append(tag)

        def handle_endtag(self, tag):
            ok[0] = ok[0] and bool(stack) and stack.pop() == tag

    Check().feed(page)
    return ok[0] and not stack


def words_alignment(source: str, target: str, links: list[int]) -> Alignment:
    """An alignment written by hand: the target's word or mark i linked to the source's
    `links[i]`."""
    def spans(text: str) -> list[tuple[int, int]]:
        return [m.span() for m in re.finditer(r"\w+|[^\w\s]", text)]

    return Alignment(spans(source), spans(target), links)


def test_tags_go_where_the_alignment_says_their_words_went():
    """'red' became 'rojo', after the noun: position puts the tag on 'coche', the
    alignment on 'rojo'; a tag whose words nothing came from stays where position puts
    it; a line break goes between what came from either side of it."""
    source, target = "the red car", "el coche rojo"
    aligned = words_alignment(source, target, [0, 2, 1])
    assert place_tags(source, [(4, 7)], target) == [(3, 8)]
    assert place_tags(source, [(4, 7)], target, aligned) == [(9, 13)]
    nothing = words_alignment(source, target, [0, 2, 2])
    assert place_tags(source, [(4, 7)], target, nothing) == [(3, 8)]
    assert place_tags(source, [(4, 4)], target, aligned) == [(3, 3)]  # "the <br>red car"
    # Nested: <a>the <b>red</b> car</a> keeps <b> inside <a>, around "rojo".
    assert place_tags(source, [(0, 11), (4, 7)], target, aligned) == [(0, 13), (9, 13)]


def test_a_phrase_gets_the_stretch_of_words_that_came_from_it():
    source, target = "I really like green trees.", "Me gustan mucho los árboles verdes."
    aligned = words_alignment(source, target, [0, 2, 1, 4, 4, 3, 5])
    assert place_tags(source, [(14, 25)], target, aligned) == [(16, 34)]  # green trees
    assert place_tags(source, [(2, 8)], target, aligned) == [(10, 15)]  # really: mucho
    assert place_tags(source, [(2, 8), (14, 25)], target, aligned) == [(10, 15), (16, 34)]


def test_a_text_of_several_lines_is_aligned_line_by_line():
    """Each line is translated (and aligned) apart; their alignments, joined, place a tag
    in the second line by meaning."""
    text, translation = "I like\nthe red car", "Me gusta\nel coche rojo"
    unit = Unit(text, text, (Tag(11, 14, ("<b>",), "</b>"),))
    asked = []

    def align(lines, done):
        asked.extend(zip(lines, done))
        return [words_alignment(line, out, [0, 1] if line == "I like" else [0, 2, 1])
                for line, out in zip(lines, done)]

    aligned = aligned_texts([unit], {text: translation}, align)
    assert asked == [("I like", "Me gusta"), ("the red car", "el coche rojo")]
    assert unit.render({text: translation}, aligned) == "Me gusta\nel coche <b>rojo</b>"
    assert unit.render({text: translation}) == "Me gusta\nel <b>coche</b> rojo"


def test_tags_placed_by_any_alignment_come_back_well_formed():
    """Random nestings over random sentences, random translations and random links:
    every tag comes back once, nested as it was, and a tag that held words holds some
    while the translation has words enough."""
    rng = random.Random(11)
    words = ["tree", "the", "a", "station", ",", ".", "day", "is", "big", "!"]
    for _ in range(300):
        page = _random_markup(rng, [rng.choice(words) for _ in range(rng.randint(1, 9))])
        target = " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
        pieces = list(read_pieces(FORMATS["html"], [f"<p>{page}</p>"], "x"))
        units = [u for piece in pieces for u in piece if isinstance(u, Unit)]
        aligned = {u.text: words_alignment(u.text, target, [
            rng.randrange(len(re.findall(r"\w+|[^\w\s]", u.text)))
            for _ in re.findall(r"\w+|[^\w\s]", target)]) for u in units}
        found = {u.text: target for u in units}
        out = "".join(render(piece, found, aligned) for piece in pieces)
        assert _balanced(out), (page, target, out)
        assert sorted(_tags(out)) == sorted(_tags(f"<p>{page}</p>"))
        for unit in units:
            ranges = [(tag.start, tag.end) for tag in unit.tags]
            placed = place_tags(unit.text, ranges, target, aligned[unit.text])
            room = len(re.findall(r"\w+|[^\w\s]", target)) + 1 >= \
                len({end for pair in ranges for end in pair})
            assert not room or all(b < e for (s, t), (b, e) in zip(ranges, placed) if s < t)


def test_a_sentence_with_inline_tags_is_one_unit():
    """The model sees the sentence whole, never its pieces between tags."""
    sent: list[str] = []
    translate_text('<p>I <b>really</b> like <a href="/t">trees</a>.</p>', FORMATS["html"],
                   lambda lines, first: sent.extend(lines) or lines)
    assert sent == ["I really like trees."]
    translate_text("**Bold** words and [a link](http://x.org) here.\n", FORMATS["markdown"],
                   lambda lines, first: sent.extend(lines) or lines)
    assert sent[1:] == ["Bold words and a link here."]


# ------------------------------------------------------------------ streaming


def test_a_page_is_read_as_it_streams():
    """Pieces come while the page is still being read: memory holds a chunk, not the
    page."""
    read = [0]

    def chunks() -> Iterator[str]:
        yield "<html><body>"
        while True:
            read[0] += 1
            if read[0] > 50:
                raise AssertionError("the whole input was read before any piece came")
            yield "<p>I like <b>trees</b>.</p>\n" * 10

    for fmt in ["html", "text"]:
        read[0] = 0
        pieces = read_pieces(FORMATS[fmt], chunks(), "x")
        assert [next(pieces) for _ in range(30)] and read[0] < 10


def test_a_catalogue_is_read_as_it_streams():
    """Entries come a group at a time (polib parses a group at once), not the file."""
    from transcli.documents.po import GROUP

    read = [0]

    def chunks() -> Iterator[str]:
        yield 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        while True:
            read[0] += 1
            assert read[0] < 4 * GROUP, "the whole catalogue was read before any piece came"
            yield f'msgid "I like trees {read[0]}."\nmsgstr ""\n\n'

    pieces = read_pieces(FORMATS["po"], chunks(), "x")
    assert [next(pieces) for _ in range(20)] and read[0] <= GROUP + 1


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("name, content, message", [
    ("cut.html", b"<p>I like trees.</p>\n<p class=\"a", r"cut.html: line 2, column 1: tag not "
     r"closed at the end of the file"),
    ("cut2.html", b"<p>Hi</p><!-- a comment", r"cut2.html: line 1, column 10: comment not "),
    ("nul.html", b"<p>I like\x00 trees</p>", r"nul.html: line 1, column 10: a NUL character"),
    ("bad.html", b"<p>caf\xe9</p>", r"bad.html: line 1 is not valid UTF-8 \(byte 0xe9 at byte 7"),
    ("bad.po", b'msgid "a"\nmsgstr "b"\nbogus line\n', r"bad.po: line 3: not a PO line"),
    ("quote.po", b'msgid "a"\nmsgstr "b\n', r"quote.po: line 2: not a PO line"),
    ("order.po", b'msgstr "b"\nmsgid "a"\n', r"order.po: line 1: syntax error"),
    ("alone.po", b'msgid "a"\nmsgstr "b"\n\nmsgid "c"\n', r"alone.po: line 4: a msgid without "
     r"its msgstr"),
    ("latin.po", b'msgid ""\nmsgstr "Content-Type: text/plain; charset=ISO-8859-1\\n"\n',
     r"latin.po: line 1: the catalogue is in ISO-8859-1"),
    ("time.srt", b"1\n00:00:05,000 --> 00:00:02,000\nHi\n",
     r"time.srt: line 2: subtitle 1 ends \(00:00:02,000\) before it starts"),
    ("junk.srt", b"junk\n\n1\n00:00:01,000 --> 00:00:02,000\nHi\n",
     r"junk.srt: line 1: not a subtitle \(a number, 'HH:MM:SS,mmm --> HH:MM:SS,mmm', its "
     r"text\): 'junk'"),
    ("garbled.srt", b"1\n00:00:01,000 --> 00:00:02,000\nHi\n\n2\n00:00:xx --> 00:00:03\nHo\n",
     r"garbled.srt: line 6: not a subtitle timing"),
    ("time.vtt", b"WEBVTT\n\n00:05.000 --> 00:02.000\nHi\n", r"time.vtt: line 3: cue ends"),
    ("bad.vtt", b"WEBVTT\n\n00:0x.000 --> 00:02.000\nHi\n", r"bad.vtt: line 3: not a valid cue"),
    ("novtt.vtt", b"1\n00:01.000 --> 00:02.000\nHi\n", r"novtt.vtt: line 1: a WebVTT file "),
    ("zip.docx", b"PK not really a zip", r"zip.docx: not a Word document \(.docx\): not a zip"),
])
def test_bad_input_is_one_line_naming_the_file_and_the_place(tmp_path, name, content,
                                                            message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(UserError, match=message):
        Document(by_extension(str(path)), str(path))


def test_a_word_file_that_unpacks_past_the_bound_is_refused_before_it_is_opened(
        tmp_path, monkeypatch):
    """A zip bomb named .docx: its declared sizes are read, nothing is unpacked."""
    import io
    import zipfile

    from transcli.documents import docx

    monkeypatch.setattr(docx, "MAX_UNPACKED", 1 << 20)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"\0" * (2 << 20))
    path = tmp_path / "bomb.docx"
    path.write_bytes(out.getvalue())
    with pytest.raises(UserError, match=r"bomb.docx: unpacks to 2,097,152 bytes, more than a "
                                        r"Word document transcli reads \(1,048,576\)"):
        Document(by_extension(str(path)), str(path))


def test_real_pages_are_read_as_browsers_read_them():
    """What real pages hold is no error: unclosed tags, stray end tags, entities without
    ';', comments, CDATA, an unclosed <script> (runs to the end, as in a browser)."""
    for page in ["<p>One<p>Two &copy 2024<li>Three</b>", "<svg><![CDATA[a<b]]></svg>x",
                 "<p>a < b and c > d</p>", "<script>never closed <p>", "trailing <"]:
        assert translate_text(page, FORMATS["html"], identity) == page


def test_the_format_comes_from_the_extension_or_format():
    assert document_format("page.HTM", "-", None).name == "html"
    assert document_format("news.en", "out.es", None).name == "text"
    assert document_format("-", "-", None).name == "text"
    assert document_format("notes.data", "-", "markdown").name == "markdown"
    with pytest.raises(UserError, match=r"notes.odt: unknown file type '.odt': transcli "
                                        r"translates .txt, .text, .html"):
        document_format("notes.odt", "-", None)
    with pytest.raises(UserError, match=r"out.md: the output is HTML, as the input, but its "
                                        r"name says Markdown: name it .html"):
        document_format("page.html", "out.md", None)
    with pytest.raises(UserError, match=r"--format pdf: not a format transcli translates"):
        document_format("x.txt", "-", "pdf")


def test_entities_in_translations_are_escaped():
    out = translate_text("<p>Fish &amp; chips</p>", FORMATS["html"],
                         lambda lines, first: ["Pescado & <patatas>" for _ in lines])
    assert out == "<p>Pescado &amp; &lt;patatas&gt;</p>"
    assert html.unescape(out[3:-4]) == "Pescado & <patatas>"


def test_each_message_gets_its_own_translation_across_parse_groups():
    """A catalogue of several parse groups, with headers-like, obsolete, plural, fuzzy,
    context and translated entries mixed: each msgstr is its own msgid's translation."""
    import polib

    kinds = ['msgid "Tree {n}."\nmsgstr ""\n', 'msgid "Done {n}"\nmsgstr "Hecho"\n',
             '#, fuzzy\nmsgid "Fuzzy {n}"\nmsgstr ""\n',
             'msgid "One {n}"\nmsgid_plural "Many {n}"\nmsgstr[0] ""\nmsgstr[1] ""\n',
             '#~ msgid "Old {n}"\n#~ msgstr "Viejo"\n', 'msgctxt "k"\nmsgid "Ctx {n}"\nmsgstr ""\n',
             'msgid ""\n"Two {n}\\n"\n"lines"\nmsgstr ""\n', '# a comment\n']
    text = 'msgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n\n' + "".join(
        kinds[(n * 5) % len(kinds)].replace("{n}", str(n)) + "\n" * (n % 2) for n in range(700))
    source = polib.pofile(text)
    out = polib.pofile(translate_text(text, FORMATS["po"], upper))
    assert len(out) == len(source) > 600
    for before, after in zip(source, out):
        assert (after.msgid, after.flags, after.obsolete) == (before.msgid, before.flags,
                                                               before.obsolete)
        if before.msgid_plural and not before.obsolete:
            assert after.msgstr_plural == {0: before.msgid.upper(),
                                           1: before.msgid_plural.upper()}
        elif not before.obsolete:
            assert after.msgstr == (before.msgstr or before.msgid.upper())


@pytest.mark.parametrize("fmt,page", [
    ("html", "<p>" + "<b>" * 3000 + "I like trees.</p>"),
    ("srt", "1\n00:00:01,000 --> 00:00:02,000\n" + "<i>" * 3000 + "I like trees.\n"),
])
def test_thousands_of_nested_inline_tags_are_written_back(fmt, page):
    """Tags nested deeper than Python's recursion limit (a RecursionError before: a
    traceback in translate, a 500 in serve) come back, each once."""
    out = translate_text(page, FORMATS[fmt], upper)
    assert "I LIKE TREES." in out
    assert out.count("<b>" if fmt == "html" else "<i>") == 3000
