"""Constrained beam search: each of a line's glossary terms appears in its translation.

A sentence comes with constraints (one per term occurrence in its source), each a few
alternatives (the term's Spanish forms as token ids); a finished hypothesis holds one
alternative of every constraint. The model still reads the English term, so it chooses
where the term goes and writes the words around it to fit.

The search is dynamic beam allocation (Post & Vilar 2018). Every step each live beam
offers its best continuations (as plain beam search) and the next token of each
constraint it could go on with (`Progress.wanted`) where the model finds that token
plausible (`PLAUSIBLE`) or the beam would otherwise end: so a term enters a hypothesis
where the model, not a rule, finds it least costly. The candidates fall into banks by
how many constraint tokens they hold; the best of each bank is kept (`allocated`), so a
hypothesis that placed a term is not crowded out by those the model prefers before
they have placed it, and the rest of the beam goes by score. End-of-sentence is allowed
only to a hypothesis that meets every constraint. Scores, length limits, the word
reward, n-best lists, `no_repeat_ngram`, the stopping rule and the loop
(`search.run_beams`) are beam search's; several sentences are searched at once.

A constraint is followed token by token: a hypothesis that starts a term and then writes
another token has abandoned it (it may start it again later). A term the model writes in
another segmentation than the form's own is not recognised, and is forced a second time.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import torch
from torch import Tensor

from transcli.inference import topk
from transcli.inference.repeats import ban_repeats
from transcli.inference.search import (
    NEG_INF,
    BeamScore,
    Hypothesis,
    limits,
    reward_bounds,
    run_beams,
)
from transcli.model.transformer import Transformer
from transcli.model.vocab import BOS_ID, EOS_ID

Alternatives = tuple[tuple[int, ...], ...]  # one constraint: its forms as token ids
Constraints = Sequence[Alternatives]  # a sentence's constraints


@dataclass(frozen=True)
class Terms:
    """A sentence's constraints, and the tokens that go on with the word before them
    (pieces without sentencepiece's word-start mark): a form followed by one of those
    is the start of another word ("Oeste" in "Oestentes"), not the term."""

    constraints: Constraints
    joining: frozenset[int]

    def __bool__(self) -> bool:
        return bool(self.constraints)

    @functools.cached_property
    def tokens(self) -> frozenset[int]:
        """Every token of every form: any other leaves a hypothesis' progress as it is."""
        return frozenset(token for forms in self.constraints for form in forms
                         for token in form)


NO_TERMS = Terms([], frozenset())


@dataclass(frozen=True)
class Progress:
    """Where one hypothesis stands with its sentence's constraints."""

    met: frozenset[int] = frozenset()  # the constraints it holds
    matching: tuple[tuple[int, int], ...] = ()  # (constraint, form) begun by its last tokens
    depth: int = 0  # how many of those forms' tokens it has written
    tokens_met: int = 0  # tokens of the forms it holds
    last: Optional[tuple[int, int]] = None  # the constraint its last token met, its form's length

    @property
    def bank(self) -> int:
        """Constraint tokens written, the met ones' and the one under way."""
        return self.tokens_met + self.depth

    def complete(self, constraints: Constraints) -> bool:
        return len(self.met) == len(constraints)

    def wanted(self, constraints: Constraints) -> set[int]:
        """The tokens that advance a constraint: the next of the forms under way, else the
        first of every form of a constraint not met."""
        if self.matching:
            return {constraints[c][f][self.depth] for c, f in self.matching}
        return {form[0] for c in self.unmet(constraints) for form in constraints[c]}

    def unmet(self, constraints: Constraints) -> list[int]:
        return [c for c in range(len(constraints)) if c not in self.met]

    def after(self, token: int, terms: Terms) -> Progress:
        """The progress once `token` is written: a form just met and then continued by a
        joining token is met no more."""
        if self.last is None and not self.matching and token not in terms.tokens:
            return self  # most tokens: nothing to follow
        if self.last is not None and token in terms.joining:
            c, length = self.last
            return Progress(self.met - {c}, (), 0, self.tokens_met - length)._went_on(
                token, terms.constraints)
        return self._went_on(token, terms.constraints)

    def _went_on(self, token: int, constraints: Constraints) -> Progress:
        if self.matching:
            going = tuple((c, f) for c, f in self.matching
                          if constraints[c][f][self.depth] == token)
            if going:
                return self._advanced(going, self.depth + 1, constraints)
        fresh = Progress(self.met, (), 0, self.tokens_met)  # a form under way is abandoned
        starting = tuple((c, f) for c in fresh.unmet(constraints)
                         for f, form in enumerate(constraints[c]) if form[0] == token)
        return fresh._advanced(starting, 1, constraints) if starting else fresh

    def _advanced(self, going: tuple[tuple[int, int], ...], depth: int,
                  constraints: Constraints) -> Progress:
        """`going` forms matched up to `depth` tokens: the first one complete is met."""
        for c, f in going:
            if len(constraints[c][f]) == depth:
                return Progress(self.met | {c}, (), 0, self.tokens_met + depth, (c, depth))
        return Progress(self.met, going, depth, self.tokens_met)


@dataclass
class Candidate:
    score: float  # the log-prob of the hypothesis it makes
    beam: int  # the beam it extends
    token: int
    progress: Progress
    step: float = 0.0  # the token's own log-prob


def allocated(candidates: list[Candidate]) -> list[Candidate]:
    """The candidates in the order they are kept: the best of each bank first, fullest
    bank first, then all the others by score. Every bank keeps a hypothesis, so one that
    placed a term is never crowded out by those that have not yet; past that the score
    decides. (fairseq's round robin over the banks gives each bank an equal share of the
    beam: with 4 beams it kept more terms forced in early, and scored lower.)"""
    ordered = sorted(candidates, key=lambda c: -c.score)
    firsts: dict[int, Candidate] = {}
    for c in ordered:
        firsts.setdefault(c.progress.bank, c)
    heads = sorted(firsts.values(), key=lambda c: -c.progress.bank)
    taken = {id(c) for c in heads}
    return heads + [c for c in ordered if id(c) not in taken]


class SentenceBeams:
    """One sentence's K live beams: their tokens, log-probs and progress."""

    def __init__(self, k: int, terms: Terms):
        self.k = k
        self.terms = terms
        self.tokens: list[list[int]] = [[] for _ in range(k)]
        self.steps: list[tuple[float, ...]] = [() for _ in range(k)]  # their log-probs
        self.scores = [0.0] + [NEG_INF] * (k - 1)  # all start equal: only one expands
        self.progress = [Progress() for _ in range(k)]
        self.finished: list[Hypothesis] = []
        self.unfinished_met: dict[int, int] = {}  # finished[i] stopped by the limit: its terms

    def candidates(self, top: list[list[tuple[float, int]]],
                   forced: list[list[tuple[float, int]]]) -> list[Candidate]:
        """Each live beam's continuations: its best tokens (`top`, (log-prob, token)) and
        the tokens that advance its constraints (`forced`); one per (beam, token)."""
        found: dict[tuple[int, int], Candidate] = {}
        for beam, score in enumerate(self.scores):
            if score == NEG_INF:
                continue
            for logprob, token in top[beam] + forced[beam]:
                if logprob == NEG_INF or (beam, token) in found:
                    continue
                progress = self.progress[beam].after(token, self.terms)
                found[beam, token] = Candidate(score + logprob, beam, token, progress, logprob)
        return list(found.values())

    def advance(self, candidates: list[Candidate], step: int, score: BeamScore,
                sentence: int) -> list[int]:
        """Keep K of `candidates` (`allocated`): an end-of-sentence among the first K
        finishes its hypothesis, the first K others stay live. The beam each came from."""
        ordered = allocated(candidates)
        for candidate in ordered[:self.k]:
            if candidate.token == EOS_ID:
                tokens = self.tokens[candidate.beam]
                self.finished.append(Hypothesis(
                    list(tokens), candidate.score, score(candidate.score, step, sentence), True,
                    (*self.steps[candidate.beam], candidate.step)))
        kept = [c for c in ordered if c.token != EOS_ID][:self.k]
        beams = [c.beam for c in kept] + [0] * (self.k - len(kept))
        self.tokens = [self.tokens[c.beam] + [c.token] for c in kept] + [
            [] for _ in range(self.k - len(kept))]
        self.steps = [(*self.steps[c.beam], c.step) for c in kept] + [
            () for _ in range(self.k - len(kept))]
        self.scores = [c.score for c in kept] + [NEG_INF] * (self.k - len(kept))
        self.progress = [c.progress for c in kept] + [Progress()] * (self.k - len(kept))
        return beams

    def end_unfinished(self, step: int, score: BeamScore, sentence: int) -> None:
        """At the length limit: the live beams end unfinished."""
        for tokens, lp, progress, steps in zip(self.tokens, self.scores, self.progress,
                                               self.steps):
            if lp > NEG_INF:
                self.finished.append(Hypothesis(list(tokens), lp, score(lp, step, sentence),
                                                False, steps))
                self.unfinished_met[len(self.finished) - 1] = len(progress.met)

    def nth_best(self, n_best: int) -> float:
        """The score of the `n_best`-th best finished hypothesis; NaN while there are fewer."""
        if len(self.finished) < n_best:
            return math.nan
        return sorted((h.score for h in self.finished), reverse=True)[n_best - 1]

    def best(self, n_best: int) -> list[Hypothesis]:
        """The `n_best` best: those that ended by score, then those the length limit
        stopped, the ones holding more terms first."""
        order = sorted(range(len(self.finished)), reverse=True, key=lambda i: (
            self.finished[i].eos, self.unfinished_met.get(i, 0), self.finished[i].score))
        return [self.finished[i] for i in order[:n_best]]


def constrained_beam_search(model: Transformer, src: Tensor, terms: Sequence[Terms],
                            beam_size: int, length_penalty_alpha: float,
                            max_len: int | list[int] | Tensor, n_best: int = 1,
                            word_reward: float = 0.0, reward_bound: float = 0.0,
                            no_repeat_ngram: int = 0) -> list[list[Hypothesis]]:
    """Beam search for each sentence of `src` [batch, src_len] whose finished hypotheses
    meet all of its constraints (`terms`); its `n_best` best, best first (those that reached the
    length limit unfinished, perhaps without every term, after those that ended). The
    other arguments are `search.beam_search`'s. A sentence is searched with `width`
    beams, among the sentences of the batch with as many: what it finds does not depend
    on the others."""
    all_limits = limits(max_len, src, model)
    widths = [width(beam_size, sentence) for sentence in terms]
    found: list[list[Hypothesis]] = [[] for _ in terms]
    for k in sorted(set(widths)):
        rows = [i for i, w in enumerate(widths) if w == k]
        index = torch.tensor(rows, device=src.device)
        part = src.index_select(0, index)
        score = BeamScore(length_penalty_alpha, word_reward, reward_bounds(part, reward_bound))
        beams = ConstrainedBeams([terms[i] for i in rows], k, all_limits.index_select(0, index),
                                 n_best, score, no_repeat_ngram)
        run_beams(model, part, beams)
        for i, sentence in zip(rows, beams.sentences):
            found[i] = sentence.best(n_best)
    return found


class ConstrainedBeams:
    """The `search.BeamSet` of constrained search: K beams per sentence searched
    (`SentenceBeams`), stepped by `search.run_beams` as plain beams are."""

    def __init__(self, terms: Sequence[Terms], k: int, limit: Tensor, n_best: int,
                 score: BeamScore, no_repeat_ngram: int):
        self.k, self.limit, self.n_best, self.score = k, limit, n_best, score
        self.no_repeat_ngram = no_repeat_ngram
        self.sentences = [SentenceBeams(k, sentence) for sentence in terms]
        self.live = list(range(len(terms)))  # the sentences still searched, in decoder order
        self.bounds = torch.tensor(score.bounds, dtype=torch.float64, device=limit.device)
        self.tokens = torch.full((len(terms) * k,), BOS_ID, dtype=torch.long,
                                 device=limit.device)

    def advance(self, logp: Tensor, step: int) -> Tensor:
        """Each live sentence's candidates (its best continuations, and the tokens that go
        on with its terms), K kept per sentence (`SentenceBeams.advance`)."""
        k, group = self.k, [self.sentences[s] for s in self.live]
        likely = Likely(logp, k)
        _forbid_early_end(logp, group)
        allowed = logp  # the terms' tokens are never banned as repeats: a term may recur
        if self.no_repeat_ngram:
            allowed = logp.clone()
            ban_repeats(logp, _history(group, step, logp.device), self.no_repeat_ngram)
        top, forced = _continuations(logp, allowed, group, k, likely)
        picked = [beams.advance(beams.candidates(top[i * k:(i + 1) * k],
                                                 forced[i * k:(i + 1) * k]), step, self.score, s)
                  for i, (s, beams) in enumerate(zip(self.live, group))]
        return torch.tensor(picked, dtype=torch.long, device=logp.device).view(-1, k)

    def still_open(self, step: int) -> Tensor:
        """The live sentences not yet settled (`BeamScore.open`, as plain beams are); at
        its length limit a sentence's live beams end unfinished."""
        group = [self.sentences[s] for s in self.live]
        for i in (self.limit <= step).nonzero().squeeze(1).tolist():
            group[i].end_unfinished(step, self.score, self.live[i])
        device = self.limit.device
        nth = torch.tensor([beams.nth_best(self.n_best) for beams in group],
                           dtype=torch.float64, device=device)
        best = torch.tensor([max(beams.scores) for beams in group], dtype=torch.float64,
                            device=device)
        return self.score.open(nth, best, step, self.limit, self.bounds).nonzero().squeeze(1)

    def keep(self, live: Tensor, beam: Tensor) -> Tensor:
        """Keep only the `live` sentences; the decoder rows their beams extend."""
        rows = (live[:, None] * self.k + beam[live]).view(-1)
        self.live = [self.live[i] for i in live.tolist()]
        self.limit, self.bounds = self.limit[live], self.bounds[live]
        self.tokens = torch.tensor([tokens[-1] if tokens else EOS_ID
                                    for s in self.live for tokens in self.sentences[s].tokens],
                                   dtype=torch.long, device=live.device)
        return rows


EXTRA_BEAMS = 2  # at most this many beams more than `beam_size` for a line's terms


def width(beam_size: int, terms: Terms) -> int:
    """The beams a sentence is searched with: one more per term, up to `EXTRA_BEAMS` more
    (each count of terms held is a bank, which keeps its best). On tico19's lines of
    several terms, no more beams than plain search lost BLEU to it; up to twice as many
    gained more but cost more time than the issue allows: docs/INFERENCE.md."""
    return beam_size + min(EXTRA_BEAMS, len(terms.constraints))


def _forbid_early_end(logp: Tensor, group: list[SentenceBeams]) -> None:
    """No end of sentence for a beam that lacks a constraint."""
    rows = [i * beams.k + b for i, beams in enumerate(group)
            for b, progress in enumerate(beams.progress)
            if not progress.complete(beams.terms.constraints)]
    if rows:
        logp[torch.tensor(rows, device=logp.device), EOS_ID] = NEG_INF


def _history(group: list[SentenceBeams], step: int, device: torch.device) -> Tensor:
    """Every decoder row's tokens so far, [rows, step - 1] (an empty beam's as zeros)."""
    rows = [tokens + [0] * (step - 1 - len(tokens)) for beams in group for tokens in beams.tokens]
    return torch.tensor(rows, dtype=torch.long, device=device).view(len(rows), step - 1)


# A term may start where the model ranks its first token among this many, or where the
# hypothesis would otherwise end (EOS among its 2K best): not where it is implausible.
PLAUSIBLE = 20


class Likely:
    """What a step's log-probs [rows, vocab] say before any ban, from one top-k per row:
    whether a row would end (EOS among its 2K best), and the least log-prob among its
    `PLAUSIBLE` best (a term may start at a token at least that likely)."""

    def __init__(self, logp: Tensor, k: int):
        values, ids = topk.top_k(logp, min(max(PLAUSIBLE, 2 * k), logp.size(-1)))
        self.ending = (ids[:, :2 * k] == EOS_ID).any(dim=-1).tolist()
        self.least = values[:, min(PLAUSIBLE, values.size(1)) - 1].tolist()


def _continuations(logp: Tensor, allowed: Tensor, group: list[SentenceBeams], k: int,
                   likely: Likely
                   ) -> tuple[list[list[tuple[float, int]]], list[list[tuple[float, int]]]]:
    """Per decoder row, (log-prob, token) pairs: its 2K best continuations (where plain
    beam search takes its sentence's 2K best of all, each bank here needs its own: fewer
    candidates held fewer terms), and the tokens that advance its constraints: the next
    of a form under way, or a form's first where it is plausible or the row would end
    (`likely`), by their log-probs in `allowed` (`logp` before `no_repeat_ngram`'s ban)."""
    values, ids = topk.top_k(logp, min(2 * k, logp.size(-1)))
    top = [list(zip(v, t)) for v, t in zip(values.tolist(), ids.tolist())]
    progress = [p for beams in group for p in beams.progress]
    wanted = [sorted(p.wanted(beams.terms.constraints))
              for beams in group for p in beams.progress]
    pairs = [(row, token) for row, tokens in enumerate(wanted) for token in tokens]
    forced: list[list[tuple[float, int]]] = [[] for _ in wanted]
    if pairs:
        index = torch.tensor(pairs, device=logp.device)
        for (row, token), value in zip(pairs, allowed[index[:, 0], index[:, 1]].tolist()):
            if value >= likely.least[row] or likely.ending[row] or progress[row].depth:
                forced[row].append((value, token))
    return top, forced


def form_alternatives(forms: Sequence[str], encode: Callable[[str], list[int]]
                      ) -> Alternatives:
    """A term's Spanish forms as token-id alternatives, each also with a capital first
    letter (a term may open the sentence); forms that encode to nothing are left out."""
    found: dict[tuple[int, ...], None] = {}
    for form in forms:
        ids = tuple(encode(form))
        capital = tuple(encode(form[:1].upper() + form[1:]))
        found.update((alt, None) for alt in (ids, capital)
                     if alt and (alt is ids or len(alt) <= len(ids)))
    return tuple(found)


class TermEncoder:
    """Glossary forms (per term, `realtext.Unit.terms`) as a sentence's `Terms`, in the
    pieces of a sentencepiece model `sp`."""

    def __init__(self, sp: Any):
        self.sp = sp

    @functools.cached_property
    def joining(self) -> frozenset[int]:
        return joining_tokens([self.sp.IdToPiece(i) for i in range(self.sp.GetPieceSize())])

    def __call__(self, terms: Sequence[Sequence[str]]) -> Terms:
        if not terms:
            return NO_TERMS
        return Terms([form_alternatives(forms, self.sp.Encode) for forms in terms],
                     self.joining)


def joining_tokens(pieces: Sequence[str]) -> frozenset[int]:
    """The ids of the pieces that go on with the word before them: no word-start mark
    and a letter, digit or mark first (`Terms.joining`)."""
    return frozenset(i for i, piece in enumerate(pieces)
                     if piece and not piece.startswith("\u2581") and piece[0].isalnum())

