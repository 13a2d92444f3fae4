"""Loops: what counts as one (`repeats.degenerate`), `decode.no_repeat_ngram` in the torch
searches (against a search written the slow, obvious way) and in CTranslate2 (its own
`no_repeat_ngram_size`), and a looping line searched again (`decode.retry_repeats`).

The model is `memorised.sample_model`: trained a little on data/sample, it still loops
on about one line in twenty ("Me gustan los árboles los árboles los árboles.").
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from helpers.memorised import pad, sample_model, sample_pairs

from transcli.config.schema import DecodeConfig
from transcli.data.tokenizer import Tokenizer
from transcli.inference.bleu import score
from transcli.inference.repeats import (
    ban_repeats,
    char_repeats,
    collapsed,
    degenerate,
    repeats,
)
from transcli.inference.search import beam_search, greedy_search
from transcli.inference.translator import Translator, load_translator
from transcli.model.vocab import BOS_ID, EOS_ID
from transcli.rundir.run import open_run_dir

LINES = [en for en, _ in sample_pairs("test", "valid")]
GREEDY = dict(strategy="greedy", beam_size=1, max_len_b=20)


@pytest.mark.parametrize("text, count", [
    ("", 0), ("one", 1), ("no no no", 3), ("no, no, no", 2),
    ("de los detalles y de los detalles o de los detalles", 3),
    ("Me gustan los árboles los árboles los árboles.", 3),  # "los árboles" x 3
    ("a b a b a b a b", 4), ("Wait... what...", 1)])
def test_repeats_counts_copies(text, count):
    assert repeats(text) == count


def test_trigrams_count_within_a_window():
    sentence = "la economía de la zona crece y el paro baja en todo el país hoy. "
    assert repeats(sentence * 2) == 2 and repeats(sentence * 3) == 2  # 30 tokens apart
    assert repeats("de la casa y de la casa o de la casa") == 3


def test_collapsed_says_a_tandem_repeat_once():
    assert collapsed("Todavía todavía todavía no.") == "Todavía no."
    assert collapsed("de los detalles de los detalles de los detalles.") == "de los detalles."
    assert collapsed("muy bien, muy bien.") == "muy bien, muy bien."  # twice is language


def test_degenerate_compares_with_the_source():
    assert degenerate("I like trees.", "Me gustan los árboles los árboles los árboles.")
    assert not degenerate("no no no no", "no no no no")  # the source repeats as much
    assert degenerate("no no no no", "no " * 12)
    assert degenerate("Hello", "Hola 71111111")  # a loop inside a word
    assert char_repeats("jajajajaja") == 0 and char_repeats("jajajajajaja") == 6
    assert not degenerate("1000000", "1000000")


@pytest.mark.parametrize("source, translation", [
    ("...nothing!", "." * 50), ("- Great.", "- Genial." + "." * 40),
    ("I wonder…", "Me pregunto" + "." * 8), ("Wait!", "¡Espera!!!!!!!"),
    ("Stop.", "Para -.-.-.-.-.-.-.")])
def test_punctuation_and_symbols_that_loop_are_loops(source, translation):
    """As the CPU hour's model wrote subtitles: "..." grown to a line of dots."""
    assert degenerate(source, translation)
    assert score([translation], [[source]], ter=False).loops == 1
    assert not degenerate(translation, translation)  # as often as in the source: no loop
    assert not degenerate("Wait... what...", "Espera... ¿qué...?")


def test_collapsed_says_a_run_of_dots_as_an_ellipsis():
    assert collapsed("Nada" + "." * 50) == "Nada..."
    assert collapsed("Para -.-.-.-.-.-.-.") == "Para -."
    assert collapsed("Sí... claro.") == "Sí... claro."


def test_a_source_pair_said_three_times_allows_a_spanish_trigram_three_times():
    """As the CPU hour's model translated a dev.tatoeba line: a loop when only the
    source's trigrams counted."""
    source = ("Read, every day, something nobody else is reading. Think, every day, something "
              "no one else is thinking. Do, every day, something no one else would do.")
    good = ("Lee, todos los días, nadie más está leyendo. Piensa todos los días, nadie más "
            "está pensando. Haz, todos los días, nada que nadie haría.")
    assert repeats(good) == 3 and repeats(source) == 2 and repeats(source, gram=2) == 3
    assert not degenerate(source, good)
    assert degenerate(source, good + " todos los días todos los días")


def test_evaluate_scores_count_loops_against_the_reference():
    hyps = ["no no no no", "hola hola hola", "bien"]
    assert score(hyps, [["no no no no", "hola", "bien"]], ter=False).loops == 1


