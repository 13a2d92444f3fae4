"""Constrained beam search (transcli/inference/constrained.py) and glossaries applied by it.

Pinned against independent references: plain beam search where there is no constraint,
an exhaustive search over every short output of a model restricted to a few tokens, and
the full forward pass for the scores; then the glossary's path through `Translator` on
the memorised tiny model.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import math
from dataclasses import replace

import pytest
import torch
from helpers import PAIRS, TINY_CONFIG
from helpers.memorised import pad
from helpers.reference import uncached

from transcli.config.loading import load_config
from transcli.config.schema import DecodeConfig
from transcli.data.tokenizer import Tokenizer
from transcli.inference.constrained import (
    Candidate,
    Progress,
    Terms,
    allocated,
    constrained_beam_search,
    form_alternatives,
    joining_tokens,
)
from transcli.inference.glossary import Entry, Glossary
from transcli.inference.search import beam_search
from transcli.inference.translator import Translator
from transcli.model.transformer import Transformer
from transcli.model.vocab import BOS_ID, EOS_ID
from transcli.system.errors import UserError

NO_JOINING: frozenset[int] = frozenset()


def terms(*constraints: tuple[tuple[int, ...], ...], joining=NO_JOINING) -> Terms:
    return Terms(list(constraints), joining)


# ----------------------------------------------------------------------------- bookkeeping


def test_progress_follows_forms_token_by_token():
    rules = terms(((5,),), ((7, 8), (9,)), joining=frozenset({3}))
    p = Progress()
    assert p.wanted(rules.constraints) == {5, 7, 9}
    p = p.after(7, rules)  # a form under way: only its next token advances it
    assert (p.matching, p.depth, p.bank) == (((1, 0),), 1, 1)
    assert p.wanted(rules.constraints) == {8}
    assert p.after(2, rules) == Progress()  # abandoned
    assert p.after(5, rules).met == {0}  # abandoned for another term, which it meets
    p = p.after(8, rules)
    assert (p.met, p.bank, p.complete(rules.constraints)) == ({1}, 2, False)
    assert p.wanted(rules.constraints) == {5}
    done = p.after(5, rules)
    assert done.complete(rules.constraints) and done.bank == 3 and not done.wanted(
        rules.constraints)
    # A form met and then continued by a piece of the same word is not the term.
    assert done.after(3, rules) == Progress(frozenset({1}), (), 0, 2)
    assert done.after(4, rules) == Progress(frozenset({0, 1}), (), 0, 3)


def candidate(score: float, bank: int, token: int = 4) -> Candidate:
    return Candidate(score, 0, token, Progress(tokens_met=bank))


def test_the_best_of_each_bank_is_kept_then_the_rest_by_score():
    a, b, c, d, e = (candidate(-1.0, 0), candidate(-2.0, 0), candidate(-9.0, 2),
                     candidate(-3.0, 1), candidate(-8.0, 2))
    assert allocated([a, b, c, d, e]) == [e, d, a, b, c]


def test_forms_encode_with_a_capital_variant_no_longer_than_themselves(tiny_tokenizer):
    def encode(text: str) -> list[int]:
        return tiny_tokenizer.encode([text])[0]

    forms = form_alternatives(["manzana", "manzanas"], encode)
    assert tuple(encode("manzana")) in forms and tuple(encode("manzanas")) in forms
    capital = tuple(encode("Manzana"))
    assert (capital in forms) == (len(capital) <= len(encode("manzana")))
    assert form_alternatives([""], encode) == ()


def test_joining_tokens_are_pieces_inside_a_word():
    assert joining_tokens(["<pad>", "\u2581casa", "s", ",", "\u2581", "ción"]) == {2, 5}


# ----------------------------------------------------------------------------- the search


def constrained(model: Transformer, src: torch.Tensor, rules: list[Terms], beam: int, max_len,
                alpha: float = 0.6, n_best: int = 1, cached: bool = True,
                reward: float = 0.0, bound: float = 0.0):
    with torch.inference_mode(), contextlib.nullcontext() if cached else uncached():
        return constrained_beam_search(model, src, rules, beam, alpha, max_len, n_best,
                                       reward, bound)


@pytest.mark.parametrize("beam, n_best, alpha, reward, bound", [
    (1, 1, 0.6, 0.0, 0.0), (2, 2, 0.0, 0.0, 0.0), (4, 3, 0.6, 0.0, 0.0),
    (4, 1, 0.6, 0.5, 1.5)])
def test_without_constraints_it_is_beam_search(model, sources, beam, n_best, alpha, reward,
                                               bound):
    src = pad(sources)
    with torch.inference_mode():
        expected = beam_search(model, src, beam, alpha, 20, n_best, reward, bound)
    found = constrained(model, src, [terms() for _ in sources], beam, 20, alpha, n_best,
                        reward=reward, bound=bound)
    assert [[h.tokens for h in hyps] for hyps in found] == \
        [[h.tokens for h in hyps] for hyps in expected]
    for x, y in zip(found, expected):
        assert [h.score for h in x] == pytest.approx([h.score for h in y], abs=1e-9)
        assert [h.eos for h in x] == [h.eos for h in y]


class FewTokens(Transformer):
    """The real model with its output restricted to tokens 4, 5, 6 and EOS (renormalised):
    few enough outputs to search them all."""

    allowed = [4, 5, 6, EOS_ID]

    def log_probs(self, hidden: torch.Tensor, buffers=None) -> torch.Tensor:
        out = super().log_probs(hidden, buffers)
        kept = torch.full_like(out, -math.inf)
        kept[..., self.allowed] = out[..., self.allowed]
        return kept.log_softmax(-1)


def teacher_forced(model: Transformer, source: list[int], target: list[int]) -> float:
    with torch.inference_mode():
        logp = model(pad([source]), pad([[BOS_ID] + target[:-1]]))[0]
    return logp.gather(1, torch.tensor(target)[:, None]).sum().item()


def holds(tokens: list[int], form: tuple[int, ...]) -> bool:
    return any(tuple(tokens[i:i + len(form)]) == form for i in range(len(tokens)))


@pytest.mark.parametrize("constraints", [
    [((5, 6),)],
    [((5, 6), (6, 5)), ((4,),)],
])
def test_a_wide_beam_finds_the_best_output_that_holds_every_term(tiny_tokenizer, constraints):
    """Every output of up to 4 tokens and EOS over {4, 5, 6}, scored by the full forward
    pass (alpha 0: the log-prob): the best that holds each constraint (one of its forms
    back to back) is what a beam as wide as all of them finds; no hypothesis that ended in
    a narrow beam lacks a term."""
    torch.manual_seed(3)
    model = FewTokens(load_config(TINY_CONFIG).model, tiny_tokenizer.vocab_size).eval()
    source = [7, 8, 9, EOS_ID]
    limit = 5
    best = max((teacher_forced(model, source, list(body) + [EOS_ID]), list(body))
               for n in range(limit) for body in itertools.product([4, 5, 6], repeat=n)
               if all(any(holds(list(body), form) for form in forms) for forms in constraints))
    rules = [terms(*constraints)]
    # As wide as every candidate of the last step (4 per hypothesis of 4 tokens), so that
    # no end of sentence there is crowded out.
    wide = constrained(model, pad([source]), rules, 4 * 3 ** (limit - 1), limit, alpha=0.0)[0][0]
    assert wide.eos and wide.tokens == best[1]
    assert wide.logprob == pytest.approx(best[0], abs=1e-5)
    narrow = constrained(model, pad([source]), rules, 3, limit, alpha=0.0, n_best=3)[0]
    for hyp in narrow:
        assert not hyp.eos or all(any(holds(hyp.tokens, form) for form in forms)
                                  for forms in constraints)


def test_batched_cached_and_alone_uncached_agree(model, sources):
    """A sentence's result depends on nothing else in its batch, and the decoder cache
    changes nothing; scores are the full forward pass's."""
    rules = [terms(((60,),)), terms(), terms(((61, 62),), ((63,),)), terms(((64,),))]
    src = sources[:4]
    together = constrained(model, pad(src), rules, 3, 20, n_best=2)
    for i, (ids, rule) in enumerate(zip(src, rules)):
        alone = constrained(model, pad([ids]), [rule], 3, 20, n_best=2, cached=False)[0]
        assert [h.tokens for h in alone] == [h.tokens for h in together[i]]
        for h in together[i]:
            target = h.tokens + [EOS_ID] * h.eos
            assert h.logprob == pytest.approx(teacher_forced(model, ids, target), abs=1e-4)
            if h.eos:
                assert all(any(holds(h.tokens, form) for form in forms)
                           for forms in rule.constraints)


