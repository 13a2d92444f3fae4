"""The confidence of a translation: its features from the hypothesis, the calibration's
pieces against independent formulas, and a fit that ranks lines as their quality does."""

from __future__ import annotations

import math
import random
import statistics

import numpy as np
import pytest
import torch
from helpers import PAIRS
from helpers.memorised import UNSEEN, pad

from transcli.config.schema import DecodeConfig
from transcli.inference.calibrate import calibrate
from transcli.inference.confidence import (
    FEATURES,
    Calibration,
    Line,
    Trust,
    features,
    fit,
    isotonic,
    joined,
    pearson,
    spearman,
)
from transcli.inference.search import Hypothesis
from transcli.inference.translator import Translator
from transcli.model.vocab import BOS_ID, EOS_ID


def test_features_are_read_from_the_steps():
    h = Hypothesis([5, 6, 7], -1.6, 0.0, True, (-0.1, -1.0, -0.3, -0.2))
    mean, least, spread, ratio, ended = features(h, 3)
    assert mean == pytest.approx(-0.4) and least == -1.0
    assert spread == pytest.approx(statistics.pstdev([-0.1, -1.0, -0.3, -0.2]))
    assert ratio == pytest.approx(math.log(4 / 4)) and ended == 1.0
    bare = features(Hypothesis([5, 6], -1.0, 0.0, False), 6)  # an engine without steps
    assert bare[:3] == [-0.5, -0.5, 0.0] and bare[3] == pytest.approx(math.log(3 / 7))
    assert len(bare) == len(FEATURES)


def min_max_isotonic(y: list[float]) -> list[float]:
    """The isotonic fit by its min-max formula: at i, the largest over j <= i of the
    smallest over k >= i of mean(y[j..k])."""
    return [max(min(statistics.fmean(y[j:k + 1]) for k in range(i, len(y)))
                for j in range(i + 1)) for i in range(len(y))]


def test_isotonic_regression_is_the_min_max_formula():
    rng = random.Random(0)
    for _ in range(50):
        y = [rng.random() for _ in range(rng.randint(1, 12))]
        x = np.arange(len(y), dtype=np.float64) * 2.0
        knots, levels = isotonic(x, np.asarray(y))
        expected = min_max_isotonic(y)  # a block: a run of points with one fitted value
        runs = [[i for i in range(len(y)) if abs(expected[i] - level) < 1e-12]
                for level in dict.fromkeys(round(v, 12) for v in expected)]
        assert levels == pytest.approx([expected[run[0]] for run in runs], abs=1e-12)
        assert knots == pytest.approx([statistics.fmean(x[run]) for run in runs])
        assert all(a < b for a, b in zip(levels, levels[1:]))


def test_correlations_against_the_standard_library_and_by_hand():
    rng = random.Random(1)
    a = [rng.random() for _ in range(30)]
    b = [x + rng.random() for x in a]
    assert pearson(a, b) == pytest.approx(statistics.correlation(a, b))
    # ranks 1 2 3 4 against 1 3 2 4, and a tie: 1 - 6 sum d^2 / (n (n^2 - 1)) without ties
    assert spearman([1, 2, 3, 4], [10, 30, 20, 40]) == pytest.approx(1 - 6 * 2 / (4 * 15))
    assert spearman([1, 1, 2], [1, 2, 3]) == pytest.approx(pearson([1.5, 1.5, 3], [1, 2, 3]))
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3]))


def test_a_fit_ranks_lines_as_their_quality_and_stays_in_bounds(tmp_path):
    """Quality a noisy function of the mean log-prob: the fitted estimate follows it,
    never leaves [0, 1], and survives the run dir."""
    rng = random.Random(2)
    rows, quality = [], []
    for _ in range(400):
        mean = -rng.random() * 3
        rows.append([mean, mean - rng.random(), rng.random(), rng.gauss(0, 0.2), 1.0])
        quality.append(min(1.0, max(0.0, 0.9 + 0.25 * mean + rng.gauss(0, 0.05))))
    calibration = fit(rows, quality)
    estimates = [calibration(row) for row in rows]
    assert calibration.pearson == pytest.approx(pearson(estimates, quality))
    assert calibration.pearson > 0.9 and all(0.0 <= e <= 1.0 for e in estimates)
    assert statistics.fmean(estimates) == pytest.approx(statistics.fmean(quality), abs=0.01)
    assert calibration([-50.0, -60.0, 0.0, 0.0, 0.0]) >= 0.0
    calibration.save(tmp_path)
    assert Calibration.load(tmp_path) == calibration
    assert Calibration.load(tmp_path / "missing") is None


