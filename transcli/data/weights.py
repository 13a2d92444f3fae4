"""How often each training pair is seen per epoch: its weight.

Two settings give it, multiplied: the weight of the source a pair came from
(`data.train[i].weight`, which prepare records in the manifest with the number of train
pairs each source kept) and, for a pool that is one file, `train.long_weight` for pairs
whose source side has more than `train.long_tokens` tokens.

The batch plan applies the weights (`epoch_copies`), not prepare: prepare dedupes the
corpus as it is, so copying a file twice would only be undone there. A weight of 2 puts
a pair in two batches of every epoch, 0.5 in half the epochs, 1.5 in one batch and a
second one every other epoch, each drawn from the epoch's seeded generator, so a resumed
run sees exactly the batches it would have seen.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from transcli.config.schema import MAX_WEIGHT, TrainConfig
from transcli.system.errors import UserError


def source_sizes(manifest: dict[str, Any]) -> list[tuple[int, float]]:
    """(train pairs, weight) of each train source, in the order of the train split (one
    source after the other); [] for a manifest from before prepare recorded them. A
    manifest whose record of them is not that (an edit) is refused in one line."""
    sources = manifest.get("sources")
    sources = sources.get("train", []) if isinstance(sources, dict) else []
    if not isinstance(sources, list) or not all(isinstance(s, dict) and "pairs" in s
                                                for s in sources):
        return []
    sizes = [(s["pairs"], s.get("weight", 1.0)) for s in sources]
    if not all(type(pairs) is int and pairs >= 0 and type(weight) in (int, float)
               and 0 < weight <= MAX_WEIGHT for pairs, weight in sizes):
        raise UserError(f"manifest.json: its train sources' pairs and weights are not counts "
                        f"and weights in (0, {MAX_WEIGHT:g}] (run `transcli prepare` again)")
    return [(pairs, float(weight)) for pairs, weight in sizes]


def pair_weights(manifest: dict[str, Any], src_lengths: np.ndarray, tc: TrainConfig
                 ) -> Optional[np.ndarray]:
    """Each train pair's weight (float64), or None when every pair's is 1. `src_lengths`:
    the source tokens of each pair, without EOS."""
    sizes = source_sizes(manifest)
    weights = np.ones(len(src_lengths))
    if any(weight != 1.0 for _, weight in sizes):
        counts = [pairs for pairs, _ in sizes]
        if sum(counts) != len(src_lengths):
            raise UserError(f"manifest.json: its train sources hold {sum(counts):,} pairs, "
                            f"the train split {len(src_lengths):,} (run `transcli prepare` "
                            f"again)")
        weights = np.repeat([weight for _, weight in sizes], counts)
    if tc.long_weight != 1.0:
        weights = np.where(np.asarray(src_lengths) > tc.long_tokens,
                           weights * tc.long_weight, weights)
    if weights.size and weights.max() > MAX_WEIGHT:  # each bounded, their product too
        raise UserError(f"data.train's weight x train.long_weight={tc.long_weight:g} gives "
                        f"{weights.max():g} copies of a pair per epoch, more than "
                        f"{MAX_WEIGHT:g}: lower one of them")
    return None if np.all(weights == 1.0) else weights


def epoch_copies(weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """How many times each pair is in this epoch: the weight's whole part, plus one with
    the chance of its fraction."""
    whole = np.floor(weights)
    return (whole + (rng.random(len(weights)) < weights - whole)).astype(np.int64)


def pair_copies(indices: np.ndarray, copies: np.ndarray) -> list[np.ndarray]:
    """The epoch's copies of the pairs `indices`, `copies` of each: the k-th array holds
    the (k+1)-th copy of every pair seen more than k times. Each is batched on its own,
    so no batch holds a pair twice."""
    return [indices[copies > k] for k in range(int(copies.max(initial=0)))]
