"""Term annotation (`train.term_annotation`): training pairs whose source carries, in
place of a word, the Spanish word the target uses for it, so that a model trained with
them uses a glossary's terms given the same way (Dinu et al. 2019, "Training Neural
Machine Translation to Apply Terminology Constraints", their "replace" variant, with
inline markers in place of their source factors).

The annotation's form, the one `annotate` writes at training and at decoding time: each
term's English words replaced by "[", a space, the Spanish form, a space, "]":

    the car is red  ->  the [ coche ] is red

Replace, not append ("the car [ coche ] is red"): a first version appended the form,
and a fine-tune with it used the annotated term no more than one without it, since the
form was the dictionary's top choice, the word the model would write anyway, so the
brackets could be ignored at no cost. With the English words gone, the Spanish form is
the only cue to what they said, and the model must copy it.

"[" and "]" are pieces of the shipped vocabularies ("<", "{" and "|" are unknown to
them), rare in the training text (53 of 186K English lines of the shared corpus), and
the spaces inside them make the Spanish form take the pieces it takes inside a Spanish
sentence ("▁coche", not "co" "che"): the decoder writes the very pieces the encoder
read. Training and decoding annotate text and
encode it with the run's sentencepiece model, so both tokenize alike.

The aligner is a word dictionary by Dice's coefficient over the training pairs
(`translations`): each English content word and the TRANSLATIONS Spanish words it
co-occurs with most. A pair's candidate terms are its source's content words one of
whose translations is a whole word of its target (`aligned_terms`), annotated with that
word as the target writes it.
Each epoch draws, from (seed, epoch), which of the pairs with a term it shows annotated
and which 1 or 2 of their terms; a batch then holds ids past the split's pair ids
(pair + size x mask of the chosen terms), and collation annotates and encodes again.
"""

from __future__ import annotations

from typing import Iterable, Iterator, NamedTuple, Optional, Sequence

import numpy as np
import regex

from transcli.config.schema import Config
from transcli.data.batching import Batch, assemble, rows_from_lists, with_alignment
from transcli.data.encoded import EncodedAlignments
from transcli.data.prepared_dir import PreparedDir
from transcli.data.resegment import LineFile, train_text

OPEN, CLOSE = "[ ", " ]"  # what replaces a term's English words: OPEN + form + CLOSE
MIN_LETTERS = 4  # shorter words are never terms (nor a term's translation)
MIN_DICE = 0.3  # the dictionary's pairs co-occur at least this much (Dice's coefficient)
MIN_COUNT = 2  # ... in at least this many lines
# A training term's Spanish word is any of its English word's this many best translations
# that the target has (the best one first), not the best alone: the best is mostly the
# word the model writes anyway, so annotating only it teaches little copying; the others
# are its synonyms and inflected forms (children: niños, hijos; doctor: médico, doctor).
TRANSLATIONS = 4
# Candidates kept per pair (the first in the source): a mask of them names the annotated
# terms in a batch's ids, so it must fit well within int64 with the pair id.
CANDIDATES = 16
# Terms per annotated pair: 1 or 2. A glossary brings a sentence a term or two; annotating
# most of its words would teach the model to lean on annotations it will not get, and
# lengthen sources (each term adds its form and 4 marker pieces).
MAX_TERMS = 2
TERM_STREAM = 0x7E53  # keys the epoch's annotation draws apart from its batch order
COOCCURRENCE_CHUNK = 20_000  # lines whose pairs of words are made at a time

_WORD = regex.compile(r"\p{L}+(?:['’]\p{L}+)*")
# English function words never taken as terms (lower case; words under 4 letters never are).
STOPWORDS = frozenset("""
about above after again against also although among another because been before being
below between both cannot could does doing down during each either even every from have
having here hers herself himself into itself just more most much must neither other ought
ours over same shall should since some such than that their theirs them themselves then
there these they this those through under until upon very were what when where whether
which while whom whose will with within without would your yours yourself
""".split())
# Spanish ones never taken as a term's translation (nor words under 4 letters).
STOPWORDS_ES = frozenset("""
algo algún alguna algunas alguno algunos ante antes aquel aquella aquí cada como cuando
desde donde ella ellas ellos entre esas esos esta está estaba estado estamos están estar
este esto estos fueron había habían hace hacia hasta muchos mucho muy nada nosotros nuestra
nuestro otra otras otro otros para pero poco porque puede pueden sido sobre solo también
tanto tenía tiene tienen todas todo todos usted ustedes vamos cual cuál qué quién sean será
sería sino siempre
""".split())

