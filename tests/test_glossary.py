"""Glossaries (transcli/inference/glossary.py): the file, what matches, and the terms
written in Spanish in translate, evaluate and serve.

The model tests use test_realtext's slot model: it memorises "Visit {0} today." ->
"Visita {0} hoy." with the vocabulary's placeholders, so a glossary term in {0}'s place
comes back exactly where the model copied its placeholder.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from helpers import PAIRS, TINY_CONFIG
from helpers.cli import one_error_line, run_cli
from test_realtext import slot_model, slot_translator

from transcli.config.loading import load_config, save_config
from transcli.config.schema import DecodeConfig
from transcli.data.tokenizer import TOKENIZER_FILE, Tokenizer
from transcli.inference.glossary import TERM, Entry, Glossary, TermUse, read_glossary
from transcli.inference.spans import find_spans, mask, restore
from transcli.inference.translator import Translator, load_translator
from transcli.rundir.checkpoints import save_weights
from transcli.rundir.layout import CONFIG_FILE, step_path
from transcli.rundir.run import open_run_dir
from transcli.system.errors import UserError

TERMS = "# a comment\n\ntom\tTomás\napple pie\ttarta de manzana\tpastel de manzana\t\n"


def glossary_of(*pairs: tuple[str, str]) -> Glossary:
    return Glossary([Entry(en, (es,)) for en, es in pairs])


def terms_in(text: str, glossary: Glossary) -> list[str]:
    return [span.text for span in find_spans(text, terms=glossary.find) if span.kind == TERM]


# ----------------------------------------------------------------------------- no model


def test_a_glossary_file_is_read(tmp_path):
    path = tmp_path / "terms.tsv"
    path.write_text(TERMS, encoding="utf-8")
    glossary = read_glossary(path)
    assert len(glossary) == 2
    assert glossary.entry("Apple  Pie").spanish == ("tarta de manzana", "pastel de manzana")
    assert glossary.entry("TOM").spanish == ("Tomás",)


@pytest.mark.parametrize("text, problem", [
    ("tom\tTomás\nno tab here\n", "line 2: no tab"),
    ("\tTomás\n", "line 1: the source side is empty"),
    ("tom\t \n", "line 1: a target side is empty"),
    ("tom\tTomás\n# again\nTOM\tTomasito\n", "line 3: 'TOM' is already in the glossary (line 1)"),
])
def test_a_bad_line_is_one_error_naming_file_and_line(tmp_path, text, problem):
    path = tmp_path / "terms.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError) as error:
        read_glossary(path)
    assert str(error.value).startswith(f"{path}: {problem}") and "\n" not in str(error.value)


def test_bad_utf8_and_a_missing_file_name_the_file(tmp_path):
    path = tmp_path / "terms.tsv"
    path.write_bytes(b"tom\tTom\xe1s\n")
    with pytest.raises(UserError, match=r"terms.tsv: line 1 is not valid UTF-8"):
        read_glossary(path)
    with pytest.raises(UserError, match=r"missing.tsv"):
        read_glossary(tmp_path / "missing.tsv")


def test_matching_whole_words_any_case_longest_first():
    glossary = glossary_of(("apple", "manzana"), ("apple pie", "tarta de manzana"),
                           ("pie", "pastel"))
    assert terms_in("Apple pie, APPLE and a pie.", glossary) == ["Apple pie", "APPLE", "pie"]
    assert terms_in("Pineapples and apples and applepie.", glossary) == []
    assert terms_in("apple   pie", glossary) == ["apple   pie"]  # any run of spaces
    assert glossary_of(("ask", "pedir")).find("a\u017fk")[0].replacement == "pedir"  # ſ is s
    # Never inside another protected span.
    assert terms_in("See https://apple.com/pie or `apple`.", glossary) == []


def test_a_term_goes_back_once_as_its_spanish_form():
    glossary = glossary_of(("apple", "manzana"))
    text = "I like APPLE and apple."
    masked = mask(text, find_spans(text, terms=glossary.find))
    first, second = masked.placeholders
    assert masked.text == f"I like {first} and {second}."
    # Copies too many go; a dropped one is put back; the line's own text is kept apart.
    assert restore(f"Me gusta {first} {first} y {second}.", masked) == \
        "Me gusta MANZANA y manzana."
    assert restore("Me gusta.", masked).count("manzana") == 1
    assert masked.original() == text


def test_term_use_counts_entries_found_in_the_source():
    glossary = Glossary([Entry("apple", ("manzana", "manzanas")), Entry("tom", ("Tomás",))])
    terms = TermUse(glossary)
    terms.add(["Tom eats an apple.", "Tom and Tom.", "Nothing here."],
              ["Tomás come MANZANAS.", "Tom y Tom.", "Nada."])
    assert (terms.used, terms.applicable) == (2, 3) and terms.rate == pytest.approx(2 / 3)


# ----------------------------------------------------------------------------- the model


def glossary_translator(spm: Path, glossary: Glossary, **decode: object) -> Translator:
    """The slot model with `glossary` applied by placeholders (constrained search:
    tests/test_constrained.py)."""
    decode = {"glossary_method": "placeholder", **decode}
    return Translator(slot_model(spm), Tokenizer(spm), replace(DecodeConfig(), **decode),
                      "cpu", glossary=glossary)


GLOSSARY = glossary_of(("tom", "Tomás"), ("station", "terminal"))


def test_a_term_is_written_once_where_the_model_put_it(slot_spm):
    translator = glossary_translator(slot_spm, GLOSSARY)
    out = translator.translate(["Visit Tom today.", "Tom is here.", "Visit tom today."])
    assert out == ["Visita Tomás hoy.", "Tomás está aquí.", "Visita Tomás hoy."]


def test_a_line_without_a_term_is_translated_as_without_a_glossary(slot_spm):
    lines = [en for en, _ in PAIRS if "station" not in en] + [
        "Visit https://example.com/tom today.", "Write to a@b.org and @tom now.", ""]
    bare = slot_translator(slot_spm).translate(lines)
    assert glossary_translator(slot_spm, GLOSSARY).translate(lines) == bare


def test_an_all_caps_line_gets_its_term_in_capitals(slot_spm):
    translator = glossary_translator(slot_spm, glossary_of(("tom", "tomás")))
    assert translator.translate(["VISIT TOM TODAY.", "Visit Tom today."]) == [
        "VISITA TOMÁS HOY.", "Visita tomás hoy."]


def test_without_protection_the_glossary_still_applies(slot_spm):
    translator = glossary_translator(slot_spm, GLOSSARY, protect=False)
    assert translator.translate(["Visit Tom today.", "I like trees."]) == [
        "Visita Tomás hoy.", "Me gustan los árboles."]


# ----------------------------------------------------------------------------- commands


@pytest.fixture(scope="module")
def glossary_run(slot_spm: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run dir of the slot model (greedy search, terms as placeholders), and a glossary
    file beside it."""
    folder = tmp_path_factory.mktemp("glossary")
    run = folder / "run"
    run.mkdir()
    save_config(load_config(TINY_CONFIG, ["decode.strategy=greedy",
                                          "decode.glossary_method=placeholder"]),
                run / CONFIG_FILE)
    (run / TOKENIZER_FILE).write_bytes(slot_spm.read_bytes())
    save_weights(slot_model(slot_spm), step_path(run, 1))
    (folder / "terms.tsv").write_text(TERMS, encoding="utf-8")
    return run


