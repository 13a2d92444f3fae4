"""The fixed cost of a decoding step, counted: torch ops dispatched per step of greedy and
beam search over 16 sentences. At small batches each op's dispatch costs about as much as
its arithmetic, so these counts are the per-step tax that makes a batch of 16 lines slower
per line than a batch of hundreds (docs/INFERENCE.md). The bounds catch a change that adds
ops to every step; the counts the search made before it was trimmed are in the comments.
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from transcli.config.schema import DecodeConfig, ModelConfig
from transcli.inference.cpu_matmul import ONEDNN, cpu_linears
from transcli.inference.search import search
from transcli.model.transformer import Transformer
from transcli.model.vocab import EOS_ID

STEPS = 24


class OpCounter(TorchDispatchMode):
    """Counts every op torch dispatches while active."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func)] += 1
        return func(*args, **(kwargs or {}))


def ops_per_step(decode: DecodeConfig, onednn: bool) -> float:
    """Ops per step of a search over 16 random sentences by a 3-layer decoder (the CPU
    recipe's depth, small widths: the count does not depend on them), which end at their
    limits, spread over the last 8 steps (random weights rarely emit EOS)."""
    torch.manual_seed(0)
    cfg = ModelConfig(enc_layers=1, dec_layers=3, d_model=32, d_ff=64, heads=4, dropout=0.0,
                      max_positions=64)
    model = cpu_linears(Transformer(cfg, 2000).eval(), onednn)
    src = torch.randint(4, 2000, (16, 10))
    src[:, -1] = EOS_ID
    limits = [STEPS - i % 8 for i in range(16)]
    with torch.inference_mode():
        search(model, src, limits, decode)  # first-call set-up (packed weights) not counted
        with OpCounter() as counter:
            search(model, src, limits, decode)
    return sum(counter.ops.values()) / STEPS


# (strategy, beam) -> most ops per step: oneDNN products, BLAS products (torch 2.13: 166
# and 242 greedy, 270 and 270 beam, of which 11 keep each token's log-prob for the
# confidence and 3 are the stopping rule beam searches share). Before the trim: greedy
# 280 / 334, beam 339 / 295.
BOUNDS = {("greedy", 1): (175, 255), ("beam", 5): (272, 272)}


@pytest.mark.parametrize("onednn", [pytest.param(True, marks=pytest.mark.skipif(
    not ONEDNN, reason="this torch build has no oneDNN")), False])
@pytest.mark.parametrize("strategy, beam", list(BOUNDS))
def test_a_decoding_step_dispatches_few_ops(strategy: str, beam: int, onednn: bool) -> None:
    count = ops_per_step(DecodeConfig(strategy=strategy, beam_size=beam), onednn)
    assert count <= BOUNDS[(strategy, beam)][0 if onednn else 1], count