Term = tuple[int, int, str]  # (start, end) of the English words in the text, Spanish form


def annotate(text: str, terms: Sequence[Term]) -> str:
    """`text` with each term's English words replaced by its Spanish form, in the
    module's form: annotate("the car is red", [(4, 7, "coche")]) == "the [ coche ] is red".
    Terms are character offsets into `text`, in any order, and must not overlap."""
    ordered = sorted(terms)
    for (start, end, _), after in zip(ordered, ordered[1:] + [(len(text), len(text), "")]):
        if not 0 <= start < end <= after[0]:
            raise ValueError(f"term ({start}, {end}) is empty, out of the text or overlaps "
                             f"the next one")
    for start, end, form in reversed(ordered):  # from the end: offsets before stay valid
        text = f"{text[:start]}{OPEN}{form}{CLOSE}{text[end:]}"
    return text


def trained_with_annotation(cfg: Config) -> bool:
    """Whether a run with this (saved) config was trained with term annotation, so that
    a glossary can be given to it as annotations."""
    return cfg.train.term_annotation > 0


def written_words(text: str) -> list[str]:
    """The words of `text` as written (letters, with inner apostrophes)."""
    return _WORD.findall(text)


def words(text: str) -> list[str]:
    """`written_words` in lower case."""
    return [word.lower() for word in written_words(text)]


def is_content_word(word: str) -> bool:
    return len(word) >= MIN_LETTERS and word not in STOPWORDS


def is_content_word_es(word: str) -> bool:
    return len(word) >= MIN_LETTERS and word not in STOPWORDS_ES


def content_words(text: str) -> list[str]:
    """The words of `text` that may be terms, in order, each once."""
    return list(dict.fromkeys(word for word in words(text) if is_content_word(word)))


def dictionary(pairs: Iterable[tuple[str, str]], wanted: Optional[set[str]] = None,
               min_dice: float = MIN_DICE, min_count: int = MIN_COUNT) -> dict[str, str]:
    """Each English content word (of `wanted` when given) and the Spanish content word it
    co-occurs with most in `pairs`: the first of its `translations`."""
    return {word: found[0] for word, found in
            translations(pairs, wanted, min_dice, min_count, top=1).items()}


def translations(pairs: Iterable[tuple[str, str]], wanted: Optional[set[str]] = None,
                 min_dice: float = MIN_DICE, min_count: int = MIN_COUNT,
                 top: int = TRANSLATIONS) -> dict[str, list[str]]:
    """Each English content word (of `wanted` when given) and the `top` Spanish content
    words it co-occurs with most in `pairs`, best first, counted by lines: Dice's
    coefficient 2 c(e, s) / (c(e) + c(s)) at least `min_dice`, in at least `min_count`
    lines; ties go to more lines together, then to the Spanish word met first. A simple
    aligner, and a fast one: the pairs of words are counted by numpy, and only the pairs
    whose words' counts allow the bounds are kept (2 min(c(e), c(s)) >= min_dice (c(e) +
    c(s))), so that memory follows the plausible pairs, not every pair of every line."""
    seen = LineWords.read(pairs, wanted)
    en_count = np.bincount(seen.en_ids, minlength=len(seen.english))
    es_count = np.bincount(seen.es_ids, minlength=len(seen.spanish))
    codes = [np.zeros(0, np.int64)]
    for e, s in seen.cooccurrences():
        fewer = np.minimum(en_count[e], es_count[s])
        keep = (fewer >= min_count) & (2 * fewer >= min_dice * (en_count[e] + es_count[s]))
        codes.append(e[keep] << 32 | s[keep])
    pair_codes, together = np.unique(np.concatenate(codes), return_counts=True)
    e, s = pair_codes >> 32, pair_codes & 0xFFFFFFFF
    dice = 2 * together / (en_count[e] + es_count[s])
    keep = (together >= min_count) & (dice >= min_dice)
    e, s, dice, together = e[keep], s[keep], dice[keep], together[keep]
    order = np.lexsort((s, -together, -dice, e))  # the last key is primary
    e, s = e[order], s[order]
    # each Spanish word's rank among its English word's: its place after the group start
    starts = np.flatnonzero(np.r_[True, e[1:] != e[:-1]]) if len(e) else np.zeros(0, int)
    rank = np.arange(len(e)) - np.repeat(starts, np.diff(np.r_[starts, len(e)]))
    en_words, es_words = list(seen.english), list(seen.spanish)
    found: dict[str, list[str]] = {}
    for i, j in zip(e[rank < top].tolist(), s[rank < top].tolist()):
        found.setdefault(en_words[i], []).append(es_words[j])
    return found


