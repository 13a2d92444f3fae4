"""Byte fallback: a prepared dir's tokenizer spells characters it has no piece for as
their UTF-8 bytes, so none becomes <unk>; decoding gives them back, and broken byte
sequences cost only themselves. Tokenizers from before it (no byte pieces) still
prepare, train, resume and translate as they did."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import sentencepiece as spm
from helpers.training import fast_config, losses, prepare_sample, train_dirs

from transcli.data.encoded import load_manifest
from transcli.data.tokenizer import TOKENIZER_FILE, Tokenizer
from transcli.inference.translator import load_translator
from transcli.model.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from transcli.rundir.run import open_run_dir
from transcli.system.errors import UserError

# Characters data/sample never has: Greek, Chinese, an emoji, one with a variation
# selector, a zero-width space, a letter outside the Basic Multilingual Plane.
UNSEEN = ['The word "λόγος" means reason.', "Tokyo is called 東京 in Japanese.",
          "I love this 😀 so much ❤️.", "a\u200bb", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢"]


def byte_pieces(char: str) -> list[str]:
    return [f"<0x{byte:02X}>" for byte in char.encode("utf-8")]


def test_unseen_characters_are_spelt_in_bytes_and_come_back(prepared: Path) -> None:
    tokenizer = Tokenizer(prepared / TOKENIZER_FILE)
    manifest = load_manifest(prepared)
    assert tokenizer.byte_fallback and manifest["tokenizer"]["byte_fallback"] is True
    bytes_held = sum(tokenizer.sp.IsByte(i) for i in range(tokenizer.vocab_size))
    assert bytes_held == 256 and tokenizer.vocab_size == manifest["vocab_size"] <= 556
    seen = set((prepared / "train.en").read_text() + (prepared / "train.es").read_text())
    assert not seen & set("λόγος東京😀❤\ufe0f\u200b𝔘")
    ids = tokenizer.encode(UNSEEN)
    assert UNK_ID not in {i for seq in ids for i in seq}
    assert tokenizer.decode(ids) == UNSEEN
    for char in "λ東😀\u200b𝔘":
        pieces = tokenizer.sp.encode(f"x{char}y", out_type=str)
        spelt = byte_pieces(char)
        assert any(pieces[i:i + len(spelt)] == spelt for i in range(len(pieces)))


def test_a_long_list_in_sentencepieces_pool_and_short_ones_in_one_thread_agree(
        prepared: Path) -> None:
    """Lists of POOLED_FROM lines or more go to sentencepiece's threads, shorter ones are
    encoded and decoded in the calling thread: the same ids and text either way."""
    from transcli.data.tokenizer import POOLED_FROM

    tokenizer = Tokenizer(prepared / TOKENIZER_FILE)
    train = (prepared / "train.en").read_text(encoding="utf-8").splitlines() + UNSEEN
    lines = (train * (POOLED_FROM // len(train) + 1))[:POOLED_FROM + 3]
    pooled = tokenizer.encode(lines)
    assert pooled == [ids for line in lines for ids in tokenizer.encode([line])]
    assert tokenizer.decode(pooled) == [text for ids in pooled
                                        for text in tokenizer.decode([ids])] == lines


def test_a_broken_byte_sequence_costs_only_itself(prepared: Path) -> None:
    """A model may emit a character's bytes cut short or out of order: those bytes become
    U+FFFD, the text around them stays, and nothing raises."""
    tokenizer = Tokenizer(prepared / TOKENIZER_FILE)
    ids = tokenizer.encode(["Tokyo 東京 ok"])[0]
    tokyo = [tokenizer.sp.PieceToId(piece) for piece in byte_pieces("東")]
    start = next(i for i in range(len(ids)) if ids[i:i + 3] == tokyo)
    for broken in (ids[:start] + ids[start + 1:],  # continuation bytes without a lead
                   ids[:start + 2] + ids[start + 3:],  # cut short
                   ids[:start + 1],  # a lead byte at the very end
                   [BOS_ID] + ids[start + 1:] + [EOS_ID, PAD_ID]):
        text = tokenizer.decode([broken])[0]
        assert "\ufffd" in text
        whole = tokenizer.decode([[i for i in broken if i not in tokyo]])[0]
        assert text.replace("\ufffd", "") == whole


def test_a_vocabulary_too_small_for_the_bytes_is_named(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"data.vocab_size=300 is too small: .* 256 byte "
                                        r"pieces \(data.byte_fallback\); raise data.vocab_size"):
        prepare_sample(tmp_path, 0, 40, "data.vocab_size=300")


# The settings `prepare` trained sentencepiece with before byte fallback (tiny.yaml's
# data section): the reference an old-style tokenizer is checked against.
SETTINGS_BEFORE = dict(
    vocab_size=556, model_type="unigram", character_coverage=1.0,
    input_sentence_size=100000, shuffle_input_sentence=True, pad_id=PAD_ID, unk_id=UNK_ID,
    bos_id=BOS_ID, eos_id=EOS_ID, normalization_rule_name="identity", hard_vocab_limit=False,
    max_sentence_length=4192, num_threads=2)


@pytest.mark.slow
def test_a_tokenizer_without_byte_fallback_trains_resumes_and_translates(tmp_path: Path
                                                                        ) -> None:
    """`data.byte_fallback: false` trains the tokenizer prepare trained before (the same
    bytes as sentencepiece given the settings of then); a run on it trains, resumes
    exactly and translates, unseen characters included."""
    data = prepare_sample(tmp_path, 0, 40, "data.byte_fallback=false")
    assert not Tokenizer(data / TOKENIZER_FILE).byte_fallback
    lines = [line for lang in ("en", "es")
             for line in (data / f"train.{lang}").read_text().splitlines()]
    reference = io.BytesIO()
    spm.SentencePieceTrainer.Train(sentence_iterator=iter(lines), model_writer=reference,
                                   minloglevel=2, **SETTINGS_BEFORE)
    assert (data / TOKENIZER_FILE).read_bytes() == reference.getvalue()
    straight, split = tmp_path / "straight", tmp_path / "split"
    train_dirs(fast_config("train.max_steps=12"), data, straight)
    train_dirs(fast_config("train.max_steps=6"), data, split)
    train_dirs(fast_config("train.max_steps=12"), data, split, resume=True)
    assert losses(split) == losses(straight) and len(losses(split)) == 3
    translator = load_translator(open_run_dir(split), "last", "cpu")
    assert len(translator.translate(UNSEEN + ["I like trees."])) == len(UNSEEN) + 1
