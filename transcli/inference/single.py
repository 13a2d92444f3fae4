"""A sentence searched alone: greedy search's decoding steps with little but their arithmetic.

What `serve` and the interactive prompt do for one user is search one sentence at a time.
A step of `Transformer.step` then costs its products of one row, plus a hundred-odd small
tensor operations and Python calls made for batches: module calls, the rows' grouping,
padding masks, the search's per-row bookkeeping in tensors. For the CPU recipe's model
these cost about as much as the products (`bench.translate_speed --batch-rows 1`).

`SingleDecoder` runs the operations of `Transformer.step` for one row on the same numbers in
the same order -- so it finds what `Transformer.step` finds, bit for bit, and a sentence
gets the translation it gets in a batch (tests/test_single.py) -- without the rest: each
layer's products looked up once per sentence (`cpu_matmul.row_linear`), no padding mask (a
sentence alone has none), no module calls. `greedy` keeps greedy search's bookkeeping in
Python numbers.
"""

from __future__ import annotations

from typing import Callable, Optional

import torch.nn.functional as F
from torch import Tensor, nn

from transcli.inference.cpu_matmul import row_linear
from transcli.model.kvcache import LayerCache, StepBuffers, attend
from transcli.model.transformer import DecoderLayer, Memory, Transformer


def takes(model: Transformer, src: Tensor) -> bool:
    """Whether a search of `src` [batch, src_len] may step `SingleDecoder`: one sentence, on
    the CPU (where it was measured), the model in eval mode (no dropout)."""
    return src.size(0) == 1 and src.device.type == "cpu" and not model.training


class SingleDecoder:
    """The decoder of one sentence, step by step: `Transformer.step` for one row."""

    def __init__(self, model: Transformer, memory: Memory):
        state = model.start_decoding(memory)
        self.model = model
        hidden = state.hidden if bool(state.hidden.any()) else None  # none without padding
        self.layers = [LayerStep(layer, cache, hidden)
                       for layer, cache in zip(model.decoder, state.layers)]
        self.buffers = StepBuffers()
        self.position = 0  # target tokens fed so far

    def step(self, token: Tensor) -> Tensor:
        """Feed the newest token ([1]); log-probs [1, V] of the next one, valid until the
        next step."""
        y = self.model.tgt_embed.step(token, self.position)
        for layer in self.layers:
            y = layer(y, self.position)
        self.position += 1
        return self.model.log_probs(self.model.dec_norm(y), self.buffers)


Product = Callable[[Tensor], Tensor]


class LayerStep:
    """`DecoderLayer.step` for one row, dropout off: its products looked up once."""

    def __init__(self, layer: DecoderLayer, cache: LayerCache, hidden: Optional[Tensor]):
        """`hidden`: `DecoderState.hidden` where the sentence has padding, else None."""
        self.heads = layer.self_attn.heads
        self.qkv, self.self_out = row_linear(layer.self_attn.qkv), row_linear(layer.self_attn.out)
        self.cross_q = row_linear(layer.cross_attn.q)
        self.cross_out = row_linear(layer.cross_attn.out)
        self.inner, self.outer = row_linear(layer.ffn.inner), row_linear(layer.ffn.outer)
        self.norms = (layer.self_attn_block.norm, layer.cross_attn_block.norm,
                      layer.ffn_block.norm)
        self.pre_norm = layer.self_attn_block.pre_norm
        self.cache = cache
        self.cross_k_t, self.cross_v = cache.cross_k_t.flatten(0, 1), cache.cross_v.flatten(0, 1)
        self.hidden = hidden

    def __call__(self, y: Tensor, position: int) -> Tensor:
        y = self.block(y, self.norms[0], lambda h: self.self_attention(h, position))
        y = self.block(y, self.norms[1], self.cross_attention)
        return self.block(y, self.norms[2], self.feed_forward)

    def block(self, x: Tensor, norm: nn.LayerNorm, f: Product) -> Tensor:
        """`Sublayer` in eval mode: norm(x + f(x)), or x + f(norm(x)) with pre_norm."""
        if self.pre_norm:
            return x + f(layer_norm(x, norm))
        return layer_norm(x + f(x), norm)

    def self_attention(self, x: Tensor, position: int) -> Tensor:
        """`SelfAttention.step`."""
        q, k, v = self.qkv(x).view(1, 3, self.heads, -1).unbind(1)
        keys_t, values = self.cache.append(k, v, position)
        return self.self_out(attend(q.reshape(self.heads, 1, -1), keys_t, values).view(1, -1))

    def cross_attention(self, x: Tensor) -> Tensor:
        """`CrossAttention.step` of a sentence with one row."""
        q = self.cross_q(x).view(self.heads, 1, -1)
        return self.cross_out(attend(q, self.cross_k_t, self.cross_v, self.hidden).view(1, -1))

    def feed_forward(self, x: Tensor) -> Tensor:
        """`FeedForward` in eval mode."""
        return self.outer(F.relu(self.inner(x)))


def layer_norm(x: Tensor, norm: nn.LayerNorm) -> Tensor:
    """`norm(x)` without a module call."""
    return F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, norm.eps)