@pytest.mark.parametrize("damage", ["{", '{"features": ["mean_logprob", "least_logprob", '
                                    '"spread", "length_ratio", "ended"], "weights": [1]}',
                                    "[1, 2]"])
def test_a_damaged_calibration_is_one_line_naming_the_file(tmp_path, damage):
    from transcli.system.errors import UserError

    (tmp_path / "confidence.json").write_text(damage)
    with pytest.raises(UserError, match="confidence.json: not a confidence calibration"):
        Calibration.load(tmp_path)


UNSEEN_SPANISH = ["El gato come pan.", "¿Dónde está mi libro?", "Nos gusta la playa.",
                  "Mi abuela abrió la tienda.", "¿Café?"]


def test_a_line_s_confidence_is_the_calibration_of_its_forced_log_probs(model, tiny_tokenizer):
    """`Translator.translate_lines`: each line's confidence is its calibration applied to
    the features of its translation's tokens as a full forward pass scores them; the
    calibration, fitted on the lines' chrF, trusts the memorised lines more than the
    unseen ones."""
    english, spanish = [en for en, _ in PAIRS] + UNSEEN, [es for _, es in PAIRS] + UNSEEN_SPANISH
    decode = DecodeConfig(strategy="beam", beam_size=3, max_len_a=1.5, max_len_b=8)
    calibration = calibrate(Translator(model, tiny_tokenizer, decode, "cpu"), english, spanish)
    assert calibration.lines == len(english) and calibration.pearson > 0.5
    translator = Translator(model, tiny_tokenizer, decode, "cpu", calibration=calibration)
    lines = translator.translate_lines(english)
    assert translator.tally.failed == 0
    for line, text, source in zip(lines, english, tiny_tokenizer.encode(english)):
        if translator.preparer.plan(text).units[0].copied:  # "Coffee?": kept as written
            assert line.best == text and line.confidence == 1.0
            continue
        target = tiny_tokenizer.encode([line.best])[0] + [EOS_ID]
        with torch.inference_mode():
            logp = model(pad([source + [EOS_ID]]), pad([[BOS_ID] + target[:-1]]))[0]
        steps = tuple(logp.gather(1, torch.tensor(target)[:, None])[:, 0].tolist())
        forced = Hypothesis(target[:-1], sum(steps), 0.0, True, steps)
        assert line.confidence == pytest.approx(calibration(features(forced, len(source))),
                                                abs=1e-6)
    known = statistics.fmean(line.confidence for line in lines[:len(PAIRS)])
    assert known > statistics.fmean(line.confidence for line in lines[len(PAIRS):-1])


def test_a_line_of_sentences_weighs_each_by_its_length():
    parts = [Line([("A.", 0.0)], 0.9), Line([("Bbbbbbbbb.", 0.0)], 0.3)]
    assert joined([part.confidence for part in parts], ["a.", "bbbbbbbbb."]) == pytest.approx(
        (2 * 0.9 + 10 * 0.3) / 12)
    assert joined([], []) == 1.0 and joined([Line([("A", 0.0)], None).confidence], ["a"]) is None


def test_trust_shows_marks_or_keeps_the_source():
    low, high = Line([("Hola\tmundo.", 0.0)], 0.2), Line([("Adiós.", 0.0)], 0.8)
    shown = Trust(shown=True)
    assert [shown.written("x", line) for line in (low, high)] == ["Hola mundo.\t0.20",
                                                                   "Adiós.\t0.80"]
    kept = Trust(least=0.5)
    assert [kept.written("Hello world.", low), kept.written("Bye.", high)] == [
        "Hello world.", "Adiós."]
    assert kept.summary() == "1 line(s) below confidence 0.5: written as their source"
    marked = Trust(least=0.5, below="mark")
    assert marked.written("Hello world.", low) == "[?] Hola\tmundo."
    assert marked.written("", Line([("", 0.0)], 0.0)) == ""  # an empty line stays empty
