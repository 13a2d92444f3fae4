"""Dropout whose random mask is cheap to draw on the CPU.

torch's CPU dropout draws every element's Bernoulli sample from the generator one at a
time; in a small model's training step that was the largest cost after the matrix
products (README, "Benchmarks"). Here each element takes 16 bits of a 64-bit random
word, so the generator runs a quarter as often and the rest is vectorised compares.
The drop rate is rounded to a multiple of 1/65536 (0.1 becomes 0.100006) and the kept
values are scaled by 1 / (1 - that rate), so every output's expectation is still its
input. On other devices torch's fused kernel runs.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

LANES = 4  # 16-bit lanes in one 64-bit random word
LEVELS = 1 << 16  # values a lane takes


def drop_rate(p: float) -> float:
    """The rate actually applied for a requested `p`: a multiple of 1/LEVELS below 1."""
    return min(round(p * LEVELS), LEVELS - 1) / LEVELS


def keep_scale(shape: torch.Size, p: float, dtype: torch.dtype, device: torch.device) -> Tensor:
    """A mask of `shape`: 0 with probability `drop_rate(p)`, else 1 / (1 - that rate).

    A lane, read as int16, is uniform on [-32768, 32767]: it drops its element when
    below -32768 + rate * LEVELS, which happens with probability `rate` exactly.
    """
    count = math.prod(shape)
    words = torch.empty(-(-count // LANES), dtype=torch.int64, device=device)
    words.random_(-(1 << 63), None)  # all 64 bits uniform
    lanes = words.view(torch.int16)[:count].view(shape)
    rate = drop_rate(p)
    keep = lanes >= round(rate * LEVELS) - LEVELS // 2
    return keep.to(dtype).mul_(1.0 / (1.0 - rate))


class Dropout(nn.Module):
    """`nn.Dropout` with the CPU mask above: zeroes elements with probability p while
    training and scales the rest by 1 / (1 - p); the identity in eval mode."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        if x.device.type != "cpu":
            return F.dropout(x, self.p, training=True)
        return x * keep_scale(x.shape, self.p, x.dtype, x.device)

    def extra_repr(self) -> str:
        return f"p={self.p}"
