"""`transcli score`: forced-decoding log-probs against token-by-token cached decoding,
batch independence, the TSV output, and one-line errors."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from helpers import PAIRS
from helpers.cli import one_error_line, run_cli
from helpers.memorised import UNSEEN, memorised_model

from transcli.data.tokenizer import Tokenizer
from transcli.inference.scoring import forced_logprobs
from transcli.model.vocab import BOS_ID, EOS_ID
from transcli.system.errors import UserError

ENGLISH = [en for en, _ in PAIRS]
SPANISH = [es for _, es in PAIRS]


@torch.inference_mode()
def stepwise_logprob(model, source: list[int], target: list[int]) -> float:
    """The reference: feed the forced tokens one at a time through the cached decoder
    (`Transformer.step`, the search's path) and add each next token's log-prob."""
    state = model.start_decoding(model.encode(torch.tensor([source + [EOS_ID]])))
    total, previous = 0.0, BOS_ID
    for token in target + [EOS_ID]:
        total += model.step(torch.tensor([previous]), state)[0, token].item()
        previous = token
    return total


@pytest.fixture(scope="module")
def pairs(tiny_spm: Path) -> tuple[list[list[int]], list[list[int]]]:
    """Memorised pairs, mismatched pairs, and empty sides."""
    tokenizer = Tokenizer(tiny_spm)
    english = ENGLISH[:6] + UNSEEN[:2] + ["", ENGLISH[3]]
    spanish = SPANISH[:6] + SPANISH[6:8] + [SPANISH[0], ""]
    return tokenizer.encode(english), tokenizer.encode(spanish)


def test_forced_logprobs_equal_stepwise_decoding(tiny_spm, pairs):
    model = memorised_model(tiny_spm, tuple(PAIRS))
    sources, targets = pairs
    scores = forced_logprobs(model, sources, targets, batch_tokens=4096)
    for (total, tokens), source, target in zip(scores, sources, targets):
        assert tokens == len(target) + 1
        assert total == pytest.approx(stepwise_logprob(model, source, target), abs=1e-4)


def test_independent_of_batching(tiny_spm, pairs):
    model = memorised_model(tiny_spm, tuple(PAIRS))
    together = forced_logprobs(model, *pairs, batch_tokens=100_000)
    alone = forced_logprobs(model, *pairs, batch_tokens=1)
    assert [t for t, _ in together] == pytest.approx([t for t, _ in alone], abs=1e-4)


def test_a_memorised_pair_scores_above_a_wrong_one(tiny_spm, pairs):
    model = memorised_model(tiny_spm, tuple(PAIRS))
    sources, targets = pairs
    right = forced_logprobs(model, sources[:2], targets[:2], 4096)
    wrong = forced_logprobs(model, sources[:2], targets[1::-1], 4096)
    assert all(r[0] / r[1] > w[0] / w[1] + 1.0 for r, w in zip(right, wrong))


def test_too_long_is_nan(tiny_spm):
    model = memorised_model(tiny_spm, tuple(PAIRS))
    limit = model.cfg.max_positions
    scores = forced_logprobs(model, [[5] * limit, [5]], [[6], [6] * 3], 4096)
    assert math.isnan(scores[0][0]) and scores[0][1] == 2
    assert not math.isnan(scores[1][0])


# ----------------------------------------------------------------------------- the command


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.slow
def test_cli_tsv_in_input_order(run_dir, tiny_spm, pairs, tmp_path):
    run = run_dir
    english = ENGLISH[:6] + UNSEEN[:2] + ["", ENGLISH[3]]
    spanish = SPANISH[:6] + SPANISH[6:8] + [SPANISH[0], ""]
    src, tgt = write(tmp_path / "s.en", english), write(tmp_path / "t.es", spanish)
    result = run_cli("score", "-m", run, "--src", src, "--tgt", tgt, "--batch-tokens", "40")
    assert result.returncode == 0, result.stderr
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [row[0] for row in rows] == [str(i) for i in range(len(english))]
    expected = forced_logprobs(memorised_model(tiny_spm, tuple(PAIRS)), *pairs, 4096)
    for row, (total, tokens), en, es in zip(rows, expected, english, spanish):
        if not en or not es:  # a blank side: kept, not scored, as translate keeps it blank
            assert row[1:] == ["nan", "nan", "0"]
            continue
        assert float(row[1]) == pytest.approx(total, abs=1e-3)
        assert float(row[2]) == pytest.approx(total / tokens, abs=1e-3)
        assert int(row[3]) == tokens
    out = tmp_path / "scores.tsv"
    again = run_cli("score", "-m", run, "--src", src, "--tgt", tgt, "-o", out)
    assert again.returncode == 0 and out.read_text(encoding="utf-8") == result.stdout


@pytest.mark.slow
def test_cli_errors_are_one_line(run_dir, tmp_path):
    run = run_dir
    src = write(tmp_path / "s.en", ENGLISH[:3])
    tgt = write(tmp_path / "t.es", SPANISH[:2])
    line = one_error_line(run_cli("score", "-m", run, "--src", src, "--tgt", tgt))
    assert "s.en has 3 lines" in line and "t.es has 2" in line
    empty_src, empty_tgt = write(tmp_path / "e.en", []), write(tmp_path / "e.es", [])
    line = one_error_line(run_cli("score", "-m", run, "--src", empty_src, "--tgt", empty_tgt))
    assert "e.en and" in line and "e.es are empty" in line
    line = one_error_line(run_cli("score", "-m", run, "--src", src, "--tgt", src, "-o", src))
    assert "also an input" in line
    assert src.read_text(encoding="utf-8").splitlines() == ENGLISH[:3]  # untouched


def test_batch_tokens_0_is_chosen_for_the_device_as_in_the_config(run_dir, tmp_path, capsys):
    """Issue: `score --batch-tokens 0` was refused, while decode.batch_tokens=0 means
    "chosen for the device"; the flag is that key, checked as the config checks it."""
    from transcli.cli.score import score_files

    src = write(tmp_path / "s.en", ENGLISH[:4])
    tgt = write(tmp_path / "t.es", SPANISH[:4])
    outputs = []
    for tokens in (None, 0):
        score_files(run_dir, "best", src, tgt, "-", tokens, "cpu")
        outputs.append(capsys.readouterr().out)
    assert len(outputs[0].splitlines()) == 4 and outputs[0] == outputs[1]
    with pytest.raises(UserError, match="'decode.batch_tokens' must be in"):
        score_files(run_dir, "best", src, tgt, "-", -1, "cpu")
