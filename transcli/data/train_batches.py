"""The train split as a run reads it: the batch plan (each pair weighted by its source and
length, shapes from `train.batch_shapes`, a share cased or annotated each epoch) and how
each of its batches is collated."""

from __future__ import annotations

from typing import Optional, Union

from transcli.config.schema import Config
from transcli.data.batching import BatchPlan, MakeBatch, collate
from transcli.data.casing import CaseAugment
from transcli.data.prepared_dir import PreparedDir
from transcli.data.resegment import Resegmenter
from transcli.data.terms import TermAnnotation
from transcli.data.weights import pair_weights
from transcli.system.errors import UserError

Variants = Union[CaseAugment, TermAnnotation]


def train_batches(cfg: Config, data: PreparedDir, rank: int) -> tuple[BatchPlan, MakeBatch]:
    """The train split's length-bucketed batch plan, and how process `rank` makes one of
    its batches; refused in one line when it holds no batch."""
    tc = cfg.train
    split = data.split("train")
    variants: Optional[Variants] = None  # pairs shown cased or annotated (one, or neither)
    if tc.case_augment:
        variants = CaseAugment(data, tc.case_augment, tc.seed)
    elif tc.term_annotation:
        variants = TermAnnotation(data, tc.term_annotation, tc.seed)
    multiple = tc.pad_multiple or 1  # what batch lengths are padded to
    plan = BatchPlan(split.src_lengths, split.tgt_lengths, tc.batch_tokens, tc.seed,
                     cfg.model.max_positions, multiple=multiple, shapes=tc.batch_shapes,
                     weights=pair_weights(data.manifest, split.src_lengths, tc),
                     variants=variants)
    if not plan.indices.size:
        raise UserError(f"{data.dir}: no training pair fits model.max_positions="
                        f"{cfg.model.max_positions}")
    if plan.weights is not None and plan.weights.sum() < 1:  # an empty epoch, most times
        raise UserError(f"{data.dir}: the pairs' weights (data.train's weight x "
                        f"train.long_weight={tc.long_weight:g}) leave "
                        f"{plan.weights.sum():.3g} training pairs per epoch on average: raise "
                        f"them, at least one pair is needed")
    aligned = data.alignments("train.guided_alignment") if tc.guided_alignment else None
    if variants is not None:  # the plan's batches hold cased or annotated pairs' ids
        return plan, lambda idx, _: variants.collate(idx, multiple, aligned)
    if tc.sample_alpha:  # subword regularisation: the train text segmented anew
        return plan, Resegmenter(data, tc.sample_alpha, tc.sample_nbest, tc.seed, rank,
                                 cfg.model.max_positions, multiple)
    return plan, lambda idx, _: collate(split, idx, multiple, plan.shapes, aligned)