def test_a_term_twice_is_written_twice_though_repeats_are_banned(model, sources):
    with torch.inference_mode():
        found = constrained_beam_search(model, pad(sources[:1]), [terms(((60,),), ((60,),))],
                                        3, 0.6, 20, no_repeat_ngram=1)[0][0]
    assert found.tokens.count(60) == 2
    assert len(set(found.tokens) - {60}) == len(found.tokens) - 2  # nothing else repeats


def test_a_term_longer_than_the_limit_leaves_an_unfinished_hypothesis(model, sources):
    found = constrained(model, pad(sources[:1]), [terms(((60, 61, 62, 63),))], 2, 3)[0]
    assert found and not found[0].eos and len(found[0].tokens) == 3


# ----------------------------------------------------------------------------- glossaries


def translator(memorised_run_model, spm, glossary, **decode) -> Translator:
    return Translator(memorised_run_model, Tokenizer(spm), replace(DecodeConfig(), **decode),
                      "cpu", glossary=glossary)


@pytest.fixture(scope="module")
def float_model(memorised: Transformer) -> Transformer:
    """The memorised model in float32, as translate runs it (a copy: `memorised` is
    shared)."""
    return copy.deepcopy(memorised).float()


GLOSSARY = Glossary([Entry("trees", ("plantas",)), Entry("apple", ("pera", "peras"))])