@pytest.mark.slow
def test_translate_and_evaluate_with_a_glossary(glossary_run, tmp_path):
    terms = glossary_run.parent / "terms.tsv"
    lines = "Visit Tom today.\nI like trees.\nVISIT TOM TODAY.\n"
    result = run_cli("translate", "-m", glossary_run, "--checkpoint", "last",
                     "--glossary", terms, stdin=lines)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Visita Tomás hoy.\nMe gustan los árboles.\nVISITA TOMÁS HOY.\n"
    src, ref = tmp_path / "src.en", tmp_path / "ref.es"
    src.write_text(lines, encoding="utf-8")
    ref.write_text("Visita Tomás hoy.\nMe gustan los árboles.\nVISITA TOMÁS HOY.\n",
                   encoding="utf-8")
    args = ["evaluate", "-m", glossary_run, "--checkpoint", "last", "--src", src, "--ref", ref]
    result = run_cli(*args, "--glossary", terms)
    assert "Term use = 100.0%: 2 of 2 glossary entries" in result.stdout, result.stderr
    scores = json.loads(run_cli(*args, "--glossary", terms, "--json").stdout)
    assert scores["term_use"] == 1.0 and scores["terms_applicable"] == 2
    assert "term_use" not in json.loads(run_cli(*args, "--json").stdout)


