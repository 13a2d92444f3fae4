"""The `sample` strategy and the strategy registry: filtering against hand-computed
distributions, top-k 1 and near-zero temperature against greedy search, sample
frequencies against the model's own probabilities, and seeding (same seed and line
index, same output, whatever the batch or the chunk the line arrives in)."""

from __future__ import annotations

import contextlib
import math
from dataclasses import replace

import pytest
import torch
from helpers import PAIRS
from helpers.memorised import TINY_CONFIG, UNSEEN, memorised_model, pad
from helpers.reference import uncached

from transcli.config.loading import load_config
from transcli.config.schema import STRATEGIES, DecodeConfig
from transcli.data.tokenizer import Tokenizer
from transcli.inference.search import SEARCHES, Hypothesis, greedy_search, sample_probs, search
from transcli.inference.translator import Translator
from transcli.model.transformer import Transformer
from transcli.model.vocab import BOS_ID, EOS_ID
from transcli.system.errors import UserError


def run(model: Transformer, src: torch.Tensor, max_len: int, indices=None, cached: bool = True,
        **decode) -> list[list[Hypothesis]]:
    with torch.inference_mode(), contextlib.nullcontext() if cached else uncached():
        return search(model, src, [max_len] * src.size(0), replace(DecodeConfig(), **decode),
                      indices)


def tokens(found: list[list[Hypothesis]]) -> list[list[list[int]]]:
    return [[h.tokens for h in hyps] for hyps in found]


def test_every_strategy_name_runs_the_function_of_that_name(tiny_spm):
    """decode.strategy's table names each search; `search` runs the function of that name
    (a name without one would fail at import)."""
    assert list(SEARCHES) == list(STRATEGIES)
    assert all(SEARCHES[name].__name__ == name for name in STRATEGIES)
    model = memorised_model(tiny_spm, tuple(PAIRS))
    src = pad([[5, 6, EOS_ID]])
    for name in STRATEGIES:
        with torch.inference_mode():
            by_name = search(model, src, [8], DecodeConfig(strategy=name))
            direct = SEARCHES[name](model, src, [8], DecodeConfig(strategy=name), [0])
        assert tokens(by_name) == tokens(direct)


def test_beam_one_without_strategy_key_is_greedy(tiny_spm):
    """A saved config with `beam_size: 1` and no strategy (runs from before the registry)
    runs beam search with one beam: the same translations as greedy search."""
    model = memorised_model(tiny_spm, tuple(PAIRS))
    lines = [en for en, _ in PAIRS] + UNSEEN
    old = DecodeConfig(beam_size=1)
    assert old.strategy == "beam"
    greedy = replace(old, strategy="greedy")
    tokenizer = Tokenizer(tiny_spm)
    before = Translator(model, tokenizer, old, "cpu").translate_nbest(lines)
    after = Translator(model, tokenizer, greedy, "cpu").translate_nbest(lines)
    assert [[text for text, _ in hyps] for hyps in before] == [
        [text for text, _ in hyps] for hyps in after]
    assert [hyps[0][1] for hyps in before] == pytest.approx([hyps[0][1] for hyps in after],
                                                           abs=1e-5)


@pytest.mark.parametrize("strategy", ["greedy", "sample"])
def test_greedy_and_sampling_report_the_bounded_word_reward(model, sources, strategy):
    """The reward does not change their choices; it adds reward x min(length, bound) to
    the reported score, bound = 0.5 x (source tokens without EOS) + 1, computed here."""
    src = pad(sources)
    plain = run(model, src, 30, strategy=strategy, seed=3)
    found = run(model, src, 30, strategy=strategy, seed=3, word_reward=1.0,
                word_reward_bound=0.5)
    cut = 0
    for row, (base,), (hyp,) in zip(sources, plain, found):
        assert hyp.tokens == base.tokens and hyp.eos
        length, cap = len(hyp.tokens) + 1, 0.5 * (len(row) - 1) + 1
        cut += cap < length
        assert hyp.score == pytest.approx(base.score + min(length, cap))
    assert cut > len(sources) / 2  # mostly the bound cuts the reward short: it can fail


# ---------------------------------------------------------------- the distribution

