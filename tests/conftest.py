"""Shared fixtures and helpers: a tiny real sentencepiece model, a run dir holding a
tiny model trained to memorise `PAIRS`, and running the `transcli` command itself.

Real components, only small: tests exercise the same tokenizer, model and command
line that users run.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator, Optional

import pytest
import sentencepiece as spm
import torch

from transcli.checkpoint import save_weights
from transcli.config import load_config, save_config
from transcli.rundir import CONFIG_FILE, step_path
from transcli.tokenizer import TOKENIZER_FILE, Tokenizer
from transcli.model import Transformer
from transcli.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID

ROOT = Path(__file__).resolve().parent.parent
TINY_CONFIG = ROOT / "configs" / "tiny.yaml"

# CTranslate2's int8 products on an x86 CPU without AVX512 (oneDNN's AVX2 kernels) are
# noisier: on an AVX2-only AMD EPYC its int8 export of the sample model moved each token's
# log-prob by 0.20 on average (0.016 with its MKL backend, which ran 3-5x slower there) and
# changed 1 of the 16 memorised translations; torch's int8 (fbgemm, activations kept to 7
# bits on x86) changed none. Tests hold CTranslate2's int8 to exact agreement only with AVX512.
CT2_INT8_EXACT = torch.backends.cpu.get_cpu_capability() == "AVX512"

# A few pairs written for the tests (the shipped corpus lives in data/sample).
PAIRS = [
    ("I like trees.", "Me gustan los árboles."),
    ("Where is the station?", "¿Dónde está la estación?"),
    ("What a beautiful day!", "¡Qué día tan bonito!"),
    ("The boy eats an apple.", "El niño come una manzana."),
    ("We live in a small town.", "Vivimos en un pueblo pequeño."),
    ("My sister has two cats.", "Mi hermana tiene dos gatos."),
    ("It is raining in the mountains.", "Está lloviendo en las montañas."),
    ("Tomorrow we will go to the beach.", "Mañana iremos a la playa."),
    ("Do you want some coffee?", "¿Quieres un poco de café?"),
    ("The teacher opened the window.", "La profesora abrió la ventana."),
    ("They are reading a long book.", "Están leyendo un libro largo."),
    ("I don't understand the question.", "No entiendo la pregunta."),
    ("The shop closes at eight.", "La tienda cierra a las ocho."),
    ("Our grandmother makes bread on Sundays.", "Nuestra abuela hace pan los domingos."),
    ("Please speak more slowly.", "Por favor, habla más despacio."),
    ("The dog sleeps under the table.", "El perro duerme debajo de la mesa."),
]


@pytest.fixture(scope="session")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 sample pairs prepared by the real `prepare` (32 train, 4 valid, 4 test)."""
    from training import prepare_sample

    return prepare_sample(tmp_path_factory.mktemp("prep"), 0, 40)


@pytest.fixture(scope="session")
def other_prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Another 40 sample pairs: a different prepared dataset."""
    from training import prepare_sample

    return prepare_sample(tmp_path_factory.mktemp("prep2"), 40, 40)


@pytest.fixture(scope="module")
def one_thread_per_module() -> Iterator[None]:
    """Tiny models run fastest on one thread (no OpenMP hand-offs); opt in per module."""
    from memorised import one_torch_thread

    with one_torch_thread():
        yield


@pytest.fixture(scope="module")
def memorised(tiny_spm: Path) -> Transformer:
    """A float64 copy of the tiny model memorising PAIRS: confident choices that depend on
    the source, so a mix-up between sentences or beams changes the output while float
    noise from different batch shapes stays far below any decision."""
    import copy

    from memorised import memorised_model

    return copy.deepcopy(memorised_model(tiny_spm, tuple(PAIRS))).double()


@pytest.fixture(scope="module")
def memorised_sources(tiny_tokenizer: Tokenizer) -> list[list[int]]:
    """PAIRS' English sides and unseen lines, as source ids + EOS."""
    from memorised import UNSEEN

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
def tiny_tokenizer(tiny_spm: Path) -> Tokenizer:
    return Tokenizer(tiny_spm)


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory: pytest.TempPathFactory, tiny_spm: Path) -> Path:
    """A run dir whose only checkpoint (step 200) is the tiny model memorising `PAIRS`."""
    from memorised import memorised_model

    run = tmp_path_factory.mktemp("memorised") / "run"
    run.mkdir()
    save_config(load_config(TINY_CONFIG), run / CONFIG_FILE)
    (run / TOKENIZER_FILE).write_bytes(tiny_spm.read_bytes())
    save_weights(memorised_model(tiny_spm, tuple(PAIRS)), step_path(run, 200))
    return run


@pytest.fixture(scope="session")
def sample_spm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 400-piece joint sentencepiece model of data/sample's training text, trained by
    transcli's own tokenizer trainer (under a second)."""
    from transcli.tokenizer import train_tokenizer

    folder = tmp_path_factory.mktemp("sample-spm")
    sample = ROOT / "data" / "sample"
    train_tokenizer([sample / "train.en", sample / "train.es"], folder, vocab_size=400,
                    model_type="unigram", character_coverage=1.0, input_sentence_size=100_000,
                    seed=1)
    return folder / TOKENIZER_FILE


@pytest.fixture(scope="session")
def sample_run(tmp_path_factory: pytest.TempPathFactory, sample_spm: Path) -> Path:
    """A run dir (tiny config, greedy decoding) whose only checkpoint, step 200, is
    `memorised.sample_model`. Tests must not write into it: copy it first."""
    from memorised import sample_model

    run = tmp_path_factory.mktemp("sample-run") / "run"
    run.mkdir()
    cfg = load_config(TINY_CONFIG, ["decode.strategy=greedy", "decode.n_best=1"])
    save_config(cfg, run / CONFIG_FILE)
    (run / TOKENIZER_FILE).write_bytes(sample_spm.read_bytes())
    save_weights(sample_model(sample_spm), step_path(run, 200))
    return run


def run_cli(*args: str | Path, stdin: str | bytes | None = None, text: bool = True,
            env: Optional[dict[str, str]] = None, cwd: Path = ROOT,
            timeout: float = 120) -> subprocess.CompletedProcess:
    """`python -m transcli ARGS` as a user runs it, on one torch thread (tiny models run
    fastest that way, see memorised.one_torch_thread)."""
    return subprocess.run([sys.executable, "-m", "transcli", *map(str, args)], input=stdin,
                          capture_output=True, text=text, cwd=cwd, timeout=timeout,
                          env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})})


def one_error_line(result: subprocess.CompletedProcess) -> str:
    """The CLI's contract for user errors: exit 1, one line on stderr, no traceback."""
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    error = result.stderr.strip().splitlines()
    assert len(error) == 1, result.stderr
    assert error[0].startswith("transcli: error: ")
    return error[0]