@pytest.mark.slow
def test_ct2_writes_the_terms_as_the_torch_engine(glossary_run):
    pytest.importorskip("ctranslate2", reason="needs the ct2 extra")
    terms = f"decode.glossary={glossary_run.parent / 'terms.tsv'}"
    lines = ["Visit Tom today.", "VISIT TOM TODAY.", "I like trees.", "Tom is here."]
    torch_out = load_translator(open_run_dir(glossary_run, [terms]), "last", "cpu"
                                ).translate(lines)
    ct2_out = load_translator(open_run_dir(glossary_run, [terms, "decode.engine=ct2"]),
                              "last", "cpu").translate(lines)
    assert ct2_out == torch_out == ["Visita Tomás hoy.", "VISITA TOMÁS HOY.",
                                    "Me gustan los árboles.", "Tomás está aquí."]


@pytest.mark.slow
def test_explain_shows_the_term_in_its_translation(glossary_run, tmp_path):
    result = run_cli("explain", "-m", glossary_run, "--checkpoint", "last", "--glossary",
                     glossary_run.parent / "terms.tsv", "--out", tmp_path / "pictures",
                     "Visit Tom today.")
    assert result.returncode == 0, result.stderr
    assert "Translation: Visita Tomás hoy." in result.stdout


@pytest.mark.slow
def test_a_bad_glossary_is_one_line_before_the_model_loads(glossary_run, tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("tom\tTomás\nno tab\n", encoding="utf-8")
    result = run_cli("translate", "-m", glossary_run, "--checkpoint", "last",
                     "--glossary", bad, stdin="Visit Tom today.\n")
    assert one_error_line(result) == f"transcli: error: {bad}: line 2: no tab: an entry is " \
                                     "source<TAB>target[<TAB>more forms]"


@pytest.mark.slow
def test_serve_applies_its_glossary(glossary_run, tmp_path):
    for extra in ("fastapi", "uvicorn"):
        pytest.importorskip(extra, reason="needs the serve extra (pip install 'transcli[serve]')")
    from helpers.server import Server

    from transcli.serve.protocol import MAX_GLOSSARY_ENTRIES

    server = Server(glossary_run, tmp_path, "--glossary", str(glossary_run.parent / "terms.tsv"))
    request = {"q": ["Visit Tom today.", "I like trees.", "Visit Ana today."],
               "source": "en", "target": "es"}
    too_many = {f"term{i}": "x" for i in range(MAX_GLOSSARY_ENTRIES + 1)}
    try:
        answers = [server.request("POST", "/translate", {**request, **extra})[:2] for extra in (
            {}, {"glossary": {"ana": "Anita", "TOM": "Tomasito"}}, {"glossary": too_many},
            {"glossary": ["ana", "Anita"]}, {"glossary": {"ana": " "}},
            {"glossary": {"ana": "Anita\nNEW"}})]
        files = [server.upload("a.txt", b"Visit Tom today.\nVisit Ana today.\n", source="en",
                               target="es", **extra)[:2]
                 for extra in ({"glossary": '{"ana": "Anita"}'}, {"glossary": '["ana"]'},
                               {"glossary": json.dumps(too_many)},
                               {"glossary": "[" * 50000 + "]" * 50000},
                               {"glossary": '{"ana": "Anita\\n1\\n00:00:01,000 --> x"}'})]
        translated = server.request("GET", urlsplit(files[0][1]["translatedFileUrl"]).path,
                                    raw=True)[1]
    finally:
        server.stop()
    # A file's own terms, as a form field of JSON, besides the server's.
    assert translated == "Visita Tomás hoy.\nVisita Anita hoy.\n".encode()
    assert files[1] == (400, {"error": "Invalid request: glossary must be the JSON text of an "
                                       "object of source terms to target ones"})
    assert files[2][0] == 400 and "entries (at most" in files[2][1]["error"]
    assert answers[0] == (200, {"translatedText": [
        "Visita Tomás hoy.", "Me gustan los árboles.", "Visita Ana hoy."]})
    # The request's terms besides the server's, and before them.
    assert answers[1] == (200, {"translatedText": [
        "Visita Tomasito hoy.", "Me gustan los árboles.", "Visita Anita hoy."]})
    assert answers[2] == (400, {"error": f"Invalid request: glossary has "
                                         f"{MAX_GLOSSARY_ENTRIES + 1} entries (at most "
                                         f"{MAX_GLOSSARY_ENTRIES})"})
    assert answers[3] == (400, {"error": "Invalid request: glossary must be an object of "
                                         "source terms to target ones"})
    assert answers[4][0] == 400 and "needs a source and a target side" in answers[4][1]["error"]
    # A form that would change the lines of what is translated, nested JSON too deep for
    # the parser: one line each, 400, never a 500.
    assert answers[5] == (400, {"error": 'Invalid request: glossary: "ana": its target side '
                                         'holds a line break, a tab or another control '
                                         'character'})
    assert files[3] == files[1] and files[4][0] == 400 and "line break" in files[4][1]["error"]


def test_a_run_trained_with_annotation_reads_its_terms_annotated(tiny_spm):
    from transcli.data.terms import annotate
    from transcli.inference.glossary import method
    from transcli.inference.realtext import Preparer

    glossary = glossary_of(("trees", "plantas"))
    sp = Tokenizer(tiny_spm).sp
    unit = Preparer(DecodeConfig(), sp, glossary, annotated=True).plan("I like trees.").units[0]
    assert unit.text == annotate("I like trees.", [(7, 12, "plantas")]) and unit.terms == ()
    plain = Preparer(DecodeConfig(), sp, glossary).plan("I like trees.").units[0]
    assert plain.text == "I like trees." and plain.terms == (("plantas",),)
    assert method(DecodeConfig(), annotated=True) == "annotate"
    assert method(DecodeConfig(glossary_method="constrain"), annotated=True) == "constrain"


def test_matching_folds_case_as_unicode_does():
    """"İstanbul" was matched lower-cased, as "i̇stanbul" (two characters for "İ"), and
    never met the line's "İstanbul"."""
    glossary = glossary_of(("İstanbul", "Estambul"), ("Straße", "calle"))
    assert terms_in("From İstanbul to the STRAßE and straße.", glossary) == [
        "İstanbul", "STRAßE", "straße"]
    assert glossary.entry("İSTANBUL").spanish == ("Estambul",)


def test_a_term_holding_spans_replaces_them_and_none_cuts_one():
    """"24/7" and "Form 1040" lost to the number span inside them; a URL holding a
    term's word still wins."""
    glossary = glossary_of(("24/7", "24 horas"), ("Form 1040", "Formulario 1040"),
                           ("python", "pitón"))
    text = "Open 24/7, file Form 1040, see https://python.org/python now."
    spans = find_spans(text, terms=glossary.find)
    assert [(span.kind, span.text) for span in spans] == [
        (TERM, "24/7"), (TERM, "Form 1040"), ("url", "https://python.org/python")]


@pytest.mark.parametrize("line", ["tom\tTo\x0bmás\n", "tom\tTomás\x07\n", "to\x1bm\tTomás\n"])
def test_a_side_with_a_line_break_or_a_control_character_is_refused(tmp_path, line):
    path = tmp_path / "terms.tsv"
    path.write_text(line, encoding="utf-8", newline="")
    with pytest.raises(UserError, match=r"terms.tsv: line 1: .* side holds a line break"):
        read_glossary(path)


def test_a_requests_terms_are_matched_apart_from_the_servers_which_compile_once():
    """A request's glossary recompiled the server's whole glossary with its own terms, on
    the event loop (8 s for 50,000 entries): now its few terms have a pattern of their
    own, compiled when first used, and the server's is the one it compiled before."""
    base = Glossary([Entry(f"term{i}", (f"término{i}",)) for i in range(3000)]
                    + [Entry("tom", ("Tomás",)), Entry("apple", ("manzana",))])
    base.find("warm up")
    compiled = base.pattern
    request = base.extended({"TOM": "Tomasito", "apple pie": "tarta", "ana": "Anita"})
    assert "pattern" not in request.__dict__  # nothing compiled on the event loop
    spans = request.find("Tom and term7 eat apple pie, an apple and ana.")
    assert [(span.text, span.replacement) for span in spans] == [
        ("Tom", "Tomasito"), ("term7", "término7"), ("apple pie", "tarta"),
        ("apple", "manzana"), ("ana", "Anita")]
    assert base.pattern is compiled and len(request) == 3004


def test_the_glossary_is_never_the_output(glossary_run, tmp_path):
    """`translate --glossary g.tsv -o g.tsv` replaced the glossary it read when transcli
    had written that file once: the glossary is among the command's inputs."""
    from helpers import write_output

    terms = tmp_path / "g.tsv"
    write_output(terms, "tom\tTomás\n")  # a file transcli wrote: its record vouches for it
    src = tmp_path / "src.en"
    src.write_text("Visit Tom today.\n", encoding="utf-8")
    for args in (["translate", "-i", src, "-o", terms],
                 ["evaluate", "--src", src, "--ref", src, "--hyp-out", terms]):
        result = run_cli(*args, "-m", glossary_run, "--checkpoint", "last", "--glossary", terms)
        assert str(terms) in one_error_line(result)
        assert terms.read_text(encoding="utf-8") == "tom\tTomás\n"