P = torch.tensor([[0.5, 0.2, 0.15, 0.1, 0.05]], dtype=torch.float64)


@pytest.mark.parametrize("top_p, expected", [
    (1.0, [0.5, 0.2, 0.15, 0.1, 0.05]),
    (0.6, [5 / 7, 2 / 7, 0, 0, 0]),  # 0.5 < 0.6, so 0.2 is needed too
    (0.8, [0.5 / 0.85, 0.2 / 0.85, 0.15 / 0.85, 0, 0]),
    (0.45, [1, 0, 0, 0, 0]),
    (0.96, [0.5, 0.2, 0.15, 0.1, 0.05]),  # 0.95 < 0.96: the last token too
])
def test_top_p_keeps_the_smallest_set_reaching_the_mass(top_p, expected):
    assert sample_probs(P.log(), top_p=top_p)[0].tolist() == pytest.approx(expected)


def test_top_p_does_not_depend_on_the_vocabulary_order():
    order = torch.tensor([3, 0, 4, 1, 2])
    shuffled = sample_probs(P[:, order].log(), top_p=0.8)[0]
    assert shuffled.tolist() == pytest.approx(sample_probs(P.log(), top_p=0.8)[0, order].tolist())


def test_top_k_then_top_p_on_the_renormalised_top_k():
    # top-k 2 leaves [5/7, 2/7]; 5/7 already exceeds 0.7, so top-p keeps one token
    assert sample_probs(P.log(), top_k=2, top_p=0.7)[0].tolist() == pytest.approx([1, 0, 0, 0, 0])
    assert sample_probs(P.log(), top_k=3)[0].tolist() == pytest.approx(
        [0.5 / 0.85, 0.2 / 0.85, 0.15 / 0.85, 0, 0])


def test_temperature_is_a_power_of_the_probabilities():
    root = P.sqrt() / P.sqrt().sum()
    assert sample_probs(P.log(), temperature=2.0)[0].tolist() == pytest.approx(root[0].tolist())


# ---------------------------------------------------------------- against greedy search


@pytest.mark.parametrize("decode", [dict(top_k=1), dict(top_k=1, temperature=5.0),
                                    dict(temperature=1e-3), dict(top_p=1e-6)])
def test_degenerate_sampling_is_greedy(model, sources, decode):
    src = pad(sources)
    with torch.inference_mode():
        greedy = greedy_search(model, src, 30, 0.6)
    sampled = run(model, src, 30, strategy="sample", **decode)
    assert tokens(sampled) == [[h.tokens] for h in greedy]
    assert [hyps[0].logprob for hyps in sampled] == pytest.approx([h.logprob for h in greedy])
    assert [hyps[0].eos for hyps in sampled] == [h.eos for h in greedy]


@pytest.mark.parametrize("decode", [dict(), dict(temperature=0.5, top_k=30, top_p=0.8)])
def test_first_token_frequencies_match_the_model(tiny_tokenizer, decode):
    """Many samples of one sentence's first token from an untrained model (a spread-out
    distribution), each from its own seed (line index): frequencies within 5 standard
    errors of the probabilities teacher forcing gives (filtered by `sample_probs`)."""
    torch.manual_seed(0)
    model = Transformer(load_config(TINY_CONFIG).model, tiny_tokenizer.vocab_size).double()
    model.eval()
    n, src = 4000, pad([[5, 6, 7, EOS_ID]])
    with torch.inference_mode():
        logp = model(src, torch.tensor([[BOS_ID]]))[0]
    probs = sample_probs(logp, **decode)[0] if decode else logp[0].exp()
    found = run(model, src.expand(n, -1), 1, range(n), strategy="sample", **decode)
    drawn = torch.tensor([hyps[0].tokens[0] if hyps[0].tokens else EOS_ID for hyps in found])
    frequency = torch.bincount(drawn, minlength=probs.numel()) / n
    assert int((probs > 0.01).sum()) >= 10
    bound = 5 * (probs * (1 - probs) / n).sqrt()
    assert bool(((frequency - probs).abs() <= bound).all())
    assert bool((frequency[probs == 0] == 0).all())


# ---------------------------------------------------------------- seeding