@pytest.mark.parametrize("strategy", ["beam", "greedy"])
def test_a_glossary_term_is_in_the_translation_once_and_other_lines_are_untouched(
        float_model, tiny_spm, strategy):
    lines = [en for en, _ in PAIRS]
    plain = translator(float_model, tiny_spm, None, strategy=strategy).translate(lines)
    out = translator(float_model, tiny_spm, GLOSSARY, strategy=strategy).translate(lines)
    for line, before, after in zip(lines, plain, out):
        if "trees" in line:
            assert after.count("plantas") == 1 and "árboles" not in after, after
        elif "apple" in line:
            assert after.count("pera") == 1, after
        else:
            assert after == before  # byte-equal


def test_an_all_caps_line_gets_its_term_in_capitals(float_model, tiny_spm):
    out = translator(float_model, tiny_spm, GLOSSARY).translate(["I LIKE TREES."])[0]
    assert "PLANTAS" in out and out == out.upper()


def test_n_best_lists_hold_the_term_in_every_hypothesis(float_model, tiny_spm):
    found = translator(float_model, tiny_spm, GLOSSARY, n_best=3).translate_nbest(
        ["I like trees."])[0]
    assert len(found) == 3 and all("plantas" in text for text, _ in found)


@pytest.mark.parametrize("settings, problem", [
    (["decode.glossary_method=constrain", "decode.engine=ct2"], "torch engine"),
    (["decode.glossary_method=constrain", "decode.strategy=sample"], "greedy or beam"),
    (["decode.glossary_method=forced"], "must be one of auto, constrain, placeholder"),
])
def test_constrained_search_where_there_is_none_is_refused(settings, problem):
    with pytest.raises(UserError, match=problem):
        load_config(TINY_CONFIG, settings)


def test_auto_constrains_where_the_torch_engine_searches(float_model, tiny_spm):
    from transcli.inference.glossary import method

    assert method(DecodeConfig()) == "constrain"
    assert method(DecodeConfig(engine="ct2")) == "placeholder"
    assert method(DecodeConfig(strategy="sample")) == "placeholder"
    sampled = translator(float_model, tiny_spm, GLOSSARY, strategy="sample")
    assert "plantas" in sampled.translate(["I like trees."])[0]


@pytest.mark.slow
def test_translate_and_explain_constrain_by_default(run_dir, tmp_path):
    from helpers.cli import run_cli

    terms = tmp_path / "terms.tsv"
    terms.write_text("trees\tplantas\n", encoding="utf-8")
    result = run_cli("translate", "-m", run_dir, "--checkpoint", "last", "--glossary", terms,
                     stdin="I like trees.\nWhere is the station?\n")
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.splitlines()
    assert "plantas" in first and second == "¿Dónde está la estación?"
    result = run_cli("explain", "-m", run_dir, "--checkpoint", "last", "--glossary", terms,
                     "--out", tmp_path / "pictures", "I like trees.")
    assert result.returncode == 0 and "plantas" in result.stdout, result.stderr


def test_a_form_the_vocabulary_cannot_spell_goes_back_by_its_placeholder(float_model, tiny_spm):
    sp = Tokenizer(tiny_spm).sp
    assert sp.PieceToId("駅") == sp.unk_id()  # not in the tiny vocabulary
    glossary = Glossary([Entry("trees", ("東京駅",)), Entry("apple", ("pera",))])
    out = translator(float_model, tiny_spm, glossary).translate(
        ["I like trees.", "The boy eats an apple."])
    assert out[0].count("東京駅") == 1 and "pera" in out[1]


def test_each_step_s_log_prob_sums_to_the_hypothesis_log_prob(model, sources):
    rules = [terms(((60,),)), terms(((61, 62),), ((63,),))]
    for ids, hyps in zip(sources, constrained(model, pad(sources[:2]), rules, 3, 20, n_best=2)):
        for h in hyps:
            target = h.tokens + [EOS_ID] * h.eos
            assert len(h.steps) == len(target)
            assert sum(h.steps) == pytest.approx(h.logprob, abs=1e-9)
            assert sum(h.steps) == pytest.approx(teacher_forced(model, ids, target), abs=1e-4)
