"""Search strategies over a batch of source sentences: greedy, beam and sampling.

`decode.strategy` names one of them in `SEARCHES`, all with one signature (see
`Search`); `search` runs the one a config asks for.

The encoder runs once per batch. Each step feeds one token per live sequence to
the decoder, which reuses cached keys/values (`Decoder`). Search works on one tensor of
sentences x beams; sentences that finish are dropped from it, so a batch gets cheaper
as it goes and no sentence's result depends on the others in its batch. Beam search
is one loop (`run_beams`) over a set of beams: plain (`Beams`), or holding a line's
glossary terms (`constrained.ConstrainedBeams`).

Scores are log-probabilities divided by the GNMT length penalty
((5 + len) / 6) ** alpha (Wu et al. 2016), plus an optional reward per token,
`decode.word_reward` * len (Murray & Chiang 2018), where len counts the EOS token.
Beam search compares hypotheses of different lengths by this score; a weak model's
beams end early, and the reward counters that bias toward short translations. With
`decode.word_reward_bound` = r > 0, the reward counts at most r x (source tokens) + 1
tokens (Yang et al. 2018's bounded reward): it lengthens short outputs without paying
for junk beyond a plausible length, and beam search can stop once a sentence is past it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

import torch
from torch import Tensor

from transcli.config.schema import STRATEGIES, DecodeConfig
from transcli.inference import single, topk
from transcli.inference.repeats import ban_repeats
from transcli.model.kvcache import DecoderState, StepBuffers
from transcli.model.transformer import Memory, Transformer
from transcli.model.vocab import BOS_ID, EOS_ID, PAD_ID

NEG_INF = float("-inf")


@dataclass
class Hypothesis:
    """One translation of one sentence, as target ids without BOS/EOS."""

    tokens: list[int]
    logprob: float  # sum of the token log-probabilities, EOS included when emitted
    score: float  # what search ranks by: `hypothesis_score`
    eos: bool  # False when the search stopped at the maximum length
    # Each token's log-probability, EOS's last when emitted (a line's confidence reads
    # them); empty where the engine does not give them.
    steps: tuple[float, ...] = ()


def length_penalty(length: int, alpha: float) -> float:
    """GNMT: ((5 + length) / 6) ** alpha; alpha = 0 compares raw log-probabilities."""
    return ((5.0 + length) / 6.0) ** alpha


def hypothesis_score(logprob: float, length: int, alpha: float, reward: float = 0.0,
                     bound: float = math.inf) -> float:
    """What search ranks hypotheses of `length` tokens (EOS included) by:
    logprob / length_penalty(length, alpha) + reward * min(length, bound)."""
    return logprob / length_penalty(length, alpha) + reward * min(length, bound)


def reward_bounds(src: Tensor, ratio: float) -> list[float]:
    """Per sentence of `src` [batch, src_len] (EOS-terminated, padded): the length up to
    which the word reward counts, ratio x (source tokens without EOS) + 1 for the target's
    EOS; no bound when `ratio` is 0."""
    if ratio == 0.0:
        return [math.inf] * src.size(0)
    return [ratio * (n - 1) + 1 for n in (src != PAD_ID).sum(dim=1).tolist()]


class Decoder:
    """The decoder as search sees it: feed the newest tokens, get next-token log-probs
    (`Transformer.step`, keys and values cached); `reorder` selects/repeats batch rows
    (expand to beams, follow beams, drop finished)."""

    def __init__(self, model: Transformer, memory: Memory):
        self.model = model
        self.state: DecoderState = model.start_decoding(memory)
        self.state.buffers = StepBuffers()  # every search reads a step's log-probs first

    def step(self, tokens: Tensor) -> Tensor:
        return self.model.step(tokens, self.state)

    def drop(self, keep: Tensor) -> Tensor:
        """Keep the rows where `keep` (bool) is True; returns the kept rows' index in their
        new order (`DecoderState.drop`)."""
        return self.state.drop(keep)

    def reorder(self, index: Tensor, sentences: Tensor | None = None) -> None:
        """Rows become `index`'s rows; `sentences`, when given, says that they are the
        current group size's rows of those sentences, in order (`DecoderState.reorder`)."""
        self.state.reorder(index, sentences)


