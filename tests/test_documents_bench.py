"""bench.documents tags: its figures, on sentences the tiny memorised model knows (so that
it needs nothing outside the repository and runs in seconds)."""

from __future__ import annotations

from helpers import PAIRS

from bench.documents import _enclosed, _held, _tagged, parse_args, tag_figures
from transcli.inference.translator import load_translator
from transcli.rundir.run import open_run_dir


def test_held_and_enclosed_judge_each_tag_by_its_phrase_alone():
    assert _held('I <a href="/x"><b>really</b> like</a> <b>trees</b>.') == [
        "<b>really</b> like", "really", "trees"]
    rows = [("I like <b>green trees</b>.", "I like green trees.", "")]
    alone = {"green trees": "árboles verdes"}
    assert _enclosed(rows, ["Me gustan los <b>árboles verdes</b>."], alone) == (1.0, 1)
    assert _enclosed(rows, ["Me <b>gustan</b> los árboles verdes."], alone) == (0.0, 1)
    assert _enclosed(rows, ["Me gustan <b>los árboles</b> verdes."], alone) == (0.0, 1)
    assert _enclosed(rows, ["Me gustan los <b>árboles verdes.</b>"], alone) == (1.0, 1)
    assert _enclosed(rows, ["Me <b>gustan</b> mucho."], alone) == (0.0, 0)  # not judged


def test_tag_figures_on_the_memorised_model(run_dir):
    rows = [(_tagged(i, en), en, es) for i, (en, es) in enumerate(PAIRS)
            if len(en.split()) >= 4]
    translator = load_translator(open_run_dir(run_dir, []), "last", "cpu")
    figures = tag_figures(rows, translator.translate, translator.alignments)
    assert figures["sentences"] == len(rows) and figures["tags"] >= len(rows)
    assert figures["position well-formed"] == figures["attention well-formed"] == 1.0
    assert figures["BLEU untagged"] > 90 and figures["BLEU tagged vs untagged"] > 90
    assert 0 < figures["judged"] <= figures["tags"]
    for name in ("position", "attention"):
        assert 0 <= figures[f"{name} enclosed"] <= 1
        assert len(figures["outputs"][name]) == len(rows)


def test_parse_args_keeps_its_commands():
    args = parse_args(["tags", "--model", "RUN", "--sentences", "20"])
    assert (args.command, args.model, args.checkpoint, args.sentences, args.device) == \
        ("tags", "RUN", "avg", 20, "cpu")
    assert parse_args(["memory"]).mb == 50.0
    args = parse_args(["real", "--model", "RUN"])
    assert (args.command, args.model, args.checkpoint, args.out) == ("real", "RUN", "avg", None)
    args = parse_args(["speed", "--mb", "0.5", "--base", "/tmp/x"])
    assert (args.command, args.mb, str(args.base)) == ("speed", 0.5, "/tmp/x")


def test_the_speed_inputs_are_files_of_their_format_made_of_the_corpus():
    """What `speed` times: each format's file, as its readers read it, and every unit
    changed by the translation it times."""
    from bench.documents import SPEED_FORMATS, speed_input
    from transcli.documents.formats import FORMATS
    from transcli.documents.translating import Document

    for fmt in SPEED_FORMATS:
        data = speed_input(fmt, 20_000)
        assert len(data) >= (5_000 if fmt == "docx" else 20_000)
        document = Document(FORMATS[fmt], data, "x")
        document.translated(lambda lines, first: [line.upper() for line in lines])
        assert document.counts.translated > 10


def test_the_tags_command_prints_both_placements(run_dir, capsys, tmp_path):
    """The command as run on a real model, on a few dev sentences (skipped where the
    shared corpora are not beside the repository)."""
    import pytest

    from bench.documents import CORPORA, tags

    if not (CORPORA / "dev.tatoeba.en").is_file():
        pytest.skip("no ../shared/corpora/en-es")
    tags(parse_args(["tags", "--model", str(run_dir), "--checkpoint", "last",
                     "--sentences", "6", "--out", str(tmp_path)]))
    out = capsys.readouterr().out
    assert "# 6 sentences with " in out
    assert "position" in out and "attention" in out and "chrF: tagged" in out
    assert len((tmp_path / "tags.tsv").read_text().splitlines()) == 6
