"""A sentence searched alone (`inference/single.py`) gets what `Transformer.step` and greedy
search's batch path give it, bit for bit: the log-probs of every step, the tokens, the
log-probability and the score."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import torch
from helpers import PAIRS
from helpers.memorised import TINY_CONFIG, memorised_model, pad

from transcli.config.loading import load_config
from transcli.inference import single
from transcli.inference.cpu_matmul import ONEDNN, cpu_linears
from transcli.inference.quantize import quantize_int8
from transcli.inference.search import greedy_search
from transcli.inference.single import SingleDecoder
from transcli.model.transformer import Transformer
from transcli.model.vocab import BOS_ID, EOS_ID

VARIANTS = ["torch", pytest.param("onednn", marks=pytest.mark.skipif(
    not ONEDNN, reason="this torch build has no oneDNN")), "blas", "int8", "pre_norm"]


@pytest.fixture(scope="module", params=VARIANTS)
def variant(request, tiny_spm) -> Transformer:
    """The memorised model with each kind of products the torch engine runs, and a
    pre-norm model (untrained: its steps are compared, not its translations)."""
    model = copy.deepcopy(memorised_model(tiny_spm, tuple(PAIRS)))
    if request.param == "onednn":
        return cpu_linears(model, True)
    if request.param == "blas":
        return cpu_linears(model, False)
    if request.param == "int8":
        return quantize_int8(model)
    if request.param == "pre_norm":
        torch.manual_seed(0)
        cfg = replace(load_config(TINY_CONFIG).model, pre_norm=True)
        return Transformer(cfg, model.vocab_size).eval()
    return model


def test_its_steps_give_the_model_s_log_probs(variant, sources):
    """Fed the same tokens, over more positions than the cache's first chunk, with and
    without padding in the source."""
    torch.manual_seed(0)
    tokens = [BOS_ID, *torch.randint(4, variant.vocab_size, (40,)).tolist()]
    padded = pad([sources[0], max(sources, key=len) + [EOS_ID]])[:1]
    for src in (pad([sources[0]]), padded):
        with torch.inference_mode():
            memory = variant.encode(src, packed=True)
            state, alone = variant.start_decoding(memory), SingleDecoder(variant, memory)
            for token in tokens:
                fed = torch.tensor([token])
                expected = variant.step(fed, state).clone()
                assert torch.equal(alone.step(fed), expected)


@pytest.mark.parametrize("alpha, reward, bound, limit", [(0.0, 0.0, 0.0, 30), (0.6, 0.3, 1.2, 30),
                                                         (0.6, 0.0, 0.0, 3)])
def test_greedy_search_finds_what_the_batch_path_finds(variant, sources, monkeypatch, alpha,
                                                       reward, bound, limit):
    """Each sentence alone, stepped by `SingleDecoder` and by the batch path's decoder: the
    same hypothesis, its numbers equal (a limit of 3 stops sentences before their EOS)."""
    def search(src: torch.Tensor) -> list:
        with torch.inference_mode():
            return greedy_search(variant, src, limit, alpha, reward, bound)

    alone = [search(pad([ids]))[0] for ids in sources]
    monkeypatch.setattr(single, "takes", lambda model, src: False)
    batch_path = [search(pad([ids]))[0] for ids in sources]
    assert alone == batch_path
    assert limit > 3 or not any(h.eos for h in alone)


def test_it_takes_one_sentence_on_the_cpu_in_eval_mode(memorised, sources):
    model = memorised
    assert single.takes(model, pad(sources[:1]))
    assert not single.takes(model, pad(sources[:2]))
    model.train()
    try:
        assert not single.takes(model, pad(sources[:1]))
    finally:
        model.eval()


def test_a_sentence_ends_at_its_eos(memorised, sources):
    assert single.takes(memorised, pad(sources[:1]))
    with torch.inference_mode():
        found = greedy_search(memorised, pad(sources[:1]), 30)[0]
    assert found.eos and EOS_ID not in found.tokens and found.logprob < 0
