"""Word alignment of a parallel corpus: fast_align's IBM Model 2 (Dyer, Chahuneau and Smith
2013, "A Simple, Fast, and Effective Reparameterization of IBM Model 2"), trained by EM in
both directions, each word's best link read off (Viterbi), and the two directions
symmetrised (`symmetrise.py`).

The model of a target word f_j (j of n) choosing a source word e_i (i of m), or none:

    p(a_j = 0)     = P_NULL                                          (unaligned)
    p(a_j = i > 0) = (1 - P_NULL) exp(tension h) / Z,   h = -|i/m - j/n|
    p(f_j | a_j)   = t(f_j | e_{a_j}),   t(f | NULL) for a_j = 0

so that links near the diagonal are favoured, by a `tension` EM fits to the corpus
(fast_align's -d -o), and the translation table is estimated with its variational Bayes
update (fast_align's -v: t(f|e) = exp(digamma(c(e, f) + ALPHA) - digamma(sum over f'
of c(e, f') + ALPHA)), which keeps rare words from collecting links. The reverse
direction (source words choosing target words) is the same model with the sides swapped.

Every (source word, target word) of every pair is a link of both directions. The links
are laid out once in memory-mapped files in `scratch` (their words, position feature and
word pair id: 16 bytes a link, m x n links a pair), and EM streams them a chunk of pairs
at a time: memory follows a chunk and the tables (a few floats per distinct word pair),
while the scratch files follow the links (0.9 GB for the 189K pairs of the shared
corpus). The two directions share nothing while they train, so each runs in a forked
process of its own. Everything is deterministic: sums are numpy's in a fixed order, so
the same corpus gives the same links.
"""

from __future__ import annotations

import functools
import multiprocessing
import warnings
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

import numpy as np

from transcli.system.heap import keep_freed_memory, release_freed_memory

P_NULL = 0.08  # fast_align's prior of a word left unaligned
TENSION = 4.0  # the diagonal's starting tension (fast_align's default), then fitted
TENSION_RANGE = (0.1, 14.0)  # fast_align's bounds on it
TENSION_STEPS = 8  # gradient steps on the tension after each E-step (fast_align's)
TENSION_RATE = 20.0
ALPHA = 0.01  # the variational Bayes prior of the translation tables (fast_align's -v)
ITERATIONS = 5  # EM iterations (fast_align's default)
CHUNK_LINKS = 1 << 21  # links per chunk: a pair with more is a chunk alone


class Side(NamedTuple):
    """One side of a corpus as word type ids: sentence k's words are
    types[starts[k]:starts[k + 1]]."""

    types: np.ndarray  # int64
    starts: np.ndarray  # int64, sentences + 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.starts)

    @property
    def vocab(self) -> int:
        return int(self.types.max()) + 1 if len(self.types) else 0


class Chunk(NamedTuple):
    """The links of a run of pairs, target word major, source word minor within a pair:
    each link's source and target word (their index in `Side.types`), its position
    feature h = -|i/m - j/n| (1-based positions), and its word pair's table id; and the
    run's words of each side, [start, stop) in `Side.types`."""

    src_word: np.ndarray
    tgt_word: np.ndarray
    feature: np.ndarray
    pair_type: np.ndarray
    src_words: tuple[int, int]
    tgt_words: tuple[int, int]