def limits(max_len: int | list[int] | Tensor, src: Tensor, model: Transformer) -> Tensor:
    """Per-sentence maximum target length (EOS included), capped so that BOS plus
    every fed token fits the model's positional table."""
    limit = torch.as_tensor(max_len, dtype=torch.long, device=src.device)
    limit = limit.expand(src.size(0)) if limit.dim() == 0 else limit
    return limit.clamp(1, model.cfg.max_positions)


def greedy_search(model: Transformer, src: Tensor, max_len: int | list[int] | Tensor,
                  length_penalty_alpha: float = 0.0, word_reward: float = 0.0,
                  reward_bound: float = 0.0, no_repeat_ngram: int = 0) -> list[Hypothesis]:
    """The most likely next token at every step, for each sentence of `src` [batch, src_len].

    `max_len` (one for all, or one per sentence) bounds the target tokens, EOS included;
    `length_penalty_alpha`, `word_reward` and `reward_bound` only affect the reported
    score, so that it matches beam search's; `no_repeat_ngram` > 0 never completes an
    n-gram of that size twice (`repeats.ban_repeats`). A sentence alone on the CPU is
    decoded by `single.SingleDecoder`: the same numbers with less bookkeeping.
    """
    limit = limits(max_len, src, model)
    memory = model.encode(src, packed=True)
    decoder = (single.SingleDecoder(model, memory) if single.takes(model, src)
               else Decoder(model, memory))
    return _one_path(decoder, limit, length_penalty_alpha,
                     (word_reward, reward_bounds(src, reward_bound)),
                     _most_likely, no_repeat_ngram)


def _most_likely(logp: Tensor, rows: Tensor) -> tuple[Tensor, Tensor]:
    """Greedy's pick: each row's largest log-prob and its token (the first on a tie)."""
    return topk.top_1(logp)


ChooseNext = Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]


Reward = tuple[float, list[float]]  # word reward, and the length it counts up to per row


def _one_path(decoder: Decoder | single.SingleDecoder, limit: Tensor, alpha: float, reward: Reward,
              pick: ChooseNext, no_repeat_ngram: int = 0) -> list[Hypothesis]:
    """One hypothesis per row, extended by `pick(log-probs [rows, V], rows [rows])` ->
    (log-prob, token) per decoder row until EOS or the row's `limit`; with
    `no_repeat_ngram` > 0, tokens that would repeat an n-gram of the row are never picked."""
    sequences = RowSequences(limit)
    tokens = torch.full((limit.size(0),), BOS_ID, dtype=torch.long, device=limit.device)
    history = tokens[:, None][:, :0]  # the decoder rows' tokens so far (for no_repeat_ngram)
    for step in range(1, sequences.most + 1):
        logp = decoder.step(tokens)
        if no_repeat_ngram:
            ban_repeats(logp, history, no_repeat_ngram)
            history = torch.cat([history, history.new_zeros(history.size(0), 1)], dim=1)
        best_logp, best = pick(logp, sequences.rows)
        if not sequences.extend(best, best_logp, step):
            break
        tokens = best
        if no_repeat_ngram:
            history[:, -1] = best
        if sequences.drop_due():
            live = sequences.drop(decoder, step)
            tokens, history = tokens[live], history[live]
    sequences.flush(step)
    per_token, bounds = reward
    hyps = []
    for ids, steps, lp, n, e, b in zip(
            sequences.out.tolist(), sequences.out_logp.tolist(), sequences.logprob.tolist(),
            sequences.length.tolist(), sequences.ended.tolist(), bounds):
        hyps.append(Hypothesis(ids[:n - 1] if e else ids[:n], lp,
                               hypothesis_score(lp, n, alpha, per_token, b), e,
                               tuple(steps[:n])))
    return hyps


CARRY_ROWS = 16  # up to this many decoder rows, greedy search carries rows that ended


