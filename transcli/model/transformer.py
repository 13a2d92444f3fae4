"""The Transformer of Vaswani et al. (2017), "Attention Is All You Need".

Reading order follows the paper's section 3: embeddings scaled by sqrt(d_model)
plus sinusoidal positions (3.4, 3.5), multi-head scaled dot-product attention
(3.2), the position-wise feed-forward network (3.3), residual + LayerNorm around
every sub-layer (3.1), encoder and decoder stacks, and the final linear +
log-softmax. For decoding, `encode` runs once per batch and `step` feeds one new
token per sequence, reusing cached keys/values (`DecoderState`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from transcli.config.schema import ModelConfig
from transcli.model.dropout import Dropout
from transcli.model.kvcache import DecoderState, LayerCache, StepBuffers, attend
from transcli.model.vocab import PAD_ID


def sinusoidal_table(max_positions: int, d_model: int) -> Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(same)."""
    position = torch.arange(max_positions, dtype=torch.float32).unsqueeze(1)
    inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32)
                         * (-math.log(10000.0) / d_model))
    table = torch.zeros(max_positions, d_model)
    table[:, 0::2] = torch.sin(position * inv_freq)
    table[:, 1::2] = torch.cos(position * inv_freq)
    return table


class Embedding(nn.Module):
    """Token embedding scaled by sqrt(d_model), plus the positional encoding, then dropout."""

    def __init__(self, table: nn.Embedding, positions: Tensor, dropout: float):
        super().__init__()
        self.table = table
        self.scale = math.sqrt(table.embedding_dim)
        self.register_buffer("positions", positions, persistent=False)
        self.dropout = Dropout(dropout)

    def forward(self, ids: Tensor, offset: int = 0) -> Tensor:
        length = ids.size(1)
        if offset + length > self.positions.size(0):
            raise ValueError(f"sequence of {offset + length} tokens exceeds max_positions="
                             f"{self.positions.size(0)}")
        x = self.table(ids) * self.scale + self.positions[offset:offset + length]
        return self.dropout(x)

    def step(self, tokens: Tensor, position: int) -> Tensor:
        """Each row's newest token, [rows], at `position` -> [rows, d_model]."""
        if position >= self.positions.size(0):
            raise ValueError(f"sequence of {position + 1} tokens exceeds max_positions="
                             f"{self.positions.size(0)}")
        return self.dropout(self.table(tokens) * self.scale + self.positions[position])


def split_heads(x: Tensor, heads: int) -> Tensor:
    """[batch, time, d_model] -> [batch, heads, time, d_k]."""
    batch, time, d_model = x.shape
    return x.view(batch, time, heads, d_model // heads).transpose(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    """[batch, heads, time, d_k] -> [batch, time, d_model]."""
    batch, heads, time, d_k = x.shape
    return x.transpose(1, 2).reshape(batch, time, heads * d_k)


@dataclass
class Packing:
    """Where a padded batch's real tokens lie, so that the position-wise layers
    (projections, feed-forward, LayerNorm) run on those tokens only, [tokens, d], and
    only attention sees the padded [batch, time, d] layout. Decoding uses it: its token-
    budget batches mix sentence lengths, so much of a padded batch is padding."""

    index: Tensor  # [tokens]: the real tokens' positions in the flattened [batch * time]
    batch: int
    time: int

    @classmethod
    def of(cls, mask: Tensor) -> Packing:
        """`mask` [batch, time], True at real tokens."""
        return cls(mask.reshape(-1).nonzero().squeeze(1), mask.size(0), mask.size(1))

    def pack(self, x: Tensor) -> Tensor:
        """[batch, time, d] -> [tokens, d]."""
        return x.reshape(-1, x.size(-1)).index_select(0, self.index)

    def pad(self, x: Tensor) -> Tensor:
        """[tokens, d] -> [batch, time, d], zeros at the padding."""
        out = x.new_zeros(self.batch * self.time, x.size(-1))
        return out.index_copy_(0, self.index, x).view(self.batch, self.time, -1)


# The CPU attention kernels torch may pick from, in order, with autograd on (True) and
# off (False); the math kernel also covers what the flash one cannot run (dropout).
CPU_ATTENTION = {True: [SDPBackend.MATH],
                 False: [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]}
# Elements of Q from which bf16 training on the CPU takes `low_precision_attention`: each
# new shape of a bf16 product costs about 0.6 ms of kernel set-up (six products a call,
# forward and backward), which attention over fewer than about 1,500 tokens of 320 does
# not win back.
LOW_PRECISION_MIN = 1 << 19


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], causal: bool,
              dropout: float) -> Tensor:
    """softmax(Q K^T / sqrt(d_k)) V per head (paper 3.2.1), masked where `mask` is False.

    On the CPU, training keeps the plain ("math") kernel, chosen with
    `bench/train_speed.py` (torch's CPU flash kernel has no dropout, and is slower with
    autograd at training's lengths), or for large bf16 inputs without dropout
    `low_precision_attention`;
    without autograd (translation, validation) the flash kernel runs, faster there at
    most lengths (`bench/attention_speed.py`).
    """
    if q.device.type != "cpu":
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout,
                                              is_causal=causal)
    grad = torch.is_grad_enabled()
    if grad and not dropout and q.dtype == torch.bfloat16 and q.numel() >= LOW_PRECISION_MIN:
        return low_precision_attention(q, k, v, mask, causal)
    with sdpa_kernel(CPU_ATTENTION[grad]):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout,
                                              is_causal=causal)