def slow_ban(history: list[int], n: int) -> set[int]:
    """The tokens that would complete an n-gram already in `history`, by looking."""
    if len(history) < n:
        return set()
    tail = tuple(history[len(history) - n + 1:])
    return {history[i + n - 1] for i in range(len(history) - n + 1)
            if tuple(history[i:i + n - 1]) == tail}


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_ban_repeats_bans_what_looking_finds(n):
    generator = torch.Generator().manual_seed(n)
    history = torch.randint(5, (64, 9), generator=generator)
    logp = torch.zeros(64, 7)
    ban_repeats(logp, history, n)
    for row in range(64):
        banned = {t for t in range(7) if logp[row, t] == float("-inf")}
        assert banned == slow_ban(history[row].tolist(), n)


@pytest.fixture(scope="module")
def model(sample_spm):
    return sample_model(sample_spm)


@pytest.fixture(scope="module")
def sources(sample_spm):
    return [ids + [EOS_ID] for ids in Tokenizer(sample_spm).encode(LINES[:40])]


def slow_greedy(model, source: list[int], limit: int, n: int) -> list[int]:
    """Greedy search of one sentence: the whole prefix decoded at every step, banned
    tokens found by `slow_ban`."""
    memory = model.encode(torch.tensor([source]))
    out: list[int] = []
    while len(out) < limit:
        logp = model.decode(torch.tensor([[BOS_ID] + out]), memory)[0, -1]
        for token in slow_ban(out, n):
            logp[token] = float("-inf")
        token = int(logp.argmax())
        if token == EOS_ID:
            break
        out.append(token)
    return out


@pytest.mark.parametrize("n", [2, 3])
@torch.inference_mode()
def test_greedy_blocking_gives_the_slow_search_output(model, sources, n):
    found = greedy_search(model, pad(sources), 20, no_repeat_ngram=n)
    assert [h.tokens for h in found] == [slow_greedy(model, ids, 20, n) for ids in sources]
    plain = greedy_search(model, pad(sources), 20)
    assert [h.tokens for h in found] != [h.tokens for h in plain]  # blocking did something


@torch.inference_mode()
def test_beam_blocking_leaves_no_repeated_ngram(model, sources):
    for hyps in beam_search(model, pad(sources), 4, 0.6, 20, n_best=4, no_repeat_ngram=2):
        for hyp in hyps:
            bigrams = list(zip(hyp.tokens, hyp.tokens[1:]))
            assert len(bigrams) == len(set(bigrams))
    one = beam_search(model, pad(sources), 1, 0.6, 20, no_repeat_ngram=2)
    assert [hyps[0].tokens for hyps in one] == \
        [h.tokens for h in greedy_search(model, pad(sources), 20, 0.6, no_repeat_ngram=2)]


def test_a_looping_line_is_searched_again(model, sample_spm):
    tokenizer = Tokenizer(sample_spm)
    plain = Translator(model, tokenizer, replace(DecodeConfig(), **GREEDY,
                                                  retry_repeats=False), "cpu")
    retried = Translator(model, tokenizer, replace(DecodeConfig(), **GREEDY), "cpu")
    before, after = searched(plain), retried.translate(LINES)
    looping = [i for i, (line, text) in enumerate(zip(LINES, before)) if degenerate(line, text)]
    assert len(looping) >= 5 and retried.retried == len(looping)
    assert not any(degenerate(line, text) for line, text in zip(LINES, after))
    checked = plain.translate(LINES)  # the other lines as they come out of the check
    assert [after[i] for i in range(len(LINES)) if i not in looping] == \
        [checked[i] for i in range(len(LINES)) if i not in looping]


def searched(translator: Translator) -> list[str]:
    """The best hypothesis of each of LINES as the search gives it, before the check of
    every sentence (`inference/checks.py`) repairs any."""
    _, found = translator.search_lines(LINES, range(len(LINES)))
    return [hyps[0][0] for hyps in translator.texts(found)]


@pytest.mark.slow
def test_ct2_blocks_and_retries_as_the_torch_engine(sample_run: Path, tmp_path: Path):
    """CTranslate2's no_repeat_ngram_size gives the torch engine's greedy output, and a
    looping line searched again through it comes out the same."""
    run = Path(shutil.copytree(sample_run, tmp_path / "run"))
    for sets in (["decode.no_repeat_ngram=2", "decode.retry_repeats=false"], []):
        settings = ["decode.max_len_b=20", *sets]
        torch_out = load_translator(open_run_dir(run, settings), "last", "cpu")
        ct2 = load_translator(open_run_dir(run, settings + ["decode.engine=ct2"]), "last", "cpu")
        assert searched(ct2) == searched(torch_out)  # the searches, before any repair
        assert ct2.retried == torch_out.retried
    assert torch_out.retried >= 5


def test_a_trigram_with_punctuation_is_no_loop():
    assert repeats("de vez en cuando, en el tiempo, a la hora, en el campo, en el mar") == 1