def test_same_seed_same_samples_whatever_the_batch(model, sources):
    """Alone, together, reversed, uncached: a line's samples depend only on the seed and
    its index; another seed gives other samples."""
    decode = dict(strategy="sample", temperature=2.0, n_best=3, seed=7)
    indices = list(range(100, 100 + len(sources)))
    together = run(model, pad(sources), 25, indices, **decode)
    alone = [run(model, pad([ids]), 25, [i], **decode)[0] for ids, i in zip(sources, indices)]
    reverse = run(model, pad(sources[::-1]), 25, indices[::-1], **decode)[::-1]
    uncached = run(model, pad(sources), 25, indices, cached=False, **decode)
    assert tokens(together) == tokens(alone) == tokens(reverse) == tokens(uncached)
    other_seed = run(model, pad(sources), 25, indices, **{**decode, "seed": 8})
    assert tokens(other_seed) != tokens(together)
    other_index = run(model, pad(sources), 25, [i + 1 for i in indices], **decode)
    assert tokens(other_index) != tokens(together)
    for hyps in together:
        assert len(hyps) == 3
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)


def test_scores_are_the_model_log_probs_of_the_samples(model, sources):
    found = run(model, pad(sources), 12, strategy="sample", temperature=2.0, top_p=0.9,
                length_penalty=0.6)
    for ids, hyps in zip(sources, found):
        h = hyps[0]
        target = h.tokens + ([EOS_ID] if h.eos else [])
        with torch.inference_mode():
            logp = model(pad([ids]), pad([[BOS_ID] + target[:-1]]))[0]
        expected = logp.gather(1, torch.tensor(target)[:, None]).sum().item()
        assert h.logprob == pytest.approx(expected)
        assert h.score == pytest.approx(h.logprob / ((5 + len(target)) / 6) ** 0.6)


def test_translator_seeds_by_line_index_across_chunks(tiny_spm):
    """`translate_file` hands lines over in chunks, each with the index of its first line:
    translating the tail on its own gives the tail of the whole, whatever the batching."""
    model = memorised_model(tiny_spm, tuple(PAIRS))
    tokenizer = Tokenizer(tiny_spm)
    decode = DecodeConfig(strategy="sample", temperature=2.0, seed=3)
    lines = ([en for en, _ in PAIRS] + UNSEEN) * 2
    whole = Translator(model, tokenizer, decode, "cpu").translate(lines)
    tail = Translator(model, tokenizer, replace(decode, batch_tokens=30), "cpu").translate(
        lines[9:], first=9)
    assert tail == whole[9:]
    assert whole[:len(UNSEEN) + len(PAIRS)] != whole[len(UNSEEN) + len(PAIRS):]  # index matters


@pytest.mark.parametrize("setting, message", [
    ("strategy=nucleus", "'decode.strategy' must be one of beam, greedy, sample"),
    ("temperature=0", "'decode.temperature' must be at least 0.001"),
    ("top_k=-1", "'decode.top_k' must be >= 0"),
    ("top_p=0", "'decode.top_p' must be in (0, 1]"),
    ("top_p=1.5", "'decode.top_p' must be in (0, 1]"),
    ("seed=-1", "'decode.seed' must be in [0, 2^63)"),
    ("engine=onnx", "'decode.engine' must be one of torch, ct2"),
    ("quantize=int4", "'decode.quantize' must be one of none, int8"),
])
def test_bad_sampling_settings_are_one_line_errors(setting, message):
    with pytest.raises(UserError) as error:
        load_config(None, [f"decode.{setting}"])
    assert message in str(error.value) and "\n" not in str(error.value)


def test_n_best_per_strategy():
    with pytest.raises(UserError, match="'decode.n_best' must be 1 with strategy greedy"):
        load_config(None, ["decode.strategy=greedy", "decode.n_best=2"])
    with pytest.raises(UserError, match=r"'decode.n_best' must be in \[1, beam_size\]"):
        load_config(None, ["decode.beam_size=2", "decode.n_best=3"])
    assert load_config(None, ["decode.strategy=sample", "decode.beam_size=1",
                              "decode.n_best=5"]).decode.n_best == 5
    assert math.isclose(load_config(None, []).decode.top_p, 1.0)