class LineWords(NamedTuple):
    """The content words of each line of a corpus, as ids, each once per line."""

    english: dict[str, int]  # word -> id, in the order first met
    spanish: dict[str, int]
    en_ids: np.ndarray  # each line's English words, line after line
    en_starts: np.ndarray  # where each line's English words start in en_ids (+ the end)
    es_ids: np.ndarray
    es_starts: np.ndarray

    @staticmethod
    def read(pairs: Iterable[tuple[str, str]], wanted: Optional[set[str]] = None
             ) -> LineWords:
        english: dict[str, int] = {}
        spanish: dict[str, int] = {}
        en_ids, en_starts, es_ids, es_starts = [], [0], [], [0]
        for en, es in pairs:
            found = {word for word in words(en) if is_content_word(word)}
            if wanted is not None:
                found &= wanted
            # sorted: a set's order changes with the interpreter's hash seed
            en_ids += (english.setdefault(word, len(english)) for word in sorted(found))
            es_ids += (spanish.setdefault(word, len(spanish)) for word in
                       dict.fromkeys(word for word in words(es) if is_content_word_es(word)))
            en_starts.append(len(en_ids))
            es_starts.append(len(es_ids))
        return LineWords(english, spanish, *(np.array(ids, np.int64) for ids in
                                             (en_ids, en_starts, es_ids, es_starts)))

    def cooccurrences(self, lines: int = COOCCURRENCE_CHUNK
                      ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Every (English word, Spanish word) of the same line, as two arrays of ids, a
        chunk of `lines` lines at a time."""
        for first in range(0, len(self.en_starts) - 1, lines):
            last = min(first + lines, len(self.en_starts) - 1)
            en_counts = np.diff(self.en_starts[first:last + 1])
            es_counts = np.diff(self.es_starts[first:last + 1])
            # each English word of a line meets every Spanish word of that line: its id
            # repeated, and the Spanish ids from the line's start counted by `within`
            repeats = np.repeat(es_counts, en_counts)
            starts = np.repeat(self.es_starts[first:last], en_counts)
            within = np.arange(int(repeats.sum())) - np.repeat(np.cumsum(repeats) - repeats,
                                                               repeats)
            english = self.en_ids[self.en_starts[first]:self.en_starts[last]]
            yield np.repeat(english, repeats), self.es_ids[np.repeat(starts, repeats) + within]


def aligned_terms(source: str, target: str, lexicon: dict[str, list[str]]
                  ) -> list[tuple[int, int, int, int]]:
    """The terms of a pair, in source order: each content word of `source` (its first
    occurrence) one of whose `lexicon` translations is a whole word of `target` (the
    first in the lexicon's order that is), as (start, end) in the source and (start,
    end) of that word's first occurrence in the target. A target word goes to one
    source word only."""
    in_target: dict[str, tuple[int, int]] = {}
    for match in _WORD.finditer(target):
        in_target.setdefault(match.group().lower(), match.span())
    terms, seen, taken = [], set(), set()
    for match in _WORD.finditer(source):
        word = match.group().lower()
        if word in seen:
            continue
        seen.add(word)
        spans = (in_target.get(form) for form in lexicon.get(word, ()))
        span = next((span for span in spans if span is not None and span not in taken), None)
        if span is not None:
            taken.add(span)
            terms.append((*match.span(), *span))
    return terms


class PairTerms(NamedTuple):
    """The candidate terms of every training pair (`aligned_terms`, at most CANDIDATES
    each), kept as offsets rather than strings: a few int32 per term."""

    starts: np.ndarray  # where each pair's terms start in `spans` (pairs + 1)
    spans: np.ndarray  # [terms, 4] int32: source start, end, target start, end

    @staticmethod
    def find(source: LineFile, target: LineFile) -> PairTerms:
        """Every pair's terms by the translations of the whole corpus (two reads of it)."""
        lexicon = translations(_chunked_pairs(source, target))
        counts, spans = [], []
        for en, es in _chunked_pairs(source, target):
            terms = aligned_terms(en, es, lexicon)[:CANDIDATES]
            counts.append(len(terms))
            spans += terms
        return PairTerms(np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]),
                         np.array(spans, np.int32).reshape(-1, 4))

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.starts)

    def chosen(self, pair: int, mask: int, target: str) -> list[Term]:
        """The terms of `pair` that bit i of `mask` chooses (i: the i-th in source order),
        each with its Spanish form from the pair's `target` text."""
        spans = self.spans[self.starts[pair]:self.starts[pair + 1]].tolist()
        return [(start, end, target[form_start:form_end])
                for i, (start, end, form_start, form_end) in enumerate(spans) if mask >> i & 1]


