"""Which pieces of a translation came from which pieces of its source, read from the
encoder-decoder attention, and where in the translation a stretch of the source belongs.

`cross_attention` runs the decoder teacher-forced over a translation with every layer's
weights kept (`kept_weights`): what `explain` draws and the torch engine aligns with.

`Alignment` links each target piece to the source piece it attended to most (as
`explain` draws it) and knows the characters of every piece, so that `place` can say at
which word boundary of the translation something between two source positions goes: the
boundary with the most target pieces before it linked to source pieces before the
stretch, and after it linked to those after. On lines where the model copied a span's
placeholder, this found the model's place 1.6 times as often as the same share of the
sentence did (docs/INFERENCE.md, "Real text"); `Translator` uses it for a placeholder
the model dropped and for an emoji. Both engines give the weights (`Engine.attention`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

import torch
from torch import Tensor, nn

from transcli.inference.spans import Masked, Placement, relative_place
from transcli.model.transformer import CrossAttention, Transformer
from transcli.model.vocab import BOS_ID

SPACE = "\u2581"  # sentencepiece's mark of a space


@contextlib.contextmanager
def eval_mode(model: nn.Module) -> Iterator[None]:
    """Dropout off while decoding; the training loop's model goes back to training after."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


@contextlib.contextmanager
def kept_weights(model: Transformer) -> Iterator[list[CrossAttention]]:
    """Every decoder layer's cross-attention keeps its weights inside the block."""
    modules = [layer.cross_attn for layer in model.decoder]
    for module in modules:
        module.keep_weights = True
    try:
        yield modules
    finally:
        for module in modules:
            module.keep_weights, module.weights = False, None


@torch.inference_mode()
def cross_attention(model: Transformer, source: list[int], target: list[int]) -> Tensor:
    """[layers, heads, len(target), len(source)]: the attention of the decoder fed BOS +
    `target[:-1]` (so row j is the step that predicted `target[j]`) on the encoder
    output of `source` (ids with EOS)."""
    device = next(model.parameters()).device
    src = torch.tensor([source], device=device)
    tgt_in = torch.tensor([[BOS_ID] + target[:-1]], device=device)
    with eval_mode(model), kept_weights(model) as modules:
        model.decode_hidden(tgt_in, model.encode(src))
        return torch.stack([module.weights[0] for module in modules]).float().cpu()


def piece_spans(pieces: list[str], text: str) -> list[tuple[int, int]]:
    """Where the characters of each of `pieces` (sentencepiece's, of `text` or decoding
    to it) lie in `text`, the space a piece starts with left out: pieces are matched in
    order, their space mark as a space (the first piece's dropped, as decoding drops it);
    one that is not there as written (`<unk>`, a byte) gets an empty span where the text
    has got to."""
    spans, at = [], 0
    for index, piece in enumerate(pieces):
        surface = piece.replace(SPACE, " ")
        if index == 0 or at == 0:
            surface = surface.lstrip(" ")
        if surface and text.startswith(surface, at):
            spaces = len(surface) - len(surface.lstrip(" "))
            spans.append((at + spaces, at + len(surface)))
            at += len(surface)
        else:
            spans.append((at, at))
    return spans


@dataclass
class Alignment:
    """The links of one translation, as characters of its source and its text."""

    source: list[tuple[int, int]]  # characters of each source piece (EOS left out)
    target: list[tuple[int, int]]  # characters of each target piece
    links: list[int]  # per target piece: the source piece it attended to most

    @classmethod
    def of(cls, weights: Tensor, source: list[tuple[int, int]],
           target: list[tuple[int, int]]) -> Alignment:
        """From attention `weights` [target pieces, source pieces (+ EOS)]: each row's
        largest weight among the source's own pieces (models park attention on EOS)."""
        return cls(source, target, weights[:len(target), :len(source)].argmax(dim=1).tolist())

    def place(self, start: int, end: int, text: str, near: int) -> int:
        """The word boundary of `text` (the translation; the end of its last word, before
        final punctuation, counts as one; what came after all of the source goes after
        all of it) where source characters [start, end) belong:
        the most target pieces before it linked to source pieces ending by `start`, plus
        after it linked to source pieces starting from `end`; of equals, the nearest to
        `near`."""
        if start >= max((stop for _, stop in self.source), default=0):
            return len(text.rstrip())  # after all of the source: after all of the translation
        before = {k for k, (_, stop) in enumerate(self.source) if stop <= start}
        after = {k for k, (begin, _) in enumerate(self.source) if begin >= end}
        body = len(text.rstrip().rstrip(".!?…"))
        boundaries = [i for i in range(body + 1)
                      if i == 0 or i == body or text[i - 1].isspace()]

        def agreement(boundary: int) -> int:
            return sum(1 for (begin, stop), link in zip(self.target, self.links)
                       if stop <= boundary and link in before
                       or begin >= boundary and link in after)

        return max(boundaries, key=lambda i: (agreement(i), -abs(i - near)))


def aligned_place(alignment: Alignment) -> Placement:
    """Where a span the model did not write goes, by `alignment` (of the text the model
    read and its translation): between what came from either side of it."""
    def place(masked: Masked, translation: str, index: int) -> int:
        start, end = masked.where(index)
        return alignment.place(start, end, translation,
                               relative_place(masked, translation, index))

    return place


@dataclass
class Translated:
    """A sentence as the model read it and what it wrote."""

    masked: Masked  # its spans and where they are
    text: str  # what the model read
    source: list[int]  # its ids, EOS last
    target: list[int]  # the translation's ids
    translation: str  # their text


Attention = Callable[[list[list[int]], list[list[int]]], list[Tensor]]  # Engine.attention


def placements(attention: Attention, sp: Any, sentences: list[Optional[Translated]]
               ) -> list[Placement]:
    """Per sentence, where a span its translation lacks (dropped, or taken out) goes: by
    the attention (`aligned_place`, the weights from `attention`) where one is lacking,
    else the same share of the sentence. `sp`: the sentencepiece processor."""
    places: list[Placement] = [relative_place] * len(sentences)
    need = {j: sentence for j, sentence in enumerate(sentences)
            if sentence and sentence.target and sentence.masked.missing(sentence.translation)}
    if not need:
        return places
    weights = attention([sentence.source for sentence in need.values()],
                        [sentence.target for sentence in need.values()])
    for (j, sentence), weight in zip(need.items(), weights):
        source = piece_spans([sp.IdToPiece(i) for i in sentence.source[:-1]], sentence.text)
        target = piece_spans([sp.IdToPiece(i) for i in sentence.target], sentence.translation)
        places[j] = aligned_place(Alignment.of(weight, source, target))
    return places
