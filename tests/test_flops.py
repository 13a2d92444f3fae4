"""The benchmarks' FLOP count and GPU peaks (bench/flops.py), against torch's own counter.

torch.utils.flop_counter.FlopCounterMode counts the FLOPs of every matrix product that
actually runs, forward and backward, on the real model: an independent count of what
`training_flops` computes from the model's shape and the sentence lengths.
"""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from bench.flops import Lengths, dense_bf16_peak, mfu_text, training_flops
from transcli.config.schema import ModelConfig
from transcli.model.transformer import Transformer

VOCAB = 101


def counted_flops(model: Transformer, src_len: int, tgt_len: int, rows: int = 1) -> int:
    """FLOPs torch counts for forward+backward of `rows` unpadded pairs of these lengths."""
    g = torch.Generator().manual_seed(src_len * 1000 + tgt_len)
    src = torch.randint(4, VOCAB, (rows, src_len), generator=g)
    tgt = torch.randint(4, VOCAB, (rows, tgt_len), generator=g)
    with FlopCounterMode(display=False) as counter:
        model(src, tgt).sum().backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops()


@pytest.mark.parametrize("layers", [(2, 3), (3, 1)])
def test_training_flops_equal_torchs_count(layers: tuple[int, int]) -> None:
    cfg = ModelConfig(enc_layers=layers[0], dec_layers=layers[1], d_model=64, d_ff=96,
                      heads=4, dropout=0.0, max_positions=64)
    torch.manual_seed(0)
    model = Transformer(cfg, VOCAB)
    pairs = [(7, 5), (3, 11), (12, 12)]  # one sentence pair at a time: no padding
    counted = sum(counted_flops(model, s, t) for s, t in pairs)
    lengths = Lengths.of([s for s, _ in pairs], [t for _, t in pairs])
    assert training_flops(cfg, VOCAB, lengths) == counted
    # a batch of equal rows costs rows x one row
    assert counted_flops(model, 7, 5, rows=3) == 3 * counted_flops(model, 7, 5)


def test_per_target_token_scales_linearly() -> None:
    cfg = ModelConfig(enc_layers=6, dec_layers=6, d_model=512, d_ff=2048, heads=8)
    lengths = Lengths.of([10, 30, 21], [12, 25, 20])
    per_token = training_flops(cfg, 32000, lengths.per_target_token())
    assert per_token * lengths.tgt == pytest.approx(training_flops(cfg, 32000, lengths))
    # dense part alone: 6 x (matrix parameters per token), base model, src = tgt lengths
    dense = training_flops(cfg, 32000, Lengths(1, 1, 0, 0, 0))
    d = 512
    matrices = 6 * (4 * d * d + 2 * d * 2048) + 6 * (8 * d * d + 2 * d * 2048) + 32000 * d
    assert dense == 6 * matrices


@pytest.mark.parametrize("name, peak", [
    ("NVIDIA H100 80GB HBM3", 989.4e12), ("NVIDIA H100 PCIe", 756e12),
    ("NVIDIA H200", 989.4e12), ("NVIDIA A100-SXM4-80GB", 312e12),
    ("NVIDIA H100 NVL", None), ("NVIDIA H200 NVL", None), ("NVIDIA GH200 480GB", None),
    ("NVIDIA GeForce RTX 4090", None)])
def test_dense_bf16_peak_by_device_name(name: str, peak: float | None) -> None:
    assert dense_bf16_peak(name) == peak


def test_mfu_text_says_na_for_an_unknown_device() -> None:
    assert mfu_text(494.7e12, "NVIDIA H100 80GB HBM3") == "50.0% of 989 TFLOP/s"
    assert mfu_text(1e12, "Some GPU").startswith("n/a")