class RowSequences:
    """The sequences of a one-path search (greedy, sampling) as it goes: what each input
    row has so far, and the decoder's rows. In a small batch a row that ends stays in the
    decoder, fed its own picks, until enough have ended that dropping them pays
    (`drop_due`): a drop copies cache rows in every layer, which costs a small batch more
    than a few rows more in each product (batches of 16 lines ran 12% faster per CPU
    second). Each row is independent of the others, so this changes nothing in what
    they find."""

    def __init__(self, limit: Tensor):
        batch, device = limit.size(0), limit.device
        self.most = int(limit.max())
        self.out = torch.zeros(batch, self.most, dtype=torch.long, device=device)
        self.out_logp = torch.zeros(batch, self.most, dtype=torch.float64, device=device)
        self.logprob = torch.zeros(batch, dtype=torch.float64, device=device)
        self.length = limit.clone()
        self.ended = torch.zeros(batch, dtype=torch.bool, device=device)
        self.limit_steps = set(limit.tolist())  # the steps at which some row must stop
        # The decoder's rows: each one's input row, limit, log-prob so far, and whether
        # it is still open; the tokens picked since the last drop, one tensor per step.
        self.rows = torch.arange(batch, device=device)
        self.limits = limit
        self.sums = torch.zeros(batch, dtype=torch.float64, device=device)
        self.open = torch.ones(batch, dtype=torch.bool, device=device)
        self.closed = 0
        self.picked: list[Tensor] = []
        self.picked_logp: list[Tensor] = []

    def extend(self, best: Tensor, best_logp: Tensor, step: int) -> bool:
        """Step `step`'s picks; rows that pick EOS or reach their limit end, and their
        log-prob and length are kept. Whether any row is still open."""
        self.picked.append(best)
        self.picked_logp.append(best_logp)
        self.sums.add_(best_logp)  # in float64; a closed row's total was kept when it ended
        done = best == EOS_ID
        if step in self.limit_steps:
            done |= self.limits <= step
        done &= self.open
        ending = int(done.sum())
        if ending:
            rows = self.rows[done]
            self.logprob[rows] = self.sums[done]
            self.length[rows] = step
            self.ended[rows] = best[done] == EOS_ID
            self.open &= ~done
            self.closed += ending
        return self.closed < self.rows.numel()

    def drop_due(self) -> bool:
        """Whether the rows that ended leave the decoder now: at once from more than
        `CARRY_ROWS` rows (each row costs its share of every product there), else once
        they are a quarter of the rows (a step of so few rows costs about the same with a
        few more: its time goes into reading the weights)."""
        rows = self.rows.numel()
        return self.closed > 0 and (rows > CARRY_ROWS or 4 * self.closed >= rows)

    def drop(self, decoder: Decoder, step: int) -> Tensor:
        """Drop the ended rows from the decoder (`Decoder.drop`); the kept
        rows' index."""
        self.flush(step)
        live = decoder.drop(self.open)
        self.rows, self.limits, self.sums = self.rows[live], self.limits[live], self.sums[live]
        self.open = torch.ones_like(self.rows, dtype=torch.bool)
        self.closed = 0
        return live

    def flush(self, step: int) -> None:
        """Write the picks since the last drop (up to step `step`) into `out`."""
        if self.picked:
            first = step - len(self.picked)
            self.out[self.rows, first:step] = torch.stack(self.picked, dim=1)
            self.out_logp[self.rows, first:step] = torch.stack(self.picked_logp, dim=1).double()
            self.picked, self.picked_logp = [], []


