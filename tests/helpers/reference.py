"""Decoding without a cache, the reference the searches' cached steps are held to: the
whole prefix re-run through the teacher-forced decoder (`Transformer.decode`) at every
step. `uncached()` puts it under the searches in place of `search.Decoder` (and of the
single-sentence decoder), so the same search loop runs on log-probs computed another way."""

from __future__ import annotations

import contextlib
from typing import Iterator, Optional

import pytest
import torch
from torch import Tensor

from transcli.inference import search, single
from transcli.model.transformer import Memory, Transformer


class UncachedDecoder:
    """`search.Decoder`'s protocol, each step the decoder over the whole prefix."""

    def __init__(self, model: Transformer, memory: Memory):
        self.model, self.memory = model, memory
        self.prefix: Optional[Tensor] = None

    def step(self, tokens: Tensor) -> Tensor:
        new = tokens[:, None]
        self.prefix = new if self.prefix is None else torch.cat([self.prefix, new], dim=1)
        return self.model.decode(self.prefix, self.memory)[:, -1]

    def drop(self, keep: Tensor) -> Tensor:
        index = keep.nonzero().squeeze(1)
        self.reorder(index)
        return index

    def reorder(self, index: Tensor, sentences: Optional[Tensor] = None) -> None:
        self.memory = Memory(self.memory.states.index_select(0, index),
                             self.memory.mask.index_select(0, index))
        if self.prefix is not None:
            self.prefix = self.prefix.index_select(0, index)


@contextlib.contextmanager
def uncached() -> Iterator[None]:
    """Every search in the block decodes with `UncachedDecoder`."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(search, "Decoder", UncachedDecoder)
        patch.setattr(single, "takes", lambda model, src: False)
        yield