def _chunked_pairs(source: LineFile, target: LineFile) -> Iterator[tuple[str, str]]:
    """The pairs of two line files, decoded a chunk of lines at a time."""
    for first in range(0, len(source), COOCCURRENCE_CHUNK):
        lines = np.arange(first, min(first + COOCCURRENCE_CHUNK, len(source)))
        yield from zip(source.lines(lines), target.lines(lines))


def choose_terms(rng: np.random.Generator, counts: np.ndarray) -> np.ndarray:
    """For pairs with `counts` candidate terms each (1 to CANDIDATES), a mask of the terms
    each shows: 1 or MAX_TERMS of them (as many as it has), equally likely, drawn by
    `rng`."""
    wanted = np.minimum(counts, rng.integers(1, MAX_TERMS + 1, len(counts)))
    keys = rng.random((len(counts), CANDIDATES))
    keys[np.arange(CANDIDATES)[None, :] >= counts[:, None]] = 2.0  # not candidates: last
    picked = np.argsort(keys, axis=1, kind="stable")[:, :MAX_TERMS]
    return np.where(np.arange(MAX_TERMS)[None, :] < wanted[:, None], 1 << picked, 0).sum(axis=1)


class TermAnnotation:
    """Which pairs an epoch shows annotated (`epoch`, for the batch plan: a
    `batching.Variants`), and batches of them (`collate`)."""

    def __init__(self, data: PreparedDir, share: float, seed: int):
        self.split = data.split("train")
        self.size = len(self.split)
        self.texts = train_text(data, "term annotation (train.term_annotation)")
        self.sp = data.tokenizer.sp
        self.share, self.seed = share, seed
        self.terms = PairTerms.find(*self.texts)

    def epoch(self, epoch: int, pairs: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """`batching.Variants.epoch`: a `share` of those of `pairs` that have a term,
        each with 1 or 2 of its terms annotated; their ids (pair + size x mask of the
        terms) and their tokens per side (the target's as stored)."""
        rng = np.random.default_rng([self.seed, epoch, TERM_STREAM])
        counts = self.terms.counts[pairs]
        where = np.flatnonzero((rng.random(len(pairs)) < self.share) & (counts > 0))
        ids = pairs[where] + self.size * choose_terms(rng, counts[where])
        src = np.fromiter(map(len, self._encode(ids)), np.int64, len(ids))
        return where, ids, src, self.split.tgt_lengths[pairs[where]].astype(np.int64)

    def collate(self, ids: np.ndarray, multiple: int = 1,
                alignments: Optional[EncodedAlignments] = None) -> Batch:
        """The batch of pair ids and annotated-pair ids `ids`: the stored encoding of the
        pairs, the annotated sources encoded from their text; with `alignments`, the
        alignment targets of the pairs as stored (an annotated source's pieces are
        others: it gets none, so no alignment cost)."""
        pairs = (ids % self.size).tolist()
        sources = [self.split.src(i).tolist() for i in pairs]
        annotated = np.flatnonzero(ids >= self.size)
        for row, encoded in zip(annotated.tolist(), self._encode(ids[annotated])):
            sources[row] = encoded
        targets = [self.split.tgt(i).tolist() for i in pairs]
        batch = assemble(rows_from_lists(sources, multiple), rows_from_lists(targets, multiple))
        return with_alignment(batch, alignments, np.where(ids < self.size, ids, -1))

    def annotated(self, ids: np.ndarray) -> list[str]:
        """The source texts of annotated-pair ids `ids`, annotated."""
        masks, pairs = np.divmod(ids, self.size)
        texts = [text.lines(pairs) for text in self.texts]
        return [annotate(source, self.terms.chosen(pair, mask, target)) for
                source, target, pair, mask in zip(*texts, pairs.tolist(), masks.tolist())]

    def _encode(self, ids: np.ndarray) -> list[list[int]]:
        return self.sp.Encode(self.annotated(ids), num_threads=1)