def sample_probs(logp: Tensor, temperature: float = 1.0, top_k: int = 0,
                 top_p: float = 1.0) -> Tensor:
    """The distribution sampling draws from, per row of next-token log-probs [rows, V]:
    softmax(logp / temperature), cut to the `top_k` most likely tokens (0: all) and
    renormalised, then cut to the nucleus (Holtzman et al. 2020): the fewest most likely
    tokens whose mass reaches `top_p`; renormalised. The order is Hugging Face's."""
    probs = torch.softmax(logp.double() / temperature, dim=-1)
    if 0 < top_k < probs.size(-1):
        kth = probs.topk(top_k, dim=-1).values[:, -1:]
        probs = probs.masked_fill(probs < kth, 0.0)  # ties with the k-th stay
        probs = probs / probs.sum(dim=-1, keepdim=True)
    if top_p < 1.0:
        ordered, order = probs.sort(dim=-1, descending=True)
        mass_before = ordered.cumsum(dim=-1) - ordered  # kept while the mass so far < top_p
        probs = probs.scatter(-1, order, ordered.masked_fill(mass_before >= top_p, 0.0))
    return probs / probs.sum(dim=-1, keepdim=True)


def sample_seed(seed: int, index: int, sample: int) -> str:
    """The seed of one sample of one input line: a function of nothing else, so the
    line's translation does not depend on its batch or on the lines around it."""
    return f"{seed}/{index}/{sample}"


def _sampler(decode: DecodeConfig, seeds: list[str]) -> ChooseNext:
    """Ancestral sampling by inverse CDF: one uniform draw per row and step, each row
    with its own generator (`random.Random`, the same on every platform and device)."""
    generators = [random.Random(seed) for seed in seeds]

    def pick(logp: Tensor, rows: Tensor) -> tuple[Tensor, Tensor]:
        probs = sample_probs(logp, decode.temperature, decode.top_k, decode.top_p)
        draws = torch.tensor([generators[r].random() for r in rows.tolist()],
                             dtype=torch.float64, device=logp.device)
        cdf = probs.cumsum(dim=-1)
        # The first token whose cumulative mass exceeds the draw (never one of mass 0).
        token = (cdf <= draws[:, None] * cdf[:, -1:]).sum(dim=-1).clamp(max=probs.size(-1) - 1)
        return logp.gather(1, token[:, None])[:, 0], token

    return pick


# ----------------------------------------------------------------------------- the registry
# Every strategy has this signature: the model, a padded batch of sources, the maximum
# target length of each, the decode settings, and each sentence's index in the input
# (which seeds sampling). It returns each sentence's hypotheses, best first. A new
# strategy is one such function, named as its name and meaning in
# `config.schema.STRATEGIES` say, and a test.

Search = Callable[[Transformer, Tensor, list[int], DecodeConfig, Sequence[int]],
                  list[list[Hypothesis]]]


def greedy(model: Transformer, src: Tensor, max_len: list[int], decode: DecodeConfig,
           indices: Sequence[int]) -> list[list[Hypothesis]]:
    """`greedy_search` (one hypothesis per sentence)."""
    return [[h] for h in greedy_search(model, src, max_len, decode.length_penalty,
                                       decode.word_reward, decode.word_reward_bound,
                                       decode.no_repeat_ngram)]


def beam(model: Transformer, src: Tensor, max_len: list[int], decode: DecodeConfig,
         indices: Sequence[int]) -> list[list[Hypothesis]]:
    """`beam_search` with `decode.beam_size` beams and `decode.n_best` hypotheses."""
    return beam_search(model, src, decode.beam_size, decode.length_penalty, max_len,
                       decode.n_best, decode.word_reward, decode.word_reward_bound,
                       decode.no_repeat_ngram)


def sample(model: Transformer, src: Tensor, max_len: list[int], decode: DecodeConfig,
           indices: Sequence[int]) -> list[list[Hypothesis]]:
    """`decode.n_best` independent samples per sentence, best score first; token by token
    from `sample_probs`, line `indices[i]`'s j-th sample seeded by `sample_seed`."""
    n = decode.n_best
    limit = limits(max_len, src, model).repeat_interleave(n)
    decoder = Decoder(model, model.encode(src, packed=True))
    if n > 1:
        decoder.reorder(torch.arange(src.size(0), device=src.device).repeat_interleave(n))
    seeds = [sample_seed(decode.seed, index, j) for index in indices for j in range(n)]
    bounds = [b for b in reward_bounds(src, decode.word_reward_bound) for _ in range(n)]
    found = _one_path(decoder, limit, decode.length_penalty, (decode.word_reward, bounds),
                      _sampler(decode, seeds), decode.no_repeat_ngram)
    return [sorted(found[i:i + n], key=lambda h: h.score, reverse=True)
            for i in range(0, len(found), n)]


