"""Shared fixtures: a tiny real sentencepiece model, a run dir holding a tiny model
trained to memorise `PAIRS`, prepared sample data. Plain helpers are in `helpers/`.

Real components, only small: tests exercise the same tokenizer, model and command
line that users run.
"""

from __future__ import annotations

import atexit
import io
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import pytest
import sentencepiece as spm
from helpers import BYTE_PAIRS, PAIRS, ROOT, SLOT_NUMBERS, SLOTS, TINY_CONFIG

from transcli.config.loading import load_config, save_config
from transcli.data.tokenizer import TOKENIZER_FILE, Tokenizer
from transcli.model.transformer import Transformer
from transcli.model.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from transcli.rundir.checkpoints import save_weights
from transcli.rundir.layout import CONFIG_FILE, step_path

# The record of -o files transcli wrote (transcli/system/outputs.py) goes to a folder of the
# test session's own, inherited by every transcli the tests start, never the user's.
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="transcli-tests-state-")
atexit.register(shutil.rmtree, os.environ["XDG_STATE_HOME"], ignore_errors=True)


@pytest.fixture(scope="session")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 sample pairs prepared by the real `prepare` (32 train, 4 valid, 4 test)."""
    from helpers.training import prepare_sample

    return prepare_sample(tmp_path_factory.mktemp("prep"), 0, 40)


@pytest.fixture(scope="session")
def other_prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Another 40 sample pairs: a different prepared dataset."""
    from helpers.training import prepare_sample

    return prepare_sample(tmp_path_factory.mktemp("prep2"), 40, 40)


@pytest.fixture(scope="module", autouse=True)
def one_thread_per_module() -> Iterator[None]:
    """Every test module runs torch on one thread: the tiny models' ops are too small to
    split (more threads make them slower on a shared machine). A test that needs more
    sets them itself."""
    from helpers.memorised import one_torch_thread

    with one_torch_thread():
        yield


@pytest.fixture(scope="module")
def memorised(tiny_spm: Path) -> Transformer:
    """A float64 copy of the tiny model memorising PAIRS: confident choices that depend on
    the source, so a mix-up between sentences or beams changes the output while float
    noise from different batch shapes stays far below any decision."""
    import copy

    from helpers.memorised import memorised_model

    return copy.deepcopy(memorised_model(tiny_spm, tuple(PAIRS))).double()


@pytest.fixture(scope="module")
def model(memorised: Transformer) -> Transformer:
    """The memorised model under the name the search tests give it."""
    return memorised


@pytest.fixture(scope="module")
def sources(memorised_sources: list[list[int]]) -> list[list[int]]:
    return memorised_sources


@pytest.fixture(scope="module")
def memorised_sources(tiny_tokenizer: Tokenizer) -> list[list[int]]:
    """PAIRS' English sides and unseen lines, as source ids + EOS."""
    from helpers.memorised import UNSEEN

    english = [en for en, _ in PAIRS] + UNSEEN
    return [ids + [EOS_ID] for ids in tiny_tokenizer.encode(english)]


@pytest.fixture(scope="session")
def tiny_spm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 120-piece joint sentencepiece model with transcli's fixed special ids."""
    folder = tmp_path_factory.mktemp("spm")
    text = [s for pair in PAIRS for s in pair] * 4
    model = io.BytesIO()
    spm.SentencePieceTrainer.Train(
        sentence_iterator=iter(text), model_writer=model, vocab_size=120,
        character_coverage=1.0, pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
        hard_vocab_limit=False, num_threads=1, minloglevel=2)
    path = folder / TOKENIZER_FILE
    path.write_bytes(model.getvalue())
    return path


