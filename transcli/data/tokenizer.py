"""The joint English/Spanish sentencepiece vocabulary: fixed special ids, encode, decode.

The special ids (`vocab.py`) are fixed at training time rather than read back
from each model, so every piece of transcli agrees on them.
"""

from __future__ import annotations

import functools
import hashlib
import io
import re
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import sentencepiece as spm

from transcli.model.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from transcli.system.errors import UserError
from transcli.system.signals import wait_in_thread
from transcli.system.streams import check_not_closed
from transcli.system.text import count_lines

TOKENIZER_FILE = "spm.model"  # name of the model file inside prepared and run dirs
VOCAB_FILE = "spm.vocab"  # human-readable piece list written beside it

# The trainer's result depends on its thread count (each thread sums its own share
# of the EM statistics), so it is fixed: the same corpus gives the same model bytes
# on any machine. Encoding does not depend on it (see `_threads`).
TRAIN_THREADS = 2
# sentencepiece starts a pool of threads for every list it encodes or decodes; for a few
# lines (a served request, an interactive line) starting it costs more than the work.
POOLED_FROM = 1024  # lines


def _threads(items: int) -> int:
    """sentencepiece's num_threads for a list of `items`: one below POOLED_FROM, else its
    default (every core)."""
    return 1 if items < POOLED_FROM else -1


class Tokenizer:
    """A loaded sentencepiece model with transcli's id conventions.

    The model file is read once, in Python: its bytes are loaded into sentencepiece and
    kept, so a run dir gets the same bytes copied and recorded by hash (`sha256`)
    without the file being opened again."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        check_not_closed(self.path)
        if not self.path.is_file():
            raise UserError(f"{self.path}: tokenizer model not found")
        try:
            self.model_bytes = self.path.read_bytes()
        except OSError as exc:
            raise UserError(f"{self.path}: cannot read the tokenizer model "
                            f"({exc.strerror})") from None
        self.sp = spm.SentencePieceProcessor()
        try:
            self.sp.LoadFromSerializedProto(self.model_bytes)
        except (OSError, RuntimeError) as exc:
            raise UserError(f"{self.path}: not a sentencepiece model ({exc})") from None
        if (self.sp.pad_id(), self.sp.unk_id(), self.sp.bos_id(), self.sp.eos_id()) != (
                PAD_ID, UNK_ID, BOS_ID, EOS_ID):
            raise UserError(f"{self.path}: special ids are not pad=0 unk=1 bos=2 eos=3")

    @functools.cached_property
    def sha256(self) -> str:
        """The model file's SHA-256: a run records it, and refuses a tokenizer swapped since."""
        return hashlib.sha256(self.model_bytes).hexdigest()

    @property
    def vocab_size(self) -> int:
        return self.sp.GetPieceSize()

    def encode(self, texts: list[str]) -> list[list[int]]:
        """Sub-word ids without BOS/EOS (callers add what their side needs)."""
        return self.sp.Encode(texts, num_threads=_threads(len(texts)))

    @functools.cached_property
    def byte_fallback(self) -> bool:
        """Whether characters without a piece are spelt as byte pieces (`<0xE6>`...), so
        that encoding never gives `<unk>`; False for models trained before it was on."""
        return any(self.sp.IsByte(i) for i in range(self.vocab_size))

    def decode(self, ids: Iterable[list[int]]) -> list[str]:
        """Text from ids; special ids (pad/bos/eos) are dropped. Byte pieces become the
        characters they spell; bytes that spell none (a sequence the model cut short or
        began in the middle) become U+FFFD each, and the text around them is kept."""
        cleaned = [[i for i in seq if i > EOS_ID or i == UNK_ID] for seq in ids]
        return self.sp.Decode(cleaned, num_threads=_threads(len(cleaned)))