class Links:
    """Every link of every pair of the corpus, kept in memory-mapped files in `scratch`
    (16 bytes a link) and handed out a chunk of pairs at a time."""

    def __init__(self, src: Side, tgt: Side, scratch: Path):
        self.src, self.tgt = src, tgt
        per_pair = src.lengths * tgt.lengths
        self.bounds = _chunk_bounds(per_pair, CHUNK_LINKS)
        self.pair_starts = np.concatenate([[0], np.cumsum(per_pair)]).astype(np.int64)
        size = max(int(self.pair_starts[-1]), 1)
        self.src_word, self.tgt_word, self.pair_type = (
            np.memmap(scratch / f"links.{name}", np.int32, "w+", shape=(size,))
            for name in ("src", "tgt", "type"))
        self.feature = np.memmap(scratch / "links.feature", np.float32, "w+", shape=(size,))
        distinct = [self._write_words(a, b) for a, b in self.ranges()]
        self.codes = _sorted_unique(np.concatenate(distinct or [np.zeros(0, np.int64)]))
        # each distinct word pair's source and target word type, for the M-step
        types = np.divmod(self.codes, max(tgt.vocab, 1))
        self.src_type, self.tgt_type = (t.astype(np.int32) for t in types)
        for a, b in self.ranges():
            where = slice(self.pair_starts[a], self.pair_starts[b])
            codes = self._codes(self.src_word[where], self.tgt_word[where])
            order = np.argsort(codes, kind="stable")
            ids = np.empty(len(codes), np.int32)
            ids[order] = np.searchsorted(self.codes, codes[order])
            self.pair_type[where] = ids
        self.pair_types = len(self.codes)
        del self.codes  # only the lookup above needs the codes

    def ranges(self) -> Iterator[tuple[int, int]]:
        return zip(self.bounds, self.bounds[1:])

    def _codes(self, src_word: np.ndarray, tgt_word: np.ndarray) -> np.ndarray:
        return self.src.types[src_word] * max(self.tgt.vocab, 1) + self.tgt.types[tgt_word]

    def _write_words(self, first: int, last: int) -> np.ndarray:
        """Store pairs [first, last)'s links (source word, target word, h); return the
        distinct word pairs they name (as codes, sorted)."""
        m, n = self.src.lengths[first:last], self.tgt.lengths[first:last]
        count = m * n
        within = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        m_l, n_l = np.repeat(m, count), np.repeat(n, count)
        j, i = np.divmod(within, m_l)
        src_word = np.repeat(self.src.starts[first:last], count) + i
        tgt_word = np.repeat(self.tgt.starts[first:last], count) + j
        where = slice(self.pair_starts[first], self.pair_starts[last])
        self.src_word[where], self.tgt_word[where] = src_word, tgt_word
        self.feature[where] = -np.abs((i + 1) / m_l - (j + 1) / n_l)
        return _sorted_unique(self._codes(src_word, tgt_word))

    def chunks(self) -> Iterator[Chunk]:
        for a, b in self.ranges():
            where = slice(self.pair_starts[a], self.pair_starts[b])
            yield Chunk(np.asarray(self.src_word[where]), np.asarray(self.tgt_word[where]),
                        np.asarray(self.feature[where], np.float64),
                        np.asarray(self.pair_type[where]),
                        (int(self.src.starts[a]), int(self.src.starts[b])),
                        (int(self.tgt.starts[a]), int(self.tgt.starts[b])))


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    values = np.sort(values)
    return values[np.r_[True, values[1:] != values[:-1]]] if len(values) else values


def _chunk_bounds(per_pair: np.ndarray, limit: int) -> list[int]:
    """Pair indices that cut the corpus into runs of at most `limit` links (a pair with
    more alone), first and last included."""
    bounds, total = [0], 0
    for k, count in enumerate(per_pair.tolist()):
        if total and total + count > limit:
            bounds.append(k)
            total = 0
        total += count
    if len(per_pair):
        bounds.append(len(per_pair))
    return bounds


