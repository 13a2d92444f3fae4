"""The textbook model transcli's is measured against (bench/model_speed.py, and the naive
loop of bench/train_speed.py --naive): torch.nn.Transformer with transcli's dimensions,
embeddings-scaled-plus-positions input and tied output layer + log-softmax."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from transcli.config.schema import ModelConfig
from transcli.model.transformer import sinusoidal_table
from transcli.model.vocab import PAD_ID


class Reference(nn.Module):
    """torch.nn.Transformer with the same embedding and output layers as ours."""

    def __init__(self, cfg: ModelConfig, vocab: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, cfg.d_model, padding_idx=PAD_ID)
        nn.init.normal_(self.embed.weight, std=cfg.d_model ** -0.5)
        self.register_buffer("pe", sinusoidal_table(cfg.max_positions, cfg.d_model))
        self.scale = math.sqrt(cfg.d_model)
        self.core = nn.Transformer(cfg.d_model, cfg.heads, cfg.enc_layers, cfg.dec_layers,
                                   cfg.d_ff, cfg.dropout, batch_first=True,
                                   norm_first=cfg.pre_norm)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        x = self.drop(self.embed(src) * self.scale + self.pe[: src.size(1)])
        y = self.drop(self.embed(tgt_in) * self.scale + self.pe[: tgt_in.size(1)])
        causal = nn.Transformer.generate_square_subsequent_mask(tgt_in.size(1), device=src.device)
        pad = src == PAD_ID
        h = self.core(x, y, tgt_mask=causal, src_key_padding_mask=pad,
                      memory_key_padding_mask=pad, tgt_is_causal=True)
        return F.log_softmax(F.linear(h, self.embed.weight).float(), dim=-1)
