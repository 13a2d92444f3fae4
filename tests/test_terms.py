"""Term annotation (`train.term_annotation`): the annotation's form, the Dice dictionary
that aligns words, the pairs and terms each epoch annotates (the same on every build and
resume), and the settings it refuses."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from helpers import ROOT
from helpers.training import (
    VARIANT_BUDGET,
    assert_training_resumes_exactly,
    assert_variants_resume_mid_epoch,
    fast_config,
    train_texts,
    variant_plan,
)

from transcli.config.loading import load_config, save_config
from transcli.data.batching import BatchPlan
from transcli.data.prepared_dir import open_prepared_dir
from transcli.data.terms import (
    MAX_TERMS,
    TermAnnotation,
    aligned_terms,
    annotate,
    dictionary,
    trained_with_annotation,
    translations,
    written_words,
)
from transcli.rundir.layout import CONFIG_FILE
from transcli.system.errors import UserError


def test_annotate_replaces_the_english_words_by_the_spanish_form() -> None:
    assert annotate("the car is red", [(4, 7, "coche")]) == "the [ coche ] is red"
    # any order, at the start and end, before punctuation, several words
    assert annotate("The doctor saw the nurse.", [(19, 24, "enfermera"), (4, 10, "médico")]) \
        == "The [ médico ] saw the [ enfermera ]."
    assert annotate("Doctors came", [(0, 7, "Médicos")]) == "[ Médicos ] came"
    assert annotate("machine learning", [(0, 16, "aprendizaje automático")]) == \
        "[ aprendizaje automático ]"
    assert annotate("nothing to do", []) == "nothing to do"


@pytest.mark.parametrize("terms", [[(4, 4, "x")], [(4, 20, "x")], [(-1, 3, "x")],
                                   [(0, 7, "x"), (4, 10, "y")]])
def test_annotate_refuses_empty_outside_and_overlapping_terms(terms) -> None:
    with pytest.raises(ValueError, match="empty, out of the text or overlaps"):
        annotate("The doctor came.", terms)


def test_the_spanish_form_takes_the_pieces_it_takes_in_a_spanish_sentence(prepared: Path
                                                                           ) -> None:
    """The copy the model learns: the annotation's pieces for "perros" are the target's."""
    sp = open_prepared_dir(prepared).tokenizer.sp

    def has(text: str, pieces: list[str]) -> bool:
        encoded = sp.Encode(text, out_type=str)
        return any(encoded[i:i + len(pieces)] == pieces for i in range(len(encoded)))

    form = sp.Encode("perros", out_type=str)  # as after a space: its first piece has "▁"
    assert has("Me gustan los perros.", form)
    assert has(annotate("I like dogs.", [(7, 11, "perros")]), form)
    assert not has("I like [perros].", form)  # why the spaces inside the brackets


# English content words: doctor 3 lines, came 2, left 1, slept 1, nurse 1; Spanish:
# médico 2, vino 2, salió 1, doctor 1, durmió 1, enfermera 1 ("the", "el", "la": short).
PAIRS = [("The doctor came.", "Vino el médico."),
         ("The doctor left.", "El médico salió."),
         ("The doctor slept.", "El doctor durmió."),
         ("The nurse came.", "Vino la enfermera.")]


def test_the_dictionary_takes_the_best_dice_within_its_bounds() -> None:
    # doctor: médico 2 x 2 / (3 + 2) = 0.8 in 2 lines; came: vino 2 x 2 / (2 + 2) = 1.0
    assert dictionary(PAIRS) == {"doctor": "médico", "came": "vino"}
    assert dictionary(PAIRS, min_dice=0.85) == {"came": "vino"}  # 0.8 is below
    assert dictionary(PAIRS, {"doctor"}) == {"doctor": "médico"}
    # one line is enough: left -> salió 1.0 (médico 0.67), nurse -> enfermera 1.0 (vino
    # 0.67); slept: durmió and doctor both 1.0 in one line, doctor met first in its line
    assert dictionary(PAIRS, min_count=1) == {"doctor": "médico", "came": "vino",
                                              "left": "salió", "slept": "doctor",
                                              "nurse": "enfermera"}


def test_translations_are_the_best_few_by_dice() -> None:
    # doctor's lines: médico 2 x 2 / (3 + 2) = 0.8; salió, doctor, durmió 2 / (3 + 1) =
    # 0.5 each, in the order met; vino 2 / (3 + 2) = 0.4, fifth
    assert translations(PAIRS, {"doctor"}, min_count=1) == \
        {"doctor": ["médico", "salió", "doctor", "durmió"]}
    assert translations(PAIRS, {"doctor"}, min_count=1, top=2) == \
        {"doctor": ["médico", "salió"]}
    assert translations(PAIRS) == {"doctor": ["médico"], "came": ["vino"]}  # the bounds


def test_a_pairs_terms_are_its_words_whose_translation_the_target_has() -> None:
    lexicon = {"doctor": ["médico"], "came": ["vino"], "physician": ["médico", "galeno"],
               "left": ["salió"]}
    source, target = "The Doctor came, the doctor and the physician left.", "Vino el Médico."
    terms = aligned_terms(source, target, lexicon)
    # the first "Doctor" only; "physician" finds médico taken; no salió in the target
    assert terms == [(4, 10, 8, 14), (11, 15, 0, 4)]
    assert annotate(source, [(s, e, target[fs:fe]) for s, e, fs, fe in terms]) == \
        "The [ Médico ] [ Vino ], the doctor and the physician left."
    # the first translation the target has, if not the best one
    lexicon = {"doctor": ["médico", "doctor"], "left": ["salió"]}
    assert aligned_terms("The doctor left.", "Salió el doctor.", lexicon) == \
        [(4, 10, 9, 15), (11, 15, 0, 5)]


def plan_and_terms(prepared: Path, share: float) -> tuple[BatchPlan, TermAnnotation]:
    return variant_plan(prepared, lambda data: TermAnnotation(data, share, seed=1))


def test_an_epoch_annotates_a_share_of_the_pairs_with_a_term(prepared: Path) -> None:
    plan, terms = plan_and_terms(prepared, 0.5)
    tokenizer = open_prepared_dir(prepared).tokenizer
    english, spanish = train_texts(prepared, "en"), train_texts(prepared, "es")
    with_a_term = set(np.flatnonzero(terms.terms.counts).tolist())
    assert 20 <= len(with_a_term) < len(english)  # the test means something
    annotated, term_counts = [], set()
    for epoch in range(20):
        ids = np.concatenate(plan.epoch(epoch))
        pairs, masks = ids % terms.size, ids // terms.size
        assert sorted(pairs.tolist()) == plan.indices.tolist()  # each pair once
        annotated.append(set(pairs[masks > 0].tolist()))
        assert annotated[-1] <= with_a_term
        term_counts |= {bin(mask).count("1") for mask in masks[masks > 0].tolist()}
        for batch in plan.epoch(epoch):
            collated = terms.collate(batch)
            assert len(batch) == 1 or max(collated.src.numel(), collated.tgt_in.numel()) \
                <= VARIANT_BUDGET
            pair_ids = (batch % terms.size).tolist()
            sources = [english[i] for i in pair_ids]
            for row in np.flatnonzero(batch >= terms.size).tolist():
                sources[row] = terms.annotated(batch[row:row + 1])[0]
                # 1 or 2 of the source's words gone, each for a word of the target
                forms = re.findall(r"\[ (\w+) \]", sources[row])
                assert 1 <= len(forms) <= MAX_TERMS
                assert set(forms) <= set(written_words(spanish[pair_ids[row]]))
                left = re.sub(r"\[ \w+ \]", "", sources[row])
                assert len(written_words(left)) == \
                    len(written_words(english[pair_ids[row]])) - len(forms)
            assert tokenizer.decode(collated.src.tolist()) == sources
            assert tokenizer.decode(collated.tgt_out.tolist()) == [spanish[i] for i in pair_ids]
    assert term_counts == set(range(1, MAX_TERMS + 1))
    # 20 epochs of a chance in two for each pair with a term: 280 on average, sd 8.4
    assert 230 <= sum(map(len, annotated)) <= 330
    assert annotated[0] != annotated[1]


def test_two_builds_annotate_the_same_pairs_and_terms(prepared: Path) -> None:
    first, second = (plan_and_terms(prepared, 0.3)[1] for _ in range(2))
    pairs = np.arange(first.size)
    for epoch in range(3):
        for a, b in zip(first.epoch(epoch, pairs), second.epoch(epoch, pairs)):
            assert a.tolist() == b.tolist()
    assert first.epoch(0, pairs)[1].tolist() != first.epoch(1, pairs)[1].tolist()


def test_a_stream_resumed_mid_epoch_sees_the_same_batches(prepared: Path) -> None:
    assert_variants_resume_mid_epoch(lambda: plan_and_terms(prepared, 0.3))


@pytest.mark.slow
def test_annotated_training_resumes_exactly(prepared: Path, tmp_path: Path) -> None:
    """8 updates, resume to 16, equals 16 straight; the annotated pairs change training;
    the run's saved config says it was trained with annotation."""
    straight, plain = assert_training_resumes_exactly("train.term_annotation=0.5", prepared,
                                                      tmp_path)
    assert trained_with_annotation(load_config(straight / CONFIG_FILE))
    assert not trained_with_annotation(load_config(plain / CONFIG_FILE))


