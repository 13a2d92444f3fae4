"""The check of every translated sentence on its way back (transcli/inference/checks.py)
and what a sentence that fails it becomes (repair.py): the problems found, the search
again another way, halves, the source as written, and the count said at the end.

The model tests use test_realtext's slot model (it memorises PAIRS and "Visit {0}
today." with the vocabulary's placeholders).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import PAIRS
from test_realtext import slot_run, slot_translator  # noqa: F401 (a fixture)

from transcli.inference.checks import CUT, DIGITS, EMPTY, FRAGMENT, SPAN, Tally, check
from transcli.inference.confidence import Line
from transcli.inference.repair import halves, review
from transcli.inference.search import Hypothesis

# ----------------------------------------------------------------------------- no model


WEATHER = ", diga lo que diga el tiempo."


@pytest.mark.parametrize("translation, problems", [
    ("Pesa 386.25 kg y cuesta US$5.40 en Node.js" + WEATHER, ()),
    ("Pesa 386.25 kg.25 kg y cuesta US$5.40 en Node.js" + WEATHER, (DIGITS,)),  # one added
    ("Pesa 386.26 kg y cuesta US$5.40 en Node.js" + WEATHER, (SPAN, DIGITS)),  # changed
    ("Pesa kg y cuesta US$5.40 en Node.js" + WEATHER, (SPAN, DIGITS)),  # dropped
    ("Pesa 386.25 kg y cuesta US$5.40 en Nindejs" + WEATHER, (SPAN,)),  # a name lost
    ("Pesa 386.25 kg y cuesta US$5.40, en Node.js y Node.js" + WEATHER, (SPAN,)),  # doubled
    ("", (EMPTY, SPAN, DIGITS)),
    ("Pesa 386.25 kg, US$5.40, Node.js.", (FRAGMENT,)),
])
def test_each_problem_is_found(translation, problems):
    source = "It weighs 386.25 kg and costs US$5.40 in Node.js, whatever the weather says."
    assert check(source, ["386.25", "US$5.40", "Node.js"], translation).problems == problems


def test_a_cut_is_a_problem_and_a_short_sentence_is_no_fragment():
    assert check("I like trees.", [], "Me gustan los árboles.", finished=False).problems == \
        (CUT,)
    assert check("I don't know what you're talking about.", [], "No sé de qué hablas.").ok
    assert check("Yes.", [], "Sí.").ok and check("😀", ["😀"], "😀").ok


def test_the_sentence_is_halved_at_the_clause_nearest_its_middle():
    assert halves("One two three, four five six; seven eight nine ten.") == (
        "One two three, four five six;", " ", "seven eight nine ten.")
    assert halves("one two three four") == ("one two", " ", "three four")
    assert halves("word") is None


def test_the_tally_says_what_failed_in_one_line():
    tally = Tally()
    assert tally.summary() == ""
    tally.add(check("I like trees.", [], ""))
    tally.repaired += 1
    assert tally.summary() == (
        "1 translated sentence(s) failed their check (1 empty): 1 translated again another "
        "way (numbers and glossary terms as placeholders, a wider search, or in halves), 0 "
        "written as their source")


# ----------------------------------------------------------------------------- the model


def test_a_translation_cut_by_the_length_limit_is_searched_again_with_room(slot_spm):
    """A limit of 3 target tokens cut "Me gustan los árboles." silently; now the check
    sees the search did not end, and the wider search with room finishes it."""
    translator = slot_translator(slot_spm, max_len_a=0.0, max_len_b=3)
    assert translator.translate([PAIRS[0][0]]) == [PAIRS[0][1]]
    assert (translator.tally.problems[CUT], translator.tally.repaired) == (1, 1)


def test_a_sentence_too_long_for_the_model_is_translated_in_halves(slot_spm):
    """More pieces than the model's positions (narrowed to 24 here, as a long sentence
    meets 512): the source was cut to fit, its end lost with only a warning; now it is
    halved at a clause until each half fits, and its end is there."""
    translator = slot_translator(slot_spm)
    translator.engine.max_positions = translator.tally.positions = 24
    line = "I like trees, The boy eats an apple, We live in a small town, My sister has two cats."
    out = translator.translate([line])[0]
    assert "Vivimos en un pueblo pequeño." in out and "Mi hermana tiene dos gatos." in out
    assert translator.tally.truncated == 0 and translator.tally.problems[CUT] >= 1


def test_an_empty_translation_is_searched_again(slot_spm):
    """A first translation that came back empty (the model ended at once: "is" -> "") is
    replaced by the first hypothesis of the wider search that passes."""
    translator = slot_translator(slot_spm)
    plan = translator.preparer.plan(PAIRS[1][0])
    results = [Line([("", 0.0)], 0.5)]
    review(translator, plan.units, results, [[Hypothesis([], 0.0, 0.0, True)]], [[5, 3]], [0])
    assert results == [Line([(PAIRS[1][1], 0.0)], None)]  # the run has no calibration
    assert (translator.tally.problems[EMPTY], translator.tally.repaired) == (1, 1)


def test_a_sentence_no_way_passes_is_written_as_its_source(slot_spm):
    """The model knows nothing of this line: its translations add numbers of their own or
    are fragments; no search passes, so the line comes back as written, and says so."""
    translator = slot_translator(slot_spm)
    line = "Zebras quietly juggle seventeen purple umbrellas beside Lake Titicaca."
    out = translator.translate([line])[0]
    tally = translator.tally
    assert (out == line) == (tally.untranslated == 1) and tally.failed == 1


def test_translate_says_how_many_failed(slot_run: Path, tmp_path: Path):  # noqa: F811
    from helpers.cli import run_cli

    source = tmp_path / "in.en"
    source.write_text(f"{PAIRS[0][0]}\n", encoding="utf-8")
    result = run_cli(*["translate", "-m", slot_run, "--checkpoint", "last", "-i", source,
                      "--set", "decode.max_len_a=0", "--set", "decode.max_len_b=3"])
    assert result.returncode == 0 and result.stdout == f"{PAIRS[0][1]}\n"
    assert "1 translated sentence(s) failed their check (1 cut by the length limit): 1 " \
        "translated again another way (" in result.stderr


def test_a_constrained_search_that_cannot_finish_falls_back_to_placeholders(slot_spm):
    """Glossary forms longer than the length limit allows: constrained search returned
    its unfinished hypothesis as the translation (forms missing, the opening gone). Now
    the check sees it did not end, and the term goes back by its placeholder."""
    from dataclasses import replace

    from test_realtext import slot_model

    from transcli.config.schema import DecodeConfig
    from transcli.data.tokenizer import Tokenizer
    from transcli.inference.glossary import Entry, Glossary
    from transcli.inference.translator import Translator

    form = "los árboles verdes de la montaña"
    translator = Translator(slot_model(slot_spm), Tokenizer(slot_spm),
                            replace(DecodeConfig(), max_len_a=0.0, max_len_b=5), "cpu",
                            glossary=Glossary([Entry("trees", (form,))]))
    assert translator.preparer.terms_as == "constrain"
    assert translator.translate(["Visit trees today."]) == [f"Visita {form} hoy."]
    assert (translator.tally.problems[CUT], translator.tally.repaired) == (1, 1)


def test_a_glossary_form_that_is_a_placeholder_number_comes_back_as_itself(slot_spm):
    """"soon" -> "19" where a URL's placeholder was 19: the model's copy of the URL's
    placeholder met the term, and restore put the URL there; the form disappeared."""
    from dataclasses import replace

    from test_realtext import slot_model

    from transcli.config.schema import DecodeConfig
    from transcli.data.tokenizer import Tokenizer
    from transcli.inference.glossary import Entry, Glossary
    from transcli.inference.translator import Translator

    first = Translator(slot_model(slot_spm), Tokenizer(slot_spm), DecodeConfig(),
                       "cpu").preparer.pool[0]
    translator = Translator(slot_model(slot_spm), Tokenizer(slot_spm),
                            replace(DecodeConfig(), glossary_method="constrain"), "cpu",
                            glossary=Glossary([Entry("trees", (first,))]))
    out = translator.translate(["Write to https://example.com/a and trees now."])[0]
    assert out.count("https://example.com/a") == 1 and out.count(first) == 1, out
    # the toy model may add a number of its own ("de1": then its check fails on digits),
    # but the form never took the URL's place, nor the URL the form's
    assert translator.tally.problems[SPAN] == 0


def test_glossary_terms_put_after_the_sentence_s_end_are_a_problem():
    """Constrained search may not end before it has written every term: it wrote them
    after the sentence ("... pronto. 10 años."), with words of its own."""
    from transcli.inference.checks import APPENDED

    source = "I will see you soon."
    assert check(source, [], "Te veré pronto. Pronto años.", constrained=True).problems == \
        (APPENDED,)
    assert check(source, [], "Te veré pronto.", constrained=True).ok
    assert check("Yes, I know.", [], "Sí. Lo sé.").ok  # without terms: not looked at