def low_precision_attention(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor],
                            causal: bool) -> Tensor:
    """`attention` written out in q's dtype (bf16 training on the CPU): torch's math
    kernel computes bf16 attention in float32, about twice the time of this, forward and
    backward (`bench.train_speed --profile`). The scores are rounded to bf16 as the
    projections that feed them are; the softmax accumulates in float32 and its output
    is rounded for the product with V. A masked score is the dtype's lowest, not -inf,
    so a row with every key masked is uniform instead of NaN."""
    scores = (q * q.size(-1) ** -0.5) @ k.transpose(-2, -1)
    lowest = torch.finfo(scores.dtype).min
    if mask is not None:
        scores = scores.masked_fill_(~mask, lowest)
    if causal:
        later = torch.ones(scores.shape[-2:], dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill_(later, lowest)
    return torch.softmax(scores, dim=-1).to(v.dtype) @ v


class SelfAttention(nn.Module):
    """Multi-head self-attention; Q, K and V come from one fused projection."""

    def __init__(self, d_model: int, heads: int, attn_dropout: float):
        super().__init__()
        self.heads = heads
        self.attn_dropout = attn_dropout
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: Tensor, mask: Optional[Tensor] = None, causal: bool = False,
                packing: Optional[Packing] = None) -> Tensor:
        """x: [batch, time, d_model], or [tokens, d_model] with the `packing` it came from."""
        qkv = self.qkv(x)
        if packing is not None:
            qkv = packing.pad(qkv)
        q, k, v = (split_heads(t, self.heads) for t in qkv.chunk(3, dim=-1))
        dropout = self.attn_dropout if self.training else 0.0
        y = merge_heads(attention(q, k, v, mask, causal, dropout))
        return self.out(y if packing is None else packing.pack(y))

    def step(self, x: Tensor, cache: LayerCache, position: int) -> Tensor:
        """One new position per row, x [rows, d_model]: attend to it and every earlier
        one (cached). Heads are batch entries of the products, [rows * heads, ...]."""
        rows = x.size(0)
        q, k, v = self.qkv(x).view(rows, 3, self.heads, -1).unbind(1)  # [rows, heads, d_k]
        keys_t, values = cache.append(k, v, position)
        y = attend(q.reshape(rows * self.heads, 1, -1), keys_t, values)
        return self.out(y.view(rows, -1))


