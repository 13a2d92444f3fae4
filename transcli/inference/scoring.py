"""How likely the model finds a given translation (forced decoding).

Each pair's target is fed teacher-forced, exactly as in training: the score is the sum of
log p(y_t | y_<t, source) over the target pieces and the end-of-sentence token, without
label smoothing. The per-token figure (the total divided by that count) compares pairs
of different lengths: low values flag misaligned or broken pairs when filtering a
corpus, or a reference the model disagrees with.

Pairs are batched by tokens and sorted by length like `Translator`'s lines; the output
keeps the input order and is written a chunk at a time, so a large corpus streams.
"""

from __future__ import annotations

import math

import torch

from transcli.data.batching import assemble, rows_from_lists
from transcli.data.tokenizer import Tokenizer
from transcli.inference.positions import fitting_chars
from transcli.inference.translator import token_batches
from transcli.model.transformer import Transformer
from transcli.model.vocab import PAD_ID

ROWS_PER_CHUNK = 1024  # target positions whose [rows, V] log-probs exist at once


class PairScorer:
    """Scores (English, Spanish) line pairs with a model: (total log-prob, scored tokens)
    per pair, or (nan, 0) for a pair with a blank side or one too long for the model,
    which `too_long` counts."""

    def __init__(self, model: Transformer, tokenizer: Tokenizer, batch_tokens: int):
        self.model, self.tokenizer, self.batch_tokens = model, tokenizer, batch_tokens
        self.cap = fitting_chars(model.cfg.max_positions)  # longer lines are never tokenized
        self.too_long = 0

    def score(self, pairs: list[tuple[str, str]]) -> list[tuple[float, int]]:
        fits = [max(len(s), len(t)) <= self.cap for s, t in pairs]
        scored = [i for i, (s, t) in enumerate(pairs) if s.strip() and t.strip() and fits[i]]
        found = forced_logprobs(self.model,
                                self.tokenizer.encode([pairs[i][0] for i in scored]),
                                self.tokenizer.encode([pairs[i][1] for i in scored]),
                                self.batch_tokens)
        self.too_long += sum(math.isnan(total) for total, _ in found) + fits.count(False)
        scores = dict(zip(scored, found))
        return [scores.get(i, (math.nan, 0)) for i in range(len(pairs))]


@torch.inference_mode()
def forced_logprobs(model: Transformer, sources: list[list[int]], targets: list[list[int]],
                    batch_tokens: int) -> list[tuple[float, int]]:
    """(total log-prob, scored tokens) per pair of source / target ids (without EOS; an
    empty target scores the end of sentence alone). Pairs too long for the model's
    positions get (nan, tokens)."""
    limit = model.cfg.max_positions
    results: list[tuple[float, int]] = [(math.nan, len(t) + 1) for t in targets]
    todo = [i for i, (s, t) in enumerate(zip(sources, targets))
            if len(s) + 1 <= limit and len(t) + 1 <= limit]
    lengths = [max(len(sources[i]), len(targets[i])) + 1 for i in todo]
    device = next(model.parameters()).device
    for batch in token_batches(lengths, batch_tokens):
        picked = [todo[j] for j in batch]
        totals = _batch_logprobs(model, [sources[i] for i in picked],
                                 [targets[i] for i in picked], device)
        for i, total in zip(picked, totals):
            results[i] = (total, len(targets[i]) + 1)
    return results


def _batch_logprobs(model: Transformer, sources: list[list[int]], targets: list[list[int]],
                    device: torch.device) -> list[float]:
    batch = assemble(rows_from_lists(sources), rows_from_lists(targets)).to(device)
    hidden = model.decode_hidden(batch.tgt_in, model.encode(batch.src))
    real = batch.tgt_out != PAD_ID
    rows = real.nonzero()[:, 0]  # the pair of each real target position
    states, gold = hidden[real], batch.tgt_out[real]
    picked = torch.cat([  # log-softmax a slice of positions at a time: [slice, V] each
        model.log_probs(states[i:i + ROWS_PER_CHUNK])
        .gather(1, gold[i:i + ROWS_PER_CHUNK, None])[:, 0]
        for i in range(0, len(gold), ROWS_PER_CHUNK)])
    totals = torch.zeros(len(sources), dtype=torch.float64, device=device)
    return totals.index_add_(0, rows, picked.double()).tolist()
