"""Every unit checked on its way back: what its format needs survives the model's output
(a catalogue's placeholders as msgfmt reads them, a page's tags, a Markdown unit's links
and code, a cue's shape), or the unit is repaired, or kept as it was read and counted.
The model is a stand-in that writes what real models were seen to write: placeholders
dropped or cut ("%0.2f" as "%0.2."), a bare "%", tags of its own, an empty line."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import polib
import pytest

from transcli.documents import markdown
from transcli.documents.checks import Counts
from transcli.documents.formats import FORMATS
from transcli.documents.formatstrings import INVALID, signature
from transcli.documents.translating import Document

MSGFMT = shutil.which("msgfmt")
needs_msgfmt = pytest.mark.skipif(MSGFMT is None, reason="gettext's msgfmt is not installed "
                                  "(apt-get install gettext)")

# (flag, msgid, msgstr, whether msgfmt --check-format accepts it), as gettext 0.21 does.
FORMAT_CASES = [
    ("python-format", "Total: %0.2fms", "Total: %0.2fms", True),
    ("python-format", "Total: %0.2fms", "Total: %0.2.", False),
    ("python-format", "%(a)s %(b)d", "%(b)d %(a)s", True),
    ("python-format", "%(a)s %(b)d", "%(b)s %(a)s", False),
    ("python-format", "%s %d", "%d %s", False),
    ("python-format", "100%%", "100 %", False),
    ("python-format", "100%%", "100%%", True),
    ("python-format", "%(a)s", "%(a)s %(a)s", True),
    ("python-format", "%(a)s", "%(a)s 50%", False),
    ("python-format", "%(a)s", "%s", False),
    ("python-format", "%(a)0.2f", "%(a).2f", True),
    ("python-format", "%.*f", "%.*f", True),
    ("python-format", "a", "b %", False),
    ("python-format", "%s", "%r", True),
    ("python-format", "%d", "%x", True),
    ("python-format", "%d items", "elementos", False),
    ("c-format", "%d of %u", "%u de %d", False),
    ("c-format", "%d of %s", "%2$s: %1$d", True),
    ("c-format", "%ld", "%d", False),
    ("c-format", "%d%%", "%d %%", True),
    ("c-format", "%s", "%s %m", True),
    ("c-format", "%s and %s", "%s y", False),
    ("python-brace-format", "Hi {name}", "Hola {}", False),
    ("python-brace-format", "Hi {}", "Hola {}", True),
    ("python-brace-format", "Hi {name}", "Hola {name} {name}", True),
    ("python-brace-format", "Hi {name} {x}", "Hola {x}", False),
    ("python-brace-format", "Hi {name:>{width}}", "Hola {name:>{width}}", True),
    ("python-brace-format", "Hi {0.x[1]!r:5}", "Hola {0.x[1]!r:5}", True),
    ("python-brace-format", "Hi {name}", "Hola {name", False),
    ("javascript-format", "%s items", "%s elementos", True),
    ("javascript-format", "%s items", "elementos", False),
    ("no-python-format", "%s items", "elementos", True),
]


@pytest.mark.parametrize("flag, msgid, msgstr, accepted", FORMAT_CASES)
def test_placeholders_are_read_as_msgfmt_reads_them(flag, msgid, msgstr, accepted):
    """As msgfmt: a message it refuses signs unlike its msgid, one it accepts alike."""
    same = signature(msgid, [flag]) == signature(msgstr, [flag])
    assert same == accepted
    assert signature(msgid, [flag]) != INVALID


@needs_msgfmt
@pytest.mark.parametrize("flag, msgid, msgstr, accepted", FORMAT_CASES)
def test_the_cases_are_msgfmts_own(tmp_path, flag, msgid, msgstr, accepted):
    assert msgfmt_accepts(_catalogue([(flag, msgid, msgstr)]), tmp_path) == accepted


def _catalogue(entries: list[tuple[str, str, str]]) -> str:
    head = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
    return head + "".join(f'#, {flag}\nmsgid "{polib.escape(msgid)}"\n'
                          f'msgstr "{polib.escape(msgstr)}"\n\n'
                          for flag, msgid, msgstr in entries)


def msgfmt_accepts(catalogue: str, folder: Path) -> bool:
    path = folder / "check.po"
    path.write_text(catalogue, encoding="utf-8")
    return subprocess.run([MSGFMT, "--check", "-o", "/dev/null", str(path)],
                          capture_output=True).returncode == 0


CATALOGUE = _catalogue([
    ("python-format", "Total: %0.2fms", ""),
    ("python-format", "%(cum)0.2fms (%(total)0.2fms)", ""),
    ("python-format", "%(count)d of %(total)d files were copied.", ""),
    ("c-format", "%s: cannot open %s", ""),
    ("python-brace-format", "Hello {name}, you have {count} new messages.", ""),
    ("python-format", "It is 100%% done.", ""),
    ("python-format", "<b>%(name)s</b> has left the <i>room</i>.", ""),
])


def dropped(lines: list[str], first: int) -> list[str]:
    """Placeholders dropped or cut, a bare percent sign: what a small model writes."""
    return [line.replace("%0.2f", "%0.2.").replace("%(total)d", "").replace("{count}", "")
            .replace("%%", "%").replace("%s:", "").replace("<b>", "") + " 50%"
            for line in lines]


def moved(lines: list[str], first: int) -> list[str]:
    """Every word reversed in order, placeholders among them."""
    return [" ".join(reversed(line.split())) for line in lines]


@pytest.mark.parametrize("model", [dropped, moved])
def test_a_translated_catalogue_passes_msgfmt_whatever_the_model_wrote(tmp_path, model):
    document = Document(FORMATS["po"], CATALOGUE, "x.po")
    out = document.translated(model).decode()
    for entry in polib.pofile(out):
        if entry.msgstr:  # translated: the same placeholders as msgfmt reads them
            flags = [flag for flag in entry.flags if flag.endswith("-format")]
            assert signature(entry.msgstr, flags) == signature(entry.msgid, flags), entry
    counts = document.counts
    assert counts.translated + counts.repaired + counts.kept == 7
    if model is dropped:
        assert counts.repaired + counts.kept >= 5
    if MSGFMT is not None:
        assert msgfmt_accepts(out, tmp_path), out


def test_a_message_that_cannot_be_repaired_is_left_untranslated():
    """Placeholders the model dropped are put back by position (in their order); a
    message of several lines, whose lines the model translates apart, is not repaired:
    without its placeholders it stays empty, as gettext marks a message untranslated,
    and is counted."""
    text = _catalogue([("python-format", "%s files in %d folders", "")]) + (
        '#, python-format\nmsgid ""\n"%d files\\n"\n"in %s folders"\nmsgstr ""\n')
    document = Document(FORMATS["po"], text, "x.po")
    out = document.translated(lambda lines, first: [
        "carpetas con archivos" if "folders" in line else "archivos" for line in lines]).decode()
    entries = {entry.msgid: entry.msgstr for entry in polib.pofile(out)}
    assert signature(entries["%s files in %d folders"], ["python-format"]) == \
        signature("%s files in %d folders", ["python-format"])
    assert entries["%d files\nin %s folders"] == ""
    assert document.counts == Counts(translated=0, repaired=1, kept=1)


SUBTITLES = ("1\n00:00:01,000 --> 00:00:02,000\n<i>I like trees.</i>\n\n"
             "2\n00:00:02,500 --> 00:00:04,000\nWhere is the station?\nIt is late.\n\n"
             "3\n00:00:04,500 --> 00:00:05,000\nMy sister has two cats.\n")


@pytest.mark.parametrize("fmt", ["srt", "vtt"])
@pytest.mark.parametrize("written, counts", [
    ("Me gustan <b>los</b> árboles.", Counts(translated=2, repaired=1)),  # a tag of its own
    ("", Counts(translated=2, kept=1)),  # an empty cue would end the block
    ("Sí --> no", Counts(translated=2, kept=1)),  # an arrow would start a cue
])
def test_a_cue_keeps_its_shape_and_its_tags(fmt, written, counts):
    import srt
    import webvtt

    text = ("WEBVTT\n\n" + SUBTITLES.replace(",", ".")) if fmt == "vtt" else SUBTITLES
    document = Document(FORMATS[fmt], text, "x")
    out = document.translated(lambda lines, first: [
        written if "trees" in line else line.upper() for line in lines]).decode()
    cues = (list(srt.parse(out)) if fmt == "srt" else list(webvtt.from_string(out)))
    assert len(cues) == 3 and "<b>" not in out
    assert out.count("<i>") == out.count("</i>") == 1
    escaped = fmt == "vtt" and written.startswith(("Me", "Sí"))  # WebVTT writes &lt; &gt;
    assert document.counts == (Counts(translated=3) if escaped else counts)


def test_a_markdown_unit_whose_markup_would_change_is_kept(monkeypatch):
    """Were the translation not escaped, a "*" of the model's would be emphasis: the
    check sees the markup change and keeps the unit."""
    monkeypatch.setattr(markdown, "escape", lambda text: text)
    text = "I like [green trees](https://example.org/trees) and `code`.\n"
    document = Document(FORMATS["markdown"], text, "x.md")
    out = document.translated(lambda lines, first: [
        "Me *gustan* los [árboles verdes] y" for _ in lines]).decode()
    assert out == text and document.counts == Counts(kept=1)


def test_the_models_markup_characters_are_written_as_text_in_markdown():
    text = "I like [green trees](https://example.org/trees).\n"
    document = Document(FORMATS["markdown"], text, "x.md")
    out = document.translated(lambda lines, first: [
        "Me ~~gustan~~ los *árboles* verdes." for _ in lines]).decode()
    assert not re.search(r"(?<!\\)[~*]", out), out
    assert "](https://example.org/trees)" in out and document.counts == Counts(translated=1)


def test_words_in_angle_brackets_are_words_in_a_catalogue():
    """Django's "<no view>" is shown as it is: not markup the translation must keep."""
    document = Document(FORMATS["po"],
                        'msgid "<no view>"\nmsgstr ""\n\nmsgid "<b>Hello</b>"\nmsgstr ""\n', "x.po")
    out = document.translated(lambda lines, first: [
        "<sin vista>" if "view" in line else "Hola" for line in lines]).decode()
    assert 'msgstr "<sin vista>"' in out and 'msgstr "<b>Hola</b>"' in out
    assert document.counts == Counts(translated=2)