def attention_weights(q: Tensor, k: Tensor, mask: Optional[Tensor]) -> Tensor:
    """softmax(Q K^T / sqrt(d_k)) per head, written out: [batch, heads, q_len, k_len]
    (`attention` gets the same inside the fused kernel, never materialised)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores.float(), dim=-1)


class CrossAttention(nn.Module):
    """Encoder-decoder attention: queries from the decoder, keys/values from memory.

    With `keep_weights` set (only `transcli.inference.attention` sets it), each call also stores
    the attention weights in `weights`, computed apart from the fused kernel.
    """

    def __init__(self, d_model: int, heads: int, attn_dropout: float):
        super().__init__()
        self.heads = heads
        self.attn_dropout = attn_dropout
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.keep_weights = False
        self.weights: Optional[Tensor] = None  # [batch, heads, tgt_len, src_len]

    def memory_kv(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        """Keys and values of the encoder output; computed once per batch when decoding."""
        k, v = self.kv(memory).chunk(2, dim=-1)
        return split_heads(k, self.heads), split_heads(v, self.heads)

    def forward(self, x: Tensor, kv: tuple[Tensor, Tensor], mask: Tensor) -> Tensor:
        q = split_heads(self.q(x), self.heads)
        if self.keep_weights:
            self.weights = attention_weights(q, kv[0], mask)
        dropout = self.attn_dropout if self.training else 0.0
        return self.out(merge_heads(attention(q, kv[0], kv[1], mask, False, dropout)))

    def attending(self, x: Tensor, kv: tuple[Tensor, Tensor], mask: Tensor, head: int
                  ) -> tuple[Tensor, Tensor]:
        """`forward`, and head `head`'s (0-based) attention weights [batch, tgt_len,
        src_len], before dropout (what guided alignment trains): that one head's scores
        computed again beside the fused kernel, which never writes them out."""
        q = split_heads(self.q(x), self.heads)
        one = slice(head, head + 1)
        watched = attention_weights(q[:, one], kv[0][:, one], mask).squeeze(1)
        dropout = self.attn_dropout if self.training else 0.0
        return self.out(merge_heads(attention(q, kv[0], kv[1], mask, False, dropout))), watched

    def step(self, x: Tensor, cache: LayerCache, state: DecoderState) -> Tensor:
        """One new position per row, x [rows, d_model]; a sentence's rows attend together
        to its memory."""
        y = attend(state.grouped(self.q(x), self.heads), cache.cross_k_t.flatten(0, 1),
                   cache.cross_v.flatten(0, 1), state.hidden)
        return self.out(state.ungrouped(y, self.heads))


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W1 + b1) W2 + b2, applied to each position alike (with optional
    dropout on the ReLU's output)."""

    def __init__(self, d_model: int, d_ff: int, act_dropout: float = 0.0):
        super().__init__()
        self.inner = nn.Linear(d_model, d_ff)
        self.outer = nn.Linear(d_ff, d_model)
        self.dropout = Dropout(act_dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.outer(self.dropout(F.relu(self.inner(x))))


class Sublayer(nn.Module):
    """Residual connection with dropout: LayerNorm(x + Dropout(f(x))) as in the paper,
    or x + Dropout(f(LayerNorm(x))) with pre_norm (more stable for deep stacks)."""

    def __init__(self, d_model: int, dropout: float, pre_norm: bool):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = Dropout(dropout)
        self.pre_norm = pre_norm

    def forward(self, x: Tensor, f: Callable[[Tensor], Tensor]) -> Tensor:
        if self.pre_norm:
            return x + self.dropout(f(self.norm(x)))
        return self.norm(x + self.dropout(f(x)))


def residual(cfg: ModelConfig) -> Sublayer:
    return Sublayer(cfg.d_model, cfg.dropout, cfg.pre_norm)


class EncoderLayer(nn.Module):
    """Self-attention, then the feed-forward network, each inside a residual block."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = SelfAttention(cfg.d_model, cfg.heads, cfg.attn_dropout)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.act_dropout)
        self.self_attn_block = residual(cfg)
        self.ffn_block = residual(cfg)

    def forward(self, x: Tensor, src_mask: Tensor, packing: Optional[Packing] = None) -> Tensor:
        x = self.self_attn_block(x, lambda h: self.self_attn(h, mask=src_mask, packing=packing))
        return self.ffn_block(x, self.ffn)


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder-decoder attention, then the feed-forward network."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = SelfAttention(cfg.d_model, cfg.heads, cfg.attn_dropout)
        self.cross_attn = CrossAttention(cfg.d_model, cfg.heads, cfg.attn_dropout)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.act_dropout)
        self.self_attn_block = residual(cfg)
        self.cross_attn_block = residual(cfg)
        self.ffn_block = residual(cfg)

    def forward(self, y: Tensor, memory_kv: tuple[Tensor, Tensor], src_mask: Tensor) -> Tensor:
        """The whole target at once (teacher forcing): causality comes from the mask."""
        y = self.self_attn_block(y, lambda h: self.self_attn(h, causal=True))
        y = self.cross_attn_block(y, lambda h: self.cross_attn(h, memory_kv, src_mask))
        return self.ffn_block(y, self.ffn)

    def attending(self, y: Tensor, memory_kv: tuple[Tensor, Tensor], src_mask: Tensor,
                  head: int) -> tuple[Tensor, Tensor]:
        """`forward`, and cross-attention head `head`'s weights
        (`CrossAttention.attending`)."""
        watched: list[Tensor] = []

        def cross(h: Tensor) -> Tensor:
            out, weights = self.cross_attn.attending(h, memory_kv, src_mask, head)
            watched.append(weights)
            return out

        y = self.self_attn_block(y, lambda h: self.self_attn(h, causal=True))
        y = self.cross_attn_block(y, cross)
        return self.ffn_block(y, self.ffn), watched[0]

    def step(self, y: Tensor, cache: LayerCache, state: DecoderState) -> Tensor:
        """The newest position of each row, [rows, d_model], with cached keys/values."""
        y = self.self_attn_block(y, lambda h: self.self_attn.step(h, cache, state.position))
        y = self.cross_attn_block(y, lambda h: self.cross_attn.step(h, cache, state))
        return self.ffn_block(y, self.ffn)


def output_product(hidden: Tensor, weight: Tensor,
                   buffers: Optional[StepBuffers] = None) -> Tensor:
    """hidden Wᵀ, the output layer's product (`F.linear` without bias); for a decoding
    step's hidden [rows, d_model], into the step's `buffers` ("logits") if given."""
    if buffers is None:
        return F.linear(hidden, weight)
    out = buffers.get("logits", hidden.size(0), weight.size(0), hidden)
    return torch.matmul(hidden, weight.t(), out=out)


@dataclass
class Memory:
    """The encoder output and the mask of its real (non-pad) positions."""

    states: Tensor  # [batch, src_len, d_model]
    mask: Tensor  # [batch, 1, 1, src_len], True where a key may be attended to


class Transformer(nn.Module):
    """Encoder-decoder Transformer over one joint source/target vocabulary."""

    def __init__(self, cfg: ModelConfig, vocab_size: int, pad_id: int = PAD_ID):
        super().__init__()
        self.cfg = cfg
        self.output_product = output_product  # (cpulinear and quantize may swap it)
        self.pad_id = pad_id
        self.vocab_size = vocab_size
        positions = sinusoidal_table(cfg.max_positions, cfg.d_model)
        tgt_table = nn.Embedding(vocab_size, cfg.d_model, padding_idx=pad_id)
        src_table = tgt_table if cfg.share_embeddings else nn.Embedding(
            vocab_size, cfg.d_model, padding_idx=pad_id)
        self.src_embed = Embedding(src_table, positions, cfg.dropout)
        self.tgt_embed = Embedding(tgt_table, positions, cfg.dropout)
        self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.enc_layers))
        self.decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.dec_layers))
        # Pre-norm leaves the residual stream un-normalised: normalise each stack's output.
        self.enc_norm = nn.LayerNorm(cfg.d_model) if cfg.pre_norm else nn.Identity()
        self.dec_norm = nn.LayerNorm(cfg.d_model) if cfg.pre_norm else nn.Identity()
        self.generator = None if cfg.tie_output else nn.Linear(cfg.d_model, vocab_size,
                                                               bias=False)
        self._init_weights()

    def _init_weights(self) -> None:
        """Xavier for projections; N(0, d^-1/2) for embeddings, so that embeddings
        scaled by sqrt(d) have unit variance and tied-output logits start near unit
        variance: the first loss is about ln(V), not tens."""
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
        std = self.cfg.d_model ** -0.5
        tables = {id(e.table): e.table for e in (self.src_embed, self.tgt_embed)}
        for table in tables.values():
            nn.init.normal_(table.weight, std=std)
            with torch.no_grad():
                table.weight[self.pad_id].zero_()
        if self.generator is not None:
            nn.init.normal_(self.generator.weight, std=std)

    # ------------------------------------------------------------------ training path

    def encode(self, src: Tensor, packed: bool = False) -> Memory:
        """src: [batch, src_len] token ids (padded with pad_id) -> encoder memory.
        `packed`: the position-wise layers skip the padding (`Packing`); the states at
        padded positions are then zeros instead of values nothing attends to."""
        real = src != self.pad_id
        mask = real[:, None, None, :]
        x = self.src_embed(src)
        packing = Packing.of(real) if packed else None
        if packing is not None:
            x = packing.pack(x)
        for layer in self.encoder:
            x = layer(x, mask, packing)
        x = self.enc_norm(x)
        return Memory(x if packing is None else packing.pad(x), mask)

    def decode_hidden(self, tgt_in: Tensor, memory: Memory) -> Tensor:
        """Teacher-forced decoder states: tgt_in [batch, tgt_len] -> [batch, tgt_len, d_model],
        before the output layer (the training loss applies that layer itself, in chunks)."""
        y = self.tgt_embed(tgt_in)
        for layer in self.decoder:
            y = layer(y, layer.cross_attn.memory_kv(memory.states), memory.mask)
        return self.dec_norm(y)

    def decode_watching(self, tgt_in: Tensor, memory: Memory, layer: int, head: int
                        ) -> tuple[Tensor, Tensor]:
        """`decode_hidden`, and the cross-attention weights of decoder layer `layer`'s
        head `head` (both 0-based), [batch, tgt_len, src_len]: row t is the step that
        predicts target token t (guided alignment trains them)."""
        y = self.tgt_embed(tgt_in)
        weights = None
        for i, block in enumerate(self.decoder):
            kv = block.cross_attn.memory_kv(memory.states)
            if i == layer:
                y, weights = block.attending(y, kv, memory.mask, head)
            else:
                y = block(y, kv, memory.mask)
        if weights is None:
            raise ValueError(f"no decoder layer {layer} in {len(self.decoder)}")
        return self.dec_norm(y), weights

    def decode(self, tgt_in: Tensor, memory: Memory) -> Tensor:
        """Teacher-forced decoder: tgt_in [batch, tgt_len] -> log-probs [batch, tgt_len, V]."""
        return self.log_probs(self.decode_hidden(tgt_in, memory))

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        return self.decode(tgt_in, self.encode(src))

    @property
    def output_weight(self) -> Tensor:
        """The final linear layer's [V, d_model] matrix: the target embedding unless untied."""
        return self.tgt_embed.table.weight if self.generator is None else self.generator.weight

    def log_probs(self, hidden: Tensor, buffers: Optional[StepBuffers] = None) -> Tensor:
        """The final linear layer (tied to the target embedding by default) + log-softmax.
        Decoding steps pass their `buffers` for hidden [rows, d_model]: the log-probs, and
        the logits where `output_product` takes memory for them there, are written into
        memory reused from step to step (not while autograd records)."""
        weight = self.output_weight
        if buffers is None or torch.is_grad_enabled():
            return F.log_softmax(self.output_product(hidden, weight).float(), dim=-1)
        logits = self.output_product(hidden, weight, buffers)
        return torch.log_softmax(logits.float(), dim=-1, out=buffers.get(
            "log_probs", hidden.size(0), weight.size(0), hidden, torch.float32))

    # ------------------------------------------------------------------ decoding path

    def start_decoding(self, memory: Memory) -> DecoderState:
        """Compute every layer's cross-attention keys/values once for the whole decode;
        one row per sentence until the search reorders them (`DecoderState.reorder`)."""
        layers = []
        for layer in self.decoder:
            k, v = layer.cross_attn.memory_kv(memory.states)
            layers.append(LayerCache(k.transpose(-1, -2).contiguous(), v.contiguous()))
        return DecoderState(layers, ~memory.mask)

    def step(self, tokens: Tensor, state: DecoderState) -> Tensor:
        """Feed the newest token of each row ([rows]); returns log-probs [rows, V] for the
        next one. Costs one position per layer: earlier keys/values are cached. With
        `state.buffers` set, the log-probs are valid until the next step only."""
        y = self.tgt_embed.step(tokens, state.position)
        for layer, cache in zip(self.decoder, state.layers):
            y = layer.step(y, cache, state)
        state.position += 1
        return self.log_probs(self.dec_norm(y), state.buffers)


# Parameter names of checkpoints written before the residual blocks were named.
LEGACY_BLOCK_NAMES = {"encoder": ("self_attn_block", "ffn_block"),
                      "decoder": ("self_attn_block", "cross_attn_block", "ffn_block")}


def upgrade_parameter_names(weights: dict[str, Tensor]) -> dict[str, Tensor]:
    """Map `encoder.0.sub.1.norm.weight` to `encoder.0.ffn_block.norm.weight` and so on."""
    renamed = {}
    for name, tensor in weights.items():
        parts = name.split(".")
        if len(parts) > 3 and parts[0] in LEGACY_BLOCK_NAMES and parts[2] == "sub":
            parts[2:4] = [LEGACY_BLOCK_NAMES[parts[0]][int(parts[3])]]
        renamed[".".join(parts)] = tensor
    return renamed


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters, each tied tensor counted once."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
