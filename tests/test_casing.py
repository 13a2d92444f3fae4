"""Case augmentation (`train.case_augment`): each epoch shows a share of the training pairs
in ALL CAPS or Title Case on both sides, batched by their cased lengths, the same on
every run and resume."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import ROOT
from helpers.training import (
    VARIANT_BUDGET,
    assert_training_resumes_exactly,
    assert_variants_resume_mid_epoch,
    train_texts,
    variant_plan,
)

from transcli.config.loading import load_config
from transcli.data.batching import BatchPlan
from transcli.data.casing import CaseAugment, title_cased, upper_cased
from transcli.data.prepared_dir import open_prepared_dir
from transcli.system.errors import UserError


def test_title_case_capitalises_every_word_as_written() -> None:
    assert title_cased("¿dónde está la estación?") == "¿Dónde Está La Estación?"
    assert title_cased("I don't like e-mail from iPhone users.") == \
        "I Don't Like E-Mail From IPhone Users."
    assert title_cased("el niño (y la niña) comen") == "El Niño (Y La Niña) Comen"
    assert upper_cased("¿Dónde está el niño?") == "¿DÓNDE ESTÁ EL NIÑO?"


def plan_and_cases(prepared: Path, share: float) -> tuple[BatchPlan, CaseAugment]:
    return variant_plan(prepared, lambda data: CaseAugment(data, share, seed=1))


def decoded(tokenizer, rows) -> list[str]:
    return tokenizer.decode(rows.tolist())  # without pad, BOS and EOS


def test_an_epoch_cases_a_share_of_pairs_on_both_sides_within_the_budget(prepared: Path
                                                                         ) -> None:
    plan, cases = plan_and_cases(prepared, 0.5)
    tokenizer = open_prepared_dir(prepared).tokenizer
    english, spanish = train_texts(prepared, "en"), train_texts(prepared, "es")
    cased_per_epoch, forms = [], set()
    for epoch in range(5):
        ids = np.concatenate(plan.epoch(epoch))
        pairs, form = ids % cases.size, ids // cases.size
        assert sorted(pairs.tolist()) == plan.indices.tolist()  # each pair once
        cased_per_epoch.append(set(pairs[form > 0].tolist()))
        forms |= set(form.tolist())
        for batch in plan.epoch(epoch):
            collated = cases.collate(batch)
            assert len(batch) == 1 or max(collated.src.numel(), collated.tgt_in.numel()) \
                <= VARIANT_BUDGET
            casing = [{0: str, 1: str.upper, 2: title_cased}[f] for f in batch // cases.size]
            pair_ids = (batch % cases.size).tolist()
            assert decoded(tokenizer, collated.src) == [
                case(english[i]) for case, i in zip(casing, pair_ids)]
            assert decoded(tokenizer, collated.tgt_out) == [
                case(spanish[i]) for case, i in zip(casing, pair_ids)]
    assert forms == {0, 1, 2}
    assert 50 <= sum(map(len, cased_per_epoch)) <= 110  # 160 draws of one chance in two
    assert cased_per_epoch[0] != cased_per_epoch[1]


def test_a_stream_resumed_mid_epoch_sees_the_same_batches(prepared: Path) -> None:
    assert_variants_resume_mid_epoch(lambda: plan_and_cases(prepared, 0.3))


@pytest.mark.slow
def test_case_augmented_training_resumes_exactly(prepared: Path, tmp_path: Path) -> None:
    """8 updates, resume to 16, equals 16 straight; and the cased pairs change training."""
    assert_training_resumes_exactly("train.case_augment=0.5", prepared, tmp_path)


@pytest.mark.parametrize("sets, expected", [
    (["train.case_augment=1.5"], "must be in [0, 1]"),
    (["train.case_augment=0.1", "train.sample_alpha=0.1"], "sample_alpha: 0"),
    (["train.case_augment=0.1", "train.batch_shapes=8"], "case_augment: 0"),
])
def test_settings_it_cannot_go_with_are_refused(sets: list[str], expected: str) -> None:
    with pytest.raises(UserError, match="train.(case_augment|batch_shapes)") as error:
        load_config(ROOT / "configs" / "tiny.yaml", sets)
    assert expected in str(error.value)


def test_a_prepared_dir_without_its_train_text_is_named(prepared: Path, tmp_path: Path
                                                        ) -> None:
    copy = tmp_path / "prepared"
    shutil.copytree(prepared, copy)
    (copy / "train.es").unlink()
    with pytest.raises(UserError, match=r"train.es: train text not found; case augmentation "
                                        r"\(train.case_augment\) needs a prepared dir"):
        CaseAugment(open_prepared_dir(copy), 0.1, seed=1)
