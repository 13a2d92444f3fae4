"""What a file's structure keeps through translation, as the programs that read the file
read it: WebVTT cues as WebVTT parsers find them, a Word file's zip member for member,
its footnotes and endnotes translated, its hyperlinks never emptied."""

from __future__ import annotations

import io
import zipfile

import pytest
from test_documents import docx_bytes, upper

from transcli.documents.checks import Counts
from transcli.documents.formats import FORMATS
from transcli.documents.translating import Document, translate_bytes, translate_text

CAPTIONS = ("WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nI like trees.\n"
            "00:00:02.000 --> 00:00:03.500\nWhere is the station?\n\n"
            "3\n00:00:04.000 --> 00:00:05.000\nMy sister has two cats.\n"
            "4\n00:00:05.000 --> 00:00:06.000\nIt is raining.\n")


def test_a_timing_line_without_an_empty_line_before_it_starts_a_cue():
    """As a video site writes captions, and as WebVTT parsers (webvtt-py, browsers) read
    them: 4 cues, each translated, the identifier line "4" the third cue's text."""
    import webvtt

    out = translate_text(CAPTIONS, FORMATS["vtt"], upper)
    source, done = webvtt.from_string(CAPTIONS), webvtt.from_string(out)
    assert len(done) == len(source) == 4
    assert [(c.start, c.end) for c in done] == [(c.start, c.end) for c in source]
    assert [c.text for c in done] == [c.text.upper() for c in source]


def _with_notes(data: bytes) -> bytes:
    """`data` (a Word file) with a footnote and an endnote, referred to from its first
    paragraph, as Word writes them (parts of their own, related from the document)."""
    import docx
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part

    document = docx.Document(io.BytesIO(data))
    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    for kind, text in (("footnote", "Trees grow slowly."), ("endnote", "It rains a lot.")):
        xml = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:{kind}s {w}>'
               f'<w:{kind} w:id="1"><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:{kind}>'
               f'</w:{kind}s>').encode()
        part = Part(PackURI(f"/word/{kind}s.xml"), "application/vnd.openxmlformats-"
                    f"officedocument.wordprocessingml.{kind}s+xml", xml, document.part.package)
        document.part.relate_to(part, getattr(RT, f"{kind.upper()}S"))
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _rezipped(data: bytes) -> bytes:
    """`data` zipped again as another program might: folder entries, members in an
    order of its own, some stored, some deflated."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        members = sorted(source.infolist(), key=lambda member: member.filename, reverse=True)
        for folder in ("word/", "_rels/", "docProps/"):
            target.writestr(zipfile.ZipInfo(folder, (2020, 1, 2, 3, 4, 6)), b"")
        for i, member in enumerate(members):
            info = zipfile.ZipInfo(member.filename, (2021, 5, 6, 7, 8, 10))
            info.compress_type = zipfile.ZIP_STORED if i % 2 else zipfile.ZIP_DEFLATED
            target.writestr(info, source.read(member))
    return out.getvalue()


def test_a_word_file_is_written_member_for_member():
    data = _rezipped(_with_notes(docx_bytes()))
    out = translate_bytes(data, FORMATS["docx"], upper, "x.docx")
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(io.BytesIO(out)) as done:
        before, after = source.infolist(), done.infolist()
        assert [m.filename for m in after] == [m.filename for m in before]
        assert [(m.date_time, m.compress_type) for m in after] == [
            (m.date_time, m.compress_type) for m in before]
        changed = [m.filename for m in before if source.read(m) != done.read(m.filename)]
    # byte for byte but the parts whose text was translated
    assert sorted(changed) == ["word/comments.xml", "word/document.xml", "word/endnotes.xml",
                               "word/footer1.xml", "word/footnotes.xml", "word/header1.xml"]


def test_footnotes_and_endnotes_are_translated():
    out = translate_bytes(_with_notes(docx_bytes()), FORMATS["docx"], upper, "x.docx")
    with zipfile.ZipFile(io.BytesIO(out)) as archive:
        assert b"TREES GROW SLOWLY." in archive.read("word/footnotes.xml")
        assert b"IT RAINS A LOT." in archive.read("word/endnotes.xml")


def _linked_paragraph() -> bytes:
    """A Word file of one paragraph, "Take the train to the station every day.", with
    "the train" a hyperlink."""
    import docx
    from docx.oxml.ns import qn
    from docx.oxml.parser import OxmlElement

    document = docx.Document()
    paragraph = document.add_paragraph("Take ")
    link = OxmlElement("w:hyperlink")
    link.set(qn("r:id"), document.part.relate_to(
        "https://example.com", "http://schemas.openxmlformats.org/officeDocument/2006/"
        "relationships/hyperlink", is_external=True))
    run, text = OxmlElement("w:r"), OxmlElement("w:t")
    text.text = "the train"
    run.append(text)
    link.append(run)
    paragraph._p.append(link)
    paragraph.add_run(" to the station every day.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


@pytest.mark.parametrize("translation, link, counts", [
    ("Tomo el tren a la estación cada día.", "el tren", Counts(translated=1)),
    ("Sí", "the train", Counts(kept=1))])
def test_a_hyperlink_is_never_left_without_text(translation, link, counts):
    """A translation of one word leaves the link's run nothing by position: the
    paragraph is kept as it was (and counted), never written with an empty link."""
    import docx

    document = Document(FORMATS["docx"], _linked_paragraph(), "x.docx")
    out = docx.Document(io.BytesIO(document.translated(lambda lines, first: [translation])))
    assert out.paragraphs[0]._p.xpath("string(.//w:hyperlink)") == link
    assert document.counts == counts


def test_counts_say_what_became_of_the_units():
    counts = Counts(translated=7, repaired=1, kept=3)
    assert counts.summary() == ("3 units kept in English: their markup did not survive the "
                                "translation; 1 unit repaired: their markup put back by "
                                "position (of 11 translated)")
    assert Counts(translated=5).summary() is None
    total = Counts()
    total += counts
    total += counts
    assert total.as_dict() == {"translated": 14, "repaired": 2, "kept": 6}


@pytest.mark.parametrize("fmt", ["html", "markdown", "srt", "vtt", "po"])
def test_the_identity_counts_nothing_and_a_translation_counts_its_units(fmt):
    from test_documents import TEXT_SAMPLES, sample

    text = sample(TEXT_SAMPLES[fmt])
    document = Document(FORMATS[fmt], text, "x")
    document.translated(lambda lines, first: lines)
    assert document.counts == Counts()
    document = Document(FORMATS[fmt], text, "x")
    document.translated(lambda lines, first: [line.upper() for line in lines])
    assert document.counts.translated > 0 and document.counts.kept == 0