class Direction:
    """One direction of the model: the words of one side each choose a word of the other
    side, or none (`forward`: the target words choose). Holds its translation table
    t(chooser's type | chosen type), indexed by word pair id, t(type | NULL), and its
    tension."""

    def __init__(self, links: Links, forward: bool):
        self.forward = forward
        chooser, other = (links.tgt, links.src) if forward else (links.src, links.tgt)
        self.chooser_types = chooser.types
        self.chosen_of_pair = links.src_type if forward else links.tgt_type
        self.table = np.ones(links.pair_types)  # uniform at the start: Model 1's first step
        self.null = np.ones(chooser.vocab)
        self.tension = TENSION
        self.lengths = LengthTriples.of(chooser.lengths, other.lengths)
        self._reset_counts()

    def _reset_counts(self) -> None:
        self.counts = np.zeros_like(self.table)
        self.null_counts = np.zeros_like(self.null)
        self.feature_sum = 0.0

    def scores(self, chunk: Chunk) -> tuple[np.ndarray, np.ndarray, np.ndarray, slice]:
        """Each link's prior x translation probability, the NULL score of each choosing
        word of the chunk, each link's choosing word (counted from the chunk's first),
        and the chunk's choosing words (a slice of `Side.types`)."""
        words = chunk.tgt_word if self.forward else chunk.src_word
        start, stop = chunk.tgt_words if self.forward else chunk.src_words
        group = words - start
        closeness = np.exp(self.tension * chunk.feature)
        z = np.bincount(group, closeness, stop - start)  # 0: a word the other side lacks
        share = np.divide(1 - P_NULL, z, out=np.zeros_like(z), where=z > 0)
        link = closeness
        link *= share[group]
        link *= self.table[chunk.pair_type]
        null = P_NULL * self.null[self.chooser_types[start:stop]]
        return link, null, group, slice(start, stop)

    def expect(self, chunk: Chunk) -> None:
        """E-step on one chunk: each link's posterior added to the counts."""
        link, null, group, words = self.scores(chunk)
        total = np.bincount(group, link, len(null)) + null
        posterior = link
        posterior /= total[group]
        np.add.at(self.counts, chunk.pair_type, posterior)
        self.null_counts += np.bincount(self.chooser_types[words], null / total,
                                        len(self.null))
        self.feature_sum += float((posterior * chunk.feature).sum(dtype=np.float64))

    def maximise(self) -> None:
        """M-step (variational Bayes), then the tension fitted to the expected feature."""
        self.table = _vb_normalise(self.counts, self.chosen_of_pair)
        self.null = _vb_normalise(self.null_counts, np.zeros(len(self.null), np.int64))
        self.fit_tension(self.feature_sum / max(len(self.chooser_types), 1))
        self._reset_counts()

    def fit_tension(self, observed: float) -> None:
        """fast_align's gradient steps: move the tension until the prior's expected
        feature per word meets the one the posteriors gave."""
        for _ in range(TENSION_STEPS):
            self.tension += (observed - self.lengths.expected(self.tension)) * TENSION_RATE
            self.tension = min(max(self.tension, TENSION_RANGE[0]), TENSION_RANGE[1])

    def best(self, chunk: Chunk) -> np.ndarray:
        """Each choosing word of the chunk: the index of its most likely word of the other
        side (in `Side.types`), or -1 where NULL is likelier (Viterbi); ties go to the
        first."""
        link, null, group, _ = self.scores(chunk)
        chosen = chunk.src_word if self.forward else chunk.tgt_word
        top = np.full(len(null), -np.inf)
        np.maximum.at(top, group, link)
        first = np.full(len(null), np.iinfo(np.int64).max)
        hits = link == top[group]
        np.minimum.at(first, group[hits], chosen[hits].astype(np.int64))
        return np.where(top > null, first, -1)


class LengthTriples(NamedTuple):
    """Every (position j, chooser length n, other length m) of the corpus' choosing words,
    with how many words it stands for: the prior's mean feature per word at a tension,
    in closed form (`expected`), for fitting the tension."""

    j: np.ndarray
    n: np.ndarray
    m: np.ndarray
    weight: np.ndarray
    words: int

    @staticmethod
    def of(chooser: np.ndarray, other: np.ndarray) -> LengthTriples:
        keep = (chooser > 0) & (other > 0)
        both = np.stack([chooser[keep], other[keep]], axis=1)
        pairs, counts = np.unique(both, axis=0, return_counts=True)
        n, m = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
        owner = np.repeat(np.arange(len(n)), n)
        j = np.arange(len(owner)) - np.repeat(np.cumsum(n) - n, n) + 1
        return LengthTriples(j, n[owner], m[owner], counts[owner].astype(np.float64),
                             int((n * counts).sum()))

    def expected(self, tension: float) -> float:
        """sum over words of E[h] under exp(tension h) / Z, h = -|i/m - j/n| for i in
        1..m, divided by the words: each side of the diagonal is a geometric series."""
        c, d = self.j / self.n, 1.0 / self.m
        k = (self.j * self.m) // self.n  # positions i with i/m <= j/n
        rho = np.exp(-tension * d)
        mass, moment = np.zeros_like(c), np.zeros_like(c)
        for first, count in ((c - k * d, k), ((k + 1) * d - c, self.m - k)):
            head = np.exp(-tension * first)
            ends = rho ** count
            series = (1 - ends) / (1 - rho)
            ramp = rho * (1 - count * ends / rho + (count - 1) * ends) / (1 - rho) ** 2
            mass += head * series
            moment += head * (first * series + d * ramp)
        return float(-(moment / mass) @ self.weight) / max(self.words, 1)


