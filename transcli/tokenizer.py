"""The joint English/Spanish sentencepiece vocabulary: fixed special ids, encode, decode.

Every piece of transcli agrees on these ids, so they are fixed at training time
rather than read back from each model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import sentencepiece as spm

from transcli.errors import UserError

PAD_ID = 0
UNK_ID = 1
BOS_ID = 2
EOS_ID = 3

TOKENIZER_FILE = "spm.model"  # name of the model file inside prepared and run dirs


class Tokenizer:
    """A loaded sentencepiece model with transcli's id conventions."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_file():
            raise UserError(f"{self.path}: tokenizer model not found")
        self.sp = spm.SentencePieceProcessor()
        try:
            self.sp.Load(str(self.path))
        except (OSError, RuntimeError) as exc:
            raise UserError(f"{self.path}: not a sentencepiece model ({exc})") from None
        if (self.sp.pad_id(), self.sp.unk_id(), self.sp.bos_id(), self.sp.eos_id()) != (
                PAD_ID, UNK_ID, BOS_ID, EOS_ID):
            raise UserError(f"{self.path}: special ids are not pad=0 unk=1 bos=2 eos=3")

    @property
    def vocab_size(self) -> int:
        return self.sp.GetPieceSize()

    def encode(self, texts: list[str]) -> list[list[int]]:
        """Sub-word ids without BOS/EOS (callers add what their side needs)."""
        return self.sp.Encode(texts)

    def decode(self, ids: Iterable[list[int]]) -> list[str]:
        """Text from ids; special ids (pad/bos/eos) are dropped."""
        cleaned = [[i for i in seq if i > EOS_ID or i == UNK_ID] for seq in ids]
        return self.sp.Decode(cleaned)