def test_a_saved_config_keeps_the_share(tmp_path: Path) -> None:
    save_config(fast_config("train.term_annotation=0.3"), tmp_path / "config.yaml")
    saved = load_config(tmp_path / "config.yaml")
    assert saved.train.term_annotation == 0.3 and trained_with_annotation(saved)
    assert not trained_with_annotation(fast_config())


@pytest.mark.parametrize("sets, expected", [
    (["train.term_annotation=1.5"], "train.term_annotation' must be in [0, 1]"),
    (["train.term_annotation=-0.1"], "train.term_annotation' must be in [0, 1]"),
    (["train.term_annotation=0.1", "train.sample_alpha=0.1"],
     "train.term_annotation' needs train.sample_alpha: 0"),
    (["train.term_annotation=0.1", "train.case_augment=0.1"],
     "train.term_annotation' needs train.case_augment: 0"),
    (["train.term_annotation=0.1", "train.batch_shapes=8"],
     "train.batch_shapes' needs train.term_annotation: 0"),
])
def test_settings_it_cannot_go_with_are_refused_in_one_line(sets: list[str], expected: str
                                                            ) -> None:
    with pytest.raises(UserError) as error:
        load_config(ROOT / "configs" / "tiny.yaml", sets)
    assert expected in str(error.value) and "\n" not in str(error.value)