# Each of decode.strategy's names is the function of that name above.
SEARCHES: dict[str, Search] = {name: globals()[name] for name in STRATEGIES}


def search(model: Transformer, src: Tensor, max_len: list[int], decode: DecodeConfig,
           indices: Sequence[int] | None = None) -> list[list[Hypothesis]]:
    """Run the strategy `decode.strategy` names over a batch; `indices` default to 0..n-1."""
    return SEARCHES[decode.strategy](model, src, max_len, decode,
                                     range(src.size(0)) if indices is None else indices)


def beam_search(model: Transformer, src: Tensor, beam_size: int, length_penalty_alpha: float,
                max_len: int | list[int] | Tensor, n_best: int = 1, word_reward: float = 0.0,
                reward_bound: float = 0.0, no_repeat_ngram: int = 0) -> list[list[Hypothesis]]:
    """Beam search for each sentence of `src` [batch, src_len]; returns its `n_best` best
    hypotheses, best first.

    Every step ranks the 2K best continuations of a sentence's K live beams by log-prob. EOS
    among the top K of them finishes that hypothesis (length-penalised score); the first K
    that are not EOS stay live, so the beam stays full. A sentence is done when it has
    `n_best` finished hypotheses and its best live one, scored at the current length, does
    not beat the n_best-th of them (`BeamScore.open`). At its maximum length a sentence's
    live beams end unfinished. Finished hypotheses rank before unfinished ones. A
    `word_reward` adds that much per token to every score (`hypothesis_score`): candidates
    of one step all have the same length, so it only changes which finished hypothesis wins,
    and when a sentence is settled. `reward_bound` > 0 caps the tokens the reward counts
    per sentence (`reward_bounds`). `no_repeat_ngram` > 0 keeps every beam from completing
    an n-gram of that size twice (`repeats.ban_repeats`).
    """
    limit = limits(max_len, src, model)
    score = BeamScore(length_penalty_alpha, word_reward, reward_bounds(src, reward_bound))
    beams = Beams(limit, beam_size, n_best, score, no_repeat_ngram)
    run_beams(model, src, beams)
    return [sorted(hyps, key=lambda h: (h.eos, h.score), reverse=True)[:n_best]
            for hyps in beams.finished]


class BeamSet(Protocol):
    """What `run_beams` steps: K live beams per sentence still searched."""

    k: int
    tokens: Tensor  # each decoder row's newest token [live sentences * k]
    limit: Tensor  # each live sentence's length limit

    def advance(self, logp: Tensor, step: int) -> Tensor:
        """Take step `step`'s log-probs [rows, vocab]; the beam each kept one came from."""

    def still_open(self, step: int) -> Tensor:
        """The live sentences (positions) whose search goes on after step `step`."""

    def keep(self, live: Tensor, beam: Tensor) -> Tensor:
        """Keep only the `live` sentences; the decoder rows their beams extend."""


def run_beams(model: Transformer, src: Tensor, beams: BeamSet) -> None:
    """The beam search loop: encode `src` once, then step the decoder for every live beam
    of `beams` until each sentence is settled or at its length limit."""
    decoder = Decoder(model, model.encode(src, packed=True))
    decoder.reorder(torch.arange(src.size(0), device=src.device).repeat_interleave(beams.k))
    for step in range(1, int(beams.limit.max()) + 1):
        beam = beams.advance(decoder.step(beams.tokens), step)  # [live sentences * k, vocab]
        live = beams.still_open(step)
        if not live.numel():
            break
        decoder.reorder(beams.keep(live, beam), live)


