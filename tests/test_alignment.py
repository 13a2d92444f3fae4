"""Word alignments at prepare time (`data.alignments`): the IBM Model 2 aligner against a
reference written with loops, symmetrising against Koehn's pseudocode, words read
off pieces and links mapped back to pieces, the files' round trip and checks, and
prepare's output with them (byte-identical when run again)."""

from __future__ import annotations

import math
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.training import ENV, prepare_sample

from transcli.data import aligner
from transcli.data.aligner import Direction, LengthTriples, Links, Side, align, digamma
from transcli.data.alignments import PieceTable, Words, split_words, to_pieces
from transcli.data.batching import Batch, collate, with_alignment
from transcli.data.encoded import ALIGNMENT_FILES, AlignmentWriter, EncodedAlignments
from transcli.data.prepared_dir import open_prepared_dir
from transcli.data.symmetrise import METHODS, NEIGHBOURS, grow_diag, symmetrise
from transcli.system.errors import UserError

# A corpus of word type ids: three pairs whose co-occurrences decide the links.
SRC = [[0, 1], [0, 2], [1, 2, 3]]
TGT = [[10, 11], [10, 12], [11, 12, 13]]


def side(sentences: list[list[int]]) -> Side:
    lengths = [len(s) for s in sentences]
    return Side(np.array([t for s in sentences for t in s], np.int64),
                np.r_[0, np.cumsum(lengths)].astype(np.int64))


def dense(sentences: list[list[int]]) -> tuple[list[list[int]], int]:
    """Type ids renumbered from 0 (as `split_words` numbers them)."""
    types = sorted({t for s in sentences for t in s})
    number = {t: i for i, t in enumerate(types)}
    return [[number[t] for t in s] for s in sentences], len(types)


def reference_iteration(src: list[list[int]], tgt: list[list[int]], tension: float
                        ) -> tuple[dict[tuple[int, int], float], dict[int, float], float]:
    """One EM iteration of fast_align's target->source model from uniform tables, written
    with loops: the VB-normalised table t(f|e), t(f|NULL), and the expected feature."""
    counts: dict[tuple[int, int], float] = defaultdict(float)
    null_counts: dict[int, float] = defaultdict(float)
    feature, words = 0.0, 0
    for es, fs in zip(src, tgt):
        m, n = len(es), len(fs)
        for j, f in enumerate(fs, start=1):
            h = [-abs(i / m - j / n) for i in range(1, m + 1)]
            z = sum(math.exp(tension * x) for x in h)
            scores = [(1 - 0.08) * math.exp(tension * x) / z for x in h]  # t = 1
            total = sum(scores) + 0.08
            for e, score, x in zip(es, scores, h):
                counts[e, f] += score / total
                feature += score / total * x
            null_counts[f] += 0.08 / total
            words += 1
    per_e: dict[int, float] = defaultdict(float)
    for (e, _), c in counts.items():
        per_e[e] += c + 0.01
    table = {key: math.exp(_digamma(c + 0.01) - _digamma(per_e[key[0]]))
             for key, c in counts.items()}
    null_total = sum(c + 0.01 for c in null_counts.values())
    null = {f: math.exp(_digamma(c + 0.01) - _digamma(null_total))
            for f, c in null_counts.items()}
    return table, null, feature / words


def _digamma(x: float) -> float:
    return float(torch.special.digamma(torch.tensor(x, dtype=torch.float64)))


def test_one_em_iteration_matches_a_reference_written_with_loops(tmp_path: Path) -> None:
    src, _ = dense(SRC)
    tgt, _ = dense(TGT)
    links = Links(side(src), side(tgt), tmp_path)
    forward = Direction(links, forward=True)
    for chunk in links.chunks():
        forward.expect(chunk)
    observed = forward.feature_sum / len(side(tgt).types)
    tension_before = forward.tension
    forward.maximise()
    table, null, feature = reference_iteration(src, tgt, tension_before)
    assert observed == pytest.approx(feature, rel=1e-6)
    got = {(int(e), int(f)): float(p) for e, f, p in
           zip(links.src_type, links.tgt_type, forward.table)}
    assert got.keys() == table.keys()
    for key, p in table.items():
        assert got[key] == pytest.approx(p, rel=1e-6), key
    assert dict(enumerate(forward.null.tolist())) == pytest.approx(null, rel=1e-6)
    # the tension moved toward the observed feature by fast_align's steps
    tension = tension_before
    triples = LengthTriples.of(side(tgt).lengths, side(src).lengths)
    for _ in range(aligner.TENSION_STEPS):
        tension = min(max(tension + (feature - triples.expected(tension)) * 20, 0.1), 14)
    assert forward.tension == pytest.approx(tension, rel=1e-6)


