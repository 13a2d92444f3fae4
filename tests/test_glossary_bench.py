"""bench.glossary: its dictionary and term picking, and one run of it on the sample model
(data/sample's test set, so that it needs nothing outside the repository)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import ROOT

from bench.glossary import content_words, dictionary, main, pick_terms


def test_content_words_leave_out_short_and_function_words():
    assert content_words("The doctor said that the doctor would come.") == ["doctor", "said",
                                                                            "come"]


def test_the_dictionary_and_the_terms_it_picks():
    pairs = [("The doctor is here.", "El médico está aquí."),
             ("A doctor came.", "Vino un médico."),
             ("The nurse is here.", "La enfermera está aquí."),
             ("The nurse came.", "La enfermera vino.")]
    lexicon = dictionary(pairs, {"doctor", "nurse", "here"}, min_dice=0.5, min_count=2)
    assert lexicon["doctor"] == "médico" and lexicon["nurse"] == "enfermera"
    terms = pick_terms(["The doctor is here.", "The nurse came."],
                       ["El médico está aquí.", "La enfermera vino."],
                       ["El doctor está aquí.", "La enfermera vino."], lexicon)
    assert terms == {"doctor": "médico"}  # the second line has its word already
    # A word the references translate two ways is no term; a name keeps its capital.
    assert pick_terms(["The doctor is here.", "A doctor came."],
                      ["El médico está aquí.", "Vino un doctor."],
                      ["El doctor está aquí.", "Vino un doctor."], lexicon) == {}
    assert pick_terms(["Paris is here."], ["París está aquí."], ["Paris está aquí."],
                      {"paris": "parís"}) == {"paris": "París"}
    assert pick_terms(["I saw Paris."], ["Vi París."], ["Vi Paris."],
                      {"paris": "parís"}) == {"paris": "París"}


@pytest.mark.slow
def test_a_run_of_the_benchmark(sample_run: Path, tmp_path: Path, capsys):
    run = Path(shutil.copytree(sample_run, tmp_path / "run"))
    main(["--model", str(run), "--checkpoint", "last", "--device", "cpu",
          "--corpus", str(ROOT / "data" / "sample"), "--sets", "test", "--lines", "30",
          "--dict-lines", "2000", "--work", str(tmp_path / "work")])
    out = capsys.readouterr().out
    assert "term use" in out and "should be 0" in out
    result = json.loads((tmp_path / "work" / "results.json").read_text())["test"]
    assert result["lines"] == 30 and result["changed_without_a_term"] == 0
    assert (tmp_path / "work" / "test.glossary.tsv").is_file()
    if result["entries"]:  # the terms were picked where the plain output lacks them
        for method in ("constrain", "placeholder"):
            assert result["without"]["terms_used"] < result[method]["terms_used"]