@dataclass
class BeamScore:
    """How beam search scores a hypothesis of one sentence (`hypothesis_score`), and the
    word reward a live beam may still earn before its length limit."""

    alpha: float
    reward: float
    bounds: list[float]  # per sentence: the tokens the reward counts at most

    def __call__(self, logprob: float, length: int, sentence: int) -> float:
        return hypothesis_score(logprob, length, self.alpha, self.reward, self.bounds[sentence])

    def still_to_earn(self, step: int, most: int, sentence: int) -> float:
        """The reward a live beam at `step` may still earn before its limit `most`."""
        b = self.bounds[sentence]
        return max(self.reward, 0.0) * max(0.0, min(most, b) - min(step, b))

    def best_possible(self, logprob: Tensor, step: int, most: Tensor, bounds: Tensor) -> Tensor:
        """`__call__` at `step` plus `still_to_earn`, for many live beams at once: their
        log-probs, limits and reward bounds [groups]; the same float64 operations in the
        same order, so the same values."""
        capped = bounds.clamp(max=step)
        score = logprob / length_penalty(step, self.alpha) + self.reward * capped
        return score + max(self.reward, 0.0) * (torch.minimum(most, bounds) - capped).clamp(
            min=0.0)

    def open(self, nth_best: Tensor, best_live: Tensor, step: int, most: Tensor,
             bounds: Tensor) -> Tensor:
        """Whether each live sentence's search goes on after `step` [sentences, bool]:
        it is below its length limit `most`, has a live beam, and its best live beam
        (log-prob `best_live`), credited with the reward it may still earn, beats its
        n_best-th finished hypothesis (`nth_best`; NaN while it has fewer: never settles).
        Log-probs only fall, so with alpha = 0 and no reward nothing live could win once
        settled; with alpha > 0 a longer hypothesis might in principle still overtake
        after normalisation (the rule of Hugging Face's default search; it makes beam 1
        the same as greedy)."""
        best = self.best_possible(best_live, step, most, bounds)
        return ~((most <= step) | (nth_best >= best) | (best_live == NEG_INF))