def test_the_expected_feature_in_closed_form_equals_the_sum_over_positions() -> None:
    rng = np.random.default_rng(0)
    n, m = rng.integers(1, 30, 50), rng.integers(1, 30, 50)
    triples = LengthTriples.of(n, m)
    for tension in (0.1, 4.0, 14.0):
        total = 0.0
        for a, b in zip(n.tolist(), m.tolist()):
            for j in range(1, a + 1):
                h = -np.abs(np.arange(1, b + 1) / b - j / a)
                total += float((h * np.exp(tension * h)).sum() / np.exp(tension * h).sum())
        assert triples.expected(tension) == pytest.approx(total / n.sum(), rel=1e-9)


def test_digamma_matches_torch() -> None:
    x = np.array([1e-4, 0.01, 0.3, 1.0, 2.5, 5.99, 6.0, 40.0, 1e7])
    assert np.allclose(digamma(x), torch.special.digamma(torch.from_numpy(x)).numpy(),
                       rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("parallel", [False, True])
def test_the_aligner_links_what_co_occurs_and_is_deterministic(tmp_path: Path,
                                                               parallel: bool) -> None:
    # "a b" / "x y" and "a c" / "x z" ... : a always meets x, b meets y, c meets z
    corpus = [([0, 1], [10, 11]), ([0, 2], [10, 12]), ([1, 2], [11, 12]),
              ([2, 0, 1], [12, 10, 11])] * 5
    src, tgt = side([s for s, _ in corpus]), side([t for _, t in corpus])
    src = Side(np.unique(src.types, return_inverse=True)[1], src.starts)
    tgt = Side(np.unique(tgt.types, return_inverse=True)[1], tgt.starts)
    found = align(src, tgt, tmp_path, parallel=parallel)
    expected_forward = []  # each target word's source position: the same type's
    for s, t in corpus:
        expected_forward += [s.index(f - 10) for f in t]
    assert found.forward.tolist() == expected_forward
    again = align(src, tgt, tmp_path, parallel=not parallel)
    assert again.forward.tolist() == found.forward.tolist()
    assert again.reverse.tolist() == found.reverse.tolist()


# ----------------------------------------------------------------------------- symmetrising


def koehn(forward: list[int], reverse: list[int], final_and: bool) -> set[tuple[int, int]]:
    """grow-diag(-final-and) as Koehn's pseudocode says it, every position visited."""
    f2e = {(i, j) for j, i in enumerate(forward) if i >= 0}
    e2f = {(i, j) for i, j in enumerate(reverse) if j >= 0}
    union, alignment = f2e | e2f, f2e & e2f
    m, n = len(reverse), len(forward)

    def aligned_src(i: int) -> bool:
        return any(a == i for a, _ in alignment)

    def aligned_tgt(j: int) -> bool:
        return any(b == j for _, b in alignment)

    added = True
    while added:
        added = False
        for e in range(m):
            for f in range(n):
                if (e, f) not in alignment:
                    continue
                for de, df in NEIGHBOURS:
                    new = (e + de, f + df)
                    if (not aligned_src(new[0]) or not aligned_tgt(new[1])) and \
                            new in union and new not in alignment:
                        alignment.add(new)
                        added = True
    for a in (e2f, f2e) if final_and else ():
        for e in range(m):
            for f in range(n):
                if not aligned_src(e) and not aligned_tgt(f) and (e, f) in a:
                    alignment.add((e, f))
    return alignment


def test_symmetrising_by_hand() -> None:
    # target 0 -> source 0, target 1 -> source 2, target 2 -> none;
    # source 0 -> target 0, source 1 -> target 1, source 2 -> target 1
    forward, reverse = [0, 2, -1], [0, 1, 1]
    assert symmetrise(forward, reverse, "intersection") == [(0, 0), (2, 1)]
    assert symmetrise(forward, reverse, "grow-diag") == [(0, 0), (1, 1), (2, 1)]
    assert symmetrise(forward, reverse, "grow-diag-final-and") == [(0, 0), (1, 1), (2, 1)]
    # agreeing directions: the intersection alone, whatever the method
    assert {tuple(symmetrise([1, 0], [1, 0], m)) for m in METHODS} == {((0, 1), (1, 0))}
    # a link only one direction has, between two words nothing else links: final-and only
    assert symmetrise([-1, 1], [-1, 1], "intersection") == [(1, 1)]
    assert symmetrise([0, -1, -1], [0, -1, 2], "grow-diag") == [(0, 0)]
    assert symmetrise([0, -1, -1], [0, -1, 2], "grow-diag-final-and") == [(0, 0), (2, 2)]


def test_growing_equals_the_pseudocode_on_random_directions() -> None:
    rng = np.random.default_rng(5)
    for _ in range(400):
        m, n = rng.integers(1, 9, 2)
        forward = rng.integers(-1, m, n).tolist()
        reverse = rng.integers(-1, n, m).tolist()
        for final_and in (False, True):
            assert set(grow_diag(forward, reverse, final_and)) == \
                koehn(forward, reverse, final_and)
        agreed = {(i, j) for j, i in enumerate(forward) if i >= 0 and reverse[i] == j}
        assert symmetrise(forward, reverse, "intersection") == sorted(agreed)


# ----------------------------------------------------------------------------- pieces


def test_words_are_read_off_pieces_punctuation_apart_case_aside(prepared: Path) -> None:
    data = open_prepared_dir(prepared)
    sp = data.tokenizer.sp
    lines = ["La sesión. ¿Hay (algo) aquí?", "la sesión, sir!"]
    encoded = sp.Encode(lines)
    ids = np.array([i for line in encoded for i in line])
    offsets = np.r_[0, np.cumsum([len(line) for line in encoded])]
    words = split_words(ids, offsets, PieceTable.of(data.tokenizer))
    starts = words.piece_starts.tolist()
    texts = [sp.Decode(ids[a:b].tolist()) for a, b in zip(starts, starts[1:])]
    assert texts == ["La", "sesión", ".", "¿", "Hay", "(", "algo", ")", "aquí", "?",
                     "la", "sesión", ",", "sir", "!"]
    assert words.side.starts.tolist() == [0, 10, 15]
    types = words.side.types.tolist()
    assert types[10:12] == types[0:2] and len(set(types)) == 13  # "La" is "la"


def test_a_word_link_becomes_every_pair_of_their_pieces() -> None:
    # source: word 0 = pieces 0-1, word 1 = piece 2; target: word 0 = piece 0, word 1 =
    # pieces 1-3
    src = Words(Side(np.array([5, 6]), np.array([0, 2])), np.array([0, 2, 3]))
    tgt = Words(Side(np.array([7, 8]), np.array([0, 2])), np.array([0, 1, 4]))

    class Split:
        src_offsets, tgt_offsets = np.array([0, 3]), np.array([0, 4])

    s, t, counts = to_pieces(np.array([0, 0]), np.array([0, 1]), np.array([1, 0]),
                             src, tgt, Split, 0, 1)
    assert list(zip(s.tolist(), t.tolist())) == [(2, 0), (0, 1), (1, 1), (0, 2), (1, 2),
                                                 (0, 3), (1, 3)]
    assert counts.tolist() == [7]


# ----------------------------------------------------------------------------- files


def test_alignment_files_round_trip_and_refuse_damage(prepared: Path, tmp_path: Path) -> None:
    split = open_prepared_dir(prepared).split("train")
    writer = AlignmentWriter(tmp_path, 100)
    per_pair = [[(0, 0), (1, 0)] if i % 2 == 0 else [] for i in range(len(split))]
    for links in per_pair:
        arr = np.array(links, np.int64).reshape(-1, 2)
        writer.add(arr[:, 0], arr[:, 1], np.array([len(links)]))
    writer.close()
    read = EncodedAlignments(tmp_path, split)
    assert [read.pair_links(i).tolist() for i in range(len(split))] == \
        [[list(x) for x in links] for links in per_pair]
    links = np.load(tmp_path / ALIGNMENT_FILES[0])
    links[0, 0] = split.src_lengths[0]  # one past the pair's last piece
    np.save(tmp_path / ALIGNMENT_FILES[0], links)
    with pytest.raises(UserError, match="a link outside its pair's pieces"):
        EncodedAlignments(tmp_path, split)
    np.save(tmp_path / ALIGNMENT_FILES[1], np.zeros(3, np.int64))
    with pytest.raises(UserError, match="corrupt alignment file"):
        EncodedAlignments(tmp_path, split)


@pytest.fixture(scope="module")
def aligned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `prepared` fixture's sample, prepared with alignments."""
    return prepare_sample(tmp_path_factory.mktemp("aligned"), 0, 40, "data.alignments=true")


def test_prepare_stores_alignments_and_again_gives_the_same_bytes(
        aligned: Path, prepared: Path, tmp_path: Path) -> None:
    import json

    manifest = json.loads((aligned / "manifest.json").read_text())
    record = manifest["alignments"]
    assert record["files"] == list(ALIGNMENT_FILES)
    assert record["pairs_aligned"] == manifest["splits"]["train"]["pairs"]
    data = open_prepared_dir(aligned)
    links = data.alignments("a test")
    assert len(links.links) == record["piece_links"] > record["word_links"] > 0
    again = prepare_sample(tmp_path, 0, 40, "data.alignments=true")
    for name in ALIGNMENT_FILES + ("train.src.npy",):
        assert (again / name).read_bytes() == (aligned / name).read_bytes(), name
    # the same pairs: the same data as a run records it, with or without alignments
    plain = json.loads((prepared / "manifest.json").read_text())
    assert "alignments" not in plain and plain["data_hash"] == manifest["data_hash"]


def test_training_with_guided_alignment_needs_a_dir_prepared_with_alignments(
        prepared: Path, tmp_path: Path) -> None:
    from helpers.training import TINY

    result = subprocess.run(
        [sys.executable, "-m", "transcli", "train", "--config", str(TINY), "--data",
         str(prepared), "--out", str(tmp_path / "run"), "--set", "train.guided_alignment=0.1"],
        env=ENV, capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].endswith(
        "holds no word alignments, which train.guided_alignment needs: prepare it again "
        "with --set data.alignments=true")
    assert not (tmp_path / "run").exists()


# ----------------------------------------------------------------------------- batches


def test_a_batch_carries_each_row_s_links_normalised_and_variants_none(aligned: Path) -> None:
    data = open_prepared_dir(aligned)
    split, links = data.split("train"), data.alignments("a test")
    idx = np.array([3, 0, 7])
    batch = collate(split, idx, alignments=links)
    rows, width, length = batch.tgt_out.shape[0], batch.tgt_out.shape[1], batch.src.shape[1]
    expected = np.zeros((rows, width, length))
    for b, pair in enumerate(idx.tolist()):
        for s, t in links.pair_links(pair).tolist():
            expected[b, t, s] = 1
    sums = expected.sum(axis=2, keepdims=True)
    expected = np.divide(expected, sums, out=np.zeros_like(expected), where=sums > 0)
    got = np.zeros(rows * width * length)
    got[batch.align.index.numpy()] = batch.align.value.numpy()
    assert np.allclose(got.reshape(expected.shape), expected)
    assert batch.align.rows.tolist() == np.flatnonzero(sums.reshape(-1) > 0).tolist()
    # a row shown as a variant (no stored pieces) gets no link
    plain = collate(split, idx)
    masked = with_alignment(Batch(plain.src, plain.tgt_in, plain.tgt_out, plain.src_tokens,
                                  plain.tgt_tokens, plain.rows), links, np.array([3, -1, 7]))
    assert not ((masked.align.rows.numpy() // width) == 1).any()
    assert set((masked.align.rows.numpy() // width).tolist()) == {0, 2}


def test_prepare_s_vectorised_intersection_is_symmetrise_s() -> None:
    from transcli.data.aligner import WordAlignments
    from transcli.data.alignments import agreed

    rng = np.random.default_rng(2)
    src_len, tgt_len = rng.integers(1, 7, 50), rng.integers(1, 7, 50)
    src = Side(np.zeros(src_len.sum(), np.int64), np.r_[0, np.cumsum(src_len)])
    tgt = Side(np.zeros(tgt_len.sum(), np.int64), np.r_[0, np.cumsum(tgt_len)])
    forward = np.concatenate([rng.integers(-1, m, n) for m, n in zip(src_len, tgt_len)])
    reverse = np.concatenate([rng.integers(-1, n, m) for m, n in zip(src_len, tgt_len)])
    pair, i, j = agreed(WordAlignments(forward, reverse), src, tgt, 10, 40)
    expected = [(k, a, b) for k in range(10, 40) for a, b in symmetrise(
        forward[tgt.starts[k]:tgt.starts[k + 1]].tolist(),
        reverse[src.starts[k]:src.starts[k + 1]].tolist(), "intersection")]
    assert sorted(zip(pair.tolist(), i.tolist(), j.tolist())) == sorted(expected)