def train_tokenizer(
    files: Sequence[Path], out_dir: Path, *, vocab_size: int, model_type: str,
    character_coverage: float, input_sentence_size: int, seed: int, byte_fallback: bool,
    max_sentence_length: int = 4192,
) -> dict[str, Any]:
    """Train the joint sentencepiece model on every line of `files`; write
    `spm.model` and `spm.vocab` into `out_dir`; return the settings for the manifest.

    Reproducible by construction: sentencepiece's own sampling is not seeded
    reliably, so when the files hold more than `input_sentence_size` lines we pick
    that many here (seeded, in file order); sentences arrive through an iterator
    and the model through a buffer, so no temp path ends up inside the model.
    Text is already NFC and whitespace-normalised, so the model normalises
    nothing (`identity`) and decode(encode(s)) == s for every covered character; with
    `byte_fallback` for every character (the others are spelt as UTF-8 bytes, whose 256
    pieces count within `vocab_size`).
    """
    total = sum(count_lines(path) or 0 for path in files)
    keep = _sample_mask(total, input_sentence_size, seed)
    settings: dict[str, Any] = dict(
        vocab_size=vocab_size, model_type=model_type, character_coverage=character_coverage,
        input_sentence_size=input_sentence_size, shuffle_input_sentence=True,
        pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
        normalization_rule_name="identity", hard_vocab_limit=False,
        max_sentence_length=max_sentence_length, num_threads=TRAIN_THREADS)
    if byte_fallback:  # only then: a false one given would be written into the model
        settings["byte_fallback"] = True
    model = io.BytesIO()
    try:
        # In a thread, so that Ctrl-C stops prepare now, not when training ends.
        wait_in_thread(lambda: spm.SentencePieceTrainer.Train(
            sentence_iterator=_lines(files, keep), model_writer=model, minloglevel=2,
            **settings), name="sentencepiece")
    except RuntimeError as exc:  # e.g. vocab_size too small for the corpus' characters
        raise UserError(_training_error(str(exc), vocab_size, total, byte_fallback)) from None
    (out_dir / TOKENIZER_FILE).write_bytes(model.getvalue())
    write_vocab(out_dir / TOKENIZER_FILE, out_dir / VOCAB_FILE)
    sampled = int(keep.sum()) if keep is not None else total
    return {**settings, "byte_fallback": byte_fallback, "sentences": total, "sampled": sampled}


def _training_error(message: str, vocab_size: int, sentences: int, byte_fallback: bool) -> str:
    """sentencepiece's check failures, as what to change in the config."""
    chars = re.search(r"smaller than required_chars\. \d+ vs (\d+)", message)
    if chars:
        needs = ("its characters, the special tokens and 256 byte pieces (data.byte_fallback)"
                 if byte_fallback else "its characters and the special tokens")
        return (f"data.vocab_size={vocab_size} is too small: the training text needs "
                f"{chars.group(1)} pieces for {needs}; "
                f"raise data.vocab_size or lower data.character_coverage")
    reason = " ".join(message.split("] ", 1)[-1].split()) or "unknown error"
    return (f"sentencepiece training failed on {sentences} sentences: {reason} (the settings "
            f"it was given: data.vocab_size, data.character_coverage, "
            f"data.input_sentence_size, data.tokenizer)")


def _sample_mask(total: int, size: int, seed: int) -> np.ndarray | None:
    """None when every line is used, else a boolean mask choosing `size` lines."""
    if total <= size:
        return None
    mask = np.zeros(total, dtype=bool)
    mask[np.random.default_rng(seed).choice(total, size=size, replace=False)] = True
    return mask


def _lines(files: Sequence[Path], keep: np.ndarray | None) -> Iterator[str]:
    index = 0
    for path in files:
        with open(path, encoding="utf-8", newline="\n") as handle:
            for line in handle:
                if keep is None or keep[index]:
                    yield line.rstrip("\n")
                index += 1


def write_vocab(model_path: Path, vocab_path: Path) -> None:
    """`piece<TAB>score` per line, as sentencepiece's own .vocab file."""
    sp = spm.SentencePieceProcessor(model_file=str(model_path))
    lines = [f"{sp.IdToPiece(i)}\t{sp.GetScore(i):.6g}\n" for i in range(sp.GetPieceSize())]
    vocab_path.write_text("".join(lines), encoding="utf-8")
