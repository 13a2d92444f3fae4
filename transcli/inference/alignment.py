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
the model dropped and for an emoji. `span` says which stretch of the translation came
from a stretch of the source: the document layer puts an inline tag around it
(`documents.units.place_tags`, the alignments from `Translator.alignments`). Both
engines give the weights (`Engine.attention`).
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

        def agreement(boundary: int) -> int:
            return sum(1 for (begin, stop), link in zip(self.target, self.links)
                       if stop <= boundary and link in before
                       or begin >= boundary and link in after)

        return max(word_boundaries(text), key=lambda i: (agreement(i), -abs(i - near)))

    def span(self, start: int, end: int, cuts: list[int], near: tuple[int, int]
             ) -> Optional[tuple[int, int]]:
        """The stretch of the translation between two of `cuts` (increasing character
        offsets of it, where a word or a mark may start or end) that came from source
        characters [start, end), as indices (i <= j) into `cuts`: the most target pieces
        inside it linked to source pieces inside [start, end), plus outside it linked to
        source pieces outside; of equals, the nearest to `near` (indices). None when no
        piece of the translation came from them: the alignment does not say."""
        inside = [begin < end and stop > start for begin, stop in self.source]
        held = [0] * len(cuts)  # per cut: target pieces before it linked inside
        left = [0] * len(cuts)  # ... and linked outside
        for (_, stop), link in zip(self.target, self.links):
            for k, cut in enumerate(cuts):
                if stop <= cut:
                    held[k] += inside[link]
                    left[k] += not inside[link]
        outside = sum(not inside[link] for link in self.links[:len(self.target)])
        if held[-1] == 0:
            return None

        def agreement(pair: tuple[int, int]) -> tuple[int, int]:
            i, j = pair
            score = held[j] - held[i] + left[i] + outside - left[j]
            return score, -abs(i - near[0]) - abs(j - near[1])

        return max(((i, j) for i in range(len(cuts)) for j in range(i, len(cuts))),
                   key=agreement)


def joined(parts: list[tuple[Alignment, int, int]]) -> Alignment:
    """One alignment of a text and its translation from those of their lines: each
    (alignment, where its line starts in the text, where its translation starts in the
    translation)."""
    source: list[tuple[int, int]] = []
    target: list[tuple[int, int]] = []
    links: list[int] = []
    for alignment, start, at in parts:
        links += [link + len(source) for link in alignment.links[:len(alignment.target)]]
        source += [(begin + start, stop + start) for begin, stop in alignment.source]
        target += [(begin + at, stop + at) for begin, stop in alignment.target]
    return Alignment(source, target, links)


def word_boundaries(text: str) -> list[int]:
    """Where a word of `text` starts, and the end of its last word (before final
    punctuation)."""
    body = len(text.rstrip().rstrip(".!?…"))
    return [i for i in range(body + 1) if i == 0 or i == body or text[i - 1].isspace()]


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
    found = alignments(attention, sp, [(s.text, s.source, s.translation, s.target)
                                       for s in need.values()])
    for j, alignment in zip(need, found):
        if alignment is not None:
            places[j] = aligned_place(alignment)
    return places


def alignments(attention: Attention, sp: Any, pairs: list[tuple[str, list[int], str, list[int]]]
               ) -> list[Optional[Alignment]]:
    """The alignment of each (text, its ids with EOS, translation, its ids) pair, from
    the weights of one `attention` call (`Engine.attention`; `sp`: the sentencepiece
    processor); None for a pair without ids on a side."""
    todo = [pair for pair in pairs if pair[1] and pair[3]]
    weights = iter(attention([source for _, source, _, _ in todo],
                             [target for _, _, _, target in todo]) if todo else [])
    return [Alignment.of(next(weights),
                         piece_spans([sp.IdToPiece(i) for i in source[:-1]], text),
                         piece_spans([sp.IdToPiece(i) for i in target], translation))
            if source and target else None
            for text, source, translation, target in pairs]