class Beams:
    """The live beams of the sentences still searched: K per sentence, their scores,
    tokens so far and last token, and every sentence's finished hypotheses."""

    def __init__(self, limit: Tensor, k: int, n_best: int, score: BeamScore,
                 no_repeat_ngram: int = 0):
        batch, device = limit.size(0), limit.device
        self.k, self.n_best, self.score = k, n_best, score
        self.no_repeat_ngram = no_repeat_ngram
        self.sent = torch.arange(batch, device=device)  # sentence of each live group
        self.scores = torch.full((batch, k), NEG_INF, dtype=torch.float64, device=device)
        self.scores[:, 0] = 0.0  # all beams start equal: only the first expands at step 1
        self.history = torch.zeros(batch, k, 0, dtype=torch.long, device=device)
        self.steps = torch.zeros(batch, k, 0, dtype=torch.float64, device=device)  # log-probs
        self.tokens = torch.full((batch * k,), BOS_ID, dtype=torch.long, device=device)
        self.finished: list[list[Hypothesis]] = [[] for _ in range(batch)]
        self.positions = torch.arange(2 * k, device=device)
        # Per live group: its sentence's length limit and reward bound, and the score of
        # its n_best-th finished hypothesis (NaN while it has fewer: never settles it).
        self.limit = limit
        self.bounds = torch.tensor(score.bounds, dtype=torch.float64, device=device)
        self.nth_best = torch.full((batch,), math.nan, dtype=torch.float64, device=device)

    def advance(self, logp: Tensor, step: int) -> Tensor:
        """Step `step`: finish the EOS hypotheses among the top K of the 2K best
        continuations, keep the first K that are not EOS; the beam each came from."""
        if self.no_repeat_ngram:
            ban_repeats(logp, self.history.flatten(0, 1), self.no_repeat_ngram)
        n, k = self.sent.size(0), self.k
        # The 2K best overall lie among each beam's 2K best.
        top_logp, top_tok = topk.top_k(logp, min(2 * k, logp.size(-1)))
        top_logp, top_tok = top_logp.view(n, k, -1), top_tok.view(n, k, -1)
        cand = (self.scores[:, :, None] + top_logp.double()).view(n, -1)
        cand_scores, cand_idx = cand.topk(min(2 * k, cand.size(1)), dim=-1)
        cand_beam = cand_idx // top_tok.size(-1)
        cand_tok = top_tok.view(n, -1).gather(1, cand_idx)
        cand_step = top_logp.view(n, -1).gather(1, cand_idx).double()
        is_eos = cand_tok == EOS_ID
        self._finish_eos(is_eos, cand_scores, cand_beam, cand_step, step)
        # Keep the first K candidates that are not EOS (each beam gives at most one EOS).
        width = cand_scores.size(1)
        keep = (is_eos.long() * width + self.positions[:width]).topk(
            k, dim=-1, largest=False).indices
        beam = cand_beam.gather(1, keep)
        self.tokens = cand_tok.gather(1, keep)
        self.scores = cand_scores.gather(1, keep)
        self.history = torch.cat([self.history.gather(1, beam[:, :, None].expand_as(
            self.history)), self.tokens[:, :, None]], dim=2)
        self.steps = torch.cat([self.steps.gather(1, beam[:, :, None].expand_as(self.steps)),
                                cand_step.gather(1, keep)[:, :, None]], dim=2)
        return beam

    def _finish_eos(self, is_eos: Tensor, cand_scores: Tensor, cand_beam: Tensor,
                    cand_step: Tensor, step: int) -> None:
        """Hypotheses whose EOS ranks among the top K of this step are finished."""
        ends = (is_eos[:, :self.k] & (cand_scores[:, :self.k] > NEG_INF)).nonzero()
        if not ends.numel():
            return
        i_idx, j_idx = ends[:, 0], ends[:, 1]
        beams = cand_beam[i_idx, j_idx]
        ended = zip(self.sent[i_idx].tolist(), self.history[i_idx, beams].tolist(),
                    cand_scores[i_idx, j_idx].tolist(), self.steps[i_idx, beams].tolist(),
                    cand_step[i_idx, j_idx].tolist())
        for s, ids, lp, steps, eos in ended:
            self.finished[s].append(Hypothesis(ids, lp, self.score(lp, step, s), True,
                                               (*steps, eos)))
        groups = i_idx.unique()
        self.nth_best[groups] = torch.tensor(
            [_nth_best(self.finished[s], self.n_best) for s in self.sent[groups].tolist()],
            dtype=torch.float64, device=self.nth_best.device)

    def still_open(self, step: int) -> Tensor:
        """The live groups whose sentence may still find a better hypothesis: its best
        live beam, credited with the reward it may still earn, beats its n_best-th
        finished hypothesis. A sentence at its length limit ends its live beams
        unfinished."""
        at_limit = self.limit <= step
        if bool(at_limit.any()):
            for i in at_limit.nonzero().squeeze(1).tolist():
                s = int(self.sent[i])
                self.finished[s].extend(
                    Hypothesis(ids, lp, self.score(lp, step, s), False, tuple(steps))
                    for ids, lp, steps in zip(self.history[i].tolist(), self.scores[i].tolist(),
                                              self.steps[i].tolist())
                    if lp > NEG_INF)
        return self.score.open(self.nth_best, self.scores[:, 0], step, self.limit,
                               self.bounds).nonzero().squeeze(1)

    def keep(self, live: Tensor, beam: Tensor) -> Tensor:
        """Keep only the `live` groups; the decoder rows (of the last step's) they extend."""
        rows = (live[:, None] * self.k + beam[live]).view(-1)
        self.sent, self.scores = self.sent[live], self.scores[live]
        self.history, self.steps = self.history[live], self.steps[live]
        self.tokens = self.tokens[live].view(-1)
        self.limit, self.bounds = self.limit[live], self.bounds[live]
        self.nth_best = self.nth_best[live]
        return rows


def _nth_best(finished: list[Hypothesis], n_best: int) -> float:
    """The score of the `n_best`-th best of a sentence's finished hypotheses; NaN while it
    has fewer (then no live beam is settled by it)."""
    if len(finished) < n_best:
        return math.nan
    return sorted((h.score for h in finished), reverse=True)[n_best - 1]