def _vb_normalise(counts: np.ndarray, condition: np.ndarray) -> np.ndarray:
    """fast_align's variational Bayes normalisation of counts c(e, f), e = `condition`:
    exp(digamma(c + ALPHA) - digamma(sum over the f of e of (c + ALPHA)))."""
    totals = np.bincount(condition, counts + ALPHA)
    return np.exp(digamma(counts + ALPHA) - digamma(totals)[condition])


def digamma(x: np.ndarray) -> np.ndarray:
    """The digamma function for x > 0: psi(x) = psi(x + 6) - sum of 1/(x + k) for k < 6,
    and psi(x + 6) by its asymptotic series (error below 1e-8)."""
    x = np.asarray(x, np.float64)
    result = -sum(1 / (x + k) for k in range(6))
    y = x + 6
    inv2 = 1 / (y * y)
    return result + np.log(y) - 0.5 / y - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 / 252))


class WordAlignments(NamedTuple):
    """Viterbi alignments of both directions: each target word's source word and each
    source word's target word (positions within the pair, -1: none)."""

    forward: np.ndarray  # per target word (Side.types order of the target side)
    reverse: np.ndarray  # per source word


def align(src: Side, tgt: Side, scratch: Path, iterations: int = ITERATIONS,
          parallel: bool = True) -> WordAlignments:
    """Train both directions by EM on the corpus and return their Viterbi alignments.
    `parallel`: each direction in a process of its own (forked: they read the same
    memory-mapped links), where the platform forks."""
    keep_freed_memory()  # a chunk's arrays reuse the last one's memory, not fresh pages
    try:
        links = Links(src, tgt, scratch)
        jobs = [functools.partial(_train, links, forward, iterations)
                for forward in (True, False)]
        if parallel and "fork" in multiprocessing.get_all_start_methods():
            forward, reverse = _in_processes(jobs)
        else:
            forward, reverse = (job() for job in jobs)
    finally:
        release_freed_memory()
    # positions within the pair, from indices into the other side's words
    return WordAlignments(_within(forward, tgt, src), _within(reverse, src, tgt))


def _train(links: Links, forward: bool, iterations: int) -> np.ndarray:
    """EM for one direction, then its Viterbi links (`Direction.best`) of every word."""
    direction = Direction(links, forward)
    for _ in range(iterations):
        for chunk in links.chunks():
            direction.expect(chunk)
        direction.maximise()
    found = [direction.best(chunk) for chunk in links.chunks()]
    return np.concatenate(found) if found else np.zeros(0, np.int64)


def _in_processes(jobs: list[Callable[[], np.ndarray]]) -> list[np.ndarray]:
    """Each job in a forked process (nothing pickled on the way in), its result back
    through a pipe; an exception in a job is raised here."""
    context = multiprocessing.get_context("fork")
    pipes, processes = [], []
    for job in jobs:
        receive, send = context.Pipe(duplex=False)
        process = context.Process(target=_run_job, args=(job, send), daemon=True)
        with warnings.catch_warnings():  # the children run numpy only: no lock they need
            warnings.filterwarnings("ignore", "This process .* is multi-threaded",
                                    DeprecationWarning)
            process.start()
        send.close()
        pipes.append(receive)
        processes.append(process)
    try:
        results = []
        for pipe, process in zip(pipes, processes):
            try:
                results.append(pipe.recv())
            except EOFError:
                raise RuntimeError(f"the aligner's worker process ended without a result "
                                   f"(exit code {process.join() or process.exitcode})") from None
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
            process.join()
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def _run_job(job: Callable[[], np.ndarray], send: Connection) -> None:
    try:
        result: object = job()
    except BaseException as exc:  # handed to the parent, which raises it
        result = exc
    send.send(result)
    send.close()


def _within(chosen: np.ndarray, chooser: Side, other: Side) -> np.ndarray:
    """Global word indices of the other side -> positions in their sentence (-1 kept)."""
    sentence = np.repeat(np.arange(len(chooser.lengths)), chooser.lengths)
    return np.where(chosen >= 0, chosen - other.starts[sentence], -1)
