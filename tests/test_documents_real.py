"""Real files written by others (tests/data/real, SOURCES.md names each one's origin and
licence) translated whole: with the tiny model the tests train, and with stand-ins that
write what small models write (words moved, dropped, nothing at all, markup characters of
their own). Every invariant of the file's format holds, as the format's own readers see
it (`bench.document_invariants`): tags and attributes in order, link and image targets,
code, a catalogue's placeholders and msgfmt --check-format (where gettext is installed), cues and
their timings, a Word file's members and hyperlinks."""

from __future__ import annotations

import random

import pytest

from bench.document_invariants import invariants
from bench.documents import real_bytes, real_files, translated_file
from transcli.cli.translate import translate_file
from transcli.inference.translator import load_translator
from transcli.rundir.run import open_run_dir

FILES = real_files()
IDS = [f"{fmt}-{path.name}" for fmt, path in FILES]


def test_the_corpus_has_three_files_of_each_text_format_and_says_where_each_came_from():
    from bench.documents import REAL

    counts = {fmt: sum(1 for found, _ in FILES if found == fmt) for fmt, _ in FILES}
    assert all(counts[fmt] >= 3 for fmt in ("markdown", "html", "po", "srt", "vtt"))
    assert counts["docx"] >= 1
    sources = (REAL / "SOURCES.md").read_text(encoding="utf-8")
    assert all(f"{fmt}/{path.name}" in sources for fmt, path in FILES)


@pytest.fixture(scope="module")
def translator(run_dir):
    return load_translator(open_run_dir(run_dir, []), "last", "cpu")


@pytest.mark.slow
@pytest.mark.parametrize("fmt, path", FILES, ids=IDS)
def test_a_real_file_translated_by_the_model_keeps_every_invariant(translator, fmt, path):
    data = real_bytes(path)
    out, document = translated_file(fmt, data, path.name, translator.translate,
                                    translator.alignments)
    held = invariants(fmt, data, out)
    assert all(held.values()), [name for name, ok in held.items() if not ok]
    counts = document.counts
    units = sum(len(chunk.units) for chunk in document.chunks())
    assert counts.translated + counts.repaired + counts.kept <= units


def _stand_ins(seed: int):
    rng = random.Random(seed)

    def model(lines: list[str], first: int) -> list[str]:
        out = []
        for line in lines:
            words = line.split()
            choice = rng.randrange(5)
            if choice == 0:
                words.reverse()
            elif choice == 1:
                words = words[:rng.randint(0, len(words))]
            elif choice == 2:
                words = []
            elif choice == 3:
                words += rng.choice([["<b>"], ["*"], ["%"], ["{"], ["-->"], ["~~"], ["]("]])
            out.append(" ".join(words))
        return out

    return model


@pytest.mark.parametrize("fmt, path", FILES, ids=IDS)
def test_whatever_a_model_writes_no_unit_is_silently_broken(fmt, path):
    data = real_bytes(path)
    for seed in range(3):
        out, _ = translated_file(fmt, data, path.name, _stand_ins(seed), None)
        held = invariants(fmt, data, out)
        assert all(held.values()), (seed, [name for name, ok in held.items() if not ok])


def test_translate_says_how_many_units_were_kept_or_repaired(run_dir, translator, tmp_path,
                                                             capsys):
    """The line `translate` prints is what became of the units: bat's README, where the
    tiny model loses the markup of a few units, and a catalogue where it loses none."""
    for name in ("bat-README.md", "django-debug-toolbar-en.po"):
        fmt, path = next((fmt, path) for fmt, path in FILES if path.name == name)
        _, document = translated_file(fmt, real_bytes(path), path.name, translator.translate,
                                      translator.alignments)
        capsys.readouterr()
        translate_file(run_dir, "last", str(path), str(tmp_path / path.name), [], "cpu",
                       force=True)
        err = capsys.readouterr().err
        summary = document.counts.summary()
        if name.endswith(".md"):
            assert summary is not None and f"transcli: {path}: {summary}" in err
        else:
            assert summary is None and "kept in English" not in err and "repaired" not in err