@pytest.fixture(scope="session")
def slot_spm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 160-piece one of `PAIRS` and `SLOTS` (their slots as `SLOT_NUMBERS`)."""
    text = [s for pair in PAIRS for s in pair] * 4 + [
        s.format(*SLOT_NUMBERS) for pair in SLOTS for s in pair] * 8
    model = io.BytesIO()
    spm.SentencePieceTrainer.Train(
        sentence_iterator=iter(text), model_writer=model, vocab_size=160,
        character_coverage=1.0, pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
        hard_vocab_limit=False, num_threads=1, minloglevel=2)
    path = tmp_path_factory.mktemp("slot-spm") / TOKENIZER_FILE
    path.write_bytes(model.getvalue())
    return path


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_spm: Path) -> Tokenizer:
    return Tokenizer(tiny_spm)


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory: pytest.TempPathFactory, tiny_spm: Path) -> Path:
    """A run dir whose only checkpoint (step 200) is the tiny model memorising `PAIRS`."""
    from helpers.memorised import memorised_model

    run = tmp_path_factory.mktemp("memorised") / "run"
    run.mkdir()
    save_config(load_config(TINY_CONFIG), run / CONFIG_FILE)
    (run / TOKENIZER_FILE).write_bytes(tiny_spm.read_bytes())
    save_weights(memorised_model(tiny_spm, tuple(PAIRS)), step_path(run, 200))
    return run


@pytest.fixture(scope="session")
def reverse_run(tmp_path_factory: pytest.TempPathFactory, tiny_spm: Path) -> Path:
    """A run dir of the tiny model memorising `PAIRS` the other way: Spanish to English
    (its config's data.src_lang es, data.tgt_lang en), as a user trains one."""
    from helpers.memorised import memorised_model

    run = tmp_path_factory.mktemp("reverse") / "run-es-en"
    run.mkdir()
    save_config(load_config(TINY_CONFIG, ["data.src_lang=es", "data.tgt_lang=en"]),
                run / CONFIG_FILE)
    (run / TOKENIZER_FILE).write_bytes(tiny_spm.read_bytes())
    reversed_pairs = tuple((es, en) for en, es in PAIRS)
    save_weights(memorised_model(tiny_spm, reversed_pairs), step_path(run, 200))
    return run


@pytest.fixture(scope="session")
def sample_spm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 400-piece joint sentencepiece model of data/sample's training text without byte
    fallback: the kind of tokenizer runs prepared before it have, which must keep
    working."""
    return sample_tokenizer(tmp_path_factory.mktemp("sample-spm"), 400, byte_fallback=False)


def sample_tokenizer(folder: Path, vocab_size: int, byte_fallback: bool) -> Path:
    """data/sample's training text through transcli's tokenizer trainer (under a second)."""
    from transcli.data.tokenizer import train_tokenizer

    sample = ROOT / "data" / "sample"
    train_tokenizer([sample / "train.en", sample / "train.es"], folder, vocab_size=vocab_size,
                    model_type="unigram", character_coverage=1.0, input_sentence_size=100_000,
                    seed=1, byte_fallback=byte_fallback)
    return folder / TOKENIZER_FILE


@pytest.fixture(scope="session")
def sample_run(tmp_path_factory: pytest.TempPathFactory, sample_spm: Path) -> Path:
    """A run dir (tiny config, greedy decoding) whose only checkpoint, step 200, is
    `memorised.sample_model`. Tests must not write into it: copy it first."""
    from helpers.memorised import sample_model

    run = tmp_path_factory.mktemp("sample-run") / "run"
    run.mkdir()
    cfg = load_config(TINY_CONFIG, ["decode.strategy=greedy", "decode.n_best=1"])
    save_config(cfg, run / CONFIG_FILE)
    (run / TOKENIZER_FILE).write_bytes(sample_spm.read_bytes())
    save_weights(sample_model(sample_spm), step_path(run, 200))
    return run


@pytest.fixture(scope="session")
def bytes_spm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`sample_spm` with byte fallback, as `prepare` trains it now: 400 pieces and the 256
    byte pieces."""
    return sample_tokenizer(tmp_path_factory.mktemp("bytes-spm"), 656, byte_fallback=True)


@pytest.fixture(scope="session")
def bytes_run(tmp_path_factory: pytest.TempPathFactory, bytes_spm: Path) -> Path:
    """A run dir (tiny config, greedy) whose only checkpoint, step 200, is the tiny model
    memorising PAIRS and BYTE_PAIRS through `bytes_spm`: it writes Greek, Chinese and
    emoji as byte pieces. Tests must not write into it: copy it first."""
    from helpers.memorised import memorised_model

    run = tmp_path_factory.mktemp("bytes-run") / "run"
    run.mkdir()
    cfg = load_config(TINY_CONFIG, ["decode.strategy=greedy", "decode.n_best=1"])
    save_config(cfg, run / CONFIG_FILE)
    (run / TOKENIZER_FILE).write_bytes(bytes_spm.read_bytes())
    save_weights(memorised_model(bytes_spm, tuple(PAIRS + BYTE_PAIRS)), step_path(run, 200))
    return run
